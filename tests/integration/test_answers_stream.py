"""POST /api/v1/answers streamed (``Accept: text/event-stream``), over HTTP against the real
app (SQLite) and a real local server that streams as OpenAI-compatible servers and Ollama do
(tests.support.fake_provider), and once against the real llama.cpp server (slow).

What is checked: the events come in order (``sources``, ``delta``..., one ``final``); the
deltas are the answer's text as it was written, with every citation marker held back, so an
invented citation never appears before the final event, where it does not resolve; the final
event is exactly the non-streamed response; Ollama's native API streams too (JSON Lines, from
the same local server in Ollama's wire format), and no model gives the same events; a
provider failure mid-stream is one ``error`` event in the error shape; a bad request is
still an ordinary 400; nothing of the content is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.providers.stream import SseParser
from tests.integration.test_answers import (
    GOOD_ANSWER,
    QUESTION,
    SLIPWAY,
    TURBINES,
    client_for,
    ingest,
    ref_of,
    reply,
)
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.ingest import built
from tests.support.llama import HANG_GUARD_SECONDS

STREAM = {"Accept": "text/event-stream"}
CHAT = "/v1/chat/completions"


def events(client: TestClient, question: str = QUESTION, **body: Any) -> list[tuple[str, Any]]:
    """The streamed answer's events as (name, decoded data), read as they arrive."""
    parser = SseParser()
    out: list[tuple[str, Any]] = []
    with client.stream(
        "POST", "/api/v1/answers", json={"question": question, **body}, headers=STREAM
    ) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["cache-control"] == "no-store"
        for chunk in resp.iter_bytes():
            out.extend((e.event, json.loads(e.data)) for e in parser.feed(chunk))
    return out


def names(evs: list[tuple[str, Any]]) -> list[str]:
    """Event names with runs of ``delta`` folded into one."""
    out: list[str] = []
    for name, _ in evs:
        if not (name == "delta" and out and out[-1] == "delta"):
            out.append(name)
    return out


def streamed_text(evs: list[tuple[str, Any]]) -> str:
    return "".join(data["text"] for name, data in evs if name == "delta")


@pytest.fixture
def sqlite_settings(settings: Settings) -> Settings:
    return settings  # how an answer streams does not depend on the storage dialect


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(stream_piece=3) as server:
        yield server


def _settings(url: str, provider: str = "openai") -> dict[str, Any]:
    return {
        "embedding_provider": "none",
        "ai_provider": provider,
        "ai_model": "fake-chat",
        "openai_base_url": url + "/v1",
        "ollama_url": url,
        "ai_timeout": 5.0,
        "ai_stream_idle_timeout": 1.0,
    }


@pytest.fixture
def model(sqlite_settings: Settings, fake: FakeProvider) -> Iterator[Container]:
    with built(sqlite_settings, **_settings(fake.url)) as c:
        yield c


def test_a_streamed_answer_is_sources_then_deltas_then_the_final_answer(
    model: Container, fake: FakeProvider
) -> None:
    ids = ingest(model, TURBINES, SLIPWAY)
    text = "The Sabrewing array has twelve turbines {r}. It was installed in 2019 {r}."
    fake.chat_content = lambda doc: reply(text.format(r=f"[{ref_of(doc, 'twelve turbines')}]"), [])
    with client_for(model) as client:
        evs = events(client)
        plain = client.post("/api/v1/answers", json={"question": QUESTION}).json()
    assert names(evs) == ["sources", "delta", "final"]
    assert sum(1 for n, _ in evs if n == "delta") > 5  # written piece by piece, not at once
    sources = evs[0][1]
    assert {s["item_id"] for s in sources} == set(ids.values())
    final = evs[-1][1]
    assert final["status"] == "ok" and final["support"] is not None
    assert final["sources"] == sources
    assert [c["item_id"] for c in final["citations"]] == [ids["Turbine register"]]
    # The markers are held back while streaming, and come back resolved in the final event.
    assert streamed_text(evs) == text.replace(" {r}", "")
    assert final["answer"] == text.format(r=f"[{final['citations'][0]['ref']}]")
    assert final["checks"]["sentences"]
    # The final event is the very response a client gets without streaming.
    assert final == plain


