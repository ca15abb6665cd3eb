"""The Ask page streams its answer in Chromium (docs/decisions/0042-streaming-answers.md).

A ``relata serve`` of its own, whose language model is a real local OpenAI-compatible server
that streams slowly (tests.support.fake_provider): the answer's words appear on the page while
it is being written, with no citation marker among them (an invented one included), and the
page ends with its own rendering of the checked answer, the citation a link to the passage.
With JavaScript off, the same form posts and the page renders the whole answer. Every page is
checked (``check_page``: no CSP violation, no console or script error, axe clean).
"""

from __future__ import annotations

import itertools
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
    with FakeProvider(chat_content=_content, stream_piece=3, stream_pause=0.1) as fake:
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


#: Records every text the draft shows, as it changes (injected by Playwright, not by the page).
RECORD_DRAFTS = """
window.__drafts = [];
new MutationObserver(() => {
  const d = document.querySelector(".answer-draft");
  if (d && d.textContent !== window.__drafts[window.__drafts.length - 1]) {
    window.__drafts.push(d.textContent);
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture
def own_page(browser: Browser) -> Iterator[Page]:
    """A page of its own context, watched like ``page``."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
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


def _ask(page: Page, server: Server, *, check: bool = True) -> None:
    sign_in(page, server)
    if check:
        check_page(page)
    page.goto(server.workspace_url("ask"))
    if check:
        check_page(page)
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_role("button", name="Ask").click()


def test_the_answer_appears_as_it_is_written_then_checked(
    own_page: Page, streaming_server: Server
) -> None:
    page = own_page
    page.add_init_script(RECORD_DRAFTS)
    _ask(page, streaming_server)
    expect(page.locator(".answer-draft")).to_contain_text("Sabrewing")
    expect(page.locator("section.sources")).to_contain_text("turbine-register")
    # The final event: the page's own rendering, the citation a link to the passage.
    cite = page.locator(".answer-text a.cite")
    expect(cite).to_have_count(1, timeout=30_000)
    passage = re.compile(r"^/w/default/items/[^?#]+\?chunk=\S+#chunk-")
    expect(cite).to_have_attribute("href", passage)
    expect(page.locator(".answer-draft")).to_have_count(0)
    expect(page.locator(".answer-text")).not_to_contain_text("S9")
    expect(page.get_by_text("Checked sentence by sentence")).to_be_visible()
    assert page.url == streaming_server.workspace_url("ask")  # streamed: no page was posted
    drafts: list[str] = page.evaluate("() => window.__drafts")
    # Written piece by piece, each text the one before plus more, never a citation marker.
    assert len(drafts) > 5, drafts
    assert all(b.startswith(a) for a, b in itertools.pairwise(drafts)), drafts
    assert drafts[-1].endswith("It has a pier."), drafts
    assert not any("[" in d for d in drafts), drafts
    check_page(page)


def test_without_javascript_the_form_posts_and_the_page_renders_the_whole_answer(
    browser: Browser, streaming_server: Server
) -> None:
    """axe-core cannot run without JavaScript: the page with it is checked above."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    ctx.set_default_timeout(15_000)
    try:
        page = ctx.new_page()
        _ask(page, streaming_server, check=False)
        page.wait_for_load_state("load")
        expect(page.locator(".answer-text a.cite")).to_have_count(1)
        expect(page.locator(".answer-text")).to_contain_text("twelve turbines")
        expect(page.locator(".answer-draft")).to_have_count(0)
    finally:
        ctx.close()
