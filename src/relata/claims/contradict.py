"""Contradictions between claims of different items about the same subject, from facets.

Candidates (``candidate_pairs``) come from an index by subject key: only claims that share a
subject are ever compared, and only across items, so the work grows with the claims per
subject, never with the square of a workspace. Within a subject, event claims are bucketed
by their event predicate and all other claims form one bucket; every bucket is capped
(``MAX_GROUP``).

A pair contradicts (``compare``) when, for the same predicate, one of these facets conflicts
(checked in this order; the first found is recorded):

1. **date**: both name the same event predicate ("began_operating") with a point date,
   and the dates cannot be the same day at the precision both give;
2. **quantity**: the same predicate and the same unit, one quantity of that unit each, and
   their intervals (an exact value widened by 1%, "about" by 10%, bounds and ranges as
   written) do not meet;
3. **polarity**: the statements share most of their content words (``MIN_OVERLAP``), both
   assert something (``Facets.assertive``), and one denies a direction the other states on
   the same target ("do not increase the risk" / "increase the risk"), or exactly one is
   negated and its negator's target is stated by the other ("did not increase" and
   "decreased" agree);
4. **direction**: the statements share most of their content words, both assert, and a cue
   of each acts on the same target with opposite signs ("increases" / "reduces") and the
   same negation, unless the other statement's closest cue to that target agrees.

Confidence is the rule's base (date 0.85 or 0.9 with months, quantity 0.75, a denied
direction 0.7, polarity and direction 0.6) raised by how much the two statements share, at
most 0.95; the detector and its version go with every contradiction. A model's judgement
may add a contradiction later, never remove or outrank one of these.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from relata.claims.cues import Cue, Polarity
from relata.claims.dates import DateFacet, dates_conflict
from relata.claims.extract import ClaimDraft
from relata.claims.facets import Facets
from relata.claims.quantities import Quantity, quantities_conflict
from relata.claims.words import content_terms, stem
from relata.ids import pair_key

DETECTOR: Final = "facets"
DETECTOR_VERSION: Final = "1"
MAX_GROUP: Final = 500
#: Share of the smaller statement's content words the other must also have, and how many
#: at least (tuned on SciFact train for precision: ADR 17).
MIN_OVERLAP: Final = 0.6
MIN_SHARED: Final = 2
#: Words two cues' targets must share (all of the shorter target's when it has fewer).
MIN_TARGET_SHARED: Final = 1


class ConflictFacet(enum.StrEnum):
    DATE = "date"
    QUANTITY = "quantity"
    POLARITY = "polarity"
    DIRECTION = "direction"
    #: No facet: a language model judged the pair (``relata.claims.assisted``).
    JUDGEMENT = "judgement"


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two claims that cannot both hold, the facet they disagree on, and where: the spans
    are item offsets of the conflicting words in each claim's item."""

    first: ClaimDraft
    second: ClaimDraft
    facet: ConflictFacet
    first_span: tuple[int, int]
    second_span: tuple[int, int]
    reason: str
    confidence: float
    detector: str = DETECTOR
    detector_version: str = DETECTOR_VERSION

    @property
    def dedupe_key(self) -> str:
        """One contradiction per unordered pair of claims."""
        return pair_key("contradiction", self.first.dedupe_key, self.second.dedupe_key)


SubjectKey = Callable[[ClaimDraft], str]


def by_subject(
    claims: Iterable[ClaimDraft], key: SubjectKey | None = None
) -> dict[str, list[ClaimDraft]]:
    """Claims grouped by subject key (``claim.subject.key`` unless ``key`` maps a claim to
    its canonical entity, e.g. through confirmed aliases)."""
    groups: dict[str, list[ClaimDraft]] = defaultdict(list)
    for claim in claims:
        groups[key(claim) if key else claim.subject.key].append(claim)
    return dict(groups)


