"""Where text may be cut: sentence, line and word boundaries, as absolute spans.

Every function takes ``text`` with a ``[start, end)`` region and returns spans inside it,
trimmed of surrounding whitespace, in order and non-overlapping, that together cover every
non-whitespace character of the region. Sentence detection is deliberately simple and
deterministic: a run of ``.!?`` (plus closing quotes or brackets) followed by whitespace and
a character that is not lowercase, unless the word before is a known abbreviation ("e.g.",
"et al.", "Fig.") or an initial ("J."); CJK full stops always end a sentence.
"""

from __future__ import annotations

import re

# Matches start only at the beginning of a punctuation run and never backtrack (possessive),
# so a long run of "....." costs linear, not quadratic, time.
_SENTENCE_END = re.compile(
    r"(?<![.!?…])[.!?…]++[\"'”’)\]]*+\s+|(?<![。！？])[。！？]++[」』）]*+\s*"
)
_WHITESPACE = re.compile(r"\s+")
_ABBREVIATIONS = frozenset(
    {
        "al", "approx", "ca", "cf", "co", "dept", "dr", "e.g", "eg", "eq", "eqs", "est",
        "fig", "figs", "i.e", "ie", "inc", "jr", "ltd", "mr", "mrs", "ms", "no", "nos",
        "p", "pp", "prof", "ref", "refs", "sec", "sr", "st", "vol", "vs",
    }
)  # fmt: skip


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _is_abbreviation(text: str, region_start: int, dot: int) -> bool:
    """Whether the period at ``dot`` closes an abbreviation or an initial."""
    word_start = dot
    while word_start > region_start and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lstrip("([\"'").lower()
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cut = start
    for match in _SENTENCE_END.finditer(text, start, end):
        nxt = match.end()
        if nxt >= end:
            break
        punct = match.group()
        if punct[0] in ".!?…":
            if text[nxt].islower():
                continue
            if punct[0] == "." and _is_abbreviation(text, start, match.start()):
                continue
        span = _trimmed(text, cut, nxt)
        if span:
            spans.append(span)
        cut = nxt
    span = _trimmed(text, cut, end)
    if span:
        spans.append(span)
    return spans


def line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        newline = text.find("\n", pos, end)
        stop = end if newline < 0 else newline
        span = _trimmed(text, pos, stop)
        if span:
            spans.append(span)
        pos = stop + 1
    return spans


def word_pieces(text: str, start: int, end: int, cap: int) -> list[tuple[int, int]]:
    """Cut ``[start, end)`` into pieces of at most ``cap`` characters, at whitespace if any."""
    pieces: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        span = _trimmed(text, pos, end)
        if span is None:
            break
        pos = span[0]
        if end - pos <= cap:
            pieces.append((pos, span[1]))
            break
        limit = pos + cap
        cut = -1
        for gap in _WHITESPACE.finditer(text, pos + 1, limit + 1):
            cut = gap.start()
        if cut <= pos:
            cut = limit  # one "word" longer than a chunk: cut it hard
        piece = _trimmed(text, pos, cut)
        if piece:
            pieces.append(piece)
        pos = cut
    return pieces