def test_an_invented_citation_never_appears_in_the_stream_and_never_resolves(
    model: Container, fake: FakeProvider
) -> None:
    ingest(model, TURBINES, SLIPWAY)
    fake.chat_content = lambda doc: reply(
        f"The array has twelve turbines [{ref_of(doc, 'twelve turbines')}] and a pier [S9]. "
        "Repairs were approved [sic].",
        ["S9"],
    )
    with client_for(model) as client:
        evs = events(client)
    streamed = streamed_text(evs)
    assert "S9" not in streamed and "[S" not in streamed
    assert "[sic]" in streamed  # prose in brackets is not a citation, and is shown
    final = evs[-1][1]
    assert final["status"] == "ok"
    assert final["dropped_citations"] == 1
    assert "S9" not in {c["ref"] for c in final["citations"]}
    assert {s["ref"] for s in final["sources"]} >= {c["ref"] for c in final["citations"]}


def test_a_rejected_reply_streams_its_text_but_the_final_event_withdraws_it(
    model: Container, fake: FakeProvider
) -> None:
    """Streamed text is a draft: a reply that cites nothing supplied is unavailable in the
    final event, as without streaming; clients replace the draft with the final event."""
    ingest(model, TURBINES)
    fake.chat_content = reply("The array has twelve turbines [S7].", ["S7"])
    with client_for(model) as client:
        evs = events(client)
    assert names(evs) == ["sources", "delta", "final"]
    assert "S7" not in streamed_text(evs)
    final = evs[-1][1]
    assert final["status"] == "unavailable" and final["reason"] == "no_valid_citations"
    assert final["answer"] is None and final["citations"] == []


def test_ollama_streams_its_answer_in_the_same_events(
    sqlite_settings: Settings, fake: FakeProvider
) -> None:
    """Ollama's native API streams JSON Lines; the events are the OpenAI-compatible ones."""
    fake.chat_content = lambda doc: reply(
        f"The array has twelve turbines [{ref_of(doc, 'twelve turbines')}].", []
    )
    with built(sqlite_settings, **_settings(fake.url, provider="ollama")) as c:
        ingest(c, TURBINES)
        with client_for(c) as client:
            evs = events(client)
            plain = client.post("/api/v1/answers", json={"question": QUESTION}).json()
    assert names(evs) == ["sources", "delta", "final"]
    assert sum(1 for n, _ in evs if n == "delta") > 5  # written piece by piece
    assert streamed_text(evs) == "The array has twelve turbines."
    assert evs[-1][1]["status"] == "ok" and evs[-1][1] == plain
    asked = [r.json["stream"] for r in fake.requests_to("/api/chat") if "question" in str(r.json)]
    assert asked[-2:] == [True, False]  # the streamed answer, then the plain one


def test_without_a_model_the_stream_is_the_sources_and_the_unavailable_answer(
    sqlite_settings: Settings,
) -> None:
    with built(sqlite_settings, embedding_provider="none") as c:
        ingest(c, TURBINES)
        with client_for(c) as client:
            evs = events(client)
            nothing = events(client, "zeppelin marmalade")
    assert [n for n, _ in evs] == ["sources", "final"]
    assert evs[1][1]["reason"] == "analysis_disabled" and evs[1][1]["sources"] == evs[0][1]
    assert nothing == [("sources", []), ("final", nothing[1][1])]
    assert nothing[1][1]["reason"] == "no_sources"


def test_a_provider_failure_is_one_error_event_after_the_sources(
    model: Container, fake: FakeProvider
) -> None:
    ingest(model, TURBINES)
    fake.enqueue(Reply.error(500, "model crashed", path=CHAT))
    with client_for(model) as client:
        evs = events(client)
    assert [n for n, _ in evs] == ["sources", "error"], evs
    error = evs[1][1]["error"]
    assert error["status"] == 502 and error["code"] == "model_provider_failed"
    assert "model crashed" in error["message"] and error["request_id"]


