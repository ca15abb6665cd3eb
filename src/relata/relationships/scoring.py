"""The relationship scoring model: features of a candidate pair in, a score, a type and
every feature's contribution out. Pure: no I/O, no clock, no randomness.

The score is a weighted sum: each feature has a *strength* in [0, 1] and a *weight*, the
weights add up to 1, and a feature's contribution is ``weight * strength`` on a grid of
millionths, so the contributions add up to the score exactly (as decimals, in any order)
and the score stays in [0, 1] without clipping. The invariants of the spec follow from the
weights, and ``ScoringModel`` refuses weights that would break them:

- similarity alone cannot be strong: the similarity weight, and the meaning and wording
  similarities' weights together, are below ``STRONG_THRESHOLD``;
- a model's opinion alone (even at confidence 1, even with chronology) cannot be stored:
  the model weight plus the chronology weight is below ``STORAGE_THRESHOLD``;
- an observed contradiction decides the type before any opinion (``_infer_type``);
- chronology never decides ``updates``: only a model's ``updates`` opinion does, and only
  when the items are dated apart on a shared subject (chronology is necessary, never
  sufficient).

Every output carries ``SCORE_VERSION``; changing a weight, a threshold, a strength curve or
a type rule means a new version (a unit test pins the parameters of each version).
docs/decisions/0019-relationships.md records the choices.
"""

from __future__ import annotations

import enum
import hashlib
import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from relata.domain.errors import ValidationError
from relata.domain.models import JSONDict
from relata.domain.vocabulary import RelationshipType

SCORE_VERSION: Final = "score-2"
#: Below this score nothing is stored.
STORAGE_THRESHOLD: Final = 0.09
#: At or above this score a relationship expands search results without review.
STRONG_THRESHOLD: Final = 0.30
#: Contributions are whole millionths: the grid that makes them add up exactly.
MICROS: Final = 1_000_000
#: A pair's features keep the rarest shared entities and the most confident claim pairs of
#: each kind up to these bounds, so stored inputs stay small (the rest add little).
MAX_SHARED_ENTITIES: Final = 32
MAX_CLAIM_PAIRS: Final = 16


class Feature(enum.StrEnum):
    """The features of a pair, in the order a person reads them."""

    CONTRADICTING_CLAIMS = "contradicting_claims"
    AGREEING_CLAIMS = "agreeing_claims"
    REFERENCES = "references"
    SHARED_ENTITIES = "shared_entities"
    SIMILARITY = "similarity"
    LEXICAL = "lexical"
    CHRONOLOGY = "chronology"
    MODEL = "model"


class Side(enum.StrEnum):
    """One endpoint of the pair as the caller ordered it."""

    FIRST = "first"
    SECOND = "second"

    @property
    def other(self) -> Side:
        return Side.SECOND if self is Side.FIRST else Side.FIRST


class ReferenceKind(enum.StrEnum):
    """How one item names another."""

    TITLE = "title"
    FILENAME = "filename"
    EXTERNAL_ID = "external_id"


class TypeBasis(enum.StrEnum):
    """What decided the inferred type (the rules of ``score_pair``)."""

    CONTRADICTION = "contradiction"
    AGREEMENT = "agreement"
    MODEL = "model"
    REFERENCE = "reference"
    SHARED_SUBJECT = "shared_subject"
    SIMILARITY = "similarity"
    NOTHING = "nothing"


#: Types chronology must never decide on its own (no causal type exists yet; one added later
#: joins this set).
CAUSAL_OR_UPDATING: Final = frozenset({RelationshipType.UPDATES})


# ---------------------------------------------------------------------------- the inputs


def _number(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field_name} must be a number", field=field_name)
    if math.isnan(value):
        raise ValidationError(f"{field_name} is NaN: a feature must be a number", field=field_name)
    return float(value)


