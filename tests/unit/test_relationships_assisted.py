"""The relationships stage's model pass (relationships.assisted) over a scripted provider
behind the real ``AnalysisService``: it asks about the best pairs an opinion could matter for
(storable, or within the model's weight of storage), never a pair a person decided, at most
``MAX_MODEL_PAIRS``; A and B are the pair's sides in order; a rejected reply costs only its
opinion (counted); the first provider failure ends the pass, counted, never raised."""

from __future__ import annotations

import json

from relata.analysis.service import AnalysisService
from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel
from relata.domain.errors import Unavailable
from relata.domain.ports import CompletionRequest, CompletionResponse
from relata.domain.vocabulary import RelationshipType
from relata.relationships.assisted import (
    MAX_MODEL_PAIRS,
    ModelRequest,
    PairSide,
    RelationshipModelPass,
)
from relata.relationships.scoring import (
    DEFAULT_MODEL,
    Feature,
    ModelOpinion,
    PairFeatures,
    PairScore,
    score_pair,
)


class Scripted:
    """A provider that answers each request with the next scripted reply (or raises it)."""

    model_id = "scripted"

    def __init__(self, *replies: str | Exception) -> None:
        self._replies = list(replies)
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse:
        self.requests.append(request)
        reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return CompletionResponse(content=reply, model=self.model_id)


def _service(provider: Scripted) -> AnalysisService:
    return AnalysisService(provider, limiter=AiCallLimiter(1), provider="scripted")


def _reply(kind: str, confidence: float = 0.9) -> str:
    return json.dumps(
        {"type": kind, "confidence": confidence, "reason": "Both describe the same array."}
    )


def _at(score: float) -> PairScore:
    """A pair scored ``score`` (to the millionth) by its similarity alone."""
    m = DEFAULT_MODEL
    strength = score / m.weights[Feature.SIMILARITY]
    cosine = m.similarity_floor + strength * (m.similarity_full - m.similarity_floor)
    scored = score_pair(PairFeatures(similarity=cosine), m)
    assert abs(scored.score - score) < 1e-5
    return scored


def _request(other: str) -> ModelRequest:
    return ModelRequest(
        other, PairSide("First", f"{other} one"), PairSide("Second", f"{other} two")
    )


def test_the_pairs_an_opinion_could_matter_for_are_chosen_best_first() -> None:
    model_pass = RelationshipModelPass(_service(Scripted()), Cancel.never())
    storage, weight = DEFAULT_MODEL.storage_threshold, DEFAULT_MODEL.weights[Feature.MODEL]
    storable = _at(storage + 0.01)
    near = _at(storage - weight + 0.001)  # an opinion at confidence 1 stores it
    far = _at(storage - weight - 0.001)  # no opinion can
    assert storable.storable and not near.storable and not far.storable
    scores = {"s": storable, "n": near, "f": far, "d": storable}
    assert model_pass.choose(scores, decided={"d"}) == ["s", "n"]
    assert model_pass.details()["model_candidates"] == 2
    many = {f"p{i:02d}": _at(storage - weight + 0.001 * (i + 1)) for i in range(10)}
    chosen = model_pass.choose(many)
    assert chosen == [f"p{i:02d}" for i in range(9, 9 - MAX_MODEL_PAIRS, -1)]
    assert model_pass.details()["model_candidates"] == 10


def test_opinions_are_read_and_a_rejected_reply_costs_only_its_own() -> None:
    provider = Scripted(_reply("supports"), _reply("causes"), _reply("Shares subject", 0.4))
    model_pass = RelationshipModelPass(_service(provider), Cancel.never())
    found = model_pass.classify([_request("x"), _request("y"), _request("z")])
    assert found == {
        "x": ModelOpinion(RelationshipType.SUPPORTS, 0.9),
        "z": ModelOpinion(RelationshipType.SHARES_SUBJECT, 0.4),
    }
    user = provider.requests[0].messages[1].content
    assert user.index("x one") < user.index("x two")  # A is the first side, B the second
    assert "title: First" in user and "title: Second" in user
    assert provider.requests[0].schema_name == "relata_classify_relationship"
    details = model_pass.details()
    assert details["model"] == "ok" and details["model_calls"] == 3
    assert details["model_opinions"] == {"shares_subject": 1, "supports": 1}
    assert details["model_skipped"] == {"unknown_enum": 1}
    assert details["model_failures"] == 0


def test_the_first_provider_failure_ends_the_pass_without_raising() -> None:
    provider = Scripted(_reply("similar"), Unavailable("connection refused"), _reply("supports"))
    model_pass = RelationshipModelPass(_service(provider), Cancel.never())
    found = model_pass.classify([_request("x"), _request("y"), _request("z")])
    assert set(found) == {"x"}
    assert len(provider.requests) == 2  # never asked again after the failure
    details = model_pass.details()
    assert details["model"] == "unavailable (ModelProviderUnavailable)"
    assert (details["model_calls"], details["model_failures"]) == (1, 1)


def test_a_disabled_service_asks_nothing() -> None:
    disabled = AnalysisService.disabled("off", limiter=AiCallLimiter(1))
    model_pass = RelationshipModelPass(disabled, Cancel.never())
    assert model_pass.classify([_request("x")]) == {}
    assert model_pass.details()["model"] == "disabled"
