"""The relationships API over HTTP (TestClient against the real app, SQLite): an
item's related items with why, the parts of the score and the evidence quoted from both items;
the review queue, best first; one relationship; a review that persists who, the note and the
evidence snapshot; validation naming the field; rejected ones left out unless asked; the item
detail's related list; another workspace's relationships answer exactly like missing ones."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import RelationshipType
from relata.relationships.scoring import DEFAULT_MODEL, SCORE_VERSION, Feature
from tests.support.api import api_client
from tests.support.ingest import built, workspace_id
from tests.support.relationships import Corpus, corpus

MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


@pytest.fixture
def mine(c: Container) -> Corpus:
    return corpus(c, workspace_id(c))


def _texts(k: Corpus) -> dict[str, str]:
    return {t.item.id: t.text for t in (k.press, k.minutes, k.survey)}


def _assert_quotes_their_items(evidence: list[dict[str, Any]], texts: dict[str, str]) -> None:
    for record in evidence:
        spans = (
            [record["span"]]
            if record["kind"] == "reference"
            else [
                record["first"],
                record["second"],
            ]
        )
        for s in spans:
            assert texts[s["item_id"]][s["start"] : s["end"]] == s["quotation"]
        if record["kind"] != "reference":
            assert record["first"]["item_id"] != record["second"]["item_id"]


def _error(resp: Any, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()["error"]
    return body


def test_an_items_related_items_with_why_contributions_and_evidence(
    mine: Corpus, client: TestClient
) -> None:
    resp = client.get(f"/api/v1/items/{mine.press.item.id}/related")
    assert resp.status_code == 200, resp.text
    related = resp.json()
    assert [r["id"] for r in related] == [mine.contradiction.id, mine.press_survey.id]
    first = related[0]
    assert first["other"] == {"id": mine.minutes.item.id, "title": "Harbour council minutes"}
    assert first["type"] == "contradicts" and first["strong"] is True
    assert first["type_basis"] == "contradiction"
    assert first["score"] == mine.contradiction.score and first["score_version"] == SCORE_VERSION
    assert first["review_status"] == "unreviewed" and first["reviewed_by"] is None
    assert first["why"].startswith(f"contradicts ({mine.contradiction.score:.3f}, strong")
    assert "they disagree about Sabrewing Array" in first["why"]
    assert "both name Kestrel Marine Systems, Sabrewing Array" in first["why"]
    assert {first["source"]["id"], first["target"]["id"]} == {
        mine.press.item.id,
        mine.minutes.item.id,
    }
    assert first["source"]["id"] < first["target"]["id"]
    # Every feature, in the model's order, and the parts add up to the score exactly.
    parts = first["contributions"]
    assert [p["name"] for p in parts] == [f.value for f in Feature]
    assert sum(Decimal(repr(p["contribution"])) for p in parts) == Decimal(repr(first["score"]))
    by_name = {p["name"]: p for p in parts}
    assert by_name["contradicting_claims"]["strength"] == pytest.approx(0.9)
    assert by_name["similarity"] == {
        "name": "similarity",
        "value": 0.0,
        "strength": 0.0,
        "weight": DEFAULT_MODEL.weights[Feature.SIMILARITY],
        "contribution": 0.0,
        "note": "not measured",
    }
    kinds = [e["kind"] for e in first["evidence"]]
    assert kinds == ["contradicting_claims", "shared_entity", "shared_entity"]
    claim = first["evidence"][0]
    assert claim["facet"] == "date" and claim["confidence"] == 0.9 and len(claim["claims"]) == 2
    _assert_quotes_their_items(first["evidence"], _texts(mine))
    assert {claim["first"]["quotation"], claim["second"]["quotation"]} == {
        "began operating on 14 March 2019",
        "entered service in June 2021",
    }
    second = related[1]
    assert second["other"]["title"] == "Seal survey" and second["type"] == "similar"
    assert second["strong"] is False

    limited = client.get(f"/api/v1/items/{mine.press.item.id}/related", params={"limit": 1})
    assert [r["id"] for r in limited.json()] == [mine.contradiction.id]
    assert _error(client.get(f"/api/v1/items/{MISSING}/related"), 404)["code"] == "not_found"
    bad = client.get(f"/api/v1/items/{mine.press.item.id}/related", params={"limit": 0})
    assert _error(bad, 400)["field"] == "limit"


def test_the_review_queue_is_unreviewed_best_first_with_both_titles(
    mine: Corpus, client: TestClient
) -> None:
    page = client.get("/api/v1/relationships/review-queue").json()
    ids = [r["id"] for r in page["relationships"]]
    assert ids == [mine.contradiction.id, mine.press_survey.id, mine.minutes_survey.id]
    assert page["limit"] == 20 and page["offset"] == 0 and page["next_offset"] is None
    scores = [r["score"] for r in page["relationships"]]
    assert scores == sorted(scores, reverse=True)
    top = page["relationships"][0]
    assert {top["source"]["title"], top["target"]["title"]} == {
        "Sabrewing press release",
        "Harbour council minutes",
    }
    assert "they disagree about" in top["why"] and top["evidence"]
    assert all(r["why"] and r["evidence"] for r in page["relationships"])

    one = client.get("/api/v1/relationships/review-queue", params={"limit": 1, "offset": 1})
    assert one.json()["next_offset"] == 2
    assert [r["id"] for r in one.json()["relationships"]] == [mine.press_survey.id]

    client.post(
        f"/api/v1/relationships/{mine.contradiction.id}/review", json={"decision": "confirm"}
    )
    after = client.get("/api/v1/relationships/review-queue").json()["relationships"]
    assert [r["id"] for r in after] == [mine.press_survey.id, mine.minutes_survey.id]
    for params, field in (({"limit": 0}, "limit"), ({"offset": -1}, "offset")):
        bad = client.get("/api/v1/relationships/review-queue", params=params)
        assert _error(bad, 400)["field"] == field


def test_one_relationship_and_a_missing_one(mine: Corpus, client: TestClient) -> None:
    resp = client.get(f"/api/v1/relationships/{mine.press_survey.id}")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["id"] == mine.press_survey.id and body["type"] == "similar"
    assert {body["source"]["title"], body["target"]["title"]} == {
        "Sabrewing press release",
        "Seal survey",
    }
    assert "other" not in body
    _assert_quotes_their_items(body["evidence"], _texts(mine))
    missing = _error(client.get(f"/api/v1/relationships/{MISSING}"), 404)
    assert missing["code"] == "not_found"


def test_a_review_persists_who_the_note_and_the_evidence_snapshot(
    c: Container, mine: Corpus, client: TestClient
) -> None:
    ws = workspace_id(c)
    url = f"/api/v1/relationships/{mine.contradiction.id}/review"
    done = client.post(url, json={"decision": "confirm", "note": "  checked both  "})
    assert done.status_code == 200, done.text
    body = done.json()
    me = client.get("/api/v1/auth/me").json()["user"]["id"]
    assert body["review_status"] == "confirmed" and body["reviewed_by"] == me
    assert body["note"] == "checked both" and body["reviewed_at"] is not None
    assert "confirmed by a reviewer" in body["why"]
    stored = c.repos.relationships.get(ws, mine.contradiction.id)
    assert stored.review_status is ReviewStatus.CONFIRMED and stored.reviewed_by == me
    assert stored.review_note == "checked both" and stored.reviewed_at is not None
    assert stored.decision is not None
    assert set(stored.decision["kinds"]) == {"contradicting_claims", "shared_entity"}
    assert stored.decision["score"] == mine.contradiction.score

    edit = client.post(
        f"/api/v1/relationships/{mine.press_survey.id}/review",
        json={"decision": "edit", "relationship_type": "shares_subject", "note": "same array"},
    )
    assert edit.status_code == 200, edit.text
    assert edit.json()["type"] == "shares_subject" and edit.json()["review_status"] == "edited"
    edited = c.repos.relationships.get(ws, mine.press_survey.id)
    assert edited.relationship_type is RelationshipType.SHARES_SUBJECT
    assert edited.review_status is ReviewStatus.EDITED and edited.review_note == "same array"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "edit"}, "relationship_type"),
        ({"decision": "edit", "relationship_type": "causes"}, "relationship_type"),
        ({"decision": "confirm", "relationship_type": "supports"}, "relationship_type"),
        ({"decision": "maybe"}, "decision"),
        ({}, "decision"),
        ({"decision": "reject", "note": "x" * 1001}, "note"),
    ],
)
def test_an_invalid_review_is_400_naming_the_field_and_changes_nothing(
    c: Container, mine: Corpus, client: TestClient, body: dict[str, Any], field: str
) -> None:
    resp = client.post(f"/api/v1/relationships/{mine.contradiction.id}/review", json=body)
    error = _error(resp, 400)
    assert error["code"] == "invalid_request" and error["field"] == field
    assert field in error["message"]
    unchanged = c.repos.relationships.get(workspace_id(c), mine.contradiction.id)
    assert unchanged.review_status is ReviewStatus.UNREVIEWED and unchanged.decision is None


def test_a_rejected_relationship_is_left_out_unless_asked_for(
    mine: Corpus, client: TestClient
) -> None:
    press = mine.press.item.id
    rejected = client.post(
        f"/api/v1/relationships/{mine.contradiction.id}/review",
        json={"decision": "reject", "note": "two different events"},
    )
    assert rejected.json()["review_status"] == "rejected"
    listed = client.get(f"/api/v1/items/{press}/related").json()
    assert [r["id"] for r in listed] == [mine.press_survey.id]
    everything = client.get(f"/api/v1/items/{press}/related", params={"include_rejected": True})
    shown = {r["id"]: r for r in everything.json()}
    assert set(shown) == {mine.contradiction.id, mine.press_survey.id}
    assert shown[mine.contradiction.id]["note"] == "two different events"
    assert "rejected by a reviewer" in shown[mine.contradiction.id]["why"]
    # The item's own detail lists its related items the same way: rejected ones left out.
    detail = client.get(f"/api/v1/items/{press}").json()
    assert [r["relationship_id"] for r in detail["related"]] == [mine.press_survey.id]


def test_the_item_detail_lists_its_related_items_with_why(mine: Corpus, client: TestClient) -> None:
    detail = client.get(f"/api/v1/items/{mine.minutes.item.id}")
    assert detail.status_code == 200, detail.text
    related = detail.json()["related"]
    assert [r["relationship_id"] for r in related] == [
        mine.contradiction.id,
        mine.minutes_survey.id,
    ]
    top = related[0]
    assert top["item"] == {"id": mine.press.item.id, "title": "Sabrewing press release"}
    assert top["type"] == "contradicts" and top["review_status"] == "unreviewed"
    assert top["why"].startswith("contradicts (") and "they disagree about" in top["why"]
    assert set(top) == {"relationship_id", "type", "score", "review_status", "item", "why"}
    alone = client.post("/api/v1/items", json={"text": "Nothing in common.", "title": "Alone"})
    assert client.get(f"/api/v1/items/{alone.json()['id']}").json()["related"] == []


def test_another_workspaces_relationships_answer_like_missing_ones(
    c: Container, mine: Corpus, client: TestClient
) -> None:
    other = c.workspaces.ensure("other")[0].id
    theirs = corpus(c, other)
    rel = theirs.contradiction.id
    for path in (f"/api/v1/relationships/{rel}", f"/api/v1/relationships/{MISSING}"):
        assert _error(client.get(path), 404)["message"] == "relationship not found"
    refused = client.post(f"/api/v1/relationships/{rel}/review", json={"decision": "reject"})
    assert _error(refused, 404)["message"] == "relationship not found"
    assert c.repos.relationships.get(other, rel).review_status is ReviewStatus.UNREVIEWED

    queue = client.get("/api/v1/relationships/review-queue").json()["relationships"]
    theirs_ids = {theirs.contradiction.id, theirs.press_survey.id, theirs.minutes_survey.id}
    assert len(queue) == 3 and not {r["id"] for r in queue} & theirs_ids
    assert _error(client.get(f"/api/v1/items/{theirs.press.item.id}/related"), 404)
    for item in (mine.press, mine.minutes, mine.survey):
        listed = client.get(f"/api/v1/items/{item.item.id}/related").json()
        assert not {r["id"] for r in listed} & theirs_ids
