"""Whether the excerpts a sentence cites support it: the claims' facets, compared one way.

A contradiction (``contradict``) is two statements that cannot both hold. Support is one-sided
and stricter: every checkable part of a sentence must be *stated* by the excerpts it cites.
``check_support`` reads the sentence's facets (``facets.extract_facets``), takes each cited
excerpt as sentences (``read_excerpt``, with ``sentences.split_sentences``) and asks, in this
order; the first failure is the verdict's facet (docs/decisions/0018-answer-sentence-checks.md):

A cited sentence is **related** when it shares ``MIN_SHARED`` content words with the sentence
(all of them when it has fewer); the **closest** are the related ones sharing the most. Each
cited excerpt is judged on its own and a facet holds when one of them states it, so a sentence
that reports two sources disagreeing ("S1 says March 2019, S2 June 2021") can be supported.

1. **date**: each date is implied by a date of a related sentence: the same year (and end year
   of a range), at least as precise ("2019" is supported by "14 March 2019", "14 March 2019" is
   not by "March 2019"); a bare year also by the year written in a related sentence ("the
   2019 season"). A closest sentence with a conflicting point date (``dates.dates_conflict``)
   rules first: "began operating in June 2021" is unsupported by an excerpt saying it began in
   March 2019 and was inspected in June 2021.
2. **quantity**: each number with a unit has a quantity of a related sentence with the same unit
   (two counted nouns may differ: "12 machines", "12 turbines") and the same value (within
   ``DEFAULT_TOLERANCE``), or an interval inside the sentence's ("more than 100 seals" from
   "143 seals"); a count may also be written apart ("the 2020 survey" from "a survey in
   2020"). A conflicting one of the same unit in a closest sentence rules first.
3. **number**: a bare number (no unit, not in a date) is written in a related sentence.
4. **entity**: every name found in the sentence appears in a cited excerpt or its title as the
   same run of normalised words (``entities.normalise``); a trailing company suffix is
   forgiven ("Kestrel Energy Ltd" for "Kestrel Energy").
5. **content**: some cited sentence is related at all.
6. **polarity**: the sentence denies what a closest sentence states ("did not approve" against
   "approved"), or states what every closest sentence denies, unless the two say one thing in
   two forms ("did not increase" / "decreased"); what a negation acts on (its target) must be
   named by the other side (``MIN_SHARED`` of its words).
7. **direction**: a closest sentence reverses a direction cue of the sentence on the same target
   ("rose" / "fell") and none of its cues on that target agrees. A direction the excerpts do not
   state is not held against the sentence: facets cannot tell an inference from a paraphrase.

Supported: the span is the related sentence that supports most of the sentence's dates,
quantities and numbers, then shares most words. Unsupported: the facet, the sentence's words
that lack support (offsets into the sentence) and the cited sentence that says otherwise or
comes closest.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from relata.claims.cues import Cue, Polarity
from relata.claims.dates import DateFacet, dates_conflict
from relata.claims.facets import Facets, extract_facets
from relata.claims.quantities import (
    DEFAULT_TOLERANCE,
    UNITS,
    Quantity,
    quantities_conflict,
)
from relata.claims.sentences import split_sentences
from relata.claims.words import stem, tokens
from relata.domain.errors import ValidationError
from relata.entities.lexicon import ORG_SUFFIXES
from relata.entities.normalise import normalise_name

#: Content words a cited sentence must share with the sentence to be about the same thing.
MIN_SHARED: Final = 2
#: A cited excerpt is a search excerpt (a few hundred characters); this bounds the work.
MAX_EXCERPT_CHARS: Final = 100_000
MAX_SENTENCE_CHARS: Final = 5_000

_NUMBER: Final = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
#: A bare number in a sentence: not part of a word ("S1", "COVID-19") or of a longer number.
_BARE_NUMBER: Final = re.compile(
    r"(?<![\w.,\-])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w\-]|[.,]\d)"
)
_KNOWN_UNITS: Final = frozenset(UNITS.values()) | {"USD", "EUR", "GBP"}
_UNIT_SPELLINGS: Final = frozenset(UNITS) | _KNOWN_UNITS
#: Counted nouns that name a currency symbol's unit.
_UNIT_ALIASES: Final[dict[str, str]] = {"euro": "EUR", "dollar": "USD"}


class SupportFacet(enum.StrEnum):
    """What in a sentence its cited excerpts do not support."""

    DATE = "date"
    QUANTITY = "quantity"
    NUMBER = "number"
    ENTITY = "entity"
    CONTENT = "content"
    POLARITY = "polarity"
    DIRECTION = "direction"


@dataclass(frozen=True, slots=True)
class ExcerptSentence:
    """One sentence of a cited excerpt: ``excerpt[start:end] == text``."""

    ref: str
    start: int
    end: int
    text: str
    facets: Facets
    #: Every number written in it (digits, number words of quantities, years of dates).
    numbers: frozenset[float]


@dataclass(frozen=True, slots=True)
class ReadExcerpt:
    """A cited excerpt read once: its sentences and its words as name keys."""

    ref: str
    sentences: tuple[ExcerptSentence, ...]
    #: The normalised words of the title and text, space-separated and space-padded.
    name_words: str


@dataclass(frozen=True, slots=True)
class Name:
    """A name in the sentence (an entity mention): ``sentence[start:end]``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Support:
    """The verdict on one sentence. ``facet`` None: supported by ``span``. Otherwise
    ``claimed`` (offsets into the sentence) are the words that lack support, ``reason``
    says why, and ``span`` is the cited sentence that says otherwise or comes closest."""

    facet: SupportFacet | None
    span: ExcerptSentence | None
    claimed: tuple[int, int] | None = None
    reason: str | None = None

    @property
    def supported(self) -> bool:
        return self.facet is None