def _count(value: object, field_name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{field_name} must be an integer >= {minimum}", field=field_name)
    return value


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


@dataclass(frozen=True, slots=True)
class SharedEntity:
    """An entity both items name, with how many items of the workspace name it."""

    key: str
    items_with: int

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValidationError("a shared entity needs a key", field="shared_entities.key")
        _count(self.items_with, "shared_entities.items_with", 1)


@dataclass(frozen=True, slots=True)
class Reference:
    """One item (``by``) names the other by title, file name or external id."""

    kind: ReferenceKind
    by: Side

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ReferenceKind):
            raise ValidationError(f"unknown reference kind {self.kind!r}", field="references")
        if not isinstance(self.by, Side):
            raise ValidationError(f"unknown side {self.by!r}", field="references")


@dataclass(frozen=True, slots=True)
class Chronology:
    """The items are dated apart on a shared subject; ``newer`` is the later one."""

    newer: Side
    days_apart: float

    def __post_init__(self) -> None:
        if not isinstance(self.newer, Side):
            raise ValidationError(f"unknown side {self.newer!r}", field="chronology.newer")
        days = _number(self.days_apart, "chronology.days_apart")
        if days < 0:
            raise ValidationError(
                "chronology.days_apart must be >= 0", field="chronology.days_apart"
            )
        object.__setattr__(self, "days_apart", days)


@dataclass(frozen=True, slots=True)
class ModelOpinion:
    """A model's classification of the pair (``classify_relationship``), already validated
    by the analysis task; confidence is clipped to [0, 1]."""

    relationship_type: RelationshipType
    confidence: float

    def __post_init__(self) -> None:
        if not isinstance(self.relationship_type, RelationshipType):
            raise ValidationError(
                f"{self.relationship_type!r} is not a relationship type", field="model.type"
            )
        object.__setattr__(self, "confidence", _number(self.confidence, "model.confidence"))


