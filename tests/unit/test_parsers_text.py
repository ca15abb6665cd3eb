"""Text, Markdown and JSON parsers: canonical text, structure, titles and metadata."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from relata.domain.errors import TooLarge, ValidationError
from relata.domain.models import SourceType
from relata.parsing import Document, ParseLimits, markdown, parse, sniff
from relata.parsing.text import check_text_chars


def assert_blocks_slice_text(doc: Document) -> None:
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text
    starts = [b.start for b in doc.blocks]
    assert starts == sorted(starts)


# ---------------------------------------------------------------- plain text
def test_plain_text_paragraphs_are_blocks_with_exact_offsets() -> None:
    data = (
        b"Quarterly report\r\n\r\nRevenue grew.  \r\nCosts fell.\r\n\r\n\r\n\r\n"
        b"Outlook: stable.\r\n"
    )
    doc = parse(data, SourceType.TEXT)
    assert doc.text == "Quarterly report\n\nRevenue grew.\nCosts fell.\n\nOutlook: stable."
    assert [b.text for b in doc.blocks] == [
        "Quarterly report",
        "Revenue grew.\nCosts fell.",
        "Outlook: stable.",
    ]
    assert all(b.kind == "paragraph" and b.heading_path == () for b in doc.blocks)
    assert doc.title == "Quarterly report"
    assert_blocks_slice_text(doc)


def test_plain_text_title_is_not_guessed_from_a_sentence() -> None:
    doc = parse(b"This is a sentence.\n\nAnother one.", SourceType.TEXT)
    assert doc.title is None


def test_control_characters_and_nul_never_reach_the_text() -> None:
    data = "\ufeffBell\x07 and\x1b[0m escape".encode("utf-16-le")
    doc = parse(data, SourceType.TEXT)
    assert doc.text == "Bell and[0m escape"


# ---------------------------------------------------------------- Markdown
MARKDOWN = b"""---
title: Field Guide
author: Ada Lovelace
---
# Birds

