"""Span rules: cut a candidate span to the name it holds, and type it by the name's shape.

spaCy's small model finds most names but draws their edges its own way ("the European
Commission", "Ines Vaughan's", "Councillor Aileen Marsh", "Milford Haven Port Authority\\n\\n
Morgan") and often mistypes a name whose shape says what it is ("Mill Lane" as a person,
"Harlow Biotech Ltd" as a place). ``clean`` applies the same rules to every span, from the
model or from a rule:

* split where the words are not joined by a space or a line wrap (punctuation, a blank
  line, " - ", a number between two names: "Everton 1 Burnley 0");
* drop leading articles, function words, honorifics and titles, and trailing lower-case
  words; an honorific or title before the name makes it a person;
* type by shape: "X Ltd", "X Council", "University of X" are organisations, "X Street",
  "X Sea", "Mount X", "Port X" are places, an identifier ("IL-6", "BRCA1", "SB-04") is a
  term, a date or number is nothing;
* a section heading in capitals ("BACKGROUND", "MAIN OUTCOME MEASURES") or "CI" is nothing,
  and one run into the next sentence is cut from it ("RESULTS Detection" -> nothing).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from relata.domain.models import EntityType
from relata.entities.gazetteer import GIVEN_NAMES, PLACES
from relata.entities.lexicon import (
    HONORIFICS,
    LEADING_FUNCTION_WORDS,
    LOC_PREFIXES,
    LOC_SUFFIXES,
    ORG_HEADS_OF,
    ORG_SUFFIXES,
    SECTION_HEADINGS,
    STATISTICS_ABBREVIATIONS,
    TITLES,
)
from relata.entities.tokens import (
    Word,
    is_calendar,
    is_caps_line,
    is_connector,
    is_initial,
    is_number_like,
    line_bounds,
    words,
)

_JOINING_GAP: Final = re.compile(r"(?P<possessive>['’]s?)?[ \t]*(?:&[ \t]*)?(?:\n[ \t]*)?")
_IDENTIFIER: Final = re.compile(
    r"(?=[^\d]*\d)(?:[A-Za-z]*[A-Z][A-Za-z]*[\w\-/]*|[a-z]\d{2,})", re.ASCII
)
_MAX_NAME_WORDS: Final = 4
_WRAPPED_LINE_CHARS: Final = 50
_AFTER_POSSESSIVE: Final = ORG_SUFFIXES | LOC_SUFFIXES | ORG_HEADS_OF


@dataclass(slots=True)
class Span:
    """A typed span of a passage. ``strong``: set by a rule that knows better than the
    model (a shape, an honorific, a dateline, a defined acronym); consistency rules do not
    retype it."""

    start: int
    end: int
    type: EntityType
    strong: bool = False


class Passage:
    """A text with its words, for the rules that look at words and their neighbours."""

    __slots__ = ("_caps_lines", "starts", "text", "words")

    def __init__(self, text: str) -> None:
        self.text = text
        self.words: list[Word] = words(text)
        self.starts = [w.start for w in self.words]
        self._caps_lines: dict[int, bool] = {}

    def word_range(self, start: int, end: int) -> tuple[int, int]:
        """The indexes ``[i, j)`` of the words wholly inside ``[start, end)``."""
        i = bisect_left(self.starts, start)
        j = bisect_left(self.starts, end)
        while j > i and self.words[j - 1].end > end:
            j -= 1
        return i, j

    def joined(self, i: int) -> bool:
        """Whether word ``i`` continues word ``i - 1`` within one name: only spaces (or an
        ampersand) between them, or a line break that wraps a long line (a short line ends
        a heading, a list item or a field). A possessive joins only before a name-building
        word ("St Mary's Hall", "Residents' Association", not "Alphabet's Google")."""
        before = self.words[i - 1].end
        gap = self.text[before : self.words[i].start]
        match = _JOINING_GAP.fullmatch(gap) if gap else None
        if match is None:
            return False
        if match.group("possessive") and self.words[i].folded not in _AFTER_POSSESSIVE:
            return False
        if "\n" in gap:
            line_start, _ = line_bounds(self.text, before)
            return before - line_start >= _WRAPPED_LINE_CHARS
        return True

    def in_caps_line(self, i: int) -> bool:
        line_start, line_end = line_bounds(self.text, self.words[i].start)
        cached = self._caps_lines.get(line_start)
        if cached is None:
            cached = self._caps_lines[line_start] = is_caps_line(self.text[line_start:line_end])
        return cached

    def span(self, i: int, j: int, entity_type: EntityType, *, strong: bool = False) -> Span:
        return Span(self.words[i].start, self.words[j - 1].end, entity_type, strong)


def name_like(token: str) -> bool:
    """A word that can be part of a name: it has a capital ("Ines", "d'Ampezzo", "arXiv")."""
    return token.lower() != token


def is_identifier(token: str) -> bool:
    """ "IL-6", "BRCA1", "SARS-CoV-2", "SB-04", "p53": letters and digits, a capital (or a
    single lower-case letter before the digits), starting with a letter."""
    return len(token) >= 3 and _IDENTIFIER.fullmatch(token) is not None


def _title_end(ws: list[Word], i: int, j: int, model_type: EntityType | None) -> int:
    """The index after the last honorific or title in ``[i, j)`` that is followed by a
    plain name, or ``i`` when there is none. After a title one word is a name only when
    the model said person or it is a given name ("Prince Charles", not "General
    Electric")."""
    for k in range(j - 2, i - 1, -1):
        folded = ws[k].folded
        honorific = folded in HONORIFICS
        if honorific or folded in TITLES:
            rest = ws[k + 1 : j]
            plain = len(rest) <= _MAX_NAME_WORDS and all(plain_name_word(w.text) for w in rest)
            enough = (
                honorific
                or len(rest) >= 2
                or model_type is EntityType.PERSON
                or (len(rest) == 1 and rest[0].text in GIVEN_NAMES)  # "Prince Charles"
            )
            return k + 1 if plain and enough else i
    return i


def plain_name_word(token: str) -> bool:
    folded = token.casefold().rstrip(".")
    return (
        token[:1].isupper()
        and folded not in ORG_SUFFIXES
        and folded not in LOC_SUFFIXES
        and folded not in TITLES
        and folded not in HONORIFICS
        and not is_number_like(token)
    )


def shape_type(p: Passage, i: int, j: int) -> EntityType | None:
    """The type the words ``[i, j)`` announce by their shape, if any."""
    ws = p.words
    first, last = ws[i].folded, ws[j - 1].folded
    if j - i == 1 and is_identifier(ws[i].text):
        return EntityType.TERM
    if j - i >= 2:
        if last in ORG_SUFFIXES or any(
            ws[k].folded in ORG_HEADS_OF and ws[k + 1].folded == "of" for k in range(i, j - 2)
        ):
            return EntityType.ORGANISATION
        if last in LOC_SUFFIXES or first in LOC_PREFIXES:
            return EntityType.LOCATION
    if i > 0 and ws[i - 1].folded in HONORIFICS and p.joined(i):
        return EntityType.PERSON
    if j - i >= 2 and _initial_at(p, i) and plain_name_word(ws[j - 1].text):
        return EntityType.PERSON  # "A. Moreau", "J. R. Tolkien"
    return None


def connector_joins(p: Passage, i: int, j: int) -> bool:
    """Whether the connector at ``j`` may continue a name that starts at ``i``: "of" (and
    "de", "van", ...) always ("Bank of England"); "for" after an organisation's word
    ("Allen Institute for AI"); "and" or "&" after a single word or an "of" ("Procter &
    Gamble", "Perth and Kinross Council", "University of Science and Technology"); never
    between two names ("Sabrewing Array for Kestrel Marine Systems", "Kestrel Marine
    Systems and Meridian ...")."""
    word, before = p.words[j].folded, p.words[j - 1].folded
    if word == "for":
        return before in ORG_SUFFIXES or before in ORG_HEADS_OF
    if word in ("and", "&"):
        return j - i == 1 or any(w.folded == "of" for w in p.words[i:j])
    return word != "the" or before == "of"


def _pieces(p: Passage, i: int, j: int) -> list[tuple[int, int, bool]]:
    """Split ``[i, j)`` where two words are not joined, at a number between names, at "of"
    after a person ("Ms Anwen Price of Pembrokeshire ..."), at a connector that does not
    join two names (``connector_joins``) and around an identifier ("Serum IL-6"). The flag
    says whether the piece still carries the model's type: not after a paragraph break,
    nor a single word split from an identifier."""
    ws = p.words
    out: list[tuple[int, int, bool]] = []
    start, typed = i, True
    for k in range(i + 1, j):
        number_between = (
            is_number_like(ws[k].text)
            and k + 1 < j
            and name_like(ws[k - 1].text)
            and name_like(ws[k + 1].text)
        )
        person_of = ws[k].folded == "of" and (
            ws[start].folded in HONORIFICS or ws[start].folded in TITLES
        )
        apart = is_connector(ws[k].text) and not connector_joins(p, start, k)
        identifier = is_identifier(ws[k].text) or is_identifier(ws[k - 1].text)
        if not p.joined(k) or number_between or person_of or apart or identifier:
            out.append((start, k, typed))
            paragraph = "\n\n" in p.text[ws[k - 1].end : ws[k].start]
            skip = number_between or person_of or apart
            start, typed = (k + 1 if skip else k), typed and not paragraph
    out.append((start, j, typed))
    if len(out) > 1 and any(is_identifier(ws[a].text) for a, b, _ in out if b - a == 1):
        out = [(a, b, t and (b - a > 1 or is_identifier(ws[a].text))) for a, b, t in out]
    return [(a, b, t) for a, b, t in out if a < b]


def _leading_junk(token: str) -> bool:
    folded = token.casefold().rstrip(".")
    return (
        folded in LEADING_FUNCTION_WORDS
        or is_calendar(token)
        or (not name_like(token) and not is_identifier(token))
    )


def _trim(p: Passage, i: int, j: int, model_type: EntityType | None) -> tuple[int, int, bool]:
    """``[i, j)`` without its leading junk, honorifics and titles and trailing lower-case
    words and numbers (a term keeps its number: "Llama 2"); ``True`` when an honorific or
    title showed it is a person."""
    ws = p.words
    person = False
    while i < j:
        if _leading_junk(ws[i].text) and not _is_the_of_the_hague(p, i, j):
            i += 1
            continue
        after_title = _title_end(ws, i, j, model_type)
        if after_title > i:
            i, person = after_title, True
            continue
        break
    keep_numbers = model_type is EntityType.TERM
    while j > i:
        token = ws[j - 1].text
        if is_connector(token) or (not name_like(token) and not is_identifier(token)):
            if not (keep_numbers and is_number_like(token)):
                j -= 1
                continue
        elif is_calendar(token) and not (keep_numbers and is_number_like(token)):
            j -= 1
            continue
        break
    return i, j, person


def _is_the_of_the_hague(p: Passage, i: int, j: int) -> bool:
    # "The Hague" and "The Gambia" keep their article; any other "the" goes.
    return (
        j - i == 2
        and p.words[i].text in ("The", "THE")
        and p.words[i + 1].folded in ("hague", "gambia")
    )


def clean(p: Passage, start: int, end: int, entity_type: EntityType | None) -> list[Span]:
    """The names inside ``[start, end)``, cut and typed by the rules of the module
    docstring. ``entity_type`` is the model's type (``None`` for a rule's run: then only
    a shape, an honorific or a title types it, and a run without one is dropped)."""
    i, j = p.word_range(start, end)
    out: list[Span] = []
    for a, b, typed in _pieces(p, i, j):
        model_type = entity_type if typed else None
        cut = _after_heading(p.words, a, b)
        if cut > a:
            if b - cut <= 1:
                continue  # "RESULTS Detection": a heading, then a sentence's first word
            a = cut  # "BACKGROUND The DATA PROTECTION BOARD"
        if model_type is EntityType.PERSON:
            b = _before_of(p, a, b)
        a, b, person = _trim(p, a, b, model_type)
        if a >= b or all(is_calendar(w.text) for w in p.words[a:b]):
            continue
        if b - a == 1 and (p.words[a].folded in TITLES or p.words[a].folded in HONORIFICS):
            continue  # "Chair", "Clerk": an office, not a name
        if is_heading(p.words[a:b]):
            continue  # "BACKGROUND", "MAIN OUTCOME MEASURES", "95% CI": structure, not a name
        shaped = shape_type(p, a, b)
        if person or shaped is EntityType.PERSON or model_type is EntityType.PERSON:
            a = _with_initials(p, a)
        if person and shaped in (None, EntityType.PERSON):
            out.append(p.span(a, b, EntityType.PERSON, strong=True))
        elif shaped is not None:
            out.append(p.span(a, b, shaped, strong=True))
        elif model_type is not None:
            out.append(p.span(a, b, _by_given_name(p, a, b, model_type)))
    return out


def is_heading(ws: Sequence[Word]) -> bool:
    """A span in capitals made only of section-heading words ("BACKGROUND", "MAIN OUTCOME
    MEASURES", "RESULTS AND DISCUSSION"), or a statistical abbreviation in capitals ("CI")."""
    if not ws or not all(w.text.isupper() for w in ws):
        return False
    folded = [w.folded.rstrip(".:") for w in ws]
    if len(folded) == 1 and folded[0] in STATISTICS_ABBREVIATIONS:
        return True
    return all(f in SECTION_HEADINGS for f in folded) and folded[0] not in ("and", "of", "or")


def _after_heading(ws: Sequence[Word], i: int, j: int) -> int:
    """Where ``[i, j)`` continues after a leading heading in capitals followed by words that
    are not in capitals ("RESULTS Detection rates", "BACKGROUND The DATA ..."); ``i`` when it
    does not start with one (a name in capitals such as "RESULTS CONSORTIUM" keeps it)."""
    k = i
    while k < j and is_heading(ws[i : k + 1]):
        k += 1
    return k if i < k < j and not ws[k].text.isupper() else i


def _by_given_name(p: Passage, i: int, j: int, model_type: EntityType) -> EntityType:
    """A model's organisation or place that is a common given name and a surname or two
    ("Iga Swiatek", "Marco") is a person."""
    ws = p.words[i:j]
    if (
        model_type in (EntityType.ORGANISATION, EntityType.LOCATION)
        and len(ws) <= 3
        and ws[0].text in GIVEN_NAMES
        and all(plain_name_word(w.text) for w in ws[1:])
        and " ".join(w.text for w in ws) not in PLACES
    ):
        return EntityType.PERSON
    return model_type


def _before_of(p: Passage, i: int, j: int) -> int:
    """A person's name ends before "of" ("Aryna Sabalenka of Belarus")."""
    for k in range(i + 1, j):
        if p.words[k].folded == "of":
            return k
    return j


def _with_initials(p: Passage, i: int) -> int:
    """Extend a person's name back over the initials before it ("I. Vaughan")."""
    while i > 0 and _initial_at(p, i - 1) and p.joined(i):
        i -= 1
    return i


def _initial_at(p: Passage, i: int) -> bool:
    """An initial: "J." standing alone as a word (not the "C." of "1.5 °C.")."""
    start = p.words[i].start
    return is_initial(p.words[i].text) and (start == 0 or p.text[start - 1] in " \t\n(\"'")
