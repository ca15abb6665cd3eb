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