Birds are *warm-blooded* vertebrates; see [the atlas](https://example.org/atlas).

## Corvids

Crows use `tools`.

### Ravens

Ravens are large.

#### Deep

Deep text.

## Raptors

```
# not a heading
code line
```

| Bird | Speed |
|------|-------|
| Falcon | 390 |

- first
  - nested **bold**
- second

1. one
2. two

> quoted text

Setext Heading
==============

After setext.
"""


def test_markdown_headings_open_sections_with_heading_paths() -> None:
    doc = parse(MARKDOWN, SourceType.MARKDOWN)
    assert_blocks_slice_text(doc)
    headings = [(b.text, b.level, b.heading_path) for b in doc.blocks if b.kind == "heading"]
    assert headings == [
        ("Birds", 1, ("Birds",)),
        ("Corvids", 2, ("Birds", "Corvids")),
        ("Ravens", 3, ("Birds", "Corvids", "Ravens")),
        ("Deep", 4, ("Birds", "Corvids", "Ravens", "Deep")),
        ("Raptors", 2, ("Birds", "Raptors")),
        ("Setext Heading", 1, ("Setext Heading",)),
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["Ravens are large."].heading_path == ("Birds", "Corvids", "Ravens")
    assert by_text["After setext."].heading_path == ("Setext Heading",)


def test_markdown_inline_markup_is_reduced_to_text() -> None:
    doc = parse(MARKDOWN, SourceType.MARKDOWN)
    paragraphs = [b.text for b in doc.blocks if b.kind == "paragraph"]
    assert "Birds are warm-blooded vertebrates; see the atlas." in paragraphs
    assert "Crows use tools." in paragraphs
    assert "https://" not in doc.text


def test_markdown_code_tables_lists_and_quotes_keep_their_kind() -> None:
    doc = parse(MARKDOWN, SourceType.MARKDOWN)
    kinds = {b.kind: b.text for b in doc.blocks}
    assert kinds["code"] == "# not a heading\ncode line"
    assert kinds["table"] == "Bird | Speed\nFalcon | 390"
    assert kinds["quote"] == "quoted text"
    lists = [b.text for b in doc.blocks if b.kind == "list"]
    assert lists == ["- first\n  - nested bold\n- second", "1. one\n2. two"]
    assert all(b.heading_path == ("Birds", "Raptors") for b in doc.blocks if b.kind == "list")


def test_markdown_front_matter_becomes_title_and_metadata_not_text() -> None:
    doc = parse(MARKDOWN, SourceType.MARKDOWN)
    assert doc.title == "Field Guide"
    assert doc.metadata == {"author": "Ada Lovelace"}
    assert "Lovelace" not in doc.text
    assert doc.text.startswith("Birds\n\n")


def test_markdown_title_falls_back_to_a_leading_h1() -> None:
    doc = parse(b"# The Title\n\nBody.\n\n# Second\n", SourceType.MARKDOWN)
    assert doc.title == "The Title"


# ---------------------------------------------------------------- JSON
def test_json_becomes_path_value_lines() -> None:
    data = json.dumps(
        {
            "title": "On Computable Numbers",
            "authors": [{"name": "Ada", "born": 1815}, {"name": "Alan"}],
            "open": True,
            "doi": None,
            "weird.key": {"with space": 1.5},
            "empty": {"list": [], "obj": {}},
        }
    ).encode()
    doc = parse(data, SourceType.JSON)
    assert doc.title == "On Computable Numbers"
    assert doc.text.split("\n") == [
        "title: On Computable Numbers",
        "",
        "authors[0].name: Ada",
        "authors[0].born: 1815",
        "authors[1].name: Alan",
        "",
        "open: true",
        "",
        "doi: null",
        "",
        '["weird.key"]["with space"]: 1.5',
        "",
        "empty.list: []",
        "empty.obj: {}",
    ]
    assert [b.kind for b in doc.blocks] == ["field"] * 6
    assert_blocks_slice_text(doc)


def test_json_array_of_records_is_one_block_per_record() -> None:
    data = json.dumps([{"id": 1, "text": "first"}, {"id": 2, "text": "second"}]).encode()
    doc = parse(data, SourceType.JSON)
    assert [b.text for b in doc.blocks] == [
        "[0].id: 1\n[0].text: first",
        "[1].id: 2\n[1].text: second",
    ]
    assert {b.kind for b in doc.blocks} == {"record"}


def test_invalid_json_is_a_validation_error_with_the_position() -> None:
    with pytest.raises(ValidationError) as info:
        parse(b'{"a": 1,\n "b": }', SourceType.JSON)
    assert "not valid JSON" in info.value.message
    assert "line 2" in info.value.message
    assert info.value.field == "content"


def test_json_lone_surrogates_are_replaced_not_stored() -> None:
    doc = parse(b'{"a": "x\\ud800y", "b": "nul\\u0000here"}', SourceType.JSON)
    assert doc.text == "a: x\ufffdy\n\nb: nulhere"
    doc.text.encode("utf-8")  # storable


def test_markdown_is_parsed_in_segments_without_losing_structure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = (
        "# Top\n\nIntro paragraph here.\n\n## Code\n\n"
        "```\nline one\n\n\n\nline two after blanks\n```\n\n"
        "After the fence.\n\n" + "Filler sentence number one.\n\n" * 10
    )
    whole = parse(source.encode(), SourceType.MARKDOWN)
    monkeypatch.setattr(markdown, "_SEGMENT_CHARS", 40)
    pieces = markdown.segments(source)
    assert len(pieces) > 3
    assert "\n".join(pieces) == source
    assert not any(p.count("```") == 1 for p in pieces), "a fence was cut in two"
    assert parse(source.encode(), SourceType.MARKDOWN) == whole


# ---------------------------------------------------------------- plain text over the limit
_LIMITS = ParseLimits(max_chars=1000)


_SEPARATORS = ["\n", "\n\n", "\n\n\n", "\r\n\r\n", " \t\n\n", "\x0c", " "]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 40),
            st.sampled_from(["word ", "é ", "word\t"]),
            st.sampled_from(_SEPARATORS),
        ),
        min_size=4,
        max_size=25,
    )
)
@settings(max_examples=300, deadline=None)
def test_upload_refuses_plain_text_exactly_when_its_parse_would(
    paragraphs: list[tuple[int, str, str]],
) -> None:
    # The same verdict at upload (sniff) and at parse: nothing accepted then failed later.
    text = "".join(word * n + sep for n, word, sep in paragraphs)
    data = text.encode()
    try:
        parsed: Document | None = parse(data, SourceType.TEXT, limits=_LIMITS)
    except TooLarge:
        parsed = None
    except ValidationError:  # empty, not a length matter
        return
    try:
        check_text_chars(data.decode(), _LIMITS)
        refused = False
    except TooLarge as exc:
        refused = True
        assert "RELATA_PARSE_MAX_CHARS" in exc.message
    event("refused" if refused else "accepted")
    assert refused == (parsed is None)
    if parsed is None:
        assert len(text) > 1000


def test_plain_text_just_over_the_limit_is_refused_at_sniff_naming_the_setting() -> None:
    text = "word " * 300  # 1499 characters once the trailing space is trimmed
    with pytest.raises(TooLarge, match=r"limit of 1000 characters \(RELATA_PARSE_MAX_CHARS\)"):
        sniff(text.encode(), limits=_LIMITS)
    assert sniff(("word " * 200).encode(), limits=_LIMITS) is SourceType.TEXT


def test_json_lines_and_a_list_of_records_take_the_first_records_title() -> None:
    lines = (
        b'{"title": "Grid report", "text": "The array began in 2019."}\n'
        b'{"title": "Second", "text": "Other, things."}\n'
    )
    kind = sniff(lines, filename="reports.jsonl")
    assert parse(lines, kind).title == "Grid report"
    records = json.dumps([{"title": "Grid report", "text": "x"}, {"title": "Other"}]).encode()
    assert parse(records, SourceType.JSON).title == "Grid report"
    # a first line that is not one JSON object leaves the plain-text guess alone
    assert parse(b"Quarterly report\n\n{not json}", SourceType.TEXT).title == "Quarterly report"
