"""DOCX parser: heading styles, tables, core properties, zip bombs and hostile XML."""

from __future__ import annotations

import io
import itertools
import struct
import zipfile

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE

from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse
from tests.fuzz.docgen import make_docx, make_zip, replace_entry

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _document_xml(body: str, prolog: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>{prolog}'
        f'<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>'
    ).encode()


def test_heading_styles_give_sections_and_core_title_wins() -> None:
    data = make_docx(
        [
            ("title", "Style Title"),
            ("h1", "Introduction"),
            ("p", "Why this matters."),
            ("h2", "Background"),
            ("p", "Earlier work."),
            ("h1", "Method"),
            ("p", "What we did."),
        ],
        title="Core Title",
        author="Grace Hopper",
    )
    doc = parse(data, SourceType.DOCX)
    assert doc.title == "Core Title"
    assert doc.metadata["author"] == "Grace Hopper"
    assert [(b.kind, b.level, b.heading_path) for b in doc.blocks] == [
        ("title", 0, ("Style Title",)),
        ("heading", 1, ("Style Title", "Introduction")),
        ("paragraph", 0, ("Style Title", "Introduction")),
        ("heading", 2, ("Style Title", "Introduction", "Background")),
        ("paragraph", 0, ("Style Title", "Introduction", "Background")),
        ("heading", 1, ("Style Title", "Method")),
        ("paragraph", 0, ("Style Title", "Method")),
    ]
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text


def test_title_style_is_the_title_when_core_properties_have_none() -> None:
    doc = parse(make_docx([("title", "Only Style Title"), ("p", "Body.")]), SourceType.DOCX)
    assert doc.title == "Only Style Title"


def test_the_first_heading_1_is_the_title_when_there_is_no_other() -> None:
    data = make_docx(
        [("p", "Draft."), ("h2", "Aside"), ("h1", "Quarterly Review"), ("h1", "Second")]
    )
    assert parse(data, SourceType.DOCX).title == "Quarterly Review"
    # A Title paragraph still wins over it.
    titled = make_docx([("h1", "Quarterly Review"), ("title", "The Title")])
    assert parse(titled, SourceType.DOCX).title == "The Title"


def test_tables_become_cell_lines() -> None:
    data = make_docx(
        [("h1", "Results"), ("p", "See the table.")],
        table=[["Metric", "Value"], ["Recall", "0.91"]],
    )
    doc = parse(data, SourceType.DOCX)
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text == "Metric | Value\nRecall | 0.91"
    assert table.heading_path == ("Results",)


def test_custom_style_based_on_a_heading_is_a_heading() -> None:
    document = docx.Document()
    style = document.styles.add_style("Chapter Head", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Heading 2"]
    document.add_paragraph("Custom heading", style="Chapter Head")
    document.add_paragraph("Under it.")
    out = io.BytesIO()
    document.save(out)
    doc = parse(out.getvalue(), SourceType.DOCX)
    assert doc.blocks[0].kind == "heading"
    assert doc.blocks[0].level == 2
    assert doc.blocks[1].heading_path == ("Custom heading",)


def test_runs_tabs_breaks_and_deleted_text() -> None:
    body = (
        "<w:p><w:r><w:t>Hello</w:t><w:tab/><w:t>world</w:t><w:br/><w:t>again</w:t></w:r>"
        "<w:del><w:r><w:delText>removed</w:delText></w:r></w:del></w:p>"
    )
    data = make_zip({"word/document.xml": _document_xml(body)})
    doc = parse(data, SourceType.DOCX)
    assert doc.text == "Hello\tworld\nagain"


def test_a_docx_zip_bomb_is_rejected_by_compression_ratio() -> None:
    bomb = replace_entry(make_docx([("p", "Innocent.")]), "word/media/pad.bin", b"\0" * (20 << 20))
    with pytest.raises(ValidationError) as info:
        parse(bomb, SourceType.DOCX)
    assert "zip bomb" in info.value.message
    assert "expands" in info.value.message


def test_total_uncompressed_size_is_bounded() -> None:
    data = make_docx([("p", "Text.")])
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX, limits=ParseLimits(max_uncompressed_bytes=10_000))
    assert "the limit is 10000 bytes" in info.value.message


