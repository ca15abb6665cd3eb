"""The relationship scoring model (ADR 19): the spec's invariants, exact contributions,
bounded inputs, monotonicity and a visible version."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.domain.errors import ValidationError
from relata.domain.vocabulary import RelationshipType as T
from relata.relationships.scoring import (
    CAUSAL_OR_UPDATING,
    DEFAULT_MODEL,
    MAX_CLAIM_PAIRS,
    MAX_SHARED_ENTITIES,
    SCORE_VERSION,
    STORAGE_THRESHOLD,
    STRONG_THRESHOLD,
    Chronology,
    Feature,
    ModelOpinion,
    PairFeatures,
    PairScore,
    Reference,
    ReferenceKind,
    SharedEntity,
    Side,
    TypeBasis,
    rarity,
    score_pair,
)

#: The parameters of every released version. Changing a weight, threshold or curve without
#: a new SCORE_VERSION fails here; a new version adds its line (ADR 19, version policy).
PINNED_FINGERPRINTS = {"score-1": "077eab208248711b", "score-2": "85b46cf64011468b"}

# ---------------------------------------------------------------------- strategies

#: Properties: no per-example deadline (the machine is shared; a slow example is not a bug).
PROPERTY = settings(deadline=None, max_examples=60)

keys = st.sampled_from([f"entity {i}" for i in range(12)])
shared = st.builds(SharedEntity, key=keys, items_with=st.integers(1, 50_000))
confidence = st.floats(min_value=-0.5, max_value=1.5, allow_nan=False)
references = st.builds(Reference, kind=st.sampled_from(ReferenceKind), by=st.sampled_from(Side))
chronology = st.builds(
    Chronology,
    newer=st.sampled_from(Side),
    days_apart=st.floats(min_value=0, max_value=1e5, allow_nan=False),
)
opinion = st.builds(
    ModelOpinion,
    relationship_type=st.sampled_from(T),
    confidence=st.floats(allow_nan=False),
)
features = st.builds(
    PairFeatures,
    workspace_items=st.integers(1, 100_000),
    shared_entities=st.lists(shared, max_size=12).map(tuple),
    contradicting=st.lists(confidence, max_size=6).map(tuple),
    agreeing=st.lists(confidence, max_size=6).map(tuple),
    references=st.lists(references, max_size=4).map(tuple),
    similarity=st.none() | st.floats(allow_nan=False),
    chronology=st.none() | chronology,
    model=st.none() | opinion,
)


def exact_sum(score: PairScore) -> Decimal:
    return sum((Decimal(repr(c.contribution)) for c in score.contributions), Decimal(0))


# ---------------------------------------------------------------------- the four invariants


@pytest.mark.parametrize("cosine", [-1.0, 0.0, 0.5, 0.85, 0.99, 1.0, 7.5, math.inf])
def test_similarity_alone_cannot_produce_a_strong_score(cosine: float) -> None:
    scored = score_pair(PairFeatures(similarity=cosine))
    assert not scored.strong
    assert scored.score < STRONG_THRESHOLD


def test_maximal_similarity_alone_is_stored_as_similar_but_not_strong() -> None:
    scored = score_pair(PairFeatures(similarity=1.0))
    assert scored.storable and not scored.strong
    assert scored.relationship_type is T.SIMILAR
    assert scored.type_basis is TypeBasis.SIMILARITY


@PROPERTY
@given(st.floats(allow_nan=False), st.integers(1, 100_000))
def test_similarity_alone_is_never_strong_for_any_cosine(cosine: float, n: int) -> None:
    assert not score_pair(PairFeatures(workspace_items=n, similarity=cosine)).strong


@pytest.mark.parametrize("kind", list(T))
def test_a_maximally_confident_model_alone_cannot_reach_the_storage_threshold(kind: T) -> None:
    for conf in (1.0, 50.0, math.inf):
        alone = score_pair(PairFeatures(model=ModelOpinion(kind, conf)))
        assert not alone.storable
        assert alone.score < STORAGE_THRESHOLD
        # Nor with the dates of the items on a shared subject: an opinion plus an order.
        dated = PairFeatures(
            model=ModelOpinion(kind, conf), chronology=Chronology(Side.SECOND, 900)
        )
        assert not score_pair(dated).storable


@PROPERTY
@given(opinion, st.none() | chronology)
def test_no_model_opinion_alone_is_ever_stored(op: ModelOpinion, chron: Chronology | None) -> None:
    assert not score_pair(PairFeatures(model=op, chronology=chron)).storable


@pytest.mark.parametrize("kind", list(T))
def test_an_observed_contradiction_outranks_a_model_opinion(kind: T) -> None:
    scored = score_pair(
        PairFeatures(
            contradicting=(0.6,),
            agreeing=(0.9,),
            shared_entities=(SharedEntity("sabrewing array", 2),),
            chronology=Chronology(Side.FIRST, 400),
            model=ModelOpinion(kind, 1.0),
        )
    )
    assert scored.relationship_type is T.CONTRADICTS
    assert scored.type_basis is TypeBasis.CONTRADICTION


@PROPERTY
@given(features, opinion)
def test_with_a_contradiction_no_opinion_changes_the_type(
    f: PairFeatures, op: ModelOpinion
) -> None:
    f = dataclasses.replace(f, contradicting=(*f.contradicting, 0.75))
    assert score_pair(f).relationship_type is T.CONTRADICTS
    assert score_pair(dataclasses.replace(f, model=op)).relationship_type is T.CONTRADICTS


@PROPERTY
@given(chronology, st.integers(1, 100_000))
def test_chronology_alone_never_yields_a_causal_or_updating_relationship(
    chron: Chronology, n: int
) -> None:
    scored = score_pair(PairFeatures(workspace_items=n, chronology=chron))
    assert scored.relationship_type not in CAUSAL_OR_UPDATING
    assert not scored.storable


@PROPERTY
@given(features)
def test_without_a_model_opinion_no_observation_yields_updates(f: PairFeatures) -> None:
    """Dates, shared entities, references, claims and similarity together are still not an
    update: only a model's opinion names one, and only on dated items."""
    f = dataclasses.replace(f, model=None, chronology=Chronology(Side.SECOND, 365))
    assert score_pair(f).relationship_type not in CAUSAL_OR_UPDATING


