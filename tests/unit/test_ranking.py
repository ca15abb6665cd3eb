"""Reciprocal-rank fusion: scores, weights, ties, absent legs, stable order, explanations."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relata.config.settings import Settings
from relata.ranking import LEGS, FusionConfig, LegHit, RankFusion, fuse
from relata.ranking.fusion import (
    NOTE_ONLY_ENTITY,
    NOTE_ONLY_MEANING,
    NOTE_ONLY_RELATIONSHIP,
    NOTE_ONLY_TERMS,
)
from relata.ranking.fusion import (
    SECONDARY_LEGS as SECONDARY,
)

EQUAL = FusionConfig(k=60, weights=dict.fromkeys(LEGS, 1.0))


def hits(*ids: str) -> list[LegHit]:
    return [LegHit(id=i) for i in ids]


def order(result: object) -> list[str]:
    return [r.id for r in result.results]  # type: ignore[attr-defined]


def test_one_leg_keeps_its_order_and_scores_weight_over_k_plus_rank() -> None:
    result = fuse({"text": hits("a", "b", "c")}, EQUAL)
    assert order(result) == ["a", "b", "c"]
    assert [r.score for r in result.results] == [1 / 61, 1 / 62, 1 / 63]
    assert [r.rank for r in result.results] == [1, 2, 3]


def test_agreement_between_legs_beats_one_strong_leg() -> None:
    result = fuse({"text": hits("solo", "both"), "vector": hits("other", "both")}, EQUAL)
    assert order(result)[0] == "both"
    both = result.results[0]
    assert both.score == pytest.approx(2 / 62)
    assert [(c.leg, c.rank) for c in both.explanation.legs] == [("text", 2), ("vector", 2)]


def test_exact_ties_break_by_best_contribution_then_best_rank_then_id() -> None:
    # "x" and "y" are each rank 1 in one leg and rank 3 in another: equal sums.
    result = fuse({"text": hits("y", "m", "x"), "vector": hits("x", "n", "y")}, EQUAL)
    assert result.results[0].score == result.results[1].score
    assert order(result)[:2] == ["x", "y"]
    # Equal sums made of different contributions: the larger single contribution wins.
    weighted = FusionConfig(k=1, weights={"text": 2.0, "vector": 1.0})
    tied = fuse({"text": hits("q", "p"), "vector": hits("p", "r", "s", "t", "q")}, weighted)
    by_id = {r.id: r for r in tied.results}
    assert by_id["p"].score == pytest.approx(by_id["q"].score)  # 2/3 + 1/2 vs 2/2 + 1/6
    assert order(tied)[:2] == ["q", "p"]  # q's text contribution (1.0) is the larger


def test_identical_candidates_order_by_id() -> None:
    result = fuse({"text": [], "vector": []}, EQUAL)
    assert result.results == ()
    result = fuse({"entity": hits("b"), "relationship": hits("a")}, EQUAL)
    assert order(result) == ["a", "b"]


def test_an_absent_leg_contributes_nothing_and_is_listed() -> None:
    result = fuse({"text": hits("a", "b"), "vector": None}, EQUAL)
    assert result.absent_legs == ("chunk_text", "vector", "entity", "relationship")
    assert order(result) == ["a", "b"]
    assert all(c.leg == "text" for r in result.results for c in r.explanation.legs)
    ran_empty = fuse({"text": hits("a"), "vector": []}, EQUAL)
    assert "vector" not in ran_empty.absent_legs


def test_weights_change_the_order() -> None:
    legs = {"text": hits("t"), "vector": hits("v")}
    text_heavy = fuse(legs, FusionConfig(weights={"text": 2.0, "vector": 1.0}))
    vector_heavy = fuse(legs, FusionConfig(weights={"text": 1.0, "vector": 2.0}))
    assert order(text_heavy) == ["t", "v"]
    assert order(vector_heavy) == ["v", "t"]
    assert text_heavy.results[0].score == 2.0 / 61
    assert text_heavy.weights["text"] == 2.0


def test_a_zero_weight_leg_is_explained_but_alone_is_no_evidence() -> None:
    config = FusionConfig(weights={"text": 1.0, "entity": 0.0})
    result = fuse({"text": hits("a"), "entity": hits("a", "only-entity")}, config)
    assert order(result) == ["a"]
    contributions = {c.leg: c.contribution for c in result.results[0].explanation.legs}
    assert contributions == {"text": 1 / 61, "entity": 0.0}


def test_secondary_legs_explain_direct_hits_without_reordering_them() -> None:
    """An entity or relationship vote never lifts one direct hit over another; it explains
    it, and it still ranks what only a secondary leg found."""
    legs = {
        "text": hits("a", "b", "c"),
        "entity": [LegHit("c", reasons=("mentions X (term)",)), LegHit("alias-only")],
        "relationship": [LegHit("b", reasons=("related to result 1",)), LegHit("linked")],
    }
    result = fuse(legs, FusionConfig())  # the default weights: entity 0.1, relationship 0.05
    assert order(result) == ["a", "b", "c", "alias-only", "linked"]
    by_id = {r.id: r for r in result.results}
    assert by_id["c"].score == 1 / 63  # the text vote alone
    entity = by_id["c"].explanation.legs[-1]
    assert (entity.leg, entity.rank, entity.contribution) == ("entity", 1, 0.0)
    assert "mentions X (term)" in by_id["c"].explanation.notes
    assert by_id["b"].explanation.legs[-1].contribution == 0.0
    assert by_id["alias-only"].score == 0.1 / 62  # found by the entity leg alone: its vote
    assert by_id["alias-only"].explanation.notes[0] == NOTE_ONLY_ENTITY
    # Equal weights do not change that: "c" and "b" stay below "a".
    assert [i for i in order(fuse(legs, EQUAL)) if i in "abc"] == ["a", "b", "c"]
    # Counted as secondary only where configured: with none, the votes reorder.
    plain = FusionConfig(k=60, weights=dict.fromkeys(LEGS, 1.0), secondary=frozenset())
    assert order(fuse(legs, plain))[0] != "a"
    # A direct leg at weight 0 is no direct evidence: the secondary votes count.
    muted = FusionConfig(k=60, weights={**dict.fromkeys(LEGS, 1.0), "text": 0.0})
    assert by_id["c"].id in order(fuse(legs, muted))[:2]


def test_the_order_is_stable_whatever_the_input_order() -> None:
    legs = {
        "text": hits("a", "b", "c", "d"),
        "chunk_text": hits("c", "a"),
        "vector": hits("d", "c", "e"),
        "entity": hits("e"),
    }
    first = fuse(legs, EQUAL)
    shuffled = list(legs.items())
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert fuse(dict(shuffled), EQUAL) == first


def test_a_repeated_id_keeps_its_best_rank_in_a_leg() -> None:
    result = fuse({"text": hits("a", "b", "a", "c")}, EQUAL)
    assert order(result) == ["a", "b", "c"]
    assert [r.explanation.legs[0].rank for r in result.results] == [1, 2, 3]


def test_explanation_carries_leg_details_and_notes() -> None:
    legs = {
        "text": [LegHit("both", score=7.5, matched_terms=("runs",)), LegHit("terms")],
        "chunk_text": [LegHit("both", matched_terms=("runs", "fast"), chunk_ids=("c1",))],
        "vector": [LegHit("meaning", similarity=0.81), LegHit("both", similarity=0.64)],
    }
    result = {r.id: r.explanation for r in fuse(legs, EQUAL).results}
    both = result["both"]
    assert [c.leg for c in both.legs] == ["text", "chunk_text", "vector"]
    assert both.matched_terms == ("runs", "fast")
    assert both.similarity == 0.64
    assert both.legs[0].score == 7.5 and both.legs[1].chunk_ids == ("c1",)
    assert both.notes == ()
    assert result["meaning"].notes == (NOTE_ONLY_MEANING,)
    assert result["terms"].notes == (NOTE_ONLY_TERMS,)
    # Without a vector leg, "only by exact terms" would say nothing.
    assert fuse({"text": hits("x")}, EQUAL).results[0].explanation.notes == ()
    others = fuse({"entity": hits("e"), "relationship": hits("r")}, EQUAL)
    assert {r.id: r.explanation.notes for r in others.results} == {
        "e": (NOTE_ONLY_ENTITY,),
        "r": (NOTE_ONLY_RELATIONSHIP,),
    }


leg_lists = st.lists(st.sampled_from("abcdefghij"), max_size=8)


@given(
    st.fixed_dictionaries({}, optional={leg: st.one_of(st.none(), leg_lists) for leg in LEGS}),
    st.dictionaries(st.sampled_from(LEGS), st.floats(0, 5)),
    st.integers(0, 100),
)
def test_contributions_sum_to_the_fused_score_and_ranks_are_ordered(
    raw: dict[str, list[str] | None], weights: dict[str, float], k: int
) -> None:
    legs = {leg: None if ids is None else hits(*ids) for leg, ids in raw.items()}
    result = fuse(legs, FusionConfig(k=k, weights=weights))
    scores = [r.score for r in result.results]
    assert all(a >= b or a == pytest.approx(b, rel=1e-11) for a, b in pairwise(scores))
    assert [r.rank for r in result.results] == list(range(1, len(scores) + 1))
    for r in result.results:
        assert sum(c.contribution for c in r.explanation.legs) == r.score
        direct = any(c.contribution > 0 for c in r.explanation.legs if c.leg not in SECONDARY)
        for c in r.explanation.legs:
            voted = c.weight / (k + c.rank)
            assert c.contribution == (0.0 if direct and c.leg in SECONDARY else voted)
    assert set(result.absent_legs) == {leg for leg in LEGS if legs.get(leg) is None}


@given(
    st.fixed_dictionaries({}, optional={leg: st.one_of(st.none(), leg_lists) for leg in LEGS}),
    st.dictionaries(st.sampled_from(LEGS), st.floats(0, 5)),
    st.integers(0, LEGS.index("relationship")),
)
def test_fusing_leg_by_leg_gives_what_fusing_at_once_gives(
    raw: dict[str, list[str] | None], weights: dict[str, float], first_step: int
) -> None:
    """Search fuses the legs before the relationship leg, reads that result, then adds the
    relationship leg: every intermediate result is that of the legs so far fused at once, and
    the last is the whole fusion, whatever was explained again in between."""
    config = FusionConfig(k=60, weights=weights)
    legs = {leg: None if ids is None else hits(*ids) for leg, ids in raw.items()}
    fusion = RankFusion(config)
    for n, leg in enumerate(LEGS):
        fusion.add(leg, legs.get(leg))
        if n == first_step:
            so_far = {k: v for k, v in legs.items() if LEGS.index(k) <= n}  # type: ignore[arg-type]
            assert fusion.result() == fuse(so_far, config)
    assert fusion.result() == fuse(legs, config)


def test_legs_are_added_in_canonical_order_once() -> None:
    fusion = RankFusion(EQUAL)
    fusion.add("vector", hits("a"))
    with pytest.raises(ValueError, match="after a leg that follows it, or twice"):
        fusion.add("text", hits("b"))
    with pytest.raises(ValueError, match="twice"):
        fusion.add("vector", hits("c"))
    with pytest.raises(ValueError, match="unknown legs"):
        fusion.add("bogus", hits("d"))


def test_bad_configuration_and_unknown_legs_are_refused() -> None:
    with pytest.raises(ValueError, match="k"):
        FusionConfig(k=-1)
    with pytest.raises(ValueError, match=r"unknown legs in weights: \['bogus'\]"):
        FusionConfig(weights={"bogus": 1.0})
    with pytest.raises(ValueError, match=r"unknown legs in secondary: \['entities'\]"):
        FusionConfig(secondary=frozenset({"entities"}))
    with pytest.raises(ValueError, match="vector"):
        FusionConfig(weights={"vector": -0.5})
    with pytest.raises(ValueError, match="unknown legs"):
        fuse({"texts": hits("a")})


def test_configuration_comes_from_settings() -> None:
    settings = Settings(rrf_k=10, search_weight_vector=2.0, search_weight_relationship=0.0)
    config = FusionConfig.from_settings(settings)
    assert config.k == 10
    assert config.weights == {
        "text": 1.0,
        "chunk_text": 0.5,
        "vector": 2.0,
        "entity": 0.1,
        "relationship": 0.0,
    }
    assert FusionConfig.from_settings(Settings()) == FusionConfig()
