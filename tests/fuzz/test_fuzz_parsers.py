"""Property tests of sniff, every parser and the chunker on arbitrary and mutated input.

The promise under test: whatever the bytes, ``sniff`` and ``parse`` either succeed with a
document that satisfies the invariants (exact block slices, storable text, within the
bounds) or raise ``UnsupportedContent``/``ValidationError``; nothing else escapes and no
example takes long (hypothesis ``deadline``). Small limits make the bounds easy to hit.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relata.chunking import chunk_document
from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import Document, ParseLimits, parse, sniff
from tests.fuzz.docgen import make_docx, make_pdf, make_zip
from tests.fuzz.invariants import check_chunks, check_document

LIMITS = ParseLimits(
    max_pdf_pages=20,
    max_chars=20_000,
    max_seconds=30,
    max_zip_entries=50,
    max_uncompressed_bytes=2_000_000,
    max_json_depth=16,
    max_json_lines=500,
    max_blocks=400,
)
FUZZ = settings(
    max_examples=150,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(FUZZ, max_examples=60)

PDF_SEED = make_pdf([["A first page (with parens).", "Second line."], ["Page two."]], title="T")
DOCX_SEED = make_docx([("h1", "Head"), ("p", "Body text.")], table=[["a", "b"]])
PREFIXES = [
    b"%PDF-1.7\n",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff",
    b"\xff\xfe\x00\x00",
    b"{",
    b"[",
    b"# ",
    b"---\ntitle: x\n",
    b"\x89PNG\r\n\x1a\n",
]
MARKDOWN_ALPHABET = st.sampled_from([*list("#*_-`[]()|>!:=~+1. \n\n\taZé"), "```", "| --- |"])


def parsed_or_refused(data: bytes, source_type: SourceType) -> Document | None:
    try:
        doc = parse(data, source_type, limits=LIMITS)
    except (UnsupportedContent, ValidationError) as exc:
        assert exc.message and exc.field == "content"
        return None
    check_document(doc, LIMITS)
    assert doc.source_type is source_type
    return doc


def mutations(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` with a few byte ranges overwritten, and perhaps truncated."""
    edits = st.lists(
        st.tuples(st.integers(0, len(seed) - 1), st.binary(min_size=1, max_size=8)), max_size=6
    )

    def apply(args: tuple[list[tuple[int, bytes]], int]) -> bytes:
        changes, cut = args
        data = bytearray(seed)
        for pos, patch in changes:
            data[pos : pos + len(patch)] = patch
        return bytes(data[:cut])

    return st.tuples(edits, st.integers(1, len(seed))).map(apply)


@FUZZ
@given(st.binary(max_size=2048))
def test_sniff_and_parse_arbitrary_bytes(data: bytes) -> None:
    try:
        source_type = sniff(data, limits=LIMITS)
    except (UnsupportedContent, ValidationError):
        return
    parsed_or_refused(data, source_type)


@FUZZ
@given(
    st.sampled_from(PREFIXES), st.binary(max_size=1024), st.sampled_from([None, "a.md", "b.txt"])
)
def test_sniff_magic_prefixes(prefix: bytes, rest: bytes, filename: str | None) -> None:
    data = prefix + rest
    try:
        source_type = sniff(data, filename=filename, limits=LIMITS)
    except (UnsupportedContent, ValidationError):
        return
    assert isinstance(source_type, SourceType)
    parsed_or_refused(data, source_type)


@FUZZ
@given(st.text(max_size=3000), st.sampled_from(["utf-8", "utf-16", "utf-32", "latin-1"]))
def test_text_parser(text: str, encoding: str) -> None:
    data = text.encode(encoding, errors="replace")
    doc = parsed_or_refused(data, SourceType.TEXT)
    if doc is not None and encoding in ("utf-16", "utf-32"):
        assert doc.warnings == ()


@FUZZ
@given(st.lists(MARKDOWN_ALPHABET | st.text(max_size=12), max_size=400).map("".join))
def test_markdown_parser(text: str) -> None:
    parsed_or_refused(text.encode(), SourceType.MARKDOWN)


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=60,
)


@FUZZ
@given(json_values)
def test_json_parser_on_valid_json(value: Any) -> None:
    data = json.dumps(value).encode()
    doc = parsed_or_refused(data, SourceType.JSON)
    if doc is not None:
        assert parse(data, SourceType.JSON, limits=LIMITS) == doc


