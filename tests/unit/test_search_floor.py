"""The relevance floor's value per embedding model and its setting (ADR 40), and which
explanations it calls weak."""

from __future__ import annotations

import pytest

from relata.config.settings import load_settings
from relata.domain.errors import ConfigError
from relata.ranking.fusion import Explanation, LegContribution
from relata.search.floor import CALIBRATED, meaning_floor
from relata.search.service import SearchService


@pytest.mark.parametrize(
    ("setting", "model", "floor"),
    [
        ("auto", "all-MiniLM-L6-v2", CALIBRATED["all-minilm-l6-v2"]),
        ("auto", "sentence-transformers/all-MiniLM-L6-v2", CALIBRATED["all-minilm-l6-v2"]),
        ("auto", "all-minilm:latest", CALIBRATED["all-minilm"]),
        ("auto", "nomic-embed-text", 0.0),
        ("auto", None, 0.0),
        ("0.42", "all-MiniLM-L6-v2", 0.42),
        ("0", "all-MiniLM-L6-v2", 0.0),
    ],
    ids=["local", "hub-path", "ollama-tag", "uncalibrated", "no-embedder", "set", "off"],
)
def test_the_floor_is_the_models_calibrated_value_unless_set(
    setting: str, model: str | None, floor: float
) -> None:
    configured = load_settings({"RELATA_SEARCH_MEANING_FLOOR": setting}).search_meaning_floor
    assert meaning_floor(configured, model) == floor


@pytest.mark.parametrize("value", ["1.5", "-0.1", "high"], ids=["above", "below", "word"])
def test_a_floor_outside_zero_to_one_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="RELATA_SEARCH_MEANING_FLOOR"):
        load_settings({"RELATA_SEARCH_MEANING_FLOOR": value})


def _service(floor: float) -> SearchService:
    return SearchService(None, None, None, None, None, None, meaning_floor=floor)  # type: ignore[arg-type]


def _explained(*legs: LegContribution, similarity: float | None) -> Explanation:
    return Explanation(legs=legs, matched_terms=(), similarity=similarity, notes=())


def _leg(leg: str, *terms: str) -> LegContribution:
    return LegContribution(leg=leg, rank=1, weight=1.0, contribution=0.1, matched_terms=terms)


def test_only_results_found_by_meaning_alone_under_the_floor_are_weak() -> None:
    s = _service(0.3)
    vector = _leg("vector")
    assert s.is_weak(_explained(vector, similarity=0.29))
    assert not s.is_weak(_explained(vector, similarity=0.30))
    # A content word of the query in the text is a match whatever the similarity.
    assert not s.is_weak(_explained(_leg("text", "turbine"), vector, similarity=0.1))
    # Function words ("how", "do") are not.
    assert s.is_weak(_explained(_leg("chunk_text", "how", "do"), vector, similarity=0.1))
    assert not s.is_weak(_explained(_leg("chunk_text", "how", "do"), vector, similarity=0.5))
    # Capitals name something ("NO", nitric oxide).
    assert not s.is_weak(_explained(_leg("text", "NO"), similarity=None))
    # An entity the query names, or a relationship to a result that passed, is a match.
    assert not s.is_weak(_explained(_leg("entity"), similarity=None))
    assert not s.is_weak(_explained(_leg("relationship"), similarity=None))
    # No similarity and only function words: weak.
    assert s.is_weak(_explained(_leg("text", "how"), similarity=None))


def test_floor_zero_calls_nothing_weak() -> None:
    off = _service(0.0)
    assert not off.is_weak(_explained(_leg("vector"), similarity=-0.2))
    assert not off.is_weak(_explained(_leg("text", "how"), similarity=None))
