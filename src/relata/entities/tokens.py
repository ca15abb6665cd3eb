"""A word tokenizer and word-shape tests for the entity rules.

Words are found with one regular expression, so the rules stay linear in the text. A word
keeps inner apostrophes, hyphens, full stops and ampersands ("O'Brien", "IL-6", "U.S.",
"AT&T"); a trailing full stop belongs to it only when it is an abbreviation ("Inc.", "Dr.",
"J.", "U.S."), and a trailing possessive ("Kestrel's") is not part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from relata.entities.lexicon import CALENDAR_WORDS, NAME_CONNECTORS

_WORD: Final = re.compile(r"\w+(?:['’&.\-]\w+)*\.?")
_POSSESSIVE: Final = re.compile(r"['’]s$|(?<=s)['’]$", re.IGNORECASE)
#: "Cambridge-based", "Kestrel-owned": the name ends at the hyphen ("Coca-Cola",
#: "Smith-Jones" and "IL-6" stay whole).
_LOWER_TAIL: Final = re.compile(r"(?<=[^\W\d_]{2})-[a-z]{3,}$")
_INITIALS: Final = re.compile(r"(?:[^\W\d_]\.)+")
_NUMBERISH: Final = re.compile(r"[\d.,:/%+\-]+(?:st|nd|rd|th|s|m|km|bn|mn)?", re.IGNORECASE)
#: Abbreviations whose full stop is theirs, not the sentence's.
ABBREVIATIONS: Final = frozenset(
    {
        "inc",
        "corp",
        "ltd",
        "co",
        "jr",
        "sr",
        "st",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "bros",
        "mt",
        "ft",
        "gen",
        "capt",
        "sgt",
        "lt",
        "col",
        "rev",
        "no",
        "gov",
        "sen",
        "rep",
        "fr",
        "messrs",
        "plc",
        "llc",
        "cllr",
        "ave",
        "rd",
    }
)


@dataclass(frozen=True, slots=True)
class Word:
    start: int
    end: int
    text: str

    @property
    def folded(self) -> str:
        return self.text.casefold().rstrip(".")


def words(text: str) -> list[Word]:
    """The words of ``text`` with their offsets (see the module docstring)."""
    out: list[Word] = []
    for match in _WORD.finditer(text):
        start, end = match.span()
        token = match.group()
        possessive = _POSSESSIVE.search(token)
        if possessive is not None and possessive.start() > 0:
            end = start + possessive.start()
            token = token[: possessive.start()]
        elif token.endswith(".") and not is_abbreviation(token):
            end -= 1
            token = token[:-1]
        hyphen = _LOWER_TAIL.search(token)
        if hyphen is not None:
            end = start + hyphen.start()
            token = token[: hyphen.start()]
        if token:
            out.append(Word(start, end, token))
    return out


def is_abbreviation(token: str) -> bool:
    """ "Inc.", "J.", "U.S.": a word whose trailing full stop is part of it."""
    return bool(_INITIALS.fullmatch(token)) or token[:-1].casefold() in ABBREVIATIONS


def is_initial(token: str) -> bool:
    """ "J.", "L.": one letter and a full stop."""
    return len(token) == 2 and token[0].isupper() and token[1] == "."


def is_capitalised(token: str) -> bool:
    return token[:1].isupper()


def is_all_caps(token: str) -> bool:
    letters = [c for c in token if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def is_number_like(token: str) -> bool:
    return bool(_NUMBERISH.fullmatch(token))


def is_calendar(token: str) -> bool:
    return token.casefold().rstrip(".") in CALENDAR_WORDS or is_number_like(token)


def is_connector(token: str) -> bool:
    return token.casefold() in NAME_CONNECTORS


def sentence_initial(text: str, start: int) -> bool:
    """Whether the word at ``start`` begins a sentence, line or list item (where any word is
    capitalised, so capitals say nothing about names)."""
    i = start - 1
    while i >= 0 and text[i] in " \t\"'“‘([*_#>-•":
        i -= 1
    return i < 0 or text[i] in ".!?:;\n\r|"


def line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def is_caps_line(line: str) -> bool:
    """A headline in capitals ("SOCCER - ARSENAL HELD BY BRENTFORD"): at least two words
    and no lower-case letter."""
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 6 and not any(c.islower() for c in letters) and " " in line.strip()