def test_a_stream_that_stalls_fails_after_the_idle_timeout(
    model: Container, fake: FakeProvider
) -> None:
    ingest(model, TURBINES)
    fake.chat_content = lambda doc: reply(
        f"The array has twelve turbines [{ref_of(doc, 'twelve turbines')}].", []
    )
    fake.enqueue(Reply(path=CHAT, pause=3.0))  # idle timeout 1 s
    with client_for(model) as client:
        evs = events(client)
    assert [n for n, _ in evs] == ["sources", "error"]
    error = evs[1][1]["error"]
    assert error["status"] == 503 and "sent nothing for 1.0s" in error["message"]


def test_a_stream_cut_before_done_is_an_error_not_an_answer(
    model: Container, fake: FakeProvider
) -> None:
    ingest(model, TURBINES)
    fake.chat_content = lambda doc: reply(
        f"The array has twelve turbines [{ref_of(doc, 'twelve turbines')}].", []
    )
    fake.enqueue(Reply(path=CHAT, cut_after=8))
    with client_for(model) as client:
        evs = events(client)
    assert names(evs) == ["sources", "delta", "error"]
    error = evs[-1][1]["error"]
    assert error["status"] == 502 and "without [DONE]" in error["message"]


def test_a_bad_streamed_request_is_an_ordinary_error_response(model: Container) -> None:
    with client_for(model) as client:
        resp = client.post("/api/v1/answers", json={"question": "   "}, headers=STREAM)
        too_many = client.post(
            "/api/v1/answers", json={"question": QUESTION, "limit": 99}, headers=STREAM
        )
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_request"
    assert too_many.status_code in (400, 422)


def test_nothing_of_the_content_is_logged_while_streaming(
    model: Container, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    ingest(model, TURBINES)
    fake.chat_content = lambda doc: reply(f"{GOOD_ANSWER} [{ref_of(doc, 'twelve turbines')}]", [])
    caplog.set_level(logging.DEBUG)
    with client_for(model) as client:
        evs = events(client)
    assert evs[-1][1]["status"] == "ok"
    logged = "\n".join(r.getMessage() + str(getattr(r, "fields", "")) for r in caplog.records)
    assert "Sabrewing" not in logged and "Halloran" not in logged


# ---------------------------------------------------------------- a real model
@pytest.mark.slow
def test_a_real_model_streams_its_answer_and_the_final_event_judges_it(
    sqlite_settings: Settings, llama_base_url: str
) -> None:
    """SmolLM2-135M through llama.cpp's own event stream: whatever it writes, the events come
    in order, the streamed text carries no citation marker, and the final event is a judged
    answer (``ok`` with checked sentences, or ``unavailable`` with a reason)."""
    real: dict[str, Any] = {
        "embedding_provider": "none",
        "ai_provider": "openai",
        "ai_model": "smollm2-135m",
        "openai_base_url": llama_base_url,
        "ai_timeout": HANG_GUARD_SECONDS,
        "ai_stream_idle_timeout": HANG_GUARD_SECONDS,
        "ai_max_tokens": 160,
    }
    with built(sqlite_settings, embedding_provider="none") as plain:
        ingest(plain, TURBINES, SLIPWAY)
    with built(sqlite_settings, **real) as c, client_for(c) as client:
        evs = events(client, "How many turbines does the Sabrewing array have?")
    assert names(evs)[0] == "sources" and names(evs)[-1] == "final", names(evs)
    assert set(names(evs)) <= {"sources", "delta", "final"}
    deltas = [d["text"] for n, d in evs if n == "delta"]
    assert len(deltas) > 1, "llama.cpp streamed the answer in one piece"
    final = evs[-1][1]
    streamed = "".join(deltas)
    assert not any(f"[{s['ref']}]" in streamed for s in final["sources"])
    if final["status"] == "ok":
        assert final["checks"]["sentences"]
        # The streamed text is the answer without its markers (whitespace aside).
        words = [w for w in final["answer"].split() if not w.startswith("[S")]
        assert all(w.strip(".,;[]") in streamed for w in words)
    else:
        assert final["reason"] and final["answer"] is None
