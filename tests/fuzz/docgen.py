"""Builds real PDF, DOCX and zip files in memory for the parser tests (no binary fixtures).

PDFs are written with pypdf (a Helvetica text page per entry of ``pages``); DOCX files with
python-docx, an independent producer, so the reader is tested against real WordprocessingML.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence

import docx
from pypdf import PdfWriter
from pypdf.generic import (
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
    TextStringObject,
)


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: Sequence[Sequence[str]], *, title: str | None = None, author: str | None = None
) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]`` (empty list: a blank page)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    font_ref = writer._add_object(font)  # pypdf has no public way to add a shared object
    for lines in pages:
        page = writer.add_blank_page(width=612, height=792)
        if not lines:
            continue
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    info = {}
    if title is not None:
        info["/Title"] = TextStringObject(title)
    if author is not None:
        info["/Author"] = TextStringObject(author)
    if info:
        writer.add_metadata(info)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(
    body: Sequence[tuple[str, str]],
    *,
    title: str | None = None,
    author: str | None = None,
    table: Sequence[Sequence[str]] | None = None,
) -> bytes:
    """A DOCX from (style, text) pairs: style "title", "h1".."h9" or "p"; optional table last."""
    document = docx.Document()
    if title is not None:
        document.core_properties.title = title
    if author is not None:
        document.core_properties.author = author
    for style, text in body:
        if style == "title":
            document.add_heading(text, 0)
        elif style.startswith("h"):
            document.add_heading(text, int(style[1:]))
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_zip(entries: dict[str, bytes], *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def replace_entry(docx_bytes: bytes, name: str, data: bytes) -> bytes:
    """``docx_bytes`` with entry ``name`` replaced (or added)."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes))
    entries = {n: source.read(n) for n in source.namelist() if n != name}
    entries[name] = data
    return make_zip(entries)


_W_NS = b"http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def make_hollow_docx(
    xml_bytes: int, *, runs_in_one_paragraph: bool = False, seed: int = 0
) -> bytes:
    """A DOCX whose ``word/document.xml`` is about ``xml_bytes`` of near-empty elements.

    The shape that held a worker for minutes: ``<w:p w:rsidR="…"/>`` paragraphs (or, with
    ``runs_in_one_paragraph``, ``<w:r w:rsidR="…"/>`` runs of a single paragraph), each with
    a random revision id so the entry compresses only ~5:1 and passes every zip ratio bound,
    ending with one paragraph of text. Built with numpy, so 100+ MB takes about a second.
    """
    import numpy as np

    tag = b"r" if runs_in_one_paragraph else b"p"
    template = b"<w:" + tag + b' w:rsidR="00000000"/>'
    hex_at = template.index(b'"') + 1
    count = max(1, xml_bytes // len(template))
    units = np.frombuffer(template * count, dtype=np.uint8).reshape(count, len(template)).copy()
    digits = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
    rng = np.random.default_rng(seed)
    units[:, hex_at : hex_at + 8] = digits[rng.integers(0, 16, size=(count, 8), dtype=np.uint8)]
    body = units.tobytes()
    if runs_in_one_paragraph:
        body = b"<w:p>" + body + b"</w:p>"
    xml = b"".join(
        (
            b'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="',
            _W_NS,
            b'"><w:body>',
            body,
            b"<w:p><w:r><w:t>The only text.</w:t></w:r></w:p></w:body></w:document>",
        )
    )
    source = zipfile.ZipFile(io.BytesIO(make_docx([("p", "placeholder")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name in source.namelist():
            if name != "word/document.xml":
                archive.writestr(name, source.read(name))
        archive.writestr("word/document.xml", xml)
    return out.getvalue()
