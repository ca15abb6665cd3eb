"""The Ask page streams its answer in Chromium (docs/decisions/0042-streaming-answers.md).

A ``relata serve`` of its own, whose language model is a real local OpenAI-compatible server
that streams slowly (tests.support.fake_provider): the answer's words appear on the page while
it is being written, with no citation marker among them (an invented one included), and the
page ends with its own rendering of the checked answer, the citation a link to the passage.
With JavaScript off, the same form posts and the page renders the whole answer. Every page is
checked (``check_page``: no CSP violation, no console or script error, axe clean).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import checks
from tests.browser.checks import check_page
from tests.browser.server import (
    ADMIN,
    PASSWORD,
    Server,
    free_port,
    relata,
    relata_env,
    serve,
    sign_in,
)
from tests.support.fake_provider import FakeProvider

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TURBINES = "The Sabrewing array at Halloran Sound has twelve turbines, installed in 2019.\n"
QUESTION = "How many turbines does the Sabrewing array have?"
ANSWER = "The Sabrewing array at Halloran Sound has twelve turbines {ref}. It has a pier [S9]."


def _content(doc: Any) -> str:
    """The answer for an answer request (citing the supplied source and inventing S9); an
    empty object for ingestion's tasks, which reject it (counted, never fatal)."""
    if doc.get("response_format", {}).get("json_schema", {}).get("name") != (
        "relata_generate_answer"
    ):
        return "{}"
    user = doc["messages"][1]["content"]
    ref = user.split(" ref=", 1)[1].split(">>>", 1)[0]
    return json.dumps(
        {"answer": ANSWER.format(ref=f"[{ref}]"), "sufficient": True, "citations": [ref, "S9"]}
    )


@pytest.fixture(scope="module")
def model() -> Iterator[FakeProvider]:
    with FakeProvider(chat_content=_content, stream_piece=3, stream_pause=0.08) as fake:
        yield fake


@pytest.fixture(scope="module")
def streaming_server(
    tmp_path_factory: pytest.TempPathFactory, model: FakeProvider
) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("relata-stream") / "data"
    data.mkdir(parents=True)
    port = free_port()
    env = relata_env(data, port)
    relata(["createadmin", "--username", ADMIN, "--password-stdin"], env, stdin=PASSWORD + "\n")
    doc: Path = data.parent / "turbine-register.txt"
    doc.write_text(TURBINES, encoding="utf-8")
    relata(["ingest", str(doc)], env)  # processed without a model
    env.update(
        RELATA_AI_PROVIDER="openai",
        RELATA_AI_MODEL="fake-chat",
        RELATA_OPENAI_BASE_URL=model.url + "/v1",
        RELATA_AI_TIMEOUT="30",
        RELATA_AI_STREAM_IDLE_TIMEOUT="10",
    )
    running = serve(data, env, port)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def own_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page of its own context, watched like ``page``; JavaScript on unless the test is
    parametrised with ``False``."""
    javascript = getattr(request, "param", True)
    ctx = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
    )
    ctx.set_default_timeout(15_000)
    p = ctx.new_page()
    w = checks.watch(p)
    try:
        yield p
        assert not checks.unchecked(w), "pages loaded and never checked"
        assert not w.problems, "\n".join(w.problems)
    finally:
        checks.forget(p)
        ctx.close()


def _ask(page: Page, server: Server) -> None:
    sign_in(page, server)
    check_page(page)
    page.goto(server.workspace_url("ask"))
    check_page(page)
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_role("button", name="Ask").click()


def test_the_answer_appears_as_it_is_written_then_checked(
    own_page: Page, streaming_server: Server
) -> None:
    page = own_page
    _ask(page, streaming_server)
    draft = page.locator(".answer-draft")
    expect(draft).to_contain_text("Sabrewing")
    seen = draft.inner_text()
    # Part of the answer is on the page while the rest is still being written.
    assert "pier" not in seen, seen
    expect(page.locator("section.sources")).to_contain_text("Turbine register")
    expect(draft).to_contain_text("pier")
    assert "[" not in draft.inner_text(), "a citation marker was shown before it was checked"
    # The final event: the page's own rendering, the citation a link to the passage.
    cite = page.locator(".answer-text a.cite")
    expect(cite).to_have_count(1)
    expect(cite).to_have_attribute(
        "href", re.compile(r"^/w/default/items/[^?#]+\?chunk=\S+#chunk-")
    )
    expect(page.locator(".answer-draft")).to_have_count(0)
    expect(page.locator(".answer-text")).not_to_contain_text("S9]")
    expect(page.get_by_text("Checked sentence by sentence")).to_be_visible()
    assert page.url == streaming_server.workspace_url("ask")  # streamed: no page was posted
    check_page(page)


@pytest.mark.parametrize("own_page", [False], indirect=True)
def test_without_javascript_the_form_posts_and_the_page_renders_the_whole_answer(
    own_page: Page, streaming_server: Server
) -> None:
    page = own_page
    _ask(page, streaming_server)
    page.wait_for_load_state("load")
    expect(page.locator(".answer-text a.cite")).to_have_count(1)
    expect(page.locator(".answer-text")).to_contain_text("twelve turbines")
    expect(page.locator(".answer-draft")).to_have_count(0)
    check_page(page)
