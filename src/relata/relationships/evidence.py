"""The evidence of a relationship: quoted from both sides, bounded, and compared with what a
person rejected. Pure: no I/O.

A record points at the item, chunk and offsets of every quotation it holds (``Span``), so a
person can check it against the source: a **shared entity** with a quotation from each item,
an **agreeing or contradicting claim pair** with both claims' quotations (the contradiction
from the ledger), or a **reference** (the span of one item that names the other).
``bound_evidence`` keeps a relationship's evidence within fixed bounds (``PER_KIND`` records
of each kind, ``MAX_QUOTATION_CHARS`` per quotation), in a deterministic order.

A rejected relationship is proposed again only when its evidence changed **materially**
(``material_changes``, against the ``EvidenceSnapshot`` taken when the person decided): a
kind of evidence it did not have, a contradiction it did not have, or a score that rose
across the strong threshold under the same score version. Re-extracting the same evidence
(new offsets, new chunk ids, other quotations of the same entity) is not material, nor is
losing evidence, a new scoring version, or a model changing its mind.

The dedupe key of a relationship is the unordered pair of its items (``relationship_key``):
one relationship per pair, whatever its type. docs/decisions/0019-relationships.md records
the rules.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from relata.domain.errors import ValidationError
from relata.domain.models import JSONDict
from relata.ids import pair_key
from relata.relationships.scoring import DEFAULT_MODEL, ReferenceKind, ScoringModel

MAX_QUOTATION_CHARS: Final = 300
#: Names, keys and facets are cut to this; a contradiction's reason to ``MAX_REASON_CHARS``.
MAX_LABEL_CHARS: Final = 200
MAX_REASON_CHARS: Final = 300
#: At most this many records are read from one call's input (the rest are not looked at).
MAX_SCANNED: Final = 10_000
_KEY_KIND: Final = "relationship"


class EvidenceKind(enum.StrEnum):
    """The kinds of evidence, in the order a relationship's evidence lists them."""

    CONTRADICTING_CLAIMS = "contradicting_claims"
    AGREEING_CLAIMS = "agreeing_claims"
    REFERENCE = "reference"
    SHARED_ENTITY = "shared_entity"


#: Records kept of each kind (the most confident, the strongest reference, the rarest entity).
PER_KIND: Final[Mapping[EvidenceKind, int]] = {
    EvidenceKind.CONTRADICTING_CLAIMS: 3,
    EvidenceKind.AGREEING_CLAIMS: 3,
    EvidenceKind.REFERENCE: 3,
    EvidenceKind.SHARED_ENTITY: 5,
}
MAX_EVIDENCE: Final = sum(PER_KIND.values())


class MaterialChange(enum.StrEnum):
    """Why evidence differs materially from what a person rejected."""

    NEW_KIND = "new_kind"
    NEW_CONTRADICTION = "new_contradiction"
    CROSSED_STRONG = "crossed_strong"


def _text(value: object, field_name: str, limit: int) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{field_name} must be a non-empty string", field=field_name)
    return value[:limit]