def candidate_pairs(
    groups: Mapping[str, Sequence[ClaimDraft]],
) -> Iterator[tuple[ClaimDraft, ClaimDraft]]:
    """Pairs of claims of different items within each subject group. Event claims meet
    the claims of the same event ("began_operating" with "began_operating"); every other
    claim meets every other non-event claim of its subject (a direction or a negation
    needs no shared verb: "increases" and "reduces" differ in just that). Each bucket is
    capped at ``MAX_GROUP`` claims, the most confident kept."""
    for claims in groups.values():
        buckets: dict[str | None, list[ClaimDraft]] = defaultdict(list)
        for claim in claims:
            predicate = claim.facets.predicate
            buckets[predicate.key if predicate and predicate.event else None].append(claim)
        for bucket in buckets.values():
            kept = sorted(bucket, key=lambda c: -c.confidence)[:MAX_GROUP]
            yield from _across_items(kept)


def _across_items(claims: Sequence[ClaimDraft]) -> Iterator[tuple[ClaimDraft, ClaimDraft]]:
    for x, y in itertools.combinations(claims, 2):
        if x.item_id != y.item_id:
            yield (x, y)


def find_contradictions(
    claims: Iterable[ClaimDraft], key: SubjectKey | None = None
) -> list[Contradiction]:
    """Every contradiction among ``claims`` (one per pair), most confident first."""
    found: dict[str, Contradiction] = {}
    for a, b in candidate_pairs(by_subject(claims, key)):
        c = compare(a, b)
        if c is not None:
            found.setdefault(c.dedupe_key, c)
    return sorted(found.values(), key=lambda c: -c.confidence)


def compare(
    a: ClaimDraft, b: ClaimDraft, *, min_overlap: float = MIN_OVERLAP
) -> Contradiction | None:
    """The first conflicting facet between two claims (module docstring), or None. The
    claims are taken to be about the same subject; that is the caller's index."""
    for rule in (_date_conflict, _quantity_conflict, _polarity_conflict, _direction_conflict):
        found = rule(a, b, min_overlap)
        if found is not None:
            return found
    return None


def compare_statements(
    a: ClaimDraft, b: ClaimDraft, *, min_overlap: float = MIN_OVERLAP
) -> Contradiction | None:
    """The rules that need no shared subject, for two claims found by what their statements
    say (``relata.claims.similar``): polarity, then direction. Each asks the statements to
    share most of their content words (``min_overlap``), and both to assert. The date and
    quantity rules are left out: they compare two claims attached to one subject ("founded
    in 2012" of one company against "in 2015" of another is no conflict)."""
    for rule in (_polarity_conflict, _direction_conflict):
        found = rule(a, b, min_overlap)
        if found is not None:
            return found
    return None


#: Content words two claims need to share to count as agreeing, and the share of the smaller
#: claim's they must be, the subjects' own names aside: two sentences naming the same
#: entities are not thereby saying the same thing about them.
AGREE_OVERLAP: Final = 0.6
AGREE_SHARED: Final = 3


def _capitalised_terms(text: str) -> frozenset[str]:
    """The stems of the capitalised words of ``text`` (names, mostly), so that an agreement
    rests on what is said, not on the names two sentences share."""
    return content_terms(" ".join(w for w in text.split() if w[:1].isupper()))


def agreement(a: ClaimDraft, b: ClaimDraft) -> float | None:
    """The confidence that two claims about the same subject say the same thing, or None:
    both assert, no facet conflicts, the same polarity and direction, and most of their
    content words shared (``AGREE_OVERLAP``, at least ``AGREE_SHARED``), cue words, the
    subjects' names and capitalised words aside. Relationship evidence, not a ledger entry."""
    fa, fb = a.facets, b.facets
    if not (fa.assertive and fb.assertive):
        return None
    if fa.polarity != fb.polarity or fa.direction != fb.direction:
        return None
    names = content_terms(f"{a.subject.name} {b.subject.name}")
    names |= _capitalised_terms(a.quotation) | _capitalised_terms(b.quotation)
    cues = _cue_words(fa) | _cue_words(fb)
    ta, tb = fa.terms - cues - names, fb.terms - cues - names
    shared = ta & tb
    if len(shared) < AGREE_SHARED:
        return None
    overlap = len(shared) / min(len(ta), len(tb))
    if overlap < AGREE_OVERLAP or compare(a, b) is not None:
        return None
    return round(min(0.9, 0.4 + 0.5 * overlap), 2)


