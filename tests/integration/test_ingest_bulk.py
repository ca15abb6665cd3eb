"""Bulk-ingestion plumbing without a database: JSONL records, folder scanning, the progress
line, and the stored-original paths that must never leave the originals directory."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from relata.domain.errors import NotFound
from relata.domain.models import SourceType
from relata.ingest.bulk import JsonlFields, file_request, jsonl_requests, scan
from relata.ingest.originals import OriginalStore
from relata.ingest.service import IngestRequest

WS = "6f0b9c1e-3f53-4c53-9a3c-7d8a1e0b2c44"
ITEM = "0d3a5c1e-1111-4c53-9a3c-7d8a1e0b2c44"


def _lines(*rows: object) -> io.BytesIO:
    return io.BytesIO(
        b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in rows) + b"\n"
    )


def test_jsonl_records_become_text_requests_with_the_external_id() -> None:
    stream = _lines(
        {"_id": "4983", "title": "Microstructure", "text": "Diffusion tensor imaging."},
        {"doc": 7, "name": "T", "body": "Custom fields."},
    )
    out = list(jsonl_requests(stream, JsonlFields(), 1000))
    assert out[0] == (
        1,
        IngestRequest(
            text="Diffusion tensor imaging.",
            title="Microstructure",
            metadata={"external_id": "4983"},
        ),
    )
    assert out[1] == (2, "field 'text' must be a non-empty string")
    custom = list(
        jsonl_requests(
            _lines({"doc": 7, "name": "T", "body": "B."}), JsonlFields("doc", "name", "body"), 1000
        )
    )
    assert custom == [(1, IngestRequest(text="B.", title="T", metadata={"external_id": "7"}))]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (b"{oops", "not valid JSON"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON"),  # too deep for the decoder
        ([1, 2], "not a JSON object"),
        ({"text": "t", "title": 5}, "field 'title' must be a string"),
        ({"text": "t", "_id": True}, "field '_id' must be a string or an integer"),
        ({"text": "t", "_id": "x" * 1025}, "field '_id' must be 1-1024 characters"),
    ],
)
def test_bad_jsonl_lines_are_rejected_with_a_reason(row: object, reason: str) -> None:
    [(lineno, result)] = list(jsonl_requests(_lines(row), JsonlFields(), 100_000))
    assert lineno == 1 and result == reason


def test_an_overlong_jsonl_line_is_rejected_without_reading_it_whole_and_counting_goes_on() -> None:
    long_line = json.dumps({"text": "x" * 200_000}).encode()
    stream = _lines(long_line, {"text": "after"})
    out = list(jsonl_requests(stream, JsonlFields(), 1000))
    assert out[0][0] == 1 and isinstance(out[0][1], str) and "longer than" in out[0][1]
    assert out[1] == (2, IngestRequest(text="after", metadata={}))


def test_jsonl_limit_and_blank_lines() -> None:
    stream = _lines({"text": "a"}, b"", {"text": "b"}, {"text": "c"})
    assert [n for n, _ in jsonl_requests(stream, JsonlFields(), 100, limit=2)] == [1, 3]


def test_scanning_skips_hidden_entries_and_descends_only_when_recursive(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "one.txt").write_text("1")
    (tmp_path / "a" / ".secret").write_text("s")
    (tmp_path / "a" / "b" / "two.md").write_text("2")
    (tmp_path / "a" / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    flat = [(label, display) for label, _, display in scan([str(tmp_path / "a")], recursive=False)]
    assert flat == [(str(tmp_path / "a" / "one.txt"), "one.txt")]
    deep = [display for _, _, display in scan([str(tmp_path / "a")], recursive=True)]
    assert deep == ["one.txt", "b/two.md"]  # the symlinked folder is not followed


def test_a_file_over_the_limit_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 11)
    assert file_request(big, "big.txt", 10, allow_duplicate=False) == (
        "the file is 11 bytes; the limit is 10 bytes (RELATA_MAX_UPLOAD_BYTES)"
    )


def test_a_stored_path_that_was_tampered_with_is_never_opened(tmp_path: Path) -> None:
    store = OriginalStore(tmp_path)
    rel = store.save(WS, ITEM, SourceType.PDF, b"%PDF-1.4 test")
    assert rel == f"originals/{WS}/{ITEM}.pdf"
    assert store.read(rel) == b"%PDF-1.4 test"
    (tmp_path / "secret.txt").write_text("outside")
    for bad in (
        "../secret.txt",
        f"originals/{WS}/../../secret.txt",
        f"originals/{WS}/{ITEM}.exe",
        "/etc/passwd",
        f"originals/{WS}/{ITEM}.pdf\x00.txt",
    ):
        with pytest.raises(NotFound):
            store.read(bad)
        assert store.delete(bad) is False
    assert (tmp_path / "secret.txt").exists()
    with pytest.raises(ValueError):
        store.save("../x", ITEM, SourceType.TEXT, b"x")
    assert store.delete(rel) is True and not (tmp_path / rel).exists()
    assert list((tmp_path / "originals" / WS).iterdir()) == []  # no temporary files left
