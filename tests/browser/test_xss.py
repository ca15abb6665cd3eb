"""Escaping, in the browser: documents whose titles, file names, metadata and text hold the XSS
corpus (tests/support/xss.py: script tags, attribute breakouts, ``javascript:`` URLs, template
syntax) show those strings as text on every page that shows them, and no script of theirs runs
(``window.__xss`` stays undefined, no dialog opens). A search query and a question holding
them are shown back the same way. Each page also passes ``check_page`` (so an injected inline
script would also be a CSP violation, reported).

Entity names cannot carry the corpus: the extractor takes names from words (it splits at
punctuation and markup), so entities come from the plain sentences of these documents; their
pages list the documents, whose titles are the corpus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.browser.checks import check_page
from tests.browser.server import Server, sign_in
from tests.support.xss import XSS, XSS_TEXT

# One worker under pytest-xdist: one Chromium and one `relata serve` for the session.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

READY_TIMEOUT = 120.0
# Named in every document, so the entity pages list all of them.
PERSON = "Helena Okafor"


def _document(i: int, s: str) -> bytes:
    return (
        f"# {s}\n\nZebrafish report {i}. Dr {PERSON} of the Marlow Institute met Ruth Lindqvist "
        f"at Skerry Rock on 3 March 2024 to count the harbour seals.\n\n{s}\n\n{XSS_TEXT}"
    ).encode()


@pytest.fixture(scope="module")
def xss_items(api: httpx.Client) -> dict[str, str]:
    """One processed document per corpus string (title, file name, metadata, text); returns
    item ids by string."""
    ids = {}
    for i, s in enumerate(XSS):
        r = api.post(
            "/items",
            files={"file": (f"{s}.md", _document(i, s), "text/markdown")},
            data={"title": s, "metadata": json.dumps({"note": s, "source": s})},
        )
        assert r.status_code == 201, r.text
        ids[s] = r.json()["id"]
    deadline = time.monotonic() + READY_TIMEOUT
    waiting = set(ids.values())
    while waiting and time.monotonic() < deadline:
        for item_id in sorted(waiting):
            status = api.get(f"/items/{item_id}").json()["status"]
            assert status != "failed", api.get(f"/items/{item_id}").text
            if status == "ready":
                waiting.discard(item_id)
        time.sleep(0.5)
    assert not waiting, f"not processed in {READY_TIMEOUT:.0f} s: {waiting}"
    return ids


@pytest.fixture
def xss_page(page: Page, relata_server: Server, xss_items: dict[str, str]) -> Iterator[Page]:
    """A signed-in page that records every dialog a script opens (and dismisses it)."""
    dialogs: list[str] = []

    def opened(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", opened)
    sign_in(page, relata_server)
    check_page(page)
    yield page
    assert dialogs == [], dialogs


def inert(page: Page) -> None:
    """No corpus script ran on this page, and the page passes its checks."""
    assert page.evaluate("() => typeof window.__xss") == "undefined", page.url
    check_page(page)
    assert page.evaluate("() => typeof window.__xss") == "undefined", page.url


def test_library_and_items_show_the_strings_as_text(
    xss_page: Page, relata_server: Server, xss_items: dict[str, str], api: httpx.Client
) -> None:
    page = xss_page
    # Multipart encodes a '"' in a file name as %22 (HTML's rule, httpx and browsers alike).
    filenames = {
        s: api.get(f"/items/{item_id}").json()["original_filename"]
        for s, item_id in xss_items.items()
    }
    assert filenames[XSS[0]] == f"{XSS[0]}.md"
    page.goto(relata_server.workspace_url("library"))
    for s in XSS:
        expect(page.get_by_role("link", name=s, exact=True)).to_be_visible()  # the title
        expect(page.get_by_text(filenames[s], exact=True)).to_be_visible()  # the file name
    inert(page)

    for s, item_id in xss_items.items():
        page.goto(relata_server.workspace_url(f"items/{item_id}"))
        expect(page.get_by_role("heading", level=1)).to_have_text(s)
        expect(page.locator("dl.meta dd").filter(has_text=filenames[s])).to_have_count(1)
        expect(page.locator("dl.meta dd").filter(has_text=s).first).to_be_visible()
        # The text, with its markup as characters: no element came out of it (the one
        # textarea is the edit form's metadata box, holding the metadata as text).
        assert page.locator("main script, main img, main svg").count() == 0
        assert page.locator("main textarea").count() == 1
        expect(page.locator("main textarea#edit-metadata")).to_have_value(f"note: {s}\nsource: {s}")
        inert(page)


def test_search_and_ask_show_the_strings_as_text(
    xss_page: Page, relata_server: Server, xss_items: dict[str, str]
) -> None:
    page = xss_page
    page.goto(relata_server.workspace_url("search"))
    page.get_by_label("Query").fill("Zebrafish")
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.locator("ol.results > li")
    expect(results).to_have_count(len(XSS))
    for s in XSS:
        expect(results.get_by_role("link", name=s, exact=True)).to_have_count(1)
    results.first.get_by_text("Why this result").click()
    inert(page)

    for s in XSS:  # the query itself, shown back in the box and in "nothing matches"
        page.goto(relata_server.workspace_url("search"))
        page.get_by_label("Query").fill(s)
        page.get_by_role("button", name="Search", exact=True).click()
        expect(page.get_by_label("Query")).to_have_value(s)
        inert(page)

    page.goto(relata_server.workspace_url("ask"))
    question = f"What did {PERSON} count at Skerry Rock? {XSS[0]} {XSS[1]}"
    page.get_by_label("Question").fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.get_by_label("Question")).to_have_value(question)
    expect(page.locator("section.sources li").first).to_be_visible()
    inert(page)


def test_knowledge_pages_show_the_strings_as_text(
    xss_page: Page, relata_server: Server, xss_items: dict[str, str]
) -> None:
    page = xss_page
    page.goto(relata_server.workspace_url(f"entities?q={PERSON.replace(' ', '+')}"))
    link = page.get_by_role("link", name=PERSON, exact=True)
    expect(link).to_be_visible()
    inert(page)
    link.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(PERSON)
    for s in XSS:  # every document mentions the person; each is listed by its title
        expect(page.get_by_role("link", name=s, exact=True).first).to_be_visible()
    inert(page)

    for path in ("entities", "aliases", "review", "contradictions", "jobs", "audit"):
        page.goto(relata_server.workspace_url(path))
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        if path == "review":  # the documents are related to each other, by their titles
            expect(page.get_by_role("link", name=XSS[0], exact=True).first).to_be_visible()
        inert(page)
