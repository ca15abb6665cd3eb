"""Search and answers when the embedding server does not answer: the text legs still run, the
vector leg is reported ``unavailable`` and a note says why (the spec: search degrades to
keyword, entity and relationship matching and says so). A real HTTP embedder (Ollama
adapter) points at a closed port on 127.0.0.1."""

from __future__ import annotations

import socket

from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.ingest.service import IngestRequest
from relata.search.service import UNAVAILABLE, SearchQuery
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id

TEXT = "The Sabrewing Array entered commercial operation in March 2019 off Skerry Rock."


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


def test_search_and_answers_degrade_to_the_text_legs_when_the_embedder_is_down(
    settings: Settings,
) -> None:
    model = {"embedding_model": "nomic-embed-text", "embedding_dimensions": 384}
    with built(settings, embedder=FakeEmbedder(384, "nomic-embed-text"), **model) as c:
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text=TEXT, title="Press release"))
        drain(c)
        assert c.repos.items.get(ws, item.id).status.value == "ready"
        assert c.vectors.count(ws) == 1
    down = {
        "embedding_provider": "ollama",
        **model,
        "ollama_url": f"http://127.0.0.1:{_closed_port()}",
        "embedding_timeout": 2.0,
    }
    with built(settings, **down) as c:
        assert c.embedder is not None and c.embedder.provider == "ollama"
        response = c.search.search(ws, SearchQuery(text="Sabrewing commercial operation"))
        assert [r.item.id for r in response.results] == [item.id]
        assert response.legs["vector"] == UNAVAILABLE and response.legs["text"] == "ran"
        assert any("embedding provider did not answer" in n for n in response.notes)
        legs = {c.leg for c in response.results[0].explanation.legs}
        assert "vector" not in legs and "text" in legs

        answer = c.answers.answer(
            ws, "When did the Sabrewing Array enter operation?", cancel=Cancel()
        )
        assert answer.status == "unavailable" and answer.reason == "analysis_disabled"
        assert [s.item_id for s in answer.sources] == [item.id]
