"""The ask page: the form; without a model, unavailable with the reason, the sources and the
demo's planted contradiction with both quotations; with a model (a real local
OpenAI-compatible server), the answer with its citations linking to the cited passages and
every sentence's verdict; a failed provider; CSRF; viewers; XSS; other workspaces."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from tests.support.demo import DemoSnapshot
from tests.support.fake_provider import FakeProvider, Reply
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, XSS_TEXT, leaked

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"
QUESTION = "When did the Sabrewing Array start operating?"
TURBINES = "The Sabrewing array at Halloran Sound has twelve turbines, installed in 2019."
SLIPWAY = "The harbour council approved repairs to the slipway at Halloran Sound in October."
_SOURCE = re.compile(r'<li id="source-(S\d+)"><span class="ref">S\d+</span> <a href="([^"]+)">')


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory, demo_snapshot: DemoSnapshot
) -> Iterator[tuple[Container, dict[str, str]]]:
    """The demo corpus processed once (SQLite, no embedder, no language model)."""
    root: Path = tmp_path_factory.mktemp("ask-demo")
    settings = Settings(data_dir=str(root / "data"), database_url=f"sqlite:///{root / 'r.db'}")
    with built(demo_snapshot.restore(settings)) as c:
        yield c, demo_snapshot.ids


@pytest.fixture(scope="module")
def client(demo: tuple[Container, dict[str, str]]) -> TestClient:
    return web_client(demo[0])


def ask(client: TestClient, question: str = QUESTION, **data: Any) -> Any:
    token = csrf(client, "/w/default/ask")
    return client.post("/w/default/ask", data={"csrf_token": token, "question": question, **data})


def text_of(page: str) -> str:
    """The page as a reader sees it: tags removed, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def unsafe(text: str) -> list[str]:
    """``leaked`` but for the bare ``javascript:`` string, which is harmless text once escaped
    (escaping leaves it as it is): it must just never be a link's or a source's URL."""
    found = [s for s in leaked(text) if not s.startswith("javascript:")]
    if re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", text, re.IGNORECASE):
        found.append("a javascript: URL")
    return found


def test_the_form_has_a_labelled_question_and_its_token(client: TestClient) -> None:
    r = client.get("/w/default/ask", params={"question": "Who built the array?"})
    assert r.status_code == 200
    assert '<label for="ask-question">Question</label>' in r.text
    assert ">Who built the array?</textarea>" in r.text
    assert 'name="csrf_token" value="' in r.text and 'method="post"' in r.text
    assert "Sources retrieved" not in r.text
    assert "<script>" not in r.text and " style=" not in r.text


def test_without_a_model_it_is_unavailable_with_the_sources_and_their_contradiction(
    demo: tuple[Container, dict[str, str]], client: TestClient
) -> None:
    c, ids = demo
    r = ask(client)
    assert r.status_code == 200
    words = text_of(r.text)
    assert "The answer is unavailable" in words
    assert ": analysis is disabled (no language model configured: set RELATA_AI_PROVIDER" in words
    assert "An administrator can configure a language model" in words
    sources = dict(_SOURCE.findall(r.text))
    assert sources["S1"] == f"/w/default/items/{ids[PRESS]}"
    assert f"/w/default/items/{ids[MINUTES]}" in sources.values()
    chunks = {ch.id for ch in c.repos.chunks.list_for_item(workspace_id(c), ids[PRESS])}
    linked = re.findall(
        rf'href="/w/default/items/{ids[PRESS]}\?chunk=([0-9a-f-]+)#chunk-\1"', r.text
    )
    assert linked and set(linked) <= chunks
    # The planted contradiction, both quotations side by side, the conflicting words marked.
    assert "Where the sources disagree" in words and "Sabrewing Array: date" in words
    side_by_side = r.text.split('<div class="side-by-side">', 1)[1].split("</div>", 1)[0]
    assert "He reminded the council that the Sabrewing Array" in side_by_side
    assert 'PORT HALLORAN, <mark class="claim">14 March 2019</mark>.' in side_by_side
    assert '<mark class="claim">June 2021</mark>' in side_by_side
    assert f'href="/w/default/items/{ids[PRESS]}"' in side_by_side
    assert f'href="/w/default/items/{ids[MINUTES]}"' in side_by_side
    assert ">" + QUESTION + "</textarea>" in r.text  # the question stays in the box


def test_a_post_without_its_token_is_refused(client: TestClient) -> None:
    assert client.post("/w/default/ask", data={"question": QUESTION}).status_code == 403
    forged = client.post("/w/default/ask", data={"question": QUESTION, "csrf_token": "f" * 64})
    assert forged.status_code == 403 and "Not allowed" in forged.text


def test_a_viewer_may_ask(demo: tuple[Container, dict[str, str]]) -> None:
    viewer = web_client(demo[0], role=Role.VIEWER)
    assert 'name="question"' in viewer.get("/w/default/ask").text
    r = ask(viewer)
    assert r.status_code == 200 and "Sources retrieved" in r.text


@pytest.mark.parametrize(
    ("data", "status", "words"),
    [
        ({"question": "   "}, 400, "Write a question first."),
        ({"limit": "many"}, 400, "sources must be a number from 1 to 20"),
        ({"limit": "21"}, 400, "sources must be from 1 to 20"),
        ({"question": "q" * 1001}, 400, "question is longer than 1000 characters"),
    ],
)
def test_bad_input_is_a_page_naming_it(
    client: TestClient, data: dict[str, str], status: int, words: str
) -> None:
    r = ask(client, **{"question": QUESTION, **data})
    assert r.status_code == status and words in html.unescape(r.text)


def test_no_matching_source_says_so(client: TestClient) -> None:
    words = text_of(ask(client, "xylophone concerto").text)
    assert "The answer is unavailable" in words
    assert "No source in this workspace matches the question" in words


