"""``GET /api/v1/settings/models`` and ``POST /api/v1/workspaces/current/reembed`` over HTTP
(TestClient against the real app, SQLite): counts, models seen, warnings with
their fix, provider health bounded in time, and an OpenAI-compatible provider end to end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.embeddings.status import ModelStatusService
from relata.ingest.service import IngestRequest
from tests.support.api import api_client
from tests.support.fake_embedder import FakeEmbedder
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.ingest import built, drain, workspace_id

NOTES = "# Tidal notes\n\nTwelve turbines.\n\n## Seals\n\nThe seal colony grew to 143 animals."


@contextmanager
def serving(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as client:
        yield client


def _status(client: TestClient) -> dict[str, Any]:
    resp = client.get("/api/v1/settings/models")
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _ingest(c: Container, *texts: str) -> str:
    ws = workspace_id(c)
    for i, text in enumerate(texts):
        c.ingest.ingest(ws, IngestRequest(text=text, title=f"Note {i}"))
    drain(c)
    return ws


def test_the_status_reports_counts_models_seen_and_no_warning_when_in_step(
    settings: Settings,
) -> None:
    with built(settings, embedder=FakeEmbedder(384, "model-a")) as c, serving(c) as client:
        ws = _ingest(c, NOTES, "A second note about the harbour.")
        body = _status(client)
        chunks = c.repos.chunks.count(ws)
        assert body["counts"] == {
            "chunks": chunks,
            "vectors": chunks,
            "embedded_with_current_model": chunks,
            "embedded_with_other_models": {},
            "not_embedded": 0,
        }
        assert body["embedding"]["available"] is True
        assert body["embedding"]["model"] == "model-a"
        assert body["embedding"]["dimensions"] == 384
        assert body["embedding"]["configured_dimensions"] is None
        [seen] = body["models_seen"]
        assert (seen["kind"], seen["name"], seen["dimensions"]) == ("embedding", "model-a", 384)
        assert body["analysis"]["enabled"] is False and body["analysis"]["disabled_reason"]
        assert body["reembed"] is None
        assert body["warnings"] == []


def test_a_vector_count_that_differs_from_the_chunk_count_is_a_warning_with_its_fix(
    settings: Settings,
) -> None:
    with built(settings, embedder=FakeEmbedder()) as c, serving(c) as client:
        ws = _ingest(c, NOTES, "A second note about the harbour.")
        lost = c.items.list(ws)[0]
        c.vectors.delete_by_item(ws, lost.id)
        body = _status(client)
        assert body["counts"]["vectors"] < body["counts"]["chunks"]
        [warning] = body["warnings"]
        assert f"{body['counts']['vectors']} vectors" in warning
        assert "reembed?all=true" in warning and "relata reembed --all" in warning

        resp = client.post("/api/v1/workspaces/current/reembed", params={"all": "true"})
        assert resp.status_code == 202, resp.text
        assert resp.json()["kind"] == "reembed_workspace"
        assert _status(client)["reembed"]["status"] == "pending"
        drain(c)
        body = _status(client)
        assert body["counts"]["vectors"] == body["counts"]["chunks"]
        assert body["reembed"]["status"] == "succeeded" and body["warnings"] == []


def test_chunks_of_another_model_are_a_warning_until_re_embedded(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder(384, "model-a")) as c:
        ws = _ingest(c, NOTES)
        chunks = c.repos.chunks.count(ws)
    with built(settings, embedder=FakeEmbedder(384, "model-b")) as c, serving(c) as client:
        body = _status(client)
        assert body["counts"]["embedded_with_other_models"] == {"model-a": chunks}
        [warning] = body["warnings"]
        assert "another model than model-b" in warning and "model-a" in warning
        assert "relata reembed" in warning

        job = client.post("/api/v1/workspaces/current/reembed")
        assert job.status_code == 202
        again = client.post("/api/v1/workspaces/current/reembed")
        assert again.json()["id"] == job.json()["id"]  # one pending job per request
        assert "re-embedding is under way" in _status(client)["warnings"][0]
        drain(c)
        body = _status(client)
        assert body["counts"]["embedded_with_current_model"] == chunks
        assert body["warnings"] == []
        assert {m["name"] for m in body["models_seen"]} == {"model-a", "model-b"}


def test_without_a_provider_the_status_says_meaning_search_is_unavailable(
    settings: Settings,
) -> None:
    with built(settings, embedding_provider="none") as c, serving(c) as client:
        _ingest(c, NOTES)
        body = _status(client)
        assert body["embedding"]["provider"] == "none"
        assert body["embedding"]["available"] is False and body["embedding"]["health"] is None
        assert any("meaning-based search is unavailable" in w for w in body["warnings"])
        resp = client.post("/api/v1/workspaces/current/reembed")
        assert resp.status_code == 409
        error = resp.json()["error"]
        assert error["code"] == "embedding_unavailable" and error["request_id"]


def test_an_openai_compatible_server_embeds_what_is_ingested(settings: Settings) -> None:
    with FakeProvider(dimensions=8) as server:
        openai = {
            "embedding_provider": "openai",
            "openai_base_url": f"{server.url}/v1",
            "embedding_model": "fake-embed",
            "embedding_dimensions": 8,
        }
        with built(settings, **openai) as c, serving(c) as client:
            ws = _ingest(c, NOTES)
            assert server.requests_to("/v1/embeddings")
            assert c.vectors.count(ws) == c.repos.chunks.count(ws) >= 1
            body = _status(client)
            assert body["embedding"]["provider"] == "openai"
            assert body["embedding"]["dimensions"] == 8
            assert body["embedding"]["health"]["ok"] is True
            assert body["warnings"] == []


def test_a_provider_that_does_not_answer_is_reported_within_the_health_timeout(
    settings: Settings,
) -> None:
    with FakeProvider(dimensions=8) as server:
        openai = {
            "embedding_provider": "openai",
            "openai_base_url": f"{server.url}/v1",
            "embedding_model": "fake-embed",
            "embedding_dimensions": 8,
        }
        with built(settings, **openai) as c:
            status = ModelStatusService(
                configured_dimensions=8,
                embedder=c.embedder,
                vectors=c.vectors,
                analysis=c.analysis,
                chunks=c.repos.chunks,
                model_versions=c.repos.model_versions,
                reembedder=c.reembed,
                health_timeout=0.2,
            )
            server.enqueue(Reply.slow(5.0, path="/v1/models"))
            result = status.status(workspace_id(c))
            health = result.embedding.health
            assert health is not None and health.ok is False
            assert health.detail == "no answer within 0.2 s"
            assert any("does not answer" in w for w in result.warnings)
