"""Seed corpora for the fuzz targets, built from shippable text (the demo corpus in
``relata/seed``, and documents written here), never from benchmark data.

PDF and DOCX seeds are generated (``tests.fuzz.docgen``), so no binary fixture is kept;
``write_corpus(target, directory)`` writes a target's seeds into a directory libFuzzer then
grows. Each seed is in the target's input format (see the target's module docstring).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from tests.fuzz.docgen import make_docx, make_pdf
from tests.fuzz.officegen import HTML_PAGE, XLSX_TYPE, make_csv, make_eml, make_pptx, make_xlsx


def _demo() -> dict[str, bytes]:
    """The demo corpus shipped with Relata (``relata seed``), by file name."""
    folder = resources.files("relata.seed")
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.name.endswith((".md", ".txt", ".json"))
    }


def _of(suffix: str) -> list[bytes]:
    return [data for name, data in sorted(_demo().items()) if name.endswith(suffix)]


def _prose() -> str:
    return _demo()["harbour-council-minutes.md"].decode()


def _pdfs() -> list[bytes]:
    lines = [line for line in _prose().splitlines() if line.strip()][:8]
    return [
        make_pdf([lines[:4], lines[4:]], title="Harbour council minutes", author="Clerk"),
        make_pdf([["Tide (m): 3.5", "Kestrel \\ Sabrewing"], []]),
    ]


def _docxs() -> list[bytes]:
    return [
        make_docx(
            [("title", "Harbour council"), ("h1", "Minutes"), ("p", _prose()[:300])],
            title="Minutes",
            table=[["turbine", "MW"], ["SB-01", "1.5"]],
        ),
        make_docx([("h2", "Field notes"), ("p", "Dr. Vaughan noted a 3.5 m tide.")]),
    ]


def _xlsxs() -> list[bytes]:
    return [
        make_xlsx({"Fleet": [["turbine", "MW"], ["SB-01", 1.5]], "Notes": [["n"], ["calm"]]}),
    ]


def _pptxs() -> list[bytes]:
    return [make_pptx([("Minutes", _prose()[:200], "Notes.")], table=[["a", "b"], ["1", "2"]])]


def _emails() -> list[bytes]:
    return [
        make_eml(text=_prose()[:400]),
        make_eml(
            text=None,
            html="<h1>Minutes</h1><p>Agreed.</p>",
            attachments=[("t.csv", "text/csv", make_csv(3)), ("f.xlsx", XLSX_TYPE, _xlsxs()[0])],
        ),
    ]


def _multipart(fields: dict[str, str], filename: str, content: bytes) -> bytes:
    boundary = b"relataFuzzBoundary"
    parts = [
        b"--"
        + boundary
        + b'\r\nContent-Disposition: form-data; name="'
        + name.encode()
        + b'"\r\n\r\n'
        + value.encode()
        + b"\r\n"
        for name, value in fields.items()
    ]
    parts.append(
        b"--"
        + boundary
        + b'\r\nContent-Disposition: form-data; name="file"; filename="'
        + filename.encode()
        + b'"\r\nContent-Type: text/markdown\r\n\r\n'
        + content
        + b"\r\n"
    )
    body = b"".join(parts) + b"--" + boundary + b"--\r\n"
    return b"\x00\x03boundary=" + boundary + b"\n" + body  # one piece, length, credentials


def _replies() -> Iterator[bytes]:
    answer = {
        "answer": "The tide reached 3.5 m at Harbour Point [S1].",
        "citations": ["S1"],
        "sufficient": True,
    }
    entities = {
        "entities": [{"name": "Ada Vaughan", "type": "person", "evidence": "Dr. Ada Vaughan said"}]
    }
    claims = {
        "claims": [
            {
                "subject": "Kestrel turbine",
                "nature": "fact",
                "statement": "The Kestrel turbine was commissioned in 2019.",
                "quotation": "the Kestrel turbine was commissioned in 2019",
            }
        ]
    }
    judge = {"verdict": "contradicts", "confidence": 0.8, "reason": "The years differ."}
    relation = {"type": "supports", "confidence": 0.7, "reason": "Both report the same tide."}
    for task, reply in enumerate((answer, entities, claims, judge, relation)):
        text = json.dumps(reply)
        yield bytes([task]) + text.encode()
        yield bytes([task]) + b"```json\n" + text.encode() + b"\n```"


def _chunker() -> Iterator[bytes]:
    for data in _of(".md") + _of(".txt"):
        yield b"\x00\x90\x01\x00\x30" + data  # sizes, then mostly the raw text path


def seeds(target: str) -> list[bytes]:
    """The seed inputs of ``target``."""
    text = _of(".txt")
    markdown = _of(".md")
    documents = text + markdown + _of(".json")
    found: dict[str, list[bytes]] = {
        "sniff": [bytes([hint]) + d for hint in (0, 1, 5) for d in documents + _pdfs() + _docxs()],
        "text": text,
        "markdown": markdown,
        "json": [*_of(".json"), b'{"title": "Seed", "items": [{"k": 1}, {"k": [true, null]}]}'],
        "pdf": _pdfs(),
        "docx": _docxs(),
        "html": [HTML_PAGE, b"<html><body><h1>T</h1><p>x</p><table><tr><td>1</td></tr></table>"],
        "delimited": [b"\x00" + make_csv(20), b"\x01" + make_csv(20, delimiter="\t")],
        "xlsx": _xlsxs(),
        "pptx": _pptxs(),
        "email": _emails(),
        "chunker": list(_chunker()),
        "decode_strict": list(_replies()),
        "quotation": [b"\x01" + d[:400] for d in documents],
        "multipart": [
            _multipart(
                {
                    "title": "Minutes",
                    "metadata": '{"source": "council"}',
                    "created_at": "2021-03-04",
                    "allow_duplicate": "no",
                },
                "minutes.md",
                markdown[0],
            ),
            _multipart({}, "notes.txt", text[0]),
        ],
    }
    return found[target]


def write_corpus(target: str, directory: Path) -> int:
    """Write ``target``'s seeds into ``directory`` (named by content); how many."""
    directory.mkdir(parents=True, exist_ok=True)
    inputs = seeds(target)
    for data in inputs:
        (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(inputs)