def test_another_workspaces_items_never_appear(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        bravo, _ = c.workspaces.ensure("bravo")
        c.ingest.ingest(bravo.id, IngestRequest(text="Quokka census notes.", title="Quokkas"))
        drain(c)
        client = web_client(c)
        r = ask(client, "How many quokkas were counted?")
        assert r.status_code == 200 and "Quokkas" not in r.text
        assert "No source in this workspace matches the question" in text_of(r.text)
        assert client.get("/w/bravo/ask").status_code == 404


def test_stored_xss_in_titles_and_text_is_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        for n, attack in enumerate(XSS):
            c.ingest.ingest(ws, IngestRequest(text=f"{XSS_TEXT}\n{n}", title=attack))
        drain(c)
        client = web_client(c)
        r = ask(client, "Zebrafish", limit="20")
        assert len(_SOURCE.findall(r.text)) == len(XSS)
        assert unsafe(r.text) == []
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text
        for attack in XSS:
            echoed = ask(client, attack)
            assert unsafe(echoed.text) == []


# ---------------------------------------------------------------- with a model
def reply(answer: str, citations: list[str]) -> str:
    return json.dumps({"answer": answer, "sufficient": True, "citations": citations})


def ref_of(doc: Any, needle: str) -> str:
    """The ref of the source block, in a received chat request, whose text contains needle."""
    ref = ""
    for line in doc["messages"][1]["content"].split("\n"):
        if line.startswith("<<<SOURCE "):
            ref = line.rsplit("ref=", 1)[1].removesuffix(">>>")
        elif line.startswith("<<<END "):
            ref = ""
        elif ref and needle in line:
            return ref
    raise AssertionError(f"no source block contains {needle!r}")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


@pytest.fixture
def model(settings: Settings, fake: FakeProvider) -> Iterator[tuple[Container, dict[str, str]]]:
    """A container whose language model is the fake server, with two small items."""
    model_settings: dict[str, Any] = {
        "embedding_provider": "none",
        "ai_provider": "openai",
        "ai_model": "fake-chat",
        "openai_base_url": fake.url + "/v1",
        "ai_timeout": 5.0,
    }
    with built(settings, **model_settings) as c:
        ws = workspace_id(c)
        ids = {
            title: c.ingest.ingest(ws, IngestRequest(text=text, title=title)).id
            for title, text in (("Turbine register", TURBINES), ("Council minutes", SLIPWAY))
        }
        drain(c)
        yield c, ids


def test_an_answer_links_its_citations_and_shows_each_sentences_verdict(
    model: tuple[Container, dict[str, str]], fake: FakeProvider
) -> None:
    c, ids = model

    def content(doc: Any) -> str:
        t, s = ref_of(doc, "twelve turbines"), ref_of(doc, "slipway")
        return reply(
            f"The Sabrewing array at Halloran Sound has twelve turbines [{t}]. "
            f"They were installed in 2018 [{t}]. "
            f"The harbour council approved repairs to the slipway in October [{s}]. "
            "The work will take a year.",
            [t, s],
        )

    fake.chat_content = content
    r = ask(web_client(c), "What is at Halloran Sound?")
    assert r.status_code == 200, r.text
    chunk = c.repos.chunks.list_for_item(workspace_id(c), ids["Turbine register"])[0].id
    passage = f"/w/default/items/{ids['Turbine register']}?chunk={chunk}#chunk-{chunk}"
    answer = r.text.split('<p class="answer-text">', 1)[1].split("</p>", 1)[0]
    assert f'<a class="cite" href="{passage}" title="Turbine register">' in answer
    assert "[S" not in re.sub(r"<[^>]+>", "", answer).replace("[source S", "")  # markers: links
    words = text_of(r.text)
    assert "Unsupported Some sentences are not supported" in words
    assert "(2 supported, 1 unsupported, 1 uncited)" in words
    sentences = r.text.split('<ol class="sentences">', 1)[1].split("</ol>", 1)[0]
    assert sentences.count('class="status status-supported">Supported<') == 2
    assert 'class="status status-unsupported">Unsupported: date<' in sentences
    assert 'class="status status-uncited">Uncited<' in sentences
    assert 'They were installed <mark class="unsupported">in 2018</mark>' in sentences
    assert f'Supported by <a href="{passage}">' in sentences
    # The cited passage shows the sentence that supports the answer marked.
    cited = r.text.split('<ul class="citations">', 1)[1].split("</ul>", 1)[0]
    assert f'<mark class="match">{TURBINES}</mark>' in cited


def test_a_model_answer_is_escaped(
    model: tuple[Container, dict[str, str]], fake: FakeProvider
) -> None:
    c, _ = model
    attack = " ".join(XSS[:-1])
    fake.chat_content = lambda doc: reply(
        f"The Sabrewing array has twelve turbines {attack} [{ref_of(doc, 'twelve')}].", []
    )
    r = ask(web_client(c), "What is at Halloran Sound?")
    assert r.status_code == 200 and 'class="answer-text"' in r.text
    assert unsafe(r.text) == []


def test_a_failed_provider_says_so_and_still_shows_the_sources(
    model: tuple[Container, dict[str, str]], fake: FakeProvider
) -> None:
    c, ids = model
    fake.enqueue(Reply.error(400, "unknown model"))
    r = ask(web_client(c), "What is at Halloran Sound?")
    assert r.status_code == 502
    words = text_of(r.text)
    assert "The answer is unavailable : the language model provider refused" in words
    assert "unknown model" in words and "The sources below do not need the model" in words
    assert {href for _, href in _SOURCE.findall(r.text)} == {
        f"/w/default/items/{i}" for i in ids.values()
    }