def read_excerpt(ref: str, text: str, title: str = "") -> ReadExcerpt:
    """Split a cited excerpt into sentences with their facets, once per excerpt."""
    if len(text) > MAX_EXCERPT_CHARS:
        raise ValidationError(
            f"a cited excerpt has at most {MAX_EXCERPT_CHARS} characters, not {len(text)}",
            field="excerpt",
        )
    sentences = tuple(
        ExcerptSentence(ref, s.start, s.end, s.text, facets, _numbers(s.text, facets))
        for s in split_sentences(text)
        for facets in (extract_facets(s.text[:MAX_SENTENCE_CHARS]),)
    )
    words = " ".join(filter(None, (normalise_name(w) for w in f"{title}\n{text}".split())))
    return ReadExcerpt(ref, sentences, f" {words} ")


@dataclass(frozen=True, slots=True)
class _View:
    """One cited excerpt as seen from the sentence: its related and closest sentences."""

    related: tuple[ExcerptSentence, ...]
    closest: tuple[ExcerptSentence, ...]
    shared: int


def _view(f: Facets, excerpt: ReadExcerpt) -> _View:
    need = min(MIN_SHARED, len(f.terms))
    scored = [(s, len(f.terms & s.facets.terms)) for s in excerpt.sentences]
    related = tuple(s for s, n in scored if n >= need)
    best = max((n for _, n in scored if n >= need), default=-1)
    return _View(related, tuple(s for s, n in scored if n == best), best)


def check_support(sentence: str, names: Sequence[Name], excerpts: Sequence[ReadExcerpt]) -> Support:
    """Whether ``excerpts`` (the ones the sentence cites) support ``sentence``. Each excerpt
    is judged on its own: a sentence citing two sources that disagree ("S1 says March 2019,
    S2 says June 2021") is supported when each of its facets is stated by one of them."""
    facets = extract_facets(sentence[:MAX_SENTENCE_CHARS])
    views = [_view(facets, e) for e in excerpts]
    related = [s for v in views for s in v.related]
    nearest = max(views, key=lambda v: v.shared, default=None)
    bare = _bare_numbers(sentence, facets)
    for failure in (
        _dates(facets, views),
        _quantities(facets, views),
        _numbers_written(bare, related),
        _names(_checkable(names, facets), excerpts),
    ):
        if failure is not None:
            if failure.span is None and nearest is not None and nearest.closest:
                return _with_span(failure, nearest.closest[0])
            return failure
    if not related:
        refs = ", ".join(e.ref for e in excerpts)
        return Support(SupportFacet.CONTENT, None, None, f"no sentence of {refs} is about this")
    for rule in (_polarity, _direction):
        failures = [rule(sentence, facets, v.closest) for v in views if v.related]
        if failures and all(failures):
            return next(f for f in failures if f is not None)
    return Support(None, _best(facets, bare, related))


# ----------------------------------------------------------------------------- the rules


def _dates(f: Facets, views: Sequence[_View]) -> Support | None:
    for d in f.dates:
        if any(_view_states_date(d, v) for v in views):
            continue
        against = next((s for v in views for s in v.closest if _date_conflicts(d, s)), None)
        where = f"{against.ref} gives another date" if against else "no cited sentence gives it"
        return Support(SupportFacet.DATE, against, (d.start, d.end), f"{d.text!r}: {where}")
    return None


def _view_states_date(d: DateFacet, v: _View) -> bool:
    """A closest sentence implies the date, or none conflicts and a related one states it."""
    if any(_date_implied(e, d) for s in v.closest for e in s.facets.dates):
        return True
    if any(_date_conflicts(d, s) for s in v.closest):
        return False
    return any(_date_supported(d, s) for s in v.related)


