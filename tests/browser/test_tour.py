"""The tour a new user takes, in Chromium against the real ``relata serve`` (issue 16): sign in
through the form, search and open a result's explanation, ask with no language model (the
answer is unavailable, the sources are shown), create an API token on the settings page and
use it from a script, sign out; and a form posted without its CSRF token changes nothing.
Every page reached is checked (``check_page``: no CSP violation, no console or script error,
no serious or critical axe-core violation).

The tests share one server (the demo corpus seeded before it started) and run in file order;
each signs in on its own page, through the form. What a page did is checked through the API
as well, not only by what the next page shows.
"""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.checks import check_page
from tests.browser.server import ADMIN, PASSWORD, WORKSPACE, Server

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_sign_in_through_the_form_lands_on_the_library(page: Page, relata_server: Server) -> None:
    page.goto(relata_server.url("/"))
    expect(page).to_have_url(re.compile(r"/sign-in$"))
    check_page(page)

    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    check_page(page, expected_console=(r"status of 401",))

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(relata_server.workspace_url("library"))
    expect(page.get_by_role("heading", level=1, name="Library")).to_be_visible()
    # The demo corpus is there, processed.
    rows = page.locator("table.items tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.locator(".status")).to_have_text(["ready"] * 5)
    check_page(page)


def test_a_page_asked_for_before_signing_in_comes_back_after(
    page: Page, relata_server: Server
) -> None:
    page.goto(relata_server.workspace_url("library?status=ready"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    check_page(page)
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(relata_server.workspace_url("library?status=ready"))
    expect(page.get_by_label("Status")).to_have_value("ready")
    check_page(page)


def test_sign_out_ends_the_session(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in\?signed_out=1$"))
    expect(page.get_by_role("status")).to_have_text("You are signed out.")
    check_page(page)
    # The session is gone: a workspace page sends the browser to sign in again.
    page.goto(relata_server.workspace_url("library"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    expect(page.get_by_role("heading", level=1, name="Sign in")).to_be_visible()
    check_page(page)
    assert not [c for c in page.context.cookies() if "session" in c["name"]], WORKSPACE


def remove_csrf_token(form: Locator) -> None:
    """Take the CSRF token out of ``form`` as a forged cross-site form would lack it."""
    removed = form.evaluate(
        """f => { const t = f.querySelector('input[name="csrf_token"]');
                  if (!t) return false; t.remove(); return true; }"""
    )
    assert removed, "the form has no csrf_token field"


def test_a_form_posted_without_its_csrf_token_changes_nothing(
    signed_in: Page, relata_server: Server
) -> None:
    page = signed_in
    sign_out = page.locator("form[action='/sign-out']")
    remove_csrf_token(sign_out)
    sign_out.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1, name="Not allowed")).to_be_visible()
    check_page(page, expected_console=(r"status of 403",))
    # Still signed in: the library opens without a sign-in.
    page.goto(relata_server.workspace_url("library"))
    expect(page.get_by_role("heading", level=1, name="Library")).to_be_visible()
    check_page(page)


# ---------------------------------------------------------------- search and ask
def test_search_and_open_a_results_explanation(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Search").click()
    expect(page.get_by_role("heading", level=1, name="Search")).to_be_visible()
    check_page(page)

    page.get_by_label("Query").fill("Sabrewing Array turbines")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page).to_have_url(re.compile(r"/search\?.*q=Sabrewing"))
    results = page.locator("ol.results > li")
    expect(results.first).to_be_visible()
    first = results.first
    why = first.locator("details.why")
    expect(why).not_to_have_attribute("open", "")
    first.get_by_text("Why this result").click()
    expect(why).to_have_attribute("open", "")
    legs = why.get_by_role("table", name="How each way of matching ranked it")
    expect(legs).to_be_visible()
    expect(legs.get_by_role("row")).not_to_have_count(1)  # a header and at least one leg
    expect(first.locator("mark.match").first).to_be_visible()  # the words, highlighted
    check_page(page)


def test_ask_without_a_model_says_so_and_shows_the_sources(
    signed_in: Page, relata_server: Server
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Ask").click()
    expect(page.get_by_role("heading", level=1, name="Ask")).to_be_visible()
    check_page(page)

    page.get_by_label("Question").fill("When did the Sabrewing Array enter commercial operation?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.get_by_role("heading", level=2, name="Answer")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="The answer is unavailable")).to_be_visible()
    sources = page.locator("section.sources ol.sources > li")
    expect(sources.first).to_be_visible()
    expect(sources.first.get_by_role("link").first).to_have_attribute(
        "href", re.compile(rf"^/w/{WORKSPACE}/items/")
    )
    check_page(page)


# ---------------------------------------------------------------- settings: an API token
def test_create_an_api_token_use_it_and_sign_out(signed_in: Page, relata_server: Server) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", level=1, name="Settings")).to_be_visible()
    check_page(page)

    page.get_by_label("Token name").fill("tour script")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("heading", level=1, name="Token created")).to_be_visible()
    secret = page.get_by_label("API token “tour script”").input_value()
    assert re.fullmatch(r"rl_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", secret), "not a token"
    check_page(page)

    with httpx.Client(base_url=relata_server.url("/api/v1"), timeout=30) as client:
        r = client.get("/items", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 200, r.text
        titles = [i["title"] for i in r.json()["items"]]
        assert "Field notes, Skerry Rock seal survey" in titles
        assert client.get("/items").status_code == 401  # and nothing without it

    # Shown once: the settings page lists the token by its prefix only.
    page.get_by_role("link", name="Back to settings").click()
    tokens = page.locator("#tokens")
    expect(tokens.get_by_role("row").filter(has_text="tour script")).to_contain_text(
        f"rl_{secret.split('_')[1]}_…"
    )
    assert secret not in page.content()
    check_page(page)

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in\?signed_out=1$"))
    check_page(page)
    page.goto(relata_server.workspace_url("settings"))
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    check_page(page)