@dataclass(frozen=True, slots=True)
class PairFeatures:
    """Everything the scoring model knows about a candidate pair (first, second).

    Claim pairs are given by their confidences (each observed agreement or contradiction,
    from the ledger); a contradiction a person dismissed is not passed. ``similarity`` is
    the cosine of the item-level vectors, None when there is no embedder. ``lexical`` is
    how close the other item's text comes to being the best full-text match of the item's
    words (its score over the best hit's, in [0, 1]; None when not measured).

    Lists are normalised, never refused for length: an entity key given twice counts once
    at its rarest, and only the ``MAX_SHARED_ENTITIES`` rarest are kept (fewest items
    naming them: the order of rarity in any workspace); claim confidences are kept most
    confident first, ``MAX_CLAIM_PAIRS`` of each kind; a reference counts once per kind and
    side. Two feature sets that say the same thing are therefore equal.
    """

    workspace_items: int = 2
    shared_entities: tuple[SharedEntity, ...] = ()
    contradicting: tuple[float, ...] = ()
    agreeing: tuple[float, ...] = ()
    references: tuple[Reference, ...] = ()
    similarity: float | None = None
    chronology: Chronology | None = None
    model: ModelOpinion | None = None
    lexical: float | None = None

    def __post_init__(self) -> None:
        _count(self.workspace_items, "workspace_items", 1)
        rarest: dict[str, int] = {}
        for entity in self.shared_entities:
            if not isinstance(entity, SharedEntity):
                raise ValidationError("shared_entities holds SharedEntity", field="shared_entities")
            rarest[entity.key] = min(entity.items_with, rarest.get(entity.key, entity.items_with))
        kept = heapq.nsmallest(MAX_SHARED_ENTITIES, ((c, k) for k, c in rarest.items()))
        object.__setattr__(self, "shared_entities", tuple(SharedEntity(k, c) for c, k in kept))
        for name in ("contradicting", "agreeing"):
            values = [_number(v, name) for v in getattr(self, name)]
            object.__setattr__(self, name, tuple(heapq.nlargest(MAX_CLAIM_PAIRS, values)))
        for ref in self.references:
            if not isinstance(ref, Reference):
                raise ValidationError("references holds Reference", field="references")
        distinct = sorted({(r.kind, r.by) for r in self.references})
        object.__setattr__(self, "references", tuple(Reference(k, by) for k, by in distinct))
        if self.similarity is not None:
            object.__setattr__(self, "similarity", _number(self.similarity, "similarity"))
        if self.lexical is not None:
            object.__setattr__(self, "lexical", _number(self.lexical, "lexical"))
        if self.chronology is not None and not isinstance(self.chronology, Chronology):
            raise ValidationError("chronology must be a Chronology", field="chronology")
        if self.model is not None and not isinstance(self.model, ModelOpinion):
            raise ValidationError("model must be a ModelOpinion", field="model")

    def as_json(self) -> JSONDict:
        """The inputs as stored beside the score, so a relationship can be re-scored (after
        a deletion changes the entity counts, or under a new version) without re-reading
        the items."""
        return {
            "workspace_items": self.workspace_items,
            "shared_entities": [[e.key, e.items_with] for e in self.shared_entities],
            "contradicting": list(self.contradicting),
            "agreeing": list(self.agreeing),
            "references": [[r.kind.value, r.by.value] for r in self.references],
            "similarity": self.similarity,
            "lexical": self.lexical,
            "chronology": None
            if self.chronology is None
            else [self.chronology.newer.value, self.chronology.days_apart],
            "model": None
            if self.model is None
            else [self.model.relationship_type.value, self.model.confidence],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairFeatures:
        """Read back ``as_json``; a malformed document is a ``ValidationError``."""
        try:
            chronology = data.get("chronology")
            model = data.get("model")
            return cls(
                workspace_items=data["workspace_items"],
                shared_entities=tuple(
                    SharedEntity(key, count) for key, count in data["shared_entities"]
                ),
                contradicting=tuple(data["contradicting"]),
                agreeing=tuple(data["agreeing"]),
                references=tuple(
                    Reference(ReferenceKind(kind), Side(by)) for kind, by in data["references"]
                ),
                similarity=data.get("similarity"),
                lexical=data.get("lexical"),
                chronology=None
                if chronology is None
                else Chronology(Side(chronology[0]), chronology[1]),
                model=None if model is None else ModelOpinion(RelationshipType(model[0]), model[1]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError(
                f"stored relationship features are malformed ({type(exc).__name__})",
                field="features",
            ) from exc


# ---------------------------------------------------------------------------- the model


def _micros(value: float) -> int:
    return round(value * MICROS)


def _on_grid(value: float) -> bool:
    return abs(value * MICROS - _micros(value)) < 1e-6


@dataclass(frozen=True, slots=True)
class ScoringModel:
    """One version of the scoring model's parameters. Construction checks that the weights
    make the invariants hold, so no version can be defined that breaks them."""

    version: str
    weights: Mapping[Feature, float]
    storage_threshold: float
    strong_threshold: float
    #: Shared-entity strength is 1 - exp(-rarity sum / entity_scale).
    entity_scale: float
    #: Cosines at or below the floor are no evidence; at or above ``similarity_full``, full.
    similarity_floor: float
    similarity_full: float
    reference_strengths: Mapping[ReferenceKind, float]
    #: A model's type is adopted only at this confidence or above.
    model_type_confidence: float
    weight_micros: Mapping[Feature, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.version or len(self.version) > 32:
            raise ValueError("a scoring model needs a version of 1 to 32 characters")
        if set(self.weights) != set(Feature):
            raise ValueError("a scoring model needs a weight for every feature")
        if not all(0 < w <= 1 and _on_grid(w) for w in self.weights.values()):
            raise ValueError("weights must be in (0, 1] and whole millionths")
        micros = {f: _micros(self.weights[f]) for f in Feature}
        if sum(micros.values()) != MICROS:
            raise ValueError("the weights must add up to 1")
        if not (0 < self.storage_threshold < self.strong_threshold <= 1):
            raise ValueError("thresholds must satisfy 0 < storage < strong <= 1")
        if not (_on_grid(self.storage_threshold) and _on_grid(self.strong_threshold)):
            raise ValueError("thresholds must be whole millionths")
        if micros[Feature.SIMILARITY] + micros[Feature.LEXICAL] >= _micros(self.strong_threshold):
            raise ValueError("similarity alone could reach the strong threshold")
        if micros[Feature.MODEL] + micros[Feature.CHRONOLOGY] >= _micros(self.storage_threshold):
            raise ValueError("a model's opinion (with chronology) could reach storage alone")
        if not (-1 <= self.similarity_floor < self.similarity_full <= 1):
            raise ValueError("similarity needs -1 <= floor < full <= 1")
        if set(self.reference_strengths) != set(ReferenceKind):
            raise ValueError("a scoring model needs a strength for every reference kind")
        if not all(0 < s <= 1 for s in self.reference_strengths.values()):
            raise ValueError("reference strengths must be in (0, 1]")
        if self.entity_scale <= 0 or not 0 < self.model_type_confidence <= 1:
            raise ValueError("entity_scale must be > 0 and model_type_confidence in (0, 1]")
        object.__setattr__(self, "weight_micros", micros)

    def fingerprint(self) -> str:
        """A digest of the parameters: a test pins it per version, so a changed parameter
        without a new version fails."""
        params = {
            "weights": {f.value: self.weights[f] for f in Feature},
            "thresholds": [self.storage_threshold, self.strong_threshold],
            "entity_scale": self.entity_scale,
            "similarity": [self.similarity_floor, self.similarity_full],
            "references": {k.value: self.reference_strengths[k] for k in ReferenceKind},
            "model_type_confidence": self.model_type_confidence,
            "bounds": [MAX_SHARED_ENTITIES, MAX_CLAIM_PAIRS],
        }
        canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


DEFAULT_MODEL: Final = ScoringModel(
    version=SCORE_VERSION,
    weights={
        Feature.CONTRADICTING_CLAIMS: 0.21,
        Feature.AGREEING_CLAIMS: 0.12,
        Feature.REFERENCES: 0.14,
        Feature.SHARED_ENTITIES: 0.16,
        Feature.SIMILARITY: 0.18,
        Feature.LEXICAL: 0.11,
        Feature.CHRONOLOGY: 0.03,
        Feature.MODEL: 0.05,
    },
    storage_threshold=STORAGE_THRESHOLD,
    strong_threshold=STRONG_THRESHOLD,
    entity_scale=0.7,
    similarity_floor=0.2,
    similarity_full=0.8,
    reference_strengths={
        ReferenceKind.TITLE: 0.7,
        ReferenceKind.FILENAME: 0.9,
        ReferenceKind.EXTERNAL_ID: 0.95,
    },
    model_type_confidence=0.6,
)


# ---------------------------------------------------------------------------- strengths


def rarity(items_with: int, workspace_items: int) -> float:
    """How rare an entity is, in (0, 1]: 1 when one item names it, near 0 when every item
    does (IDF normalised by its maximum). A count above the workspace size (counts read at
    different moments) is taken as the size."""
    _count(items_with, "items_with", 1)
    n = max(_count(workspace_items, "workspace_items", 1), items_with)
    return math.log((n + 1) / items_with) / math.log(n + 1)


def _noisy_or(values: Sequence[float]) -> float:
    missing = 1.0
    for value in values:
        missing *= 1.0 - value
    return 1.0 - missing


@dataclass(frozen=True, slots=True)
class _Measured:
    value: float
    strength: float
    note: str


def _entities(f: PairFeatures, m: ScoringModel) -> _Measured:
    rarities = [rarity(e.items_with, f.workspace_items) for e in f.shared_entities]
    mass = math.fsum(rarities)
    note = f"shared entities: {len(rarities)}, rarity sum {mass:.3f}"
    return _Measured(mass, 1.0 - math.exp(-mass / m.entity_scale), note)


def _claims(confidences: Sequence[float], what: str) -> _Measured:
    strength = _noisy_or([_clip(c, 0.0, 1.0) for c in confidences])
    return _Measured(float(len(confidences)), strength, f"{what} claim pairs: {len(confidences)}")


def _references(f: PairFeatures, m: ScoringModel) -> _Measured:
    strength = _noisy_or([m.reference_strengths[r.kind] for r in f.references])
    names = ", ".join(f"{r.by.value} names {r.kind.value}" for r in f.references)
    return _Measured(float(len(f.references)), strength, names or "none")


def _similarity(f: PairFeatures, m: ScoringModel) -> _Measured:
    if f.similarity is None:
        return _Measured(0.0, 0.0, "not measured")
    cosine = _clip(f.similarity, -1.0, 1.0)
    ramp = (cosine - m.similarity_floor) / (m.similarity_full - m.similarity_floor)
    return _Measured(cosine, _clip(ramp, 0.0, 1.0), f"cosine {cosine:.3f}")


def _lexical(f: PairFeatures) -> _Measured:
    if f.lexical is None:
        return _Measured(0.0, 0.0, "not measured")
    share = _clip(f.lexical, 0.0, 1.0)
    return _Measured(share, share, f"full-text match {share:.3f} of the best")


def _chronology(f: PairFeatures) -> _Measured:
    c = f.chronology
    if c is None or c.days_apart <= 0:
        return _Measured(0.0, 0.0, "not dated apart")
    return _Measured(c.days_apart, 1.0, f"{c.newer.value} is {c.days_apart:g} days newer")


def _model(f: PairFeatures) -> _Measured:
    if f.model is None:
        return _Measured(0.0, 0.0, "no opinion")
    confidence = _clip(f.model.confidence, 0.0, 1.0)
    return _Measured(
        confidence, confidence, f"{f.model.relationship_type.value} at {confidence:.2f}"
    )


def _measure(f: PairFeatures, m: ScoringModel) -> dict[Feature, _Measured]:
    return {
        Feature.CONTRADICTING_CLAIMS: _claims(f.contradicting, "contradicting"),
        Feature.AGREEING_CLAIMS: _claims(f.agreeing, "agreeing"),
        Feature.REFERENCES: _references(f, m),
        Feature.SHARED_ENTITIES: _entities(f, m),
        Feature.SIMILARITY: _similarity(f, m),
        Feature.LEXICAL: _lexical(f),
        Feature.CHRONOLOGY: _chronology(f),
        Feature.MODEL: _model(f),
    }


# ---------------------------------------------------------------------------- the output


@dataclass(frozen=True, slots=True)
class Contribution:
    """One feature's part of a score: what was measured, how strong it is (0-1), its
    weight, and ``contribution`` = weight * strength in whole millionths."""

    feature: Feature
    value: float
    strength: float
    weight: float
    contribution: float
    note: str

    def as_json(self) -> JSONDict:
        return {
            "value": self.value,
            "strength": self.strength,
            "weight": self.weight,
            "contribution": self.contribution,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class PairScore:
    """A scored pair: ``score`` is exactly the sum of ``contributions`` (every feature, in
    ``Feature`` order, absent ones at 0), under ``score_version``."""

    score_version: str
    score: float
    relationship_type: RelationshipType
    type_basis: TypeBasis
    #: The later item when the pair is dated apart: the source of an ``updates`` link.
    newer: Side | None
    storable: bool
    strong: bool
    inputs: PairFeatures
    # What ``contributions`` is made of, kept as measured: most scored pairs are never
    # stored or shown, and building their contributions was a third of scoring's cost.
    _measured: Mapping[Feature, _Measured] = field(repr=False)
    _micros: Mapping[Feature, int] = field(repr=False)
    _weights: Mapping[Feature, float] = field(repr=False)

    @property
    def contributions(self) -> tuple[Contribution, ...]:
        """Every feature's part of the score, in ``Feature`` order (absent ones at 0)."""
        return tuple(self.contribution(f) for f in Feature)

    def contribution(self, feature: Feature) -> Contribution:
        m = self._measured[feature]
        return Contribution(
            feature=feature,
            value=round(m.value, 6),
            strength=round(m.strength, 6),
            weight=self._weights[feature],
            contribution=self._micros[feature] / MICROS,
            note=m.note,
        )

    def as_json(self) -> JSONDict:
        """The stored ``features`` of a relationship: version, score, type and why, every
        contribution, and the inputs to re-score from."""
        return {
            "score_version": self.score_version,
            "score": self.score,
            "type": self.relationship_type.value,
            "type_basis": self.type_basis.value,
            "newer": None if self.newer is None else self.newer.value,
            "storable": self.storable,
            "strong": self.strong,
            "contributions": {c.feature.value: c.as_json() for c in self.contributions},
            "inputs": self.inputs.as_json(),
        }


def _infer_type(
    features: PairFeatures,
    strengths: Mapping[Feature, float],
    contributions: Mapping[Feature, int],
    model: ScoringModel,
) -> tuple[RelationshipType, TypeBasis]:
    """The type of a pair, observations before opinions, the first rule that applies:

    1. an observed contradiction: ``contradicts``, whatever a model says;
    2. an observed agreement: ``supports``;
    3. a model's opinion at ``model_type_confidence`` or above: its type, except that
       ``updates`` needs the items dated apart (chronology is necessary for it, never
       sufficient: no rule infers ``updates`` from dates);
    4. an explicit reference: ``references``;
    5. shared subject (entities, or dates on a shared subject) or similar meaning and
       wording, whichever contributes more (shared subject on a tie): ``shares_subject`` or
       ``similar``.
    """
    if strengths[Feature.CONTRADICTING_CLAIMS] > 0:
        return RelationshipType.CONTRADICTS, TypeBasis.CONTRADICTION
    if strengths[Feature.AGREEING_CLAIMS] > 0:
        return RelationshipType.SUPPORTS, TypeBasis.AGREEMENT
    opinion = features.model
    if opinion is not None and _clip(opinion.confidence, 0, 1) >= model.model_type_confidence:
        dated = strengths[Feature.CHRONOLOGY] > 0
        if opinion.relationship_type is not RelationshipType.UPDATES or dated:
            return opinion.relationship_type, TypeBasis.MODEL
    if strengths[Feature.REFERENCES] > 0:
        return RelationshipType.REFERENCES, TypeBasis.REFERENCE
    subject = contributions[Feature.SHARED_ENTITIES] + contributions[Feature.CHRONOLOGY]
    subject_seen = strengths[Feature.SHARED_ENTITIES] > 0 or strengths[Feature.CHRONOLOGY] > 0
    similar = contributions[Feature.SIMILARITY] + contributions[Feature.LEXICAL]
    if subject_seen and subject >= similar:
        return RelationshipType.SHARES_SUBJECT, TypeBasis.SHARED_SUBJECT
    if strengths[Feature.SIMILARITY] > 0 or strengths[Feature.LEXICAL] > 0:
        return RelationshipType.SIMILAR, TypeBasis.SIMILARITY
    return RelationshipType.SIMILAR, TypeBasis.NOTHING


def score_pair(features: PairFeatures, model: ScoringModel = DEFAULT_MODEL) -> PairScore:
    """Score a candidate pair under ``model`` (by default the current version)."""
    measured = _measure(features, model)
    micros = {
        f: min(model.weight_micros[f], max(0, round(model.weight_micros[f] * m.strength)))
        for f, m in measured.items()
    }
    total = sum(micros.values())  # integers: exact, and at most MICROS since weights sum to 1
    strengths = {f: m.strength for f, m in measured.items()}
    relationship_type, basis = _infer_type(features, strengths, micros, model)
    dated = strengths[Feature.CHRONOLOGY] > 0
    return PairScore(
        score_version=model.version,
        score=total / MICROS,
        relationship_type=relationship_type,
        type_basis=basis,
        newer=features.chronology.newer if dated and features.chronology is not None else None,
        storable=total >= _micros(model.storage_threshold),
        strong=total >= _micros(model.strong_threshold),
        inputs=features,
        _measured=measured,
        _micros=micros,
        _weights=model.weights,
    )