def _date_conflicts(d: DateFacet, s: ExcerptSentence) -> bool:
    return any(dates_conflict(d, e) for e in s.facets.dates)


def _date_implied(e: DateFacet, d: DateFacet) -> bool:
    """``e`` (a cited date) says at least what ``d`` says: same year, as precise or more."""
    if e.year != d.year:
        return False
    if d.until_year is not None:
        return e.until_year == d.until_year
    wanted = d.months
    if wanted is not None:
        given = e.months
        if given is None or not (wanted[0] <= given[0] and given[1] <= wanted[1]):
            return False
    return d.day is None or (e.day == d.day and e.month == d.month)


def _date_supported(d: DateFacet, s: ExcerptSentence) -> bool:
    if any(_date_implied(e, d) for e in s.facets.dates):
        return True
    year_only = d.months is None and d.day is None and d.until_year is None
    return year_only and float(d.year) in s.numbers


def _quantities(f: Facets, views: Sequence[_View]) -> Support | None:
    for q in _checkable_quantities(f):
        if any(_view_states_quantity(q, v) for v in views):
            continue
        against = next((s for v in views for s in v.closest if _quantity_conflicts(q, s)), None)
        where = f"{against.ref} gives another value" if against else "no cited sentence gives it"
        return Support(SupportFacet.QUANTITY, against, (q.start, q.end), f"{q.text!r}: {where}")
    return None


def _checkable_quantities(f: Facets) -> list[Quantity]:
    # "one" is a pronoun or an article far more often than a count ("one export cable" for
    # "a single export cable", "one of the turbines"): it is not checked.
    return [q for q in f.quantities if not q.text.lower().startswith("one ")]


def _view_states_quantity(q: Quantity, v: _View) -> bool:
    if any(_quantity_supports(e, q) for s in v.closest for e in s.facets.quantities):
        return True
    if any(_quantity_conflicts(q, s) for s in v.closest):
        return False
    return any(_quantity_written(q, s) for s in v.related)


def _quantity_conflicts(q: Quantity, s: ExcerptSentence) -> bool:
    return any(
        _unit(e.unit) == _unit(q.unit) and quantities_conflict(q, e) for e in s.facets.quantities
    )


def _unit(unit: str) -> str:
    return _UNIT_ALIASES.get(unit, unit)


def _quantity_supports(e: Quantity, q: Quantity) -> bool:
    """``e`` (a cited quantity) says what ``q`` says: the same unit (any two counted nouns)
    and the same value, or an interval inside ``q``'s ("more than 100" from "143")."""
    ue, uq = _unit(e.unit), _unit(q.unit)
    if ue != uq and (ue in _KNOWN_UNITS or uq in _KNOWN_UNITS):
        return False
    if _same(e.value, q.value):
        return True
    low = q.low - abs(q.low) * DEFAULT_TOLERANCE
    high = q.high + abs(q.high) * DEFAULT_TOLERANCE
    return low <= e.low and e.high <= high


def _quantity_written(q: Quantity, s: ExcerptSentence) -> bool:
    """``s`` states ``q``: one of its quantities does, or, for a counted noun, it writes the
    number and the noun apart ("the 2020 survey" from "a survey in 2020")."""
    if any(_quantity_supports(e, q) for e in s.facets.quantities):
        return True
    counted = _unit(q.unit) not in _KNOWN_UNITS
    return (
        counted
        and q.low == q.high
        and any(_same(q.value, n) for n in s.numbers)
        and stem(q.unit) in s.facets.terms
    )


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=DEFAULT_TOLERANCE)


def _numbers_written(
    bare: Sequence[tuple[int, int, float]], related: Sequence[ExcerptSentence]
) -> Support | None:
    for start, end, value in bare:
        if not any(_same(value, n) for s in related for n in s.numbers):
            return Support(
                SupportFacet.NUMBER, None, (start, end), f"{value:g}: no cited sentence gives it"
            )
    return None


def _checkable(names: Sequence[Name], f: Facets) -> list[Name]:
    """Names outside the sentence's dates and quantities ("18 MW" is a quantity, not a
    name), and not a unit."""
    taken = [(d.start, d.end) for d in f.dates] + [(q.start, q.end) for q in f.quantities]
    return [
        n
        for n in names
        if n.text.strip() not in _UNIT_SPELLINGS
        and not any(n.start < e and s < n.end for s, e in taken)
    ]


def _names(names: Sequence[Name], excerpts: Sequence[ReadExcerpt]) -> Support | None:
    for name in names:
        words = normalise_name(name.text).split()
        if len(words) > 1 and words[-1] in ORG_SUFFIXES:
            words = words[:-1]
        if not words:
            continue
        key = f" {' '.join(words)} "
        if not any(key in e.name_words for e in excerpts):
            refs = ", ".join(e.ref for e in excerpts)
            return Support(
                SupportFacet.ENTITY,
                None,
                (name.start, name.end),
                f"{name.text!r} is not named in {refs}",
            )
    return None