def test_a_model_says_updates_only_when_the_items_are_dated_apart() -> None:
    base = PairFeatures(
        workspace_items=100,
        shared_entities=(SharedEntity("annual report", 3),),
        similarity=0.8,
        model=ModelOpinion(T.UPDATES, 0.9),
    )
    undated = score_pair(base)
    dated = score_pair(dataclasses.replace(base, chronology=Chronology(Side.SECOND, 365)))
    assert undated.relationship_type is T.SIMILAR and undated.type_basis is TypeBasis.SIMILARITY
    assert dated.relationship_type is T.UPDATES and dated.type_basis is TypeBasis.MODEL
    assert dated.newer is Side.SECOND
    same_day = score_pair(dataclasses.replace(base, chronology=Chronology(Side.SECOND, 0)))
    assert same_day.relationship_type is not T.UPDATES and same_day.newer is None


# ---------------------------------------------------------------------- exact, bounded output


@PROPERTY
@given(features)
def test_contributions_add_up_to_the_score_exactly(f: PairFeatures) -> None:
    scored = score_pair(f)
    assert exact_sum(scored) == Decimal(repr(scored.score))
    assert [c.feature for c in scored.contributions] == list(Feature)
    stored = scored.as_json()
    assert sum(
        (Decimal(repr(c["contribution"])) for c in stored["contributions"].values()), Decimal(0)
    ) == Decimal(repr(stored["score"]))


@PROPERTY
@given(features)
def test_the_score_and_every_part_are_bounded(f: PairFeatures) -> None:
    scored = score_pair(f)
    assert 0.0 <= scored.score <= 1.0
    for c in scored.contributions:
        assert 0.0 <= c.strength <= 1.0
        assert 0.0 <= c.contribution <= c.weight
    assert scored.storable == (scored.score >= STORAGE_THRESHOLD)
    assert scored.strong == (scored.score >= STRONG_THRESHOLD)


def test_everything_at_full_strength_scores_one() -> None:
    full = PairFeatures(
        workspace_items=1,
        shared_entities=tuple(SharedEntity(f"e{i}", 1) for i in range(32)),
        contradicting=(1.0,),
        agreeing=(1.0,),
        references=tuple(Reference(k, side) for k in ReferenceKind for side in Side) * 2,
        similarity=1.0,
        lexical=1.0,
        chronology=Chronology(Side.FIRST, 10),
        model=ModelOpinion(T.SUPPORTS, 1.0),
    )
    scored = score_pair(full)
    assert scored.score == pytest.approx(1.0, abs=2e-6)
    assert score_pair(PairFeatures()).score == 0.0


# ---------------------------------------------------------------------- the version


