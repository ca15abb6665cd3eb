"""XLSX, PPTX and e-mail parsers: sheets, slides and notes as sections, cached values, message
metadata and attachments as sections; bombs, hostile XML and oversized inputs refused within
their bounds, at upload (``sniff``) as at parse."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from relata.chunking import chunk_document
from relata.domain.errors import TooLarge, UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse, sniff
from relata.parsing.eml import attachments_of
from tests.fuzz.docgen import make_zip, replace_entry
from tests.fuzz.invariants import check_chunks, check_document
from tests.fuzz.officegen import XLSX_TYPE, make_csv, make_eml, make_pptx, make_xlsx

SHEET = "xl/worksheets/sheet1.xml"


def _part(data: bytes, name: str) -> bytes:
    return zipfile.ZipFile(io.BytesIO(data)).read(name)


# ------------------------------------------------------------------------------------ XLSX
def test_every_sheet_is_a_section_and_every_group_of_rows_repeats_the_header() -> None:
    turbines = [["turbine", "site", "MW"]] + [
        [f"SB-{n:03d}", f"Site {n}", n * 1.5] for n in range(120)
    ]
    data = make_xlsx(
        {"Turbines": turbines, "Empty": [], "Notes": [["note"], ["Calm sea"]]}, title="Fleet"
    )
    assert sniff(data, filename="fleet.docx") is SourceType.XLSX  # the content decides
    doc = parse(data, SourceType.XLSX)
    check_document(doc, ParseLimits())
    assert doc.title == "Fleet"
    headings = [b.text for b in doc.blocks if b.kind == "heading"]
    assert headings == ["Turbines", "Notes"]  # an empty sheet adds nothing
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert all(b.text.startswith("turbine | site | MW\n") for b in tables[:-1])
    assert tables[0].heading_path[0] == "Turbines" and tables[0].heading_path[1].startswith(
        "rows 2-"
    )
    assert tables[-1].heading_path == ("Notes",) and tables[-1].text == "note\nCalm sea"
    assert "SB-007 | Site 7 | 10.5" in doc.text and "SB-002 | Site 2 | 3\n" in doc.text
    chunks = chunk_document(doc, target_chars=1000, overlap_chars=200)
    check_chunks(doc, chunks, 1000)
    assert all("turbine | site | MW" in c.text for c in chunks if c.heading_path[0] == "Turbines")


def test_formulas_read_as_their_cached_value_never_as_the_formula() -> None:
    data = make_xlsx({"S": [["a", "double"], [21, "=A2*2"]]})
    sheet = _part(data, SHEET).replace(b"<f>A2*2</f><v></v>", b"<f>A2*2</f><v>42</v>")
    doc = parse(replace_entry(data, SHEET, sheet), SourceType.XLSX)
    assert doc.text.endswith("a | double\n21 | 42")
    assert "A2*2" not in doc.text


def test_a_declared_dimension_does_not_pad_rows_and_cells_are_bounded() -> None:
    data = make_xlsx({"S": [["a", "b"], [1, 2]]})
    huge = _part(data, SHEET).replace(
        b'<dimension ref="A1:B2"/>', b'<dimension ref="A1:XFD1048576"/>'
    )
    start = time.monotonic()
    doc = parse(replace_entry(data, SHEET, huge), SourceType.XLSX)
    assert time.monotonic() - start < 5 and doc.text.endswith("a | b\n1 | 2")
    far = _part(data, SHEET).replace(b'<row r="2"><c r="A2"', b'<row r="900000"><c r="A900000"')
    far = far.replace(b'<c r="B2"', b'<c r="B900000"')
    with pytest.raises(TooLarge, match="more than 10000 cells"):
        parse(
            replace_entry(data, SHEET, far), SourceType.XLSX, limits=ParseLimits(max_cells=10_000)
        )
    wide = _part(data, SHEET).replace(b'<c r="B2"', b'<c r="XFD2"')
    with pytest.raises(TooLarge, match="more than 1000 cells"):
        parse(replace_entry(data, SHEET, wide), SourceType.XLSX, limits=ParseLimits(max_cells=1000))


@pytest.mark.parametrize("part", [SHEET, "xl/workbook.xml", "[Content_Types].xml"])
def test_a_dtd_in_any_part_is_refused_at_upload_and_at_parse(part: str) -> None:
    data = make_xlsx({"S": [["a"], ["b"]]})
    xml = _part(data, part)
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]>' + xml.split(b"?>", 1)[-1]
    hostile = replace_entry(data, part, bomb)
    for attempt in (lambda: sniff(hostile), lambda: parse(hostile, SourceType.XLSX)):
        with pytest.raises(ValidationError, match="declares a DTD or entities"):
            attempt()


def test_an_oversized_sheet_part_is_refused_from_the_zip_directory() -> None:
    data = make_xlsx({"S": [["a"], ["x" * 5000]]})
    limits = ParseLimits(max_xml_part_bytes=4096)
    for attempt in (
        lambda: sniff(data, limits=limits),
        lambda: parse(data, SourceType.XLSX, limits=limits),
    ):
        with pytest.raises(TooLarge, match="the limit is 4096 bytes"):
            attempt()


# ------------------------------------------------------------------------------------ PPTX
def test_slides_with_titles_and_notes_are_sections() -> None:
    data = make_pptx(
        [
            ("Results", "Revenue grew 10% in 2026.", "Mention the harbour."),
            ("Outlook", "Two new turbines.", None),
        ],
        table=[["turbine", "MW"], ["SB-01", "1.5"]],
    )
    assert sniff(data) is SourceType.PPTX
    doc = parse(data, SourceType.PPTX)
    check_document(doc, ParseLimits())
    assert doc.title == "Results"  # no core title: the first slide's
    assert [(b.kind, b.heading_path, b.text) for b in doc.blocks] == [
        ("heading", ("Slide 1: Results",), "Slide 1: Results"),
        ("paragraph", ("Slide 1: Results",), "Revenue grew 10% in 2026."),
        ("heading", ("Slide 1: Results", "Notes"), "Notes"),
        ("paragraph", ("Slide 1: Results", "Notes"), "Mention the harbour."),
        ("heading", ("Slide 2: Outlook",), "Slide 2: Outlook"),
        ("paragraph", ("Slide 2: Outlook",), "Two new turbines."),
        ("heading", ("Slide 3: Table",), "Slide 3: Table"),
        ("table", ("Slide 3: Table",), "turbine | MW\nSB-01 | 1.5"),
    ]
    assert parse(make_pptx([("A", "b", None)], title="Deck"), SourceType.PPTX).title == "Deck"


def test_too_many_slides_or_a_dtd_is_refused() -> None:
    data = make_pptx([(f"S{n}", "body", None) for n in range(3)])
    limits = ParseLimits(max_slides=2)
    with pytest.raises(TooLarge, match="3 slides; the limit is 2"):
        sniff(data, limits=limits)
    with pytest.raises(TooLarge, match="3 slides; the limit is 2"):
        parse(data, SourceType.PPTX, limits=limits)
    part = "ppt/slides/slide1.xml"
    xml = _part(data, part).split(b"?>", 1)[-1]
    hostile = replace_entry(
        data, part, b'<?xml version="1.0"?><!DOCTYPE p SYSTEM "http://x/">' + xml
    )
    with pytest.raises(ValidationError, match="declares a DTD"):
        parse(hostile, SourceType.PPTX)


def test_damaged_office_packages_are_refused_with_a_reason() -> None:
    for data, source_type in (
        (make_pptx([("A", "b", None)]), SourceType.PPTX),
        (make_xlsx({"S": [["a"]]}), SourceType.XLSX),
    ):
        broken = replace_entry(data, "[Content_Types].xml", b"<Types/>")
        with pytest.raises(ValidationError) as caught:
            parse(broken, source_type)
        assert caught.value.field == "content" and source_type.value in caught.value.message


# ---------------------------------------------------------------------------------- e-mail
def test_a_message_gives_metadata_a_title_and_its_text_body() -> None:
    data = make_eml()
    assert sniff(data, filename="message.txt") is SourceType.EMAIL
    doc = parse(data, SourceType.EMAIL)
    check_document(doc, ParseLimits())
    assert doc.title == "Harbour report"
    assert doc.metadata == {
        "sender": "Alice Vaughan <alice@example.org>",
        "recipients": "Bob Reyes <bob@example.org>, carol@example.org",
        "date": "2026-12-01T10:00:00+00:00",
        "subject": "Harbour report",
    }
    assert doc.blocks[0].kind == "field" and doc.blocks[0].text.startswith("From: Alice Vaughan")
    assert [b.text for b in doc.blocks[1:]] == ["Hello Bob,", "The slipway repairs are complete."]


def test_an_html_only_message_is_read_through_the_html_parser() -> None:
    html = (
        "<html><body><h1>Update</h1><script>alert(1)</script><p>All <b>done</b>.</p></body></html>"
    )
    doc = parse(make_eml(text=None, html=html), SourceType.EMAIL)
    assert [(b.kind, b.text) for b in doc.blocks[1:]] == [
        ("heading", "Update"),
        ("paragraph", "All done."),
    ]
    assert "alert" not in doc.text
    both = parse(make_eml(html="<p>HTML version</p>"), SourceType.EMAIL)
    assert "HTML version" not in both.text  # the text/plain alternative is preferred


def test_attachments_are_listed_by_name_and_handed_on_not_read_into_the_message() -> None:
    xlsx = make_xlsx({"Fleet": [["turbine", "MW"], ["SB-01", 1.5]]})
    data = make_eml(
        attachments=[
            ("fleet.xlsx", XLSX_TYPE, xlsx),
            ("sites.csv", "text/csv", make_csv(2)),
            ("logo.png", "image/png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
            ("forwarded.eml", "message/rfc822", make_eml(subject="Inner")),
        ]
    )
    doc = parse(data, SourceType.EMAIL)
    check_document(doc, ParseLimits())
    # The attachments are items of their own (docs/decisions/0048): the message names them.
    assert doc.blocks[-1].kind == "field"
    assert doc.blocks[-1].text == ("Attachments: fleet.xlsx, sites.csv, logo.png, forwarded.eml")
    assert "turbine" not in doc.text and "Inner" not in doc.text
    assert doc.warnings == ()
    parts = attachments_of(data, max_count=20)
    assert [(p.number, p.name, p.reason) for p in parts] == [
        (1, "fleet.xlsx", None),
        (2, "sites.csv", None),
        (3, "logo.png", None),
        (4, "forwarded.eml", "an attached message is not read"),
    ]
    assert parts[0].data == xlsx and parts[0].content_type == XLSX_TYPE
    assert parts[3].data is None


def test_attachments_past_the_count_bound_are_listed_with_the_reason() -> None:
    data = make_eml(attachments=[(f"n{n}.txt", "text/plain", b"note %d" % n) for n in range(5)])
    parts = attachments_of(data, max_count=3)
    assert [p.data is not None for p in parts] == [True, True, True, False, False]
    assert parts[4].reason == "the message has more than 3 attachments, the limit"


def test_mime_parts_are_bounded_in_number_and_depth() -> None:
    many = make_eml(attachments=[(f"n{n}.txt", "text/plain", b"note") for n in range(60)])
    with pytest.raises(TooLarge, match="more than 50 MIME parts"):
        parse(many, SourceType.EMAIL, limits=ParseLimits(max_mime_parts=50))
    head = b"From: a@example.org\nTo: b@example.org\nSubject: deep\nMIME-Version: 1.0\n"
    nested = b""
    for depth in range(40):
        nested += b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (depth, depth)
    nested += b"Content-Type: text/plain\n\ninside\n"
    for depth in reversed(range(40)):
        nested += b"--b%d--\n" % depth
    with pytest.raises(ValidationError) as caught:
        parse(head + nested, SourceType.EMAIL)
    assert "nests MIME parts more than 16 deep" in caught.value.message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"From: a@example.org\nTo: b@example.org\nSubject: hi\n\nbody", SourceType.EMAIL),
        (
            b"From nobody Mon Jan 1 00:00:00 2026\nFrom: a@x\nDate: 1 Jan 2026\nTo: b@x\n\nb",
            SourceType.EMAIL,
        ),
        (b"From: the desk of the editor\n\nDear reader, ...", SourceType.TEXT),
        (b"Subject: notes\nDate: today\n\nno sender", SourceType.TEXT),
        (b"From: a@x\nTo: b@x\nSubject: no blank line ends the headers", SourceType.TEXT),
    ],
)
def test_an_email_is_sniffed_from_its_header_block(data: bytes, expected: SourceType) -> None:
    assert sniff(data) is expected


def test_unsupported_office_and_archive_formats_are_still_refused() -> None:
    with pytest.raises(UnsupportedContent, match="legacy Microsoft Office"):
        sniff(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), filename="old.xls")


def test_an_office_zip_bomb_is_refused_at_upload_and_does_not_stop_its_message() -> None:
    data = make_xlsx({"S": [["a"], ["z" * 50_000]]})
    limits = ParseLimits(max_uncompressed_bytes=40_000)
    with pytest.raises(TooLarge, match="a zip bomb"):
        sniff(data, limits=limits)
    message = make_eml(attachments=[("bomb.xlsx", XLSX_TYPE, data)])
    doc = parse(message, SourceType.EMAIL, limits=limits)
    assert doc.title == "Harbour report" and "slipway repairs" in doc.text
    assert doc.blocks[-1].text == "Attachments: bomb.xlsx"
    # Ingestion sniffs the attachment as an upload of its own: refused there, with the reason.
    [part] = attachments_of(message, limits, max_count=20)
    assert part.data == data


def test_a_dtd_in_a_part_not_named_xml_is_refused_too() -> None:
    data = make_xlsx({"S": [["a"], ["b"]]})
    rels = _part(data, "xl/_rels/workbook.xml.rels").replace(
        b"worksheets/sheet1.xml", b"worksheets/sheet1.dat"
    )
    sheet = _part(data, SHEET)
    renamed = replace_entry(replace_entry(data, "xl/_rels/workbook.xml.rels", rels), SHEET, b"")
    source = zipfile.ZipFile(io.BytesIO(renamed))
    entries = {n: source.read(n) for n in source.namelist() if n != SHEET}
    entries["xl/worksheets/sheet1.dat"] = b'<!DOCTYPE x [<!ENTITY a "a">]>' + sheet
    hostile = make_zip(entries)
    with pytest.raises(ValidationError, match=r"sheet1\.dat declares a DTD"):
        parse(hostile, SourceType.XLSX)
    entries["xl/worksheets/sheet1.dat"] = sheet
    assert parse(make_zip(entries), SourceType.XLSX).text == "S\n\na\nb"