def _polarity(sentence: str, f: Facets, closest: Sequence[ExcerptSentence]) -> Support | None:
    if any(s.facets.polarity is f.polarity or _same_in_two_forms(f, s.facets) for s in closest):
        return None
    if f.polarity is Polarity.NEGATED:
        # The sentence denies something; a conflict only if what it denies is stated.
        cue = next(
            (c for c in f.negations if any(_names_target(c, s.facets.terms) for s in closest)),
            None,
        )
        if cue is None:
            return None
        against = next(s for s in closest if _names_target(cue, s.facets.terms))
        reason = f"{cue.text!r}: {against.ref} states what the sentence denies"
        return Support(SupportFacet.POLARITY, against, (cue.start, cue.end), reason)
    for s in closest:
        cue = next((c for c in s.facets.negations if _names_target(c, f.terms)), None)
        if cue is None:
            return None  # this closest sentence denies something else
    against = closest[0]
    cue = next(c for c in against.facets.negations if _names_target(c, f.terms))
    reason = f"{against.ref} denies this ({cue.text!r}); the sentence states it"
    return Support(SupportFacet.POLARITY, against, _word_of(sentence, cue.target), reason)


def _direction(sentence: str, f: Facets, closest: Sequence[ExcerptSentence]) -> Support | None:
    for cue in f.directions:
        for s in closest:
            matches = [c for c in s.facets.directions if _same_target(cue, c)]
            if any(c.sign == cue.sign and c.negated == cue.negated for c in matches):
                break  # a closest sentence agrees
            opposed = next(
                (c for c in matches if c.sign != cue.sign and c.negated == cue.negated), None
            )
            if opposed is not None:
                reason = f"{cue.text!r}: {s.ref} says {opposed.text!r}"
                return Support(SupportFacet.DIRECTION, s, (cue.start, cue.end), reason)
    return None


def _word_of(sentence: str, target: tuple[str, ...]) -> tuple[int, int] | None:
    """The first word of ``sentence`` that is one of ``target``'s stems."""
    return next(((s, e) for s, e, w in tokens(sentence) if stem(w) in target), None)


def _names_target(cue: Cue, terms: frozenset[str]) -> bool:
    """``terms`` name what the cue acts on: ``MIN_SHARED`` of its target's words (all when
    fewer), so "no seal injuries" is not denied by a sentence about the seal colony."""
    shared = sum(1 for t in cue.target if t in terms)
    return bool(cue.target) and shared >= min(MIN_SHARED, len(cue.target))


def _same_target(a: Cue, b: Cue) -> bool:
    return bool(set(a.target) & set(b.target))


def _same_in_two_forms(a: Facets, b: Facets) -> bool:
    """One denies a direction the other reverses on the same target ("did not increase" /
    "decreased")."""
    return any(
        _same_target(ca, cb) and ca.sign != cb.sign and ca.negated != cb.negated
        for ca in a.directions
        for cb in b.directions
    )


# ------------------------------------------------------------------------------- helpers


def _numbers(text: str, facets: Facets) -> frozenset[float]:
    found = {float(m.group().replace(",", "")) for m in _NUMBER.finditer(text)}
    found.update(q.value for q in facets.quantities)
    found.update(float(d.year) for d in facets.dates)
    return frozenset(found)


def _bare_numbers(sentence: str, f: Facets) -> list[tuple[int, int, float]]:
    taken = [(d.start, d.end) for d in f.dates] + [(q.start, q.end) for q in f.quantities]
    return [
        (m.start(), m.end(), float(m.group().replace(",", "")))
        for m in _BARE_NUMBER.finditer(sentence)
        if not any(m.start() < e and s < m.end() for s, e in taken)
    ]


def _best(
    f: Facets, bare: Sequence[tuple[int, int, float]], related: Iterable[ExcerptSentence]
) -> ExcerptSentence | None:
    """The related sentence that supports most of the dates, quantities and numbers, then
    shares most words (the first such)."""

    def score(s: ExcerptSentence) -> tuple[int, int]:
        facts = sum(1 for d in f.dates if _date_supported(d, s))
        facts += sum(1 for q in f.quantities if _quantity_written(q, s))
        facts += sum(1 for _, _, v in bare if any(_same(v, n) for n in s.numbers))
        return facts, len(f.terms & s.facets.terms)

    return max(related, key=score, default=None)


def _with_span(support: Support, span: ExcerptSentence | None) -> Support:
    return Support(support.facet, span, support.claimed, support.reason)
