"""Parse work is bounded by what a document holds, and what is known to be over a limit is
refused at upload (``sniff``) with ``TooLarge`` naming the limit, not stored and failed later.

The shapes are the ones probing found: a 48 MB JSON file that sniffing parsed in full (1.3 GB
RSS in the upload request) only to fail at parse over the character limit, and a 20-30 MB
DOCX whose 127 MB ``document.xml`` of near-empty paragraphs passed every zip bound and held a
worker for ~106 s.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.domain.errors import TooLarge, UnsupportedContent
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse, sniff
from relata.parsing.decode import decode_text
from relata.parsing.jsondoc import check_json_lines, commas_outside_strings
from relata.parsing.model import fewest_chars
from relata.parsing.sniff import JSON_SNIFF_CHARS
from tests.fuzz.docgen import make_hollow_docx, make_pdf

_RECORD = b'{"id": 12345, "name": "record", "tags": ["a", "b"]},'


def _big_json(size: int) -> bytes:
    return b'{"rows": [' + _RECORD * (size // len(_RECORD)) + b"{}]}"


# ------------------------------------------------------------ text over the character limit
def test_a_48_mb_json_is_refused_at_upload_without_being_decoded_or_parsed() -> None:
    data = _big_json(48_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge) as caught:
            sniff(data, filename="dump.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.field == "content" and caught.value.code == "content_too_large"
    assert "RELATA_PARSE_MAX_CHARS" in caught.value.message
    assert "10000000 characters" in caught.value.message
    # json.loads of it built ~1.3 GB of objects; decoding alone would copy the 48 MB.
    assert peak < len(data) // 10, peak


@pytest.mark.parametrize("source_type", [SourceType.TEXT, SourceType.MARKDOWN, SourceType.JSON])
def test_sniff_and_parse_refuse_the_same_over_long_text(source_type: SourceType) -> None:
    limits = ParseLimits(max_chars=1000)
    over = b"[" + b"1," * 1000 + b"1]" if source_type is SourceType.JSON else b"word " * 401
    assert len(over) > 2 * limits.max_chars
    with pytest.raises(TooLarge, match="RELATA_PARSE_MAX_CHARS"):
        sniff(over, limits=limits)
    with pytest.raises(TooLarge, match="RELATA_PARSE_MAX_CHARS"):
        parse(over, source_type, limits=limits)
    # Within twice the limit Markdown's extracted text may still fit (its markup goes):
    # sniffing lets the parser decide. Plain text's extracted length is known exactly, so it
    # is refused at once (``check_text_chars``), as the parser would refuse it.
    assert sniff(b"word " * 399, filename="notes.md", limits=limits) is SourceType.MARKDOWN
    with pytest.raises(TooLarge, match="RELATA_PARSE_MAX_CHARS"):
        sniff(b"word " * 399, limits=limits)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "cp1252"]),
)
def test_the_character_count_before_decoding_is_never_more_than_decoding_gives(
    text: str, encoding: str
) -> None:
    try:
        data = text.encode(encoding)
        decoded = decode_text(data).text
    except (UnicodeEncodeError, UnsupportedContent):  # not encodable, or refused as binary
        return
    assert fewest_chars(data) <= len(decoded)


# ------------------------------------------------------------ JSON sniffed within a bound
def _long_array(tokens: str, cut_at: int) -> str:
    """A valid JSON array longer than the sniff bound whose prefix ends ``cut_at`` characters
    into ``tokens``."""
    head = "[" + " " * (JSON_SNIFF_CHARS - 1 - cut_at)
    return head + tokens + ", 0" * 10 + "]"


_TOKENS = '12345.678e-2, true, null, false, "a\\u00e9\\n\\"q", {"k": -0.5, "l": []}'


@pytest.mark.parametrize("cut_at", range(len(_TOKENS) + 1))
def test_long_json_is_json_wherever_the_sniffed_prefix_ends(cut_at: int) -> None:
    text = _long_array(_TOKENS, cut_at)
    json.loads(text)  # the premise: valid JSON, longer than what sniffing validates
    assert len(text) > JSON_SNIFF_CHARS
    assert sniff(text.encode()) is SourceType.JSON


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[TODO] write the report\n" + "Some notes.\n" * 100_000, id="bracket-prose"),
        pytest.param('{"a": 1}\n' + "Then prose follows.\n" * 100_000, id="json-then-prose"),
        pytest.param("[1, 2 3" + ", 4" * 400_000 + "]", id="error-early"),
        pytest.param("[" + "1, " * 400_000 + "and so on", id="no-closing-bracket"),
    ],
)
def test_long_text_that_is_not_json_is_not_sniffed_as_json(text: str) -> None:
    assert len(text) > JSON_SNIFF_CHARS
    assert sniff(text.encode()) is not SourceType.JSON


# ------------------------------------------------------------ JSON values (lines) counted first
def test_json_over_the_line_limit_is_refused_at_upload_and_before_json_loads() -> None:
    limits = ParseLimits(max_json_lines=10)
    ten = json.dumps({"a": [1, 2, 3], "b": {"c": "x,y,z", "d": []}, "e": [4, 5, 6, 7, 8]})
    assert sniff(ten.encode(), limits=limits) is SourceType.JSON
    lines = parse(ten.encode(), SourceType.JSON, limits=limits).text.splitlines()
    assert len([line for line in lines if line]) == 10
    eleven = ten.replace("[4,", "[4, 9,").encode()
    with pytest.raises(TooLarge, match=r"more than 10 values.*limit is 10 lines"):
        sniff(eleven, limits=limits)
    with pytest.raises(TooLarge, match="limit is 10 lines"):
        parse(eleven, SourceType.JSON, limits=limits)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=30,
)


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


@settings(max_examples=150, deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 2]))
def test_the_counted_values_are_exactly_the_lines_json_flattens_to(
    value: Any, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent)
    lines = _leaves(value)
    check_json_lines(text, ParseLimits(max_json_lines=lines))
    if lines > 1:
        with pytest.raises(TooLarge):
            check_json_lines(text, ParseLimits(max_json_lines=lines - 1))


def _commas_outside_by_hand(text: str) -> int:
    count, inside, escaped = 0, False, False
    for ch in text:
        if inside:
            escaped, inside = (False, inside) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            inside = True
        elif ch == ",":
            count += 1
    return count


@settings(max_examples=300, deadline=None)
@given(
    value=st.lists(st.text(st.sampled_from('",\\ aé\n'), max_size=8), max_size=6),
    ascii_only=st.booleans(),
    window=st.sampled_from([1, 2, 3, 5, 64]),
)
def test_commas_inside_strings_are_told_apart_across_window_boundaries(
    value: list[str], ascii_only: bool, window: int
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    want = _commas_outside_by_hand(text)
    assert commas_outside_strings(text, stop_at=1 << 30, window=window) == want
    stopped = commas_outside_strings(text, stop_at=1, window=window)  # stops once it has one
    assert (stopped >= 1) == (want >= 1) and stopped <= want


# ------------------------------------------------------------ DOCX bounded by what it holds
def test_a_docx_body_over_the_byte_limit_is_refused_from_the_zip_directory() -> None:
    data = make_hollow_docx(300_000)
    limits = ParseLimits(max_docx_xml_bytes=200_000)
    for refuse in (
        lambda: sniff(data, limits=limits),
        lambda: parse(data, SourceType.DOCX, limits=limits),
    ):
        with pytest.raises(TooLarge, match=r"word/document\.xml.*limit is 200000 bytes"):
            refuse()


def test_near_empty_paragraphs_are_counted_against_the_paragraph_limit() -> None:
    data = make_hollow_docx(300_000)  # ~12,000 empty paragraphs and one with text
    assert sniff(data) is SourceType.DOCX
    assert parse(data, SourceType.DOCX).text == "The only text."
    with pytest.raises(TooLarge, match="more than 5000 paragraphs"):
        parse(data, SourceType.DOCX, limits=ParseLimits(max_docx_paragraphs=5000))


def test_one_paragraph_of_countless_runs_is_refused_before_it_fills_memory() -> None:
    data = make_hollow_docx(300_000, runs_in_one_paragraph=True)
    assert parse(data, SourceType.DOCX).text == "The only text."
    with pytest.raises(TooLarge, match=r"single paragraph or table .* 5000 XML elements"):
        parse(data, SourceType.DOCX, limits=ParseLimits(max_block_elements=5000))
    with pytest.raises(TooLarge, match="more than 6000 XML elements"):
        parse(data, SourceType.DOCX, limits=ParseLimits(max_xml_elements=6000))


@pytest.mark.slow
def test_the_probed_127_mb_hollow_docx_is_refused_at_upload_and_at_parse() -> None:
    data = make_hollow_docx(127_000_000)
    assert len(data) < 50 * 1024 * 1024  # under the default upload limit, like the probe's
    with pytest.raises(TooLarge, match=r"word/document\.xml\) is 127\d{6} bytes"):
        sniff(data, filename="minutes.docx")
    with pytest.raises(TooLarge, match="limit is 67108864 bytes"):
        parse(data, SourceType.DOCX)


@pytest.mark.slow
def test_a_hollow_docx_under_the_byte_limit_stops_at_the_paragraph_limit() -> None:
    data = make_hollow_docx(60_000_000)  # ~2.4 million near-empty paragraphs
    assert sniff(data) is SourceType.DOCX
    with pytest.raises(TooLarge, match="more than 500000 paragraphs"):
        parse(data, SourceType.DOCX)


# ------------------------------------------------------------ Markdown lines, PDF operators
def test_markdown_of_too_many_lines_is_refused_at_upload_and_at_parse() -> None:
    limits = ParseLimits(max_markdown_lines=100)
    fits = b"# List\r\n" + b"- a\r\n" * 98 + b"- b"  # 100 lines, CRLF counted once
    over = fits + b"\n- c"
    assert sniff(fits, filename="l.md", limits=limits) is SourceType.MARKDOWN
    assert parse(fits, SourceType.MARKDOWN, limits=limits).title == "List"
    with pytest.raises(TooLarge, match="101 lines; the limit is 100 lines"):
        sniff(over, filename="l.md", limits=limits)
    with pytest.raises(TooLarge, match="the limit is 100 lines"):
        parse(over, SourceType.MARKDOWN, limits=limits)
    # The same bytes as plain text have no Markdown structure to read: no such cost.
    assert sniff(over, filename="l.txt", limits=limits) is SourceType.TEXT


def test_the_pdf_deadline_is_checked_within_a_page_not_only_between_pages() -> None:
    data = make_pdf([["a line of text"] * 5000])  # one page, 10,000 content operators
    ticks = iter(range(1_000_000))  # every look at the clock is one more "second"

    def clock() -> float:
        return float(next(ticks))

    # Between pages alone the clock is read three times; within the page, every 2,000
    # operators as well, so a 3-second budget runs out inside the page.
    with pytest.raises(TooLarge, match="longer than the limit of 3 seconds"):
        parse(data, SourceType.PDF, limits=ParseLimits(max_seconds=3), clock=clock)
    assert parse(data, SourceType.PDF).text.count("a line of text") == 5000