# --------------------------------------------------------------------------------- rules


def _span(claim: ClaimDraft, start: int, end: int) -> tuple[int, int]:
    return (claim.start + start, claim.start + end)


def _same_predicate(a: Facets, b: Facets) -> bool:
    return (
        a.predicate is not None and b.predicate is not None and a.predicate.key == b.predicate.key
    )


def _event_date(f: Facets) -> DateFacet | None:
    """The point date nearest the event predicate."""
    points = f.event_dates
    if not points or f.predicate is None:
        return None
    anchor = f.predicate.start
    return min(points, key=lambda d: abs(d.start - anchor))


def _date_conflict(a: ClaimDraft, b: ClaimDraft, min_overlap: float) -> Contradiction | None:
    fa, fb = a.facets, b.facets
    if not (a.attached and b.attached):
        return None
    if not (_same_predicate(fa, fb) and fa.predicate and fa.predicate.event):
        return None
    da, db = _event_date(fa), _event_date(fb)
    if da is None or db is None or not dates_conflict(da, db):
        return None
    precise = da.months is not None and db.months is not None
    return Contradiction(
        a,
        b,
        ConflictFacet.DATE,
        _span(a, da.start, da.end),
        _span(b, db.start, db.end),
        f"{fa.predicate.key}: {da.label()} vs {db.label()}",
        0.9 if precise else 0.85,
    )


def _only_of_unit(f: Facets, unit: str) -> Quantity | None:
    of_unit = [q for q in f.quantities if q.unit == unit]
    return of_unit[0] if len(of_unit) == 1 else None


def _quantity_conflict(a: ClaimDraft, b: ClaimDraft, min_overlap: float) -> Contradiction | None:
    fa, fb = a.facets, b.facets
    if not (a.attached and b.attached):
        return None
    if not _same_predicate(fa, fb) or _overlap(fa, fb) < min_overlap:
        return None
    for qa in fa.quantities:
        one_a = _only_of_unit(fa, qa.unit)
        one_b = _only_of_unit(fb, qa.unit)
        if one_a is None or one_b is None or not quantities_conflict(one_a, one_b):
            continue
        return Contradiction(
            a,
            b,
            ConflictFacet.QUANTITY,
            _span(a, one_a.start, one_a.end),
            _span(b, one_b.start, one_b.end),
            f"{qa.unit}: {one_a.label()} vs {one_b.label()}",
            _confidence(0.75, fa, fb),
        )
    return None


def _cue_words(f: Facets) -> frozenset[str]:
    return frozenset(stem(c.text) for c in (*f.negations, *f.directions))


def _overlap(a: Facets, b: Facets) -> float:
    """Share of the smaller statement's content words (cue words aside) the other has."""
    cues = _cue_words(a) | _cue_words(b)
    ta, tb = a.terms - cues, b.terms - cues
    shared = ta & tb
    if len(shared) < MIN_SHARED:
        return 0.0
    return len(shared) / min(len(ta), len(tb))


def _confidence(base: float, a: Facets, b: Facets) -> float:
    return round(min(0.95, base + 0.2 * _overlap(a, b)), 2)


def _shares_target(terms: tuple[str, ...], other: frozenset[str]) -> bool:
    """``other`` names ``MIN_TARGET_SHARED`` of the target's words."""
    if not terms:
        return False
    shared = sum(1 for t in terms if t in other)
    return shared >= min(MIN_TARGET_SHARED, len(terms))


