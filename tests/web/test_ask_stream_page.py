"""The Ask page's streamed answer (what ``static/ask.js`` reads), over the real app with a real
local OpenAI-compatible server that streams: the form posted with ``Accept:
text/event-stream`` gives the sources section, the answer's text without citation markers,
then the page's own rendering of the checked answer; a provider failure renders as on the
page, with its status; the CSRF check and a blank question are as for the plain post."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.providers.stream import SseParser
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.web import csrf, web_client
from tests.web import test_ask_page
from tests.web.test_ask_page import ref_of, reply

# The ask page's fixtures: the fake model server, and a container on it with two items.
fake = test_ask_page.fake
model = test_ask_page.model

STREAM = {"Accept": "text/event-stream"}


def stream(client: TestClient, question: str, **data: Any) -> list[tuple[str, Any]]:
    token = csrf(client, "/w/default/ask")
    form = {"csrf_token": token, "question": question, **data}
    parser = SseParser()
    out: list[tuple[str, Any]] = []
    with client.stream("POST", "/w/default/ask", data=form, headers=STREAM) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        for chunk in resp.iter_bytes():
            out.extend((e.event, json.loads(e.data)) for e in parser.feed(chunk))
    return out


def content(doc: Any) -> str:
    t = ref_of(doc, "twelve turbines")
    return reply(f"The Sabrewing array has twelve <b>turbines</b> [{t}]. It is windy [S9].", [t])


def test_the_page_streams_sources_text_then_its_own_rendering_of_the_answer(
    model: tuple[Container, dict[str, str]], fake: FakeProvider
) -> None:
    c, _ = model
    fake.chat_content = content
    client = web_client(c)
    evs = stream(client, "What is at Halloran Sound?")
    assert evs[0][0] == "sources" and '<li id="source-S1">' in evs[0][1]["html"]
    deltas = "".join(d["text"] for n, d in evs if n == "delta")
    assert deltas == "The Sabrewing array has twelve <b>turbines</b>. It is windy."
    name, final = evs[-1]
    assert name == "final" and final["status"] == 200
    assert '<a class="cite" href="/w/default/items/' in final["html"]
    assert "&lt;b&gt;turbines&lt;/b&gt;" in final["html"]  # escaped as on the page
    assert "S9]</a>" not in final["html"]  # the invented citation links nowhere
    plain = client.post(
        "/w/default/ask",
        data={
            "csrf_token": csrf(client, "/w/default/ask"),
            "question": "What is at Halloran Sound?",
        },
    ).text
    answer = final["html"].split('<p class="answer-text">', 1)[1].split("</p>", 1)[0]
    assert f'<p class="answer-text">{answer}</p>' in plain


def test_a_failed_provider_renders_the_sources_and_the_failure_with_its_status(
    model: tuple[Container, dict[str, str]], fake: FakeProvider
) -> None:
    c, _ = model
    fake.enqueue(Reply.error(500, "model crashed", path="/v1/chat/completions"))
    evs = stream(web_client(c), "What is at Halloran Sound?")
    assert [n for n, _ in evs] == ["sources", "final"]
    final = evs[-1][1]
    assert final["status"] == 502
    assert "The answer is unavailable" in final["html"] and "Sources retrieved" in final["html"]


def test_a_blank_question_or_a_missing_token_is_not_streamed(
    model: tuple[Container, dict[str, str]],
) -> None:
    client = web_client(model[0])
    token = csrf(client, "/w/default/ask")
    blank = client.post(
        "/w/default/ask", data={"csrf_token": token, "question": " "}, headers=STREAM
    )
    assert blank.status_code == 400 and "Write a question first." in blank.text
    forged = client.post("/w/default/ask", data={"question": "Why?"}, headers=STREAM)
    assert forged.status_code == 403
    assert not forged.headers["content-type"].startswith("text/event-stream")