def test_the_score_version_is_part_of_every_output() -> None:
    scored = score_pair(PairFeatures(similarity=0.9))
    assert scored.score_version == SCORE_VERSION
    assert scored.as_json()["score_version"] == SCORE_VERSION
    other = dataclasses.replace(DEFAULT_MODEL, version="score-test", storage_threshold=0.09)
    rescored = score_pair(PairFeatures(similarity=0.9), other)
    assert rescored.score_version == "score-test"
    assert rescored.as_json()["score_version"] == "score-test"


def test_a_parameter_change_needs_a_new_version() -> None:
    assert DEFAULT_MODEL.version == SCORE_VERSION
    assert DEFAULT_MODEL.fingerprint() == PINNED_FINGERPRINTS[SCORE_VERSION]
    changed = dataclasses.replace(DEFAULT_MODEL, similarity_floor=0.3)
    assert changed.fingerprint() != DEFAULT_MODEL.fingerprint()


def _reweighted(**weights: float) -> dict[Feature, float]:
    return {**DEFAULT_MODEL.weights, **{Feature(k): v for k, v in weights.items()}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"weights": _reweighted(similarity=0.40, shared_entities=-0.03)}, "in (0, 1]"),
        (
            {"weights": _reweighted(similarity=0.2, shared_entities=0.14)},
            "similarity alone",
        ),
        ({"weights": _reweighted(model=0.10, shared_entities=0.11)}, "model's opinion"),
        ({"weights": _reweighted(similarity=0.25)}, "add up to 1"),
        (
            {"weights": {f: w for f, w in DEFAULT_MODEL.weights.items() if f != Feature.MODEL}},
            "every feature",
        ),
        ({"storage_threshold": 0.5}, "storage < strong"),
        ({"strong_threshold": 0.1234567}, "millionths"),
        ({"similarity_floor": 0.9}, "floor < full"),
        ({"version": ""}, "version"),
    ],
)
def test_a_model_whose_weights_would_break_an_invariant_is_refused(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        dataclasses.replace(DEFAULT_MODEL, **change)


# ---------------------------------------------------------------------- monotonicity


@PROPERTY
@given(features, shared)
def test_another_shared_entity_never_lowers_the_score(f: PairFeatures, e: SharedEntity) -> None:
    more = dataclasses.replace(f, shared_entities=(*f.shared_entities, e))
    assert score_pair(more).score >= score_pair(f).score


@PROPERTY
@given(features, st.integers(1, 50))
def test_a_rarer_shared_entity_never_scores_lower(f: PairFeatures, fewer: int) -> None:
    common = SharedEntity("the one", 60)
    rarer = SharedEntity("the one", 60 - fewer)
    low = dataclasses.replace(f, shared_entities=(*f.shared_entities, common))
    high = dataclasses.replace(f, shared_entities=(*f.shared_entities, rarer))
    assert score_pair(high).score >= score_pair(low).score


@PROPERTY
@given(features, confidence, st.booleans())
def test_another_claim_pair_never_lowers_the_score(f: PairFeatures, c: float, agrees: bool) -> None:
    name = "agreeing" if agrees else "contradicting"
    more = dataclasses.replace(f, **{name: (*getattr(f, name), c)})
    assert score_pair(more).score >= score_pair(f).score


@PROPERTY
@given(features, references)
def test_another_reference_never_lowers_the_score(f: PairFeatures, r: Reference) -> None:
    more = dataclasses.replace(f, references=(*f.references, r))
    assert score_pair(more).score >= score_pair(f).score


@PROPERTY
@given(features, st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_higher_similarity_never_lowers_the_score(f: PairFeatures, a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert (
        score_pair(dataclasses.replace(f, similarity=high)).score
        >= score_pair(dataclasses.replace(f, similarity=low)).score
    )


@PROPERTY
@given(features, st.sampled_from(T), confidence, confidence)
def test_a_more_confident_opinion_never_lowers_the_score(
    f: PairFeatures, kind: T, a: float, b: float
) -> None:
    low, high = sorted((a, b))
    assert (
        score_pair(dataclasses.replace(f, model=ModelOpinion(kind, high))).score
        >= score_pair(dataclasses.replace(f, model=ModelOpinion(kind, low))).score
    )


def _swapped(f: PairFeatures) -> PairFeatures:
    chron = f.chronology
    return dataclasses.replace(
        f,
        references=tuple(Reference(r.kind, r.by.other) for r in f.references),
        chronology=None if chron is None else Chronology(chron.newer.other, chron.days_apart),
    )


@PROPERTY
@given(features)
def test_the_order_of_the_pair_does_not_change_score_or_type(f: PairFeatures) -> None:
    a, b = score_pair(f), score_pair(_swapped(f))
    assert (a.score, a.relationship_type, a.type_basis) == (
        b.score,
        b.relationship_type,
        b.type_basis,
    )
    assert b.newer == (None if a.newer is None else a.newer.other)


# ---------------------------------------------------------------------- bounded inputs


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: PairFeatures(similarity=math.nan), "similarity"),
        (lambda: PairFeatures(contradicting=(0.5, math.nan)), "contradicting"),
        (lambda: PairFeatures(agreeing=(math.nan,)), "agreeing"),
        (lambda: ModelOpinion(T.SUPPORTS, math.nan), "model.confidence"),
        (lambda: Chronology(Side.FIRST, math.nan), "chronology.days_apart"),
        (lambda: Chronology(Side.FIRST, -1.0), "chronology.days_apart"),
        (lambda: SharedEntity("acme", 0), "shared_entities.items_with"),
        (lambda: SharedEntity("", 3), "shared_entities.key"),
        (lambda: PairFeatures(workspace_items=0), "workspace_items"),
        (lambda: ModelOpinion("causes", 0.5), "model.type"),
        (lambda: PairFeatures(similarity="0.9"), "similarity"),
    ],
)
def test_bad_input_is_refused_naming_the_field(build: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.field == field
    assert field.split(".")[-1].replace("_", " ") in caught.value.message.replace("_", " ")


def test_similarities_and_confidences_are_clipped() -> None:
    assert (
        score_pair(PairFeatures(similarity=9.0)).score
        == score_pair(PairFeatures(similarity=1.0)).score
    )
    assert score_pair(PairFeatures(similarity=-9.0)).contribution(Feature.SIMILARITY).value == -1
    over = score_pair(PairFeatures(agreeing=(3.0,), model=ModelOpinion(T.SUPPORTS, 4.0)))
    assert over.contribution(Feature.AGREEING_CLAIMS).strength == 1.0
    assert over.contribution(Feature.MODEL).value == 1.0
    under = score_pair(PairFeatures(contradicting=(-2.0,)))
    assert under.score == 0.0 and under.relationship_type is not T.CONTRADICTS


def test_long_lists_are_kept_to_their_bounds_rarest_and_most_confident_first() -> None:
    many = PairFeatures(
        workspace_items=10_000,
        shared_entities=tuple(SharedEntity(f"e{i}", 2 + i) for i in reversed(range(5_000))),
        agreeing=(0.1,) * 5_000 + (0.7,),
        references=(Reference(ReferenceKind.TITLE, Side.FIRST),) * 100,
    )
    assert len(many.shared_entities) == MAX_SHARED_ENTITIES
    assert [e.items_with for e in many.shared_entities] == list(range(2, 2 + MAX_SHARED_ENTITIES))
    assert len(many.agreeing) == MAX_CLAIM_PAIRS and many.agreeing[0] == 0.7
    assert len(many.references) == 1
    scored = score_pair(many)
    cap = 1 - 0.3 * 0.9 ** (MAX_CLAIM_PAIRS - 1)
    assert scored.contribution(Feature.AGREEING_CLAIMS).strength == pytest.approx(cap)
    assert len(json.dumps(scored.as_json())) < 4_000  # the stored features stay small


@PROPERTY
@given(features, st.randoms(use_true_random=False))
def test_the_order_of_the_inputs_does_not_matter(f: PairFeatures, rnd: random.Random) -> None:
    def shuffled(values: tuple[Any, ...]) -> tuple[Any, ...]:
        items = list(values)
        rnd.shuffle(items)
        return tuple(items)

    g = dataclasses.replace(
        f,
        shared_entities=shuffled(f.shared_entities),
        contradicting=shuffled(f.contradicting),
        references=shuffled(f.references),
    )
    assert g == f and score_pair(g) == score_pair(f)


def test_a_key_given_twice_counts_once_at_its_rarest() -> None:
    once = score_pair(PairFeatures(workspace_items=50, shared_entities=(SharedEntity("a", 3),)))
    twice = score_pair(
        PairFeatures(
            workspace_items=50, shared_entities=(SharedEntity("a", 9), SharedEntity("a", 3))
        )
    )
    assert once.score == twice.score


def test_rarity_is_one_for_a_single_item_and_falls_as_more_items_name_it() -> None:
    assert rarity(1, 1) == 1.0 and rarity(1, 500) == 1.0
    values = [rarity(df, 500) for df in (2, 5, 50, 500)]
    assert values == sorted(values, reverse=True) and 0 < values[-1] < 0.01
    assert rarity(900, 500) == rarity(900, 900)  # counts read at different moments


# ---------------------------------------------------------------------- stored and re-scored


@PROPERTY
@given(features)
def test_inputs_round_trip_through_json_and_rescore_identically(f: PairFeatures) -> None:
    stored = score_pair(f).as_json()
    back = PairFeatures.from_json(stored["inputs"])
    assert back == f
    assert score_pair(back).as_json() == stored


@pytest.mark.parametrize(
    "stored",
    [
        {},
        {
            "workspace_items": 3,
            "shared_entities": [["a"]],
            "contradicting": [],
            "agreeing": [],
            "references": [],
        },
        {
            "workspace_items": 3,
            "shared_entities": [],
            "contradicting": [],
            "agreeing": [],
            "references": [["quotes", "first"]],
        },
        {
            "workspace_items": 3,
            "shared_entities": [],
            "contradicting": [],
            "agreeing": [],
            "references": [],
            "model": ["causes", 0.4],
        },
        [],
    ],
)
def test_malformed_stored_features_are_a_validation_error(stored: object) -> None:
    with pytest.raises(ValidationError):
        PairFeatures.from_json(stored)


# ---------------------------------------------------------------------- cases


def pair(n: int, counts: tuple[int, ...], **other: Any) -> PairFeatures:
    """A pair in a workspace of ``n`` items sharing one entity per count (items naming it)."""
    shared = tuple(SharedEntity(f"e{i}", c) for i, c in enumerate(counts))
    return PairFeatures(workspace_items=n, shared_entities=shared, **other)


TITLE_REF = Reference(ReferenceKind.TITLE, Side.SECOND)
FILE_REF = Reference(ReferenceKind.FILENAME, Side.FIRST)
LATER = Chronology(Side.SECOND, 1305)

# name, features, type, band ("none" < storage <= "stored" < strong <= "strong")
CASES = [
    (
        "demo: the press release and the council minutes",
        pair(5, (5, 4, 4, 3, 5), contradicting=(0.9,), similarity=0.55, chronology=LATER),
        T.CONTRADICTS,
        "strong",
    ),
    ("one rare entity in a large workspace", pair(5000, (2,)), T.SHARES_SUBJECT, "stored"),
    ("an entity every item names", pair(40, (40,)), T.SHARES_SUBJECT, "none"),
    ("a title reference", PairFeatures(references=(TITLE_REF,)), T.REFERENCES, "stored"),
    (
        "agreeing claims, two rare entities",
        pair(1000, (2, 3), agreeing=(0.8,)),
        T.SUPPORTS,
        "stored",
    ),
    (
        "agreeing claims, a reference and rare entities",
        pair(1000, (2, 3, 4), agreeing=(0.8, 0.7), references=(FILE_REF,), similarity=0.7),
        T.SUPPORTS,
        "strong",
    ),
    ("nearly the same text, nothing else", PairFeatures(similarity=0.97), T.SIMILAR, "stored"),
    ("loosely similar", PairFeatures(similarity=0.4), T.SIMILAR, "none"),
    (
        "a confident model on a shared subject",
        pair(1000, (2,), model=ModelOpinion(T.SUPPORTS, 0.9)),
        T.SUPPORTS,
        "stored",
    ),
    (
        "a hesitant model keeps the observed type",
        pair(1000, (2,), model=ModelOpinion(T.SUPPORTS, 0.5)),
        T.SHARES_SUBJECT,
        "stored",
    ),
    (
        "similarity outweighs a common entity",
        pair(100, (60,), similarity=0.95),
        T.SIMILAR,
        "stored",
    ),
    ("dates on a shared subject only", PairFeatures(chronology=LATER), T.SHARES_SUBJECT, "none"),
    ("nothing at all", PairFeatures(), T.SIMILAR, "none"),
]


@pytest.mark.parametrize(("name", "f", "kind", "band"), CASES, ids=[c[0] for c in CASES])
def test_cases(name: str, f: PairFeatures, kind: T, band: str) -> None:
    scored = score_pair(f)
    assert scored.relationship_type is kind, scored.as_json()["contributions"]
    got = "strong" if scored.strong else "stored" if scored.storable else "none"
    assert got == band, scored.score
