"""Sentences of an item's text, with character offsets: ``text[s.start:s.end] == s.text``.

A claim quotes one sentence exactly, so the split must keep offsets and never rewrite the
text. Rules, in order:

1. a blank line, or a line that begins a Markdown heading, list item or quote, ends the
   sentence before it; the heading or list marker itself is not part of the next sentence;
2. inside a paragraph, a sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes
   or brackets) followed by white space and a capital letter, a digit or an opening quote
   or bracket, unless the word before the full stop is a known abbreviation ("Dr.", "e.g.",
   "et al.", "Fig.") or a single capital initial ("J. Smith");
3. a line break inside a paragraph is reflow, not a boundary;
4. a press-release dateline ("PORT HALLORAN, 14 March 2019.") is joined to the sentence it
   introduces, whose "today" it dates.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from relata.claims.words import word_set
from relata.domain.errors import ValidationError

MAX_TEXT_CHARS: Final = 20_000_000

_ABBREVIATIONS: Final = word_set(
    """
    dr mr mrs ms prof st mt sr jr inc ltd co corp no nos vs etc al fig figs eq eqs approx
    e.g i.e cf ca resp dept univ vol pp p ed eds est jan feb mar apr jun jul aug sep sept oct
    nov dec u.s u.k
    """
)
_BLOCK_START: Final = re.compile(r"\n[ \t]*(?:#{1,6}[ \t]|[-*+>][ \t]|\d{1,3}[.)][ \t])")
_MARKER: Final = re.compile(
    r"[ \t]*(?:(?P<heading>#{1,6})[ \t]+(?:\d{1,3}(?:\.\d{1,3})*\.?[ \t]+)?"
    r"|(?:[-*+>]|\d{1,3}[.)])[ \t]+)"
)
_PARAGRAPH: Final = re.compile(r"\n[ \t]*\n")
_END: Final = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s+[\"'\u201c\u2018(\[A-Z0-9])")
_DATELINE: Final = re.compile(
    r"[A-Z][A-Z .'\-]{1,40},\s+(?:\d{1,2}\s+[A-Z][a-z]+\.?|[A-Z][a-z]+\.?\s+\d{1,2},?)"
    r"\s+\d{4}\s*[.:\u2014\u2013-]"
)


@dataclass(frozen=True, slots=True)
class Sentence:
    start: int
    end: int
    text: str


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` in order (see the module docstring)."""
    if len(text) > MAX_TEXT_CHARS:
        raise ValidationError(
            f"a text to split into sentences has at most {MAX_TEXT_CHARS} characters, "
            f"not {len(text)}",
            field="text",
        )
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        spans.extend(_split_block(text, block_start, block_end))
    return [Sentence(s, e, text[s:e]) for s, e in _join_datelines(text, spans)]


def _blocks(text: str) -> Iterator[tuple[int, int]]:
    cuts = sorted(
        {0, len(text)}
        | {m.start() for m in _PARAGRAPH.finditer(text)}
        | {m.start() + 1 for m in _BLOCK_START.finditer(text)}
    )
    for start, end in itertools.pairwise(cuts):
        marker = _MARKER.match(text, start, end)
        if marker is not None and (start == 0 or text[start - 1] == "\n"):
            if marker.group("heading"):
                line_end = text.find("\n", marker.end(), end)
                if line_end >= 0:  # a heading is one line; what follows is a paragraph
                    yield marker.end(), line_end
                    start = line_end
                    yield start, end
                    continue
            start = marker.end()
        yield start, end


def _split_block(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cursor = start
    for m in _END.finditer(text, start, end):
        if _abbreviation_before(text, cursor, m.start()):
            continue
        yield from _trimmed(text, cursor, m.end())
        cursor = m.end()
    yield from _trimmed(text, cursor, end)


def _abbreviation_before(text: str, start: int, stop: int) -> bool:
    if text[stop] != ".":
        return False
    words = text[start:stop].split()
    if not words:
        return False
    word = words[-1].lstrip("(\"'")
    if len(word) == 1 and word.isupper():
        return True
    return word.lower() in _ABBREVIATIONS


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end and any(c.isalnum() for c in text[start:end]):
        yield start, end


def _join_datelines(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    index = 0
    while index < len(spans):
        start, end = spans[index]
        m = _DATELINE.fullmatch(text, start, end)
        if (
            m is not None
            and index + 1 < len(spans)
            and "\n\n" not in text[end : spans[index + 1][0]]
        ):
            yield start, spans[index + 1][1]
            index += 2
            continue
        yield start, end
        index += 1
