"""HTML and CSV/TSV parsers: main content and headings, header-led row groups, the sniffing
that tells them from Markdown and prose, and hostile inputs refused within their bounds."""

from __future__ import annotations

import time

import pytest

from relata.chunking import chunk_document
from relata.domain.errors import TooLarge, ValidationError
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse, sniff
from tests.fuzz.invariants import check_chunks, check_document
from tests.fuzz.officegen import HTML_PAGE, make_csv


# ------------------------------------------------------------------------------------ HTML
def test_html_keeps_the_main_content_with_its_headings_and_never_script_or_style() -> None:
    assert sniff(HTML_PAGE) is SourceType.HTML
    doc = parse(HTML_PAGE, SourceType.HTML)
    check_document(doc, ParseLimits())
    assert doc.title == "Harbour report"
    assert doc.metadata == {"author": "Alice Vaughan", "language": "en"}
    kinds = [(b.kind, b.heading_path, b.text) for b in doc.blocks]
    assert kinds == [
        ("heading", ("Slipway repairs",), "Slipway repairs"),
        ("paragraph", ("Slipway repairs",), "The slipway repairs were completed in October."),
        ("heading", ("Slipway repairs", "Costs"), "Costs"),
        ("table", ("Slipway repairs", "Costs"), "Item | Cost\nConcrete | 1200"),
        ("list", ("Slipway repairs", "Costs"), "- Pour"),
        ("list", ("Slipway repairs", "Costs"), "- Cure"),
    ]
    for absent in ("never text", "color", "Home", "Copyright"):
        assert absent not in doc.text


def test_html_title_falls_back_to_the_first_h1_and_hidden_content_is_left_out() -> None:
    page = (
        b"<html><body><div hidden>secret plan</div><p aria-hidden='true'>icon</p>"
        b"<h1>Tide tables</h1><noscript>enable js</noscript><template>tpl</template>"
        b"<svg><text>chart</text></svg><pre>  x = 1\n    y = 2</pre></body></html>"
    )
    doc = parse(page, SourceType.HTML)
    assert doc.title == "Tide tables"
    assert "secret" not in doc.text and "icon" not in doc.text and "enable js" not in doc.text
    assert "tpl" not in doc.text and "chart" not in doc.text
    code = [b for b in doc.blocks if b.kind == "code"]
    assert code and code[0].text == "x = 1\n    y = 2"  # whitespace inside <pre> kept


@pytest.mark.parametrize(
    ("data", "filename", "content_type", "expected"),
    [
        pytest.param(b"<!-- c -->\n<!doctype html><p>x", None, None, SourceType.HTML, id="doctype"),
        pytest.param(b"  <HTML><body>x</body></HTML>", None, None, SourceType.HTML, id="html-tag"),
        pytest.param(b"<p>Fragment</p>", "page.htm", None, SourceType.HTML, id="fragment-by-name"),
        pytest.param(b"<div>x</div>", None, "text/html; charset=utf-8", SourceType.HTML, id="type"),
        pytest.param(b"# Notes\n\n<p>inline</p>", "notes.html", None, SourceType.MARKDOWN, id="md"),
        pytest.param(b"<p>Fragment</p>", None, None, SourceType.TEXT, id="fragment-no-hint"),
    ],
)  # fmt: skip
def test_html_is_sniffed_from_its_start_or_a_tag_named_as_html(
    data: bytes, filename: str | None, content_type: str | None, expected: SourceType
) -> None:
    assert sniff(data, filename=filename, content_type=content_type) is expected


def test_html_nesting_and_element_count_are_bounded() -> None:
    deep = b"<html><body>" + b"<div>" * 300 + b"deep" + b"</div>" * 300 + b"</body></html>"
    with pytest.raises(TooLarge, match="nests elements more than 50 deep"):
        parse(deep, SourceType.HTML, limits=ParseLimits(max_nesting=50))
    many = b"<html><body>" + b"<p>x</p>" * 3000 + b"</body></html>"
    with pytest.raises(TooLarge, match="more than 1000 elements"):
        parse(many, SourceType.HTML, limits=ParseLimits(max_xml_elements=1000))


def test_hostile_html_is_refused_or_read_quickly_within_bounds() -> None:
    limits = ParseLimits()
    bomb = (
        b'<!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;">]>'
        b"<html><body><p>&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;</p></body></html>"
    )
    unclosed = b"<html><body>" + b"<div><span><table><tr><td>" * 20_000
    for data in (bomb, unclosed, b"<html>" + b"<p>" * 100_000):
        start = time.monotonic()
        try:
            doc = parse(data, SourceType.HTML, limits=limits)
        except ValidationError as exc:
            assert exc.field == "content"
        else:
            check_document(doc, limits)
            assert len(doc.text) < 100_000  # the entities were never expanded
        assert time.monotonic() - start < 10


# --------------------------------------------------------------------------------- CSV/TSV
def test_every_chunk_of_a_long_csv_starts_with_its_header() -> None:
    data = make_csv(400)
    assert sniff(data) is SourceType.CSV
    doc = parse(data, SourceType.CSV)
    check_document(doc, ParseLimits())
    chunks = chunk_document(doc, target_chars=1000, overlap_chars=200)
    check_chunks(doc, chunks, 1000)
    assert len(chunks) > 10
    for chunk in chunks:
        assert chunk.text.startswith("turbine | site | megawatts\n"), chunk.text[:60]
    assert chunks[0].heading_path[0].startswith("rows 2-")
    rows = [line for c in chunks for line in c.text.split("\n")[1:]]
    assert rows == [f"SB-{n:03d} | Site {n % 7} | {n * 1.5:.1f}" for n in range(400)]


def test_tsv_quoted_fields_and_a_short_table() -> None:
    data = make_csv(3, delimiter="\t")
    assert sniff(data) is SourceType.TSV
    doc = parse(data, SourceType.TSV)
    assert [b.heading_path for b in doc.blocks] == [()]  # one group: no "rows" section
    quoted = b'name,note,count\nA,"two\nlines, and a comma",3\nB,"say ""hi""",4\n'
    doc = parse(quoted, SourceType.CSV)
    assert doc.text == 'name | note | count\nA | two lines, and a comma | 3\nB | say "hi" | 4'


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (b"Hello, world.\nThis is, prose.\nAnd more, prose here.\n", None, SourceType.TEXT),
        (b"a,b\n1,2\n", "two.csv", SourceType.CSV),
        (b"a,b,c\n1,2,3\n4,5,6\n", "data.txt", SourceType.TEXT),
        (b"a,b,c\n1,2,3\n4,5,6\n", None, SourceType.CSV),
        (b"x\ty\n" * 12, None, SourceType.TSV),
    ],
)
def test_csv_is_sniffed_from_consistent_delimiters_unless_a_hint_says_otherwise(
    data: bytes, filename: str | None, expected: SourceType
) -> None:
    assert sniff(data, filename=filename) is expected


def test_hostile_csv_is_refused_naming_the_bound() -> None:
    with pytest.raises(TooLarge, match="more than 100 cells"):
        parse(make_csv(200), SourceType.CSV, limits=ParseLimits(max_cells=100))
    huge_field = b'a,b\n"' + b"x" * 200_000 + b'",1\n'
    with pytest.raises(ValidationError, match="CSV content is malformed at line"):
        parse(huge_field, SourceType.CSV)
    with pytest.raises(ValidationError, match="no extractable text"):
        parse(b",,,\n,,,\n", SourceType.CSV)