def test_entry_count_is_bounded_before_the_directory_is_read() -> None:
    entries = {f"word/media/{n}.txt": b"" for n in range(60)}
    entries["word/document.xml"] = _document_xml("<w:p><w:r><w:t>x</w:t></w:r></w:p>")
    with pytest.raises(ValidationError) as info:
        parse(make_zip(entries), SourceType.DOCX, limits=ParseLimits(max_zip_entries=50))
    assert info.value.message == "the archive has 61 entries; the limit is 50"


def _patch_declared_size(data: bytes, name: bytes, size: int) -> bytes:
    """Rewrite the central directory's uncompressed size of entry ``name``."""
    pos = data.index(b"PK\x01\x02")
    while True:
        name_len = struct.unpack("<H", data[pos + 28 : pos + 30])[0]
        if data[pos + 46 : pos + 46 + name_len] == name:
            return data[: pos + 24] + struct.pack("<L", size) + data[pos + 28 :]
        pos = data.index(b"PK\x01\x02", pos + 4)


def test_a_declared_size_that_lies_low_cannot_expand_past_it() -> None:
    body = "<w:p><w:r><w:t>" + "y" * (4 << 20) + "</w:t></w:r></w:p>"
    honest = make_zip({"word/document.xml": _document_xml(body)})
    lying = _patch_declared_size(honest, b"word/document.xml", 200)
    with pytest.raises(UnsupportedContent) as info:
        parse(lying, SourceType.DOCX)
    assert "damaged zip archive" in info.value.message


def test_a_declared_size_that_lies_high_is_rejected_from_metadata() -> None:
    honest = make_docx([("p", "Text.")])
    huge = _patch_declared_size(honest, b"word/document.xml", 3_000_000_000)
    with pytest.raises(ValidationError) as info:
        parse(huge, SourceType.DOCX)
    assert "zip bomb" in info.value.message


@pytest.mark.parametrize(
    ("prolog", "reference"),
    [
        pytest.param(
            '<!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>',
            "&b;",
            id="billion-laughs",
        ),
        pytest.param(
            '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
            "&x;",
            id="external-entity",
        ),
    ],
)
def test_xml_with_a_dtd_is_refused_and_entities_never_expand(prolog: str, reference: str) -> None:
    body = f"<w:p><w:r><w:t>text {reference}</w:t></w:r></w:p>"
    data = make_zip({"word/document.xml": _document_xml(body, prolog)})
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX)
    assert "document type declaration" in info.value.message


def test_hostile_core_properties_are_refused_too() -> None:
    core = b'<?xml version="1.0"?><!DOCTYPE c [<!ENTITY x SYSTEM "file:///etc/passwd">]><c>&x;</c>'
    data = replace_entry(make_docx([("p", "Text.")]), "docProps/core.xml", core)
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX)
    assert "document type declaration" in info.value.message


def test_malformed_xml_is_a_clear_error() -> None:
    data = make_zip({"word/document.xml": b"<w:document><w:body><w:p>"})
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX)
    assert "malformed XML" in info.value.message


def test_bzip2_entries_are_not_decompressed() -> None:
    data = make_zip(
        {"word/document.xml": _document_xml("<w:p><w:r><w:t>x</w:t></w:r></w:p>")},
        method=zipfile.ZIP_BZIP2,
    )
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX)
    assert "unsupported compression method" in info.value.message


def test_parsing_time_is_bounded_between_paragraphs() -> None:
    ticks = itertools.count()
    data = make_docx([("p", f"Paragraph {n}.") for n in range(1000)])
    with pytest.raises(ValidationError) as info:
        parse(data, SourceType.DOCX, limits=ParseLimits(max_seconds=3), clock=lambda: next(ticks))
    assert "longer than the limit" in info.value.message
