"""The tour a new user takes, in Chromium against the real ``relata serve`` (issue 16): sign in,
the library, and sign out. Every page reached is checked (``check_page``: no CSP violation,
no console or script error, no serious or critical axe-core violation).

The tests share one server (the demo corpus seeded before it started) and run in file order;
each signs in on its own page.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

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
