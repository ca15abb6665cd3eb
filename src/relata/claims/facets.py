"""Comparable facets of one sentence: dates, quantities, polarity, direction, predicate.

A contradiction Relata can *show* is one between two facets that mean the same thing in
both sources: "March 2019" against "June 2021" for the same event, "12 turbines" against
"6 turbines", "increases" against "decreases", "did not" against "did". ``extract_facets``
reads them from a sentence with regular expressions and small word tables (no model); every
facet keeps its offsets into the sentence so the ledger can point at the words. Dates are
read by ``dates``, quantities by ``quantities``, negations and directions by ``cues``; this
module adds:

* **Predicate**: an event predicate from ``EVENT_PREDICATES`` ("began operating",
  "entered commercial operation", "first connected to the grid" are all
  ``began_operating``), else the stem of the first verb after the subject, else None.
* **Assertive**: a question, an aim, a method or a title asserts nothing to contradict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from relata.claims.cues import (
    Cue,
    Direction,
    Polarity,
    SentenceWords,
    find_directions,
    find_negations,
)
from relata.claims.dates import DateFacet, find_dates
from relata.claims.quantities import Quantity, find_quantities, may_have_numbers
from relata.claims.words import STOP_WORDS, stem, terms_of, tokens, word_set

FACETS_VERSION: Final = "1"

# ------------------------------------------------------------------------------ predicates

#: Event predicates: the words a source may use for one kind of event, as one key.
EVENT_PREDICATES: Final[dict[str, re.Pattern[str]]] = {
    "began_operating": re.compile(
        r"\b(?:(?:began|begun|begins|begin|started|starts|start|commenced|commences)\s+"
        r"(?:commercial\s+)?(?:operating|operations?|generating|production|service)"
        r"|(?:entered|enters|entering|enter|came|comes|went|go|goes|put|brought)\s+"
        r"(?:into\s+)?(?:full\s+)?(?:commercial\s+)?(?:operation|service)"
        r"|(?:first\s+)?connected\s+to\s+the\s+(?:\w+\s+)?grid|grid\s+connection"
        r"|commissioned|came\s+on-?\s?line|went\s+(?:live|on-?\s?line)"
        r"|first\s+(?:power|electricity)|start\s+of\s+(?:commercial\s+)?operations?)\b",
        re.IGNORECASE,
    ),
    "founded": re.compile(
        r"\b(?:founded|established|incorporated|set\s+up|formed)\b", re.IGNORECASE
    ),
    "closed": re.compile(
        r"\b(?:closed|shut\s+down|decommissioned|ceased\s+(?:operations?|operating|trading)"
        r"|went\s+bankrupt|dissolved)\b",
        re.IGNORECASE,
    ),
    "acquired": re.compile(r"\b(?:acquired|bought|took\s+over|purchased)\b", re.IGNORECASE),
    "launched": re.compile(r"\b(?:launched|unveiled)\b", re.IGNORECASE),
    "opened": re.compile(r"\b(?:opened|inaugurated)\b", re.IGNORECASE),
    "completed": re.compile(r"\b(?:completed|finished)\b", re.IGNORECASE),
    "appointed": re.compile(r"\b(?:appointed|elected|named\s+as)\b", re.IGNORECASE),
    "born": re.compile(r"\bborn\b", re.IGNORECASE),
    "died": re.compile(r"\b(?:died|passed\s+away)\b", re.IGNORECASE),
}
_AUXILIARIES: Final = word_set(
    """
    is are was were be been being am has have had will would shall should can could may
    might must do does did not also first still now never already recently then just only
    further significantly reportedly currently later originally formally officially often
    usually n't
    """
)


@dataclass(frozen=True, slots=True)
class Predicate:
    """What a statement is about: an event key (``event`` True) or a verb's stem."""

    key: str
    start: int
    end: int
    event: bool


_ANY_EVENT: Final = re.compile(
    "|".join(f"(?P<{key}>{p.pattern})" for key, p in EVENT_PREDICATES.items()), re.IGNORECASE
)
#: One of these words is in every event predicate: a sentence with none is not searched.
_EVENT_WORDS: Final = word_set(
    """
    operating operation operations generating production service grid connection connected
    commissioned online on-line line live power electricity founded established incorporated
    set formed closed shut decommissioned ceased bankrupt dissolved acquired bought took
    purchased launched unveiled opened inaugurated completed finished appointed elected
    named born died passed
    """
)


def event_predicate(sentence: str, lower_words: frozenset[str] | None = None) -> Predicate | None:
    """The first event predicate the sentence names, or None."""
    if lower_words is not None and not (lower_words & _EVENT_WORDS):
        return None
    m = _ANY_EVENT.search(sentence)
    if m is None or m.lastgroup is None:
        return None
    return Predicate(m.lastgroup, m.start(), m.end(), True)


