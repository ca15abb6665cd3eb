"""Changed facts in repeated sentences: a second source that repeats a sentence of another
with a value changed disagrees with it (docs/decisions/0039-changed-facts-in-repeated-sentences.md).

Pure, no database. ``keyed_claims`` gives every repeatable sentence of an item
(``relata.claims.repeats``) a claim: the deterministic claim of the sentence when the
extractor made one (an entity is its subject), else a **statement claim** whose subject is
``~r:<key>`` (such claims never meet an entity's claims in the subject index). The stage
stores the key on the claim (``claims.repeat_key``, indexed) and reads the other items' claims
with the same keys; ``changes`` compares the pairs:

* the keys are equal (the same words in the same order, values masked) and the values are
  compared slot by slot: a year, a month, a day, a weekday or a number that differs, or a
  negator in one only, is a **changed fact**. Numbers are compared as written ("1,200" is
  1200): a repeated sentence that rounds differently has changed its value;
* a key that an item writes twice with different values (a list: "Unit 1 produced 5 MW",
  "Unit 2 produced 6 MW") is ambiguous there and never compared: precision first;
* a pair the facet rules already recorded (the same two claims) is not recorded again.

The contradiction's subject is the repeated sentence (``~r:<key>``, shown as the masked
sentence), so each repeated sentence is one disagreement; its facet is ``date`` for a changed
year, month, day or weekday, ``quantity`` for a number and ``polarity`` for a negator, so
``relata.domain.disagreements`` times it as it does the facet rules' findings (a changed
quantity between dated sources is a supersession). Detector ``repeats``.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from relata.claims.contradict import ConflictFacet, Contradiction
from relata.claims.extract import EXTRACTOR, ChunkSpan, ClaimDraft, Subject, claim_from_sentence
from relata.claims.repeats import REPEAT_VERSION, Repeat, Value, ValueKind, repeat_of
from relata.claims.sentences import split_sentences

DETECTOR: Final = "repeats"
DETECTOR_VERSION: Final = REPEAT_VERSION
#: A changed value in a repeated sentence: the words around it are the same, so this ranks
#: with the facet rules' date conflicts.
CONFIDENCE: Final = 0.85
#: Repeatable sentences of one item keyed, at most.
MAX_KEYED: Final = 5_000


class ChangeKind(enum.StrEnum):
    QUANTITY = "quantity"
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    WEEKDAY = "weekday"
    NEGATION = "negation"


_KIND: Final = {
    ValueKind.NUMBER: ChangeKind.QUANTITY,
    ValueKind.YEAR: ChangeKind.YEAR,
    ValueKind.MONTH: ChangeKind.MONTH,
    ValueKind.DAY: ChangeKind.DAY,
    ValueKind.WEEKDAY: ChangeKind.WEEKDAY,
}


#: Kinds written in digits that share a slot of the key (``repeats``): a year and a number.
_DIGITS: Final = frozenset({ValueKind.YEAR, ValueKind.NUMBER})


@dataclass(frozen=True, slots=True)
class Change:
    """What differs between two repeats of one sentence: the first slot whose value
    differs (None and None: only the polarity differs)."""

    kind: ChangeKind
    first: Value | None
    second: Value | None

    @property
    def facet(self) -> ConflictFacet:
        if self.kind is ChangeKind.QUANTITY:
            return ConflictFacet.QUANTITY
        if self.kind is ChangeKind.NEGATION:
            return ConflictFacet.POLARITY
        return ConflictFacet.DATE


@dataclass(frozen=True, slots=True)
class Keyed:
    """A claim and the repeat key of its sentence."""

    draft: ClaimDraft
    repeat: Repeat


def change_between(a: Repeat, b: Repeat) -> Change | None:
    """The changed fact between two repeats of a sentence, or None when they are not
    repeats of one sentence or say the same."""
    if a.key != b.key or len(a.values) != len(b.values):
        return None
    for x, y in zip(a.values, b.values, strict=True):
        if x.kind != y.kind and {x.kind, y.kind} != _DIGITS:
            return None
        if x.value != y.value:
            kind = _KIND[x.kind] if x.kind == y.kind else ChangeKind.QUANTITY
            return Change(kind, x, y)
    if a.negated != b.negated:
        return Change(ChangeKind.NEGATION, None, None)
    return None


def keyed_claims(
    item_id: str,
    text: str,
    drafts: Sequence[ClaimDraft],
    chunks: Sequence[ChunkSpan] = (),
) -> list[Keyed]:
    """Every repeatable sentence of the item with its claim: the deterministic claim of the
    sentence when there is one, else a statement claim with subject ``~r:<key>``."""
    by_span = {(d.start, d.end): d for d in drafts if d.extractor == EXTRACTOR}
    out: list[Keyed] = []
    for sentence in split_sentences(text):
        if len(out) >= MAX_KEYED:
            break
        repeat = repeat_of(sentence.text)
        if repeat is None:
            continue
        draft = by_span.get((sentence.start, sentence.end))
        if draft is None:
            subject = Subject(repeat.label(), repeat.subject, sentence.start, sentence.start)
            draft = claim_from_sentence(
                item_id, sentence, subject, chunk_id=_chunk_id(sentence.start, chunks)
            )
        if draft is not None:
            out.append(Keyed(draft, repeat))
    return out


def _chunk_id(start: int, chunks: Sequence[ChunkSpan]) -> str | None:
    for c in chunks:
        if c.base_offset <= start < c.base_offset + len(c.text):
            return c.chunk_id
    return None


def _unambiguous(keyed: Iterable[Keyed]) -> list[Keyed]:
    """Drop the keys an item writes more than once with different values (a list of
    like sentences), keeping one of each key an item repeats exactly."""
    groups: dict[tuple[str, str], list[Keyed]] = defaultdict(list)
    for k in keyed:
        groups[(k.draft.item_id, k.repeat.key)].append(k)
    out = []
    for group in groups.values():
        first = group[0]
        if all(change_between(first.repeat, k.repeat) is None for k in group[1:]):
            out.append(first)
    return out


def changes(
    mine: Sequence[Keyed],
    theirs: Sequence[Keyed],
    known: Iterable[frozenset[str]] = (),
) -> list[tuple[str, str, Contradiction]]:
    """The changed facts between the item's repeatable sentences and other items' (as
    ``(subject, subject_name, contradiction)``), leaving out pairs of claims in ``known``
    (their dedupe keys: the facet rules recorded them already)."""
    seen = set(known)
    by_key: dict[str, list[Keyed]] = defaultdict(list)
    for k in _unambiguous(theirs):
        by_key[k.repeat.key].append(k)
    out: list[tuple[str, str, Contradiction]] = []
    for a in _unambiguous(mine):
        for b in by_key.get(a.repeat.key, ()):
            if a.draft.item_id == b.draft.item_id:
                continue
            pair = frozenset({a.draft.dedupe_key, b.draft.dedupe_key})
            if pair in seen:
                continue
            change = change_between(a.repeat, b.repeat)
            if change is None:
                continue
            seen.add(pair)
            out.append((a.repeat.subject, a.repeat.label(), _contradiction(a, b, change)))
    return out


def _span(draft: ClaimDraft, value: Value | None) -> tuple[int, int]:
    if value is None:
        return draft.start, draft.end
    return draft.start + value.start, draft.start + value.end


def _contradiction(a: Keyed, b: Keyed, change: Change) -> Contradiction:
    if change.first is not None and change.second is not None:
        said = f"{change.kind} {change.first.text} vs {change.second.text}"
    else:
        said = "one source negates the sentence"
    return Contradiction(
        first=a.draft,
        second=b.draft,
        facet=change.facet,
        first_span=_span(a.draft, change.first),
        second_span=_span(b.draft, change.second),
        reason=f"repeat: {said} in a repeated sentence",
        confidence=CONFIDENCE,
        detector=DETECTOR,
        detector_version=DETECTOR_VERSION,
    )
