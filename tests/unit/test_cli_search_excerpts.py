"""The excerpts ``relata search`` (and the API) show: windows cut at word boundaries, around
the first match, with highlight offsets still pointing at the matched words."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from relata.cli.common import clip_words
from relata.domain.models import Chunk
from relata.search.excerpts import EXCERPT_CHARS, _excerpt, excerpt_window

WORDS = st.sampled_from(["seal", "tidal", "a", "Halloran", "turbine-lanes", "x", "grey", "of"])


def _chunk(text: str, start_offset: int = 1000) -> Chunk:
    return Chunk(
        id="c1",
        workspace_id="w",
        item_id="i",
        sequence=0,
        text=text,
        content_hash="h",
        start_offset=start_offset,
        end_offset=start_offset + len(text),
    )


def _marks(text: str, word: str) -> tuple[tuple[int, int], ...]:
    return tuple(m.span() for m in re.finditer(rf"\b{word}\b", text))


@given(st.lists(WORDS, min_size=1, max_size=300), st.sampled_from(["seal", "grey", "Halloran"]))
def test_an_excerpt_starts_and_ends_on_word_boundaries_and_keeps_its_highlights(
    words: list[str], query: str
) -> None:
    text = " ".join(words)
    marks = _marks(text, query)
    ex = _excerpt(_chunk(text), marks)
    start = ex.start - 1000
    assert len(ex.text) <= EXCERPT_CHARS and text[start : start + len(ex.text)] == ex.text
    assert start == 0 or text[start - 1] == " "
    end = start + len(ex.text)
    assert end == len(text) or text[end] == " "
    for s, e in ex.highlights:
        assert ex.text[s:e] == query
    if marks:
        assert ex.highlights, "the first match is always inside the excerpt"
        assert ex.highlights[0] == (marks[0][0] - start, marks[0][1] - start)


def test_a_long_passage_is_cut_before_a_word_not_inside_it() -> None:
    text = ("The seal colony on Skerry Rock grew again this year. " * 20).strip()
    start, end = excerpt_window(text, None)
    assert start == 0 and end < len(text)
    assert text[:end].endswith(("year.", "Rock", "grew", "again", "this", "seal", "colony"))
    assert text[end] == " "


def test_a_window_around_a_late_match_starts_at_a_word() -> None:
    text = "word " * 200 + "Halloran " + "tail " * 50
    marks = _marks(text, "Halloran")
    start, end = excerpt_window(text, marks[0])
    assert text[start - 1] == " " and text[start:].startswith("word")
    assert start < marks[0][0] < marks[0][1] <= end


def test_a_single_word_longer_than_the_window_is_still_cut() -> None:
    text = "x" * (EXCERPT_CHARS * 2)
    assert excerpt_window(text, None) == (0, EXCERPT_CHARS)


def test_cli_snippets_are_clipped_at_a_word_with_an_ellipsis() -> None:
    assert clip_words("one  two\nthree", 20) == "one two three"
    assert clip_words("alpha beta gamma delta", 13) == "alpha beta …"
    assert clip_words("abcdefghij", 5) == "abcd …"