def _head_verb(sentence: str, after: int) -> Predicate | None:
    rest = sentence[after:]
    stop = re.search(r"[,;:.()\[\]\"\u201c\u201d]", rest)
    for start, end, word in tokens(rest[: stop.start()] if stop else rest):
        lower = word.lower()
        if lower in _AUXILIARIES or lower.endswith("ly"):
            continue
        if lower in STOP_WORDS or not word.isalpha() or word[0].isupper():
            return None
        return Predicate(stem(word), after + start, after + end, False)
    return None


# ----------------------------------------------------------------------------- assertion

#: Section labels of structured abstracts and reports whose sentences describe an aim or a
#: method; a finding, conclusion or background sentence is an assertion.
_NON_ASSERTIVE_LABELS: Final = (
    "OBJECTIVE",
    "OBJECTIVES",
    "AIM",
    "AIMS",
    "PURPOSE",
    "METHODS",
    "METHOD",
    "DESIGN",
    "SETTING",
    "PARTICIPANTS",
    "PATIENTS",
    "INTERVENTION",
    "INTERVENTIONS",
    "MEASUREMENTS",
    "MAIN OUTCOME MEASURES",
    "MAIN OUTCOMES AND MEASURES",
    "STUDY DESIGN",
    "DESIGN, SETTING, AND PARTICIPANTS",
)
_LABEL: Final = re.compile(r"^\s*(?P<label>[A-Z][A-Z ,&/]{2,40}[A-Z])(?:\s*[:.-])?\s+(?=[A-Z])")
_AIM: Final = re.compile(
    r"^(?:to\s+(?:determine|evaluate|assess|examine|investigate|compare|test|measure|"
    r"identify|explore|estimate|describe|analy[sz]e|study|characteri[sz]e|establish|review|"
    r"quantify|clarify|address)\b"
    r"|(?:we|this\s+study|this\s+trial|this\s+review|the\s+study|the\s+present\s+study)\s+"
    r"(?:\w+\s+)?(?:examined|investigated|evaluated|assessed|aimed|sought|studied|compared|"
    r"analy[sz]ed|tested|hypothesi[sz]ed|asked|explored|measured|reviewed|conducted|performed|"
    r"designed|used|describe|report|present)\b"
    r"|the\s+(?:aim|objective|purpose|goal)s?\s+of\b|here,?\s+we\s+(?:ask|test|examine)\b)",
    re.IGNORECASE,
)


#: A title names a topic and asserts nothing: "Effect of X on Y", "X vs Y: a randomised
#: trial".
_TITLE: Final = re.compile(
    r"^(?:(?:the\s+)?(?:effects?|role|impact|association|influence|use|evaluation|"
    r"comparison|analysis)\s+of\b)"
    r"|:\s*(?:a|an|the)?\s*(?:[\w-]+\s+){0,4}(?:trial|study|review|meta-analysis|analysis|"
    r"survey|report|cohort)\.?$",
    re.IGNORECASE,
)


def is_assertive(sentence: str) -> bool:
    """Whether a sentence asserts something (not a question, an aim, a method or a
    title)."""
    text = sentence.strip()
    if text.endswith("?") or _TITLE.search(text):
        return False
    label = _LABEL.match(text)
    if label is not None:
        if label.group("label").strip(" ,") in _NON_ASSERTIVE_LABELS:
            return False
        text = text[label.end() :]
    return _AIM.match(text) is None


# ---------------------------------------------------------------------------------- facets


@dataclass(frozen=True, slots=True)
class Facets:
    """Everything comparable in one sentence; offsets are into that sentence."""

    dates: tuple[DateFacet, ...]
    quantities: tuple[Quantity, ...]
    negations: tuple[Cue, ...]
    directions: tuple[Cue, ...]
    predicate: Predicate | None
    terms: frozenset[str]
    #: The sentence's words, lower case.
    words: frozenset[str] = frozenset()
    #: False for a question, an aim or a method ("To determine whether ...", "We examined
    #: ...", "OBJECTIVE ..."): such a sentence asserts nothing to contradict.
    assertive: bool = True

    @property
    def polarity(self) -> Polarity:
        """Negated when the sentence has an odd number of negation cues."""
        return Polarity.NEGATED if len(self.negations) % 2 else Polarity.AFFIRMED

    @property
    def direction(self) -> Direction | None:
        """The direction every direction cue agrees on, or None (none, or mixed)."""
        signs = {c.sign for c in self.directions}
        return Direction(signs.pop()) if len(signs) == 1 else None

    @property
    def event_dates(self) -> tuple[DateFacet, ...]:
        return tuple(d for d in self.dates if d.exact)