def _unit(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValidationError(f"{field_name} must be a number", field=field_name)
    return min(1.0, max(0.0, float(value)))


def _ident(value: object, field_name: str) -> str:
    """An id (item, chunk, ledger entry): refused rather than cut when too long."""
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ValidationError(f"{field_name} must be an id of 1 to 64 characters", field=field_name)
    return value


def _offset(value: object, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{field_name} must be an integer >= 0", field=field_name)
    return value


def _set(record: object, name: str, value: object) -> None:
    object.__setattr__(record, name, value)


@dataclass(frozen=True, slots=True)
class Span:
    """A quotation of an item at item offsets: ``text[start:end] == quotation``."""

    item_id: str
    chunk_id: str | None
    start: int
    end: int
    quotation: str

    def __post_init__(self) -> None:
        _ident(self.item_id, "span.item_id")
        if self.chunk_id is not None:
            _ident(self.chunk_id, "span.chunk_id")
        _offset(self.start, "span.start")
        _offset(self.end, "span.end")
        if not isinstance(self.quotation, str) or not self.quotation:
            raise ValidationError("span.quotation must be a non-empty string", field="span")
        if len(self.quotation) > MAX_QUOTATION_CHARS:
            raise ValidationError(
                f"span.quotation is over {MAX_QUOTATION_CHARS} characters (use Span.of)",
                field="span.quotation",
            )
        if self.end - self.start != len(self.quotation):
            raise ValidationError(
                "span offsets do not match the quotation's length", field="span.end"
            )

    @classmethod
    def of(
        cls,
        item_id: str,
        chunk_id: str | None,
        start: int,
        quotation: str,
        *,
        focus: tuple[int, int] | None = None,
    ) -> Span:
        """The span of ``quotation`` at item offset ``start``, cut to ``MAX_QUOTATION_CHARS``
        around ``focus`` (item offsets of the words that matter, e.g. the conflicting date)
        or from its start; the offsets follow the cut."""
        _offset(start, "span.start")
        if not isinstance(quotation, str):
            raise ValidationError("span.quotation must be a string", field="span.quotation")
        cut = 0
        if len(quotation) > MAX_QUOTATION_CHARS and focus is not None:
            lo = min(max(focus[0] - start, 0), len(quotation))
            hi = min(max(focus[1] - start, lo), len(quotation))
            centred = (lo + hi) // 2 - MAX_QUOTATION_CHARS // 2
            cut = lo if hi - lo >= MAX_QUOTATION_CHARS else centred
            cut = min(max(cut, 0), len(quotation) - MAX_QUOTATION_CHARS)
        kept = quotation[cut : cut + MAX_QUOTATION_CHARS]
        return cls(item_id, chunk_id, start + cut, start + cut + len(kept), kept)

    def as_json(self) -> JSONDict:
        return {
            "item": self.item_id,
            "chunk": self.chunk_id,
            "start": self.start,
            "end": self.end,
            "quotation": self.quotation,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Span:
        return cls(data["item"], data["chunk"], data["start"], data["end"], data["quotation"])


def _two_sided(first: Span, second: Span) -> None:
    if not isinstance(first, Span) or not isinstance(second, Span):
        raise ValidationError("evidence from both sides needs two spans", field="evidence")
    if first.item_id == second.item_id:
        raise ValidationError("evidence from both sides needs two items", field="evidence")


@dataclass(frozen=True, slots=True)
class SharedEntityEvidence:
    """An entity both items name, with a quotation from each and its rarity (0-1)."""

    entity_key: str
    entity_name: str
    rarity: float
    first: Span
    second: Span

    def __post_init__(self) -> None:
        _set(self, "entity_key", _text(self.entity_key, "entity_key", MAX_LABEL_CHARS))
        _set(self, "entity_name", _text(self.entity_name, "entity_name", MAX_LABEL_CHARS))
        _set(self, "rarity", _unit(self.rarity, "rarity"))
        _two_sided(self.first, self.second)

    @property
    def kind(self) -> EvidenceKind:
        return EvidenceKind.SHARED_ENTITY

    @property
    def identity(self) -> tuple[str, ...]:
        return (self.kind.value, self.entity_key)

    def spans(self) -> tuple[Span, ...]:
        return (self.first, self.second)

    def as_json(self) -> JSONDict:
        return {
            "kind": self.kind.value,
            "entity_key": self.entity_key,
            "entity_name": self.entity_name,
            "rarity": self.rarity,
            "first": self.first.as_json(),
            "second": self.second.as_json(),
        }


@dataclass(frozen=True, slots=True)
class ClaimPairEvidence:
    """Two claims of the two items about one subject that agree or (from the ledger)
    contradict: both claims' keys and quotations; for a contradiction, the facet, the
    reason and the ledger entry."""

    agrees: bool
    subject_key: str
    subject_name: str
    first_claim: str
    second_claim: str
    first: Span
    second: Span
    confidence: float
    facet: str | None = None
    reason: str | None = None
    contradiction_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.agrees, bool):
            raise ValidationError("agrees must be true or false", field="agrees")
        _set(self, "subject_key", _text(self.subject_key, "subject_key", MAX_LABEL_CHARS))
        _set(self, "subject_name", _text(self.subject_name, "subject_name", MAX_LABEL_CHARS))
        _set(self, "first_claim", _text(self.first_claim, "first_claim", MAX_LABEL_CHARS))
        _set(self, "second_claim", _text(self.second_claim, "second_claim", MAX_LABEL_CHARS))
        _set(self, "confidence", _unit(self.confidence, "confidence"))
        if self.facet is not None:
            _set(self, "facet", _text(self.facet, "facet", MAX_LABEL_CHARS))
        if self.reason is not None:
            _set(self, "reason", _text(self.reason, "reason", MAX_REASON_CHARS))
        if self.contradiction_id is not None:
            _ident(self.contradiction_id, "contradiction_id")
        _two_sided(self.first, self.second)

    @property
    def kind(self) -> EvidenceKind:
        return EvidenceKind.AGREEING_CLAIMS if self.agrees else EvidenceKind.CONTRADICTING_CLAIMS

    @property
    def identity(self) -> tuple[str, ...]:
        return (self.kind.value, *sorted((self.first_claim, self.second_claim)))

    def spans(self) -> tuple[Span, ...]:
        return (self.first, self.second)

    def as_json(self) -> JSONDict:
        return {
            "kind": self.kind.value,
            "subject_key": self.subject_key,
            "subject_name": self.subject_name,
            "claims": [self.first_claim, self.second_claim],
            "first": self.first.as_json(),
            "second": self.second.as_json(),
            "confidence": self.confidence,
            "facet": self.facet,
            "reason": self.reason,
            "contradiction_id": self.contradiction_id,
        }


@dataclass(frozen=True, slots=True)
class ReferenceEvidence:
    """One item names the other: the span of the naming item where it does."""

    reference_kind: ReferenceKind
    referenced_item: str
    span: Span

    def __post_init__(self) -> None:
        if not isinstance(self.reference_kind, ReferenceKind):
            raise ValidationError(
                f"unknown reference kind {self.reference_kind!r}", field="reference_kind"
            )
        _ident(self.referenced_item, "referenced_item")
        if not isinstance(self.span, Span):
            raise ValidationError("a reference needs a span", field="span")
        if self.span.item_id == self.referenced_item:
            raise ValidationError("an item does not reference itself", field="referenced_item")

    @property
    def kind(self) -> EvidenceKind:
        return EvidenceKind.REFERENCE

    @property
    def identity(self) -> tuple[str, ...]:
        return (self.kind.value, self.span.item_id, self.referenced_item, self.reference_kind.value)

    def spans(self) -> tuple[Span, ...]:
        return (self.span,)

    def as_json(self) -> JSONDict:
        return {
            "kind": self.kind.value,
            "reference_kind": self.reference_kind.value,
            "referenced_item": self.referenced_item,
            "span": self.span.as_json(),
        }


Evidence = SharedEntityEvidence | ClaimPairEvidence | ReferenceEvidence


def evidence_from_json(data: Mapping[str, Any]) -> Evidence:
    """Read back a record's ``as_json``; a malformed one is a ``ValidationError``."""
    try:
        kind = EvidenceKind(data["kind"])
        if kind is EvidenceKind.SHARED_ENTITY:
            return SharedEntityEvidence(
                data["entity_key"],
                data["entity_name"],
                data["rarity"],
                Span.from_json(data["first"]),
                Span.from_json(data["second"]),
            )
        if kind is EvidenceKind.REFERENCE:
            return ReferenceEvidence(
                ReferenceKind(data["reference_kind"]),
                data["referenced_item"],
                Span.from_json(data["span"]),
            )
        first_claim, second_claim = data["claims"]
        return ClaimPairEvidence(
            agrees=kind is EvidenceKind.AGREEING_CLAIMS,
            subject_key=data["subject_key"],
            subject_name=data["subject_name"],
            first_claim=first_claim,
            second_claim=second_claim,
            first=Span.from_json(data["first"]),
            second=Span.from_json(data["second"]),
            confidence=data["confidence"],
            facet=data.get("facet"),
            reason=data.get("reason"),
            contradiction_id=data.get("contradiction_id"),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ValidationError(
            f"stored relationship evidence is malformed ({type(exc).__name__})",
            field="evidence",
        ) from exc


_REFERENCE_ORDER: Final = {
    ReferenceKind.EXTERNAL_ID: 0,
    ReferenceKind.FILENAME: 1,
    ReferenceKind.TITLE: 2,
}


def _rank(record: Evidence) -> tuple[float, tuple[str, ...]]:
    """Best first within a kind; the identity breaks ties, so the order is deterministic."""
    if isinstance(record, ClaimPairEvidence):
        return (-record.confidence, record.identity)
    if isinstance(record, SharedEntityEvidence):
        return (-record.rarity, record.identity)
    return (_REFERENCE_ORDER[record.reference_kind], record.identity)


def _check_endpoints(record: Evidence, pair: frozenset[str]) -> None:
    items = {span.item_id for span in record.spans()}
    if isinstance(record, ReferenceEvidence):
        items.add(record.referenced_item)
    if items != pair:
        raise ValidationError(
            "evidence must point at the relationship's two items", field="evidence"
        )


def bound_evidence(
    first_item_id: str, second_item_id: str, records: Iterable[Evidence]
) -> tuple[Evidence, ...]:
    """The evidence of the pair as stored: each identity once (its best record), at most
    ``PER_KIND`` of each kind, kinds in ``EvidenceKind`` order, best first within a kind.
    A record that points at any other item is refused."""
    pair = frozenset((first_item_id, second_item_id))
    if len(pair) != 2 or not all(pair):
        raise ValidationError("a relationship needs two different items", field="items")
    best: dict[tuple[str, ...], Evidence] = {}
    for record in itertools.islice(records, MAX_SCANNED):
        if not isinstance(record, SharedEntityEvidence | ClaimPairEvidence | ReferenceEvidence):
            raise ValidationError(f"{type(record).__name__} is not evidence", field="evidence")
        _check_endpoints(record, pair)
        known = best.get(record.identity)
        if known is None or _rank(record) < _rank(known):
            best[record.identity] = record
    kept: list[Evidence] = []
    for kind in EvidenceKind:
        of_kind = sorted((r for r in best.values() if r.kind is kind), key=_rank)
        kept.extend(of_kind[: PER_KIND[kind]])
    return tuple(kept)


def evidence_as_json(records: Iterable[Evidence]) -> tuple[JSONDict, ...]:
    """The stored form of ``bound_evidence``'s result (``Relationship.evidence``)."""
    return tuple(record.as_json() for record in itertools.islice(records, MAX_EVIDENCE))


# ---------------------------------------------------------------------------- review


@dataclass(frozen=True, slots=True)
class EvidenceSnapshot:
    """What a person saw when deciding: the kinds and identities of the evidence, and the
    score and its version. Stored with the decision (it is small: identities only)."""

    kinds: frozenset[EvidenceKind]
    identities: frozenset[tuple[str, ...]]
    score: float
    score_version: str

    @classmethod
    def of(cls, records: Iterable[Evidence], score: float, score_version: str) -> EvidenceSnapshot:
        kept = tuple(itertools.islice(records, MAX_SCANNED))
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
            raise ValidationError("a snapshot's score must be a number", field="score")
        return cls(
            kinds=frozenset(r.kind for r in kept),
            identities=frozenset(r.identity for r in kept),
            score=float(score),
            score_version=_text(score_version, "score_version", 32),
        )

    def as_json(self) -> JSONDict:
        return {
            "kinds": sorted(k.value for k in self.kinds),
            "identities": sorted(list(i) for i in self.identities),
            "score": self.score,
            "score_version": self.score_version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvidenceSnapshot:
        try:
            identities = frozenset(
                tuple(_text(part, "identities", MAX_LABEL_CHARS) for part in identity)
                for identity in itertools.islice(data["identities"], MAX_SCANNED)
            )
            return cls(
                kinds=frozenset(EvidenceKind(k) for k in data["kinds"]),
                identities=identities,
                score=float(data["score"]),
                score_version=_text(data["score_version"], "score_version", 32),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError(
                f"a stored evidence snapshot is malformed ({type(exc).__name__})",
                field="snapshot",
            ) from exc


def material_changes(
    rejected: EvidenceSnapshot,
    current: EvidenceSnapshot,
    *,
    model: ScoringModel = DEFAULT_MODEL,
) -> tuple[MaterialChange, ...]:
    """How ``current`` differs materially from the ``rejected`` snapshot (empty: it does not,
    and the relationship stays rejected). Scores are compared only when both are of
    ``model``'s version: a new scoring model is not new evidence."""
    changes: list[MaterialChange] = []
    if current.kinds - rejected.kinds:
        changes.append(MaterialChange.NEW_KIND)
    contradiction = EvidenceKind.CONTRADICTING_CLAIMS.value
    if any(i[0] == contradiction and i not in rejected.identities for i in current.identities):
        changes.append(MaterialChange.NEW_CONTRADICTION)
    same_version = rejected.score_version == current.score_version == model.version
    if same_version and rejected.score < model.strong_threshold <= current.score:
        changes.append(MaterialChange.CROSSED_STRONG)
    return tuple(changes)


def differs_materially(
    rejected: EvidenceSnapshot,
    current: EvidenceSnapshot,
    *,
    model: ScoringModel = DEFAULT_MODEL,
) -> bool:
    """Whether a rejected relationship may be proposed again (``material_changes``)."""
    return bool(material_changes(rejected, current, model=model))


def relationship_key(first_item_id: str, second_item_id: str) -> str:
    """The dedupe key of a relationship: the unordered pair of its items, nothing else (one
    relationship per pair; its type is an attribute a person may edit)."""
    if not first_item_id or not second_item_id:
        raise ValidationError("a relationship needs two items", field="items")
    if first_item_id == second_item_id:
        raise ValidationError("an item is not related to itself", field="items")
    return pair_key(_KEY_KIND, first_item_id, second_item_id)
