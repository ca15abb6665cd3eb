"""Words for comparing statements: tokens with offsets, a small stemmer and stop words.

Two statements are "about the same thing" when they share content words, and a paraphrase
changes a word's form more often than the word ("increases" / "increased", "turbines" /
"turbine"), so words are compared by a crude suffix-stripping stem. It is deliberately
small (plural, past, gerund and adverb endings): a full Porter stemmer would conflate more
and buys nothing the comparison rules need; no dependency is added for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Final


def word_set(text: str) -> frozenset[str]:
    """The white-space separated words of a word table written as one string."""
    return frozenset(text.split())


_WORD: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*[A-Za-z0-9]|[A-Za-z0-9]")

STOP_WORDS: Final[frozenset[str]] = word_set(
    """
    a an the and or but nor so yet of in on at to for from by with within without into onto
    over under about above below between among through during before after since until than
    then as is are was were be been being am has have had having do does did doing will would
    shall should can could may might must this that these those it its it's they them their
    there here which who whom whose what when where why how all any both each few more most
    other some such only own same too very also just not no never none neither either
    we our us you your he she his her him i me my one ones per via vs versus et al
    e.g i.e etc using used use based whereas while although though however thus therefore
    if whether because due upon across against along around throughout among amongst toward
    towards beyond despite except like unlike near
    """
)


def tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, word) for each word of ``text``; hyphenated words stay one word."""
    for m in _WORD.finditer(text):
        yield m.start(), m.end(), m.group()


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem: lower case without a plural, past, gerund or adverb ending."""
    w = word.lower().replace("'", "")
    if len(w) <= 3:
        return w
    for suffix, keep in (
        ("ations", "ate"),
        ("ation", "ate"),
        ("ities", "ity"),
        ("ies", "y"),
        ("ied", "y"),
        ("ingly", ""),
        ("ments", ""),
        ("ment", ""),
        ("edly", ""),
        ("ing", ""),
        ("ed", ""),
        ("es", "e"),
        ("ly", ""),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith(("ss", "us", "is")):
                return w
            if suffix == "es" and not w.endswith(("ses", "zes", "ches", "shes", "xes")):
                return _undouble(w[:-1])
            return _undouble(w[: len(w) - len(suffix)] + keep)
    return _undouble(w) if w.endswith("e") else w


def _undouble(w: str) -> str:
    # "stopped" -> "stopp" -> "stop"; "increase(d)" and "increas(ing)" meet at "increas".
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def is_content(word: str) -> bool:
    """Not a stop word and not a bare number."""
    return word.lower() not in STOP_WORDS and not word.isdigit()


def content_terms(text: str) -> frozenset[str]:
    """The stems of ``text``'s content words (no stop words, no bare numbers)."""
    return terms_of(w for _, _, w in tokens(text))


def terms_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words if is_content(w))