def extract_facets(sentence: str, *, subject_end: int | None = None) -> Facets:
    """The facets of ``sentence``; ``subject_end`` (an offset into it) is where the claim's
    subject ends, after which the head verb is read when no event predicate is named."""
    words = SentenceWords(sentence)
    dates = find_dates(sentence)
    predicate = event_predicate(sentence, words.lower)
    if predicate is None and subject_end is not None:
        predicate = _head_verb(sentence, subject_end)
    negations = find_negations(words)
    numeric = may_have_numbers(sentence, words.lower)
    return Facets(
        dates=tuple(dates),
        quantities=tuple(find_quantities(sentence, dates)) if numeric else (),
        negations=tuple(negations),
        directions=tuple(find_directions(words, negations)),
        predicate=predicate,
        terms=terms_of(w for _, _, w in words.words),
        words=words.lower,
        assertive=is_assertive(sentence),
    )


def describe(facets: Facets) -> Iterator[str]:
    """Short labels of the facets, for logs of counts and for the ledger's notes."""
    for d in facets.dates:
        yield f"date:{d.label()}"
    for q in facets.quantities:
        yield f"quantity:{q.label()}"
    if facets.negations:
        yield f"polarity:{facets.polarity.value}"
    if facets.direction is not None:
        yield f"direction:{facets.direction.name.lower()}"
    if facets.predicate is not None:
        yield f"predicate:{facets.predicate.key}"


# ------------------------------------------------------------------------------ storage
#: The stored form's version: ``facets_from_record`` reads only this one (another is read
#: again from the quotation). Bump it with any change to what ``extract_facets`` returns.
RECORD_VERSION: Final = 1


def facets_record(f: Facets) -> dict[str, object]:
    """``f`` as JSON, compact and exact: ``facets_from_record`` gives back an equal value, so
    a stored claim is compared without reading its sentence again."""
    return {
        "v": RECORD_VERSION,
        "d": [
            [d.start, d.end, d.text, d.year, d.month, d.day, d.quarter, d.until_year, d.exact]
            for d in f.dates
        ],
        "q": [
            [q.start, q.end, q.text, q.value, q.unit, _finite(q.low), _finite(q.high)]
            for q in f.quantities
        ],
        "n": [_cue_record(c) for c in f.negations],
        "r": [_cue_record(c) for c in f.directions],
        "p": (
            [f.predicate.key, f.predicate.start, f.predicate.end, f.predicate.event]
            if f.predicate is not None
            else None
        ),
        "t": sorted(f.terms),
        "w": sorted(f.words),
        "a": f.assertive,
    }


def _finite(x: float) -> float | None:
    """JSON has no infinity (PostgreSQL refuses it): an open bound ("more than 5") is null."""
    return x if math.isfinite(x) else None


def _cue_record(c: Cue) -> list[object]:
    return [c.start, c.end, c.text, c.sign, sorted(c.scope), list(c.target), c.negated]


def _cue(r: Sequence[Any]) -> Cue:
    start, end, text, sign, scope, target, negated = r
    return Cue(
        int(start),
        int(end),
        str(text),
        int(sign),
        frozenset(map(str, scope)),
        tuple(map(str, target)),
        bool(negated),
    )


def facets_from_record(r: object) -> Facets | None:
    """The facets ``facets_record`` stored, or None for anything else (no record, another
    version, a malformed one): the caller reads them again from the quotation."""
    if not isinstance(r, dict) or r.get("v") != RECORD_VERSION:
        return None
    try:
        p = r["p"]
        return Facets(
            dates=tuple(
                DateFacet(int(s), int(e), str(t), int(y), mo, dy, qu, un, bool(ex))
                for s, e, t, y, mo, dy, qu, un, ex in r["d"]
            ),
            quantities=tuple(
                Quantity(
                    int(s),
                    int(e),
                    str(t),
                    float(v),
                    str(u),
                    -math.inf if lo is None else float(lo),
                    math.inf if hi is None else float(hi),
                )
                for s, e, t, v, u, lo, hi in r["q"]
            ),
            negations=tuple(_cue(c) for c in r["n"]),
            directions=tuple(_cue(c) for c in r["r"]),
            predicate=(
                Predicate(str(p[0]), int(p[1]), int(p[2]), bool(p[3])) if p is not None else None
            ),
            terms=frozenset(map(str, r["t"])),
            words=frozenset(map(str, r["w"])),
            assertive=bool(r["a"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