def _same_target(a: Cue, b: Cue) -> bool:
    """Two cues act on the same thing: their targets share ``MIN_TARGET_SHARED`` words."""
    if not (a.target and b.target):
        return False
    shared = len(set(a.target) & set(b.target))
    return shared >= min(MIN_TARGET_SHARED, len(a.target), len(b.target))


def _opposed_cues(a: Facets, b: Facets, *, same_sign: bool) -> tuple[Cue, Cue] | None:
    """A direction cue of each acting on the same target, with opposite signs (or, with
    ``same_sign``, equal signs and opposite negation). A cue is matched with the other
    statement's cue whose target shares most with its own: when that one agrees ("X
    decreased A but increased B" against "X increases B"), the pair is no conflict."""
    for ca in a.directions:
        matches = [cb for cb in b.directions if _same_target(ca, cb)]
        if not matches:
            continue
        best = max(len(set(ca.target) & set(cb.target)) for cb in matches)
        closest = [cb for cb in matches if len(set(ca.target) & set(cb.target)) == best]
        if any(cb.sign == ca.sign and cb.negated == ca.negated for cb in closest):
            continue
        for cb in closest:
            if same_sign and ca.sign == cb.sign and ca.negated != cb.negated:
                return ca, cb
            if not same_sign and ca.sign != cb.sign and ca.negated == cb.negated:
                return ca, cb
    return None


def _denial_agrees(a: Facets, b: Facets) -> bool:
    """One statement denies a direction the other reverses, on the same target."""
    return any(
        _same_target(ca, cb) and ca.sign != cb.sign and ca.negated != cb.negated
        for ca in a.directions
        for cb in b.directions
    )


def _comparable(a: ClaimDraft, b: ClaimDraft, min_overlap: float) -> bool:
    fa, fb = a.facets, b.facets
    return fa.assertive and fb.assertive and _overlap(fa, fb) >= min_overlap


def _polarity_conflict(a: ClaimDraft, b: ClaimDraft, min_overlap: float) -> Contradiction | None:
    if not _comparable(a, b, min_overlap):
        return None
    fa, fb = a.facets, b.facets
    denied = _opposed_cues(fa, fb, same_sign=True)
    if denied is not None:
        ca, cb = denied
        return Contradiction(
            a,
            b,
            ConflictFacet.POLARITY,
            _span(a, ca.start, ca.end),
            _span(b, cb.start, cb.end),
            f"{ca.text!r} denied in one, stated in the other",
            _confidence(0.7, fa, fb),
        )
    if fa.polarity is fb.polarity or _opposed_cues(fa, fb, same_sign=False) is not None:
        return None
    if _denial_agrees(fa, fb):
        return None  # "did not increase" and "decreased" say the same
    neg_claim, neg, other = (a, fa, fb) if fa.polarity is Polarity.NEGATED else (b, fb, fa)
    cue = next((c for c in neg.negations if _shares_target(c.target, other.terms)), None)
    if cue is None:
        return None
    plain = b if neg_claim is a else a
    first_span = _span(neg_claim, cue.start, cue.end)
    second_span = (plain.start, plain.end)
    spans = (first_span, second_span) if neg_claim is a else (second_span, first_span)
    return Contradiction(
        a,
        b,
        ConflictFacet.POLARITY,
        spans[0],
        spans[1],
        f"negated ({cue.text!r}) in one, affirmed in the other",
        _confidence(0.6, fa, fb),
    )


def _direction_conflict(a: ClaimDraft, b: ClaimDraft, min_overlap: float) -> Contradiction | None:
    if not _comparable(a, b, min_overlap):
        return None
    fa, fb = a.facets, b.facets
    pair = _opposed_cues(fa, fb, same_sign=False)
    if pair is None:
        return None
    ca, cb = pair
    return Contradiction(
        a,
        b,
        ConflictFacet.DIRECTION,
        _span(a, ca.start, ca.end),
        _span(b, cb.start, cb.end),
        f"{ca.text!r} vs {cb.text!r}",
        _confidence(0.6, fa, fb),
    )