@FUZZ
@given(st.integers(1, 3000), st.sampled_from(["[", '{"a":']))
def test_json_nesting_is_bounded(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    data = (opener * depth + "1" + closer * depth).encode()
    doc = parsed_or_refused(data, SourceType.JSON)
    assert (doc is None) == (depth > LIMITS.max_json_depth)


@FEW
@given(mutations(PDF_SEED))
def test_pdf_parser_on_mutated_pdfs(data: bytes) -> None:
    parsed_or_refused(data, SourceType.PDF)


@FEW
@given(st.binary(max_size=1024))
def test_pdf_parser_on_garbage_after_a_header(rest: bytes) -> None:
    parsed_or_refused(b"%PDF-1.4\n" + rest, SourceType.PDF)


@FEW
@given(mutations(DOCX_SEED))
def test_docx_parser_on_mutated_archives(data: bytes) -> None:
    parsed_or_refused(data, SourceType.DOCX)


XML_PIECES = st.sampled_from(
    [
        "<w:p>", "</w:p>", "<w:r>", "</w:r>", "<w:t>", "</w:t>", "<w:tbl>", "</w:tbl>",
        "<w:tr>", "</w:tr>", "<w:tc>", "</w:tc>", "<w:br/>", "<w:tab/>", "<w:sdt>",
        "<w:sdtContent>", "</w:sdtContent>", "</w:sdt>", "&amp;", "&bogus;", "text ",
        '<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>', '<w:pPr><w:outlineLvl w:val="2"/></w:pPr>',
        "<!DOCTYPE x>", "<![CDATA[x]]>", "\x00",
    ]
)  # fmt: skip


@FUZZ
@given(st.lists(XML_PIECES, max_size=60).map("".join))
def test_docx_parser_on_random_wordprocessingml(body: str) -> None:
    xml = (
        '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
        f'wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>'
    )
    parsed_or_refused(
        make_zip({"word/document.xml": xml.encode("utf-8", "replace")}), SourceType.DOCX
    )


@FUZZ
@given(
    st.lists(MARKDOWN_ALPHABET | st.text(max_size=40), max_size=300).map("".join),
    st.integers(20, 600),
    st.integers(0, 300),
)
def test_chunking_invariants_and_determinism(text: str, target: int, overlap: int) -> None:
    doc = parsed_or_refused(text.encode(), SourceType.MARKDOWN)
    if doc is None:
        return
    chunks = chunk_document(doc, target_chars=target, overlap_chars=overlap)
    check_chunks(doc, chunks, target)
    assert chunk_document(doc, target_chars=target, overlap_chars=overlap) == chunks


@FEW
@given(st.lists(st.text(max_size=300), min_size=1, max_size=4), st.integers(40, 400))
def test_chunking_of_pdf_pages_never_spans_a_page(pages: list[str], target: int) -> None:
    lines = [
        [line.encode("latin-1", "ignore").decode("latin-1") for line in p.split("\n")]
        for p in pages
    ]
    doc = parsed_or_refused(make_pdf(lines), SourceType.PDF)
    if doc is None:
        return
    check_chunks(doc, chunk_document(doc, target_chars=target, overlap_chars=target // 4), target)


@pytest.mark.timeout(120)  # linear code needs well under a second; quadratic code needs hours
@pytest.mark.parametrize(
    "text",
    [
        pytest.param(" " * 300_000 + "x", id="spaces"),
        pytest.param("\t " * 150_000 + "x", id="tabs-and-spaces"),
        pytest.param("." * 300_000, id="periods"),
        pytest.param('."' * 150_000, id="periods-and-quotes"),
        pytest.param("!?" * 150_000 + " Next.", id="marks"),
        pytest.param("。" * 300_000, id="cjk-stops"),
        pytest.param("a" * 300_000 + ". B", id="one-long-word"),
    ],
)
def test_long_runs_cost_linear_time(text: str) -> None:
    limits = ParseLimits(max_chars=1_000_000)
    doc = parse(text.encode(), SourceType.TEXT, limits=limits)
    check_document(doc, limits)
    chunks = chunk_document(doc, target_chars=1000, overlap_chars=200)
    check_chunks(doc, chunks, 1000)
