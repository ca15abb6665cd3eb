"""The administration page in Chromium against the real ``relata serve``: the administrator
follows the menu's Admin link, creates a user with a private workspace, resets that user's
password and creates a workspace the user owns; the user then signs in in their own browser
with the new password, sees no Admin link, and is refused the page. Every page reached is
checked (``check_page``: no CSP violation, no console or script error, no serious or critical
axe-core violation). Nothing here touches the default workspace the tour relies on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import checks
from tests.browser.checks import check_page
from tests.browser.server import Server, relata

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CORA = "cora"
FIRST_PASSWORD = "cora-first-password"
NEW_PASSWORD = "cora-second-password"


@pytest.fixture
def cora_page(browser: Browser) -> Iterator[Page]:
    """cora's own browser (no cookies shared with the administrator's), watched like ``page``."""
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


def test_an_administrator_manages_users_and_workspaces_from_the_browser(
    signed_in: Page, cora_page: Page, relata_server: Server
) -> None:
    admin = signed_in
    admin.get_by_role("navigation", name="Main").get_by_role("link", name="Admin").click()
    expect(admin.get_by_role("heading", level=1, name="Administration")).to_be_visible()
    check_page(admin)

    # A user with a private workspace.
    admin.locator("#new-username").fill(CORA)
    admin.locator("#new-password").fill(FIRST_PASSWORD)
    admin.get_by_role("button", name="Create user").click()
    expect(admin.get_by_role("status")).to_contain_text("User created")
    expect(admin.locator("section#users tbody")).to_contain_text(CORA)
    check_page(admin)

    # Her password, reset.
    admin.locator("#reset-username").select_option(CORA)
    admin.locator("#reset-password").fill(NEW_PASSWORD)
    admin.get_by_role("button", name="Reset password").click()
    expect(admin.get_by_role("status")).to_contain_text("Password reset")
    check_page(admin)

    # A workspace she owns.
    admin.locator("#ws-slug").fill("atlas")
    admin.locator("#ws-name").fill("Atlas project")
    admin.locator("#ws-owner").select_option(CORA)
    admin.get_by_role("button", name="Create workspace").click()
    expect(admin.get_by_role("status")).to_contain_text("Workspace created")
    row = admin.locator("section#workspaces tbody tr", has_text="atlas")
    expect(row).to_contain_text("Atlas project")
    expect(row).to_contain_text(CORA)
    check_page(admin)

    # A taken slug is refused beside its form, with what was typed kept.
    admin.locator("#ws-slug").fill("atlas")
    admin.get_by_role("button", name="Create workspace").click()
    expect(admin.get_by_role("alert")).to_contain_text("not available")
    expect(admin.locator("#ws-slug")).to_have_value("atlas")
    check_page(admin, expected_console=(r"status of 409",))

    users = {
        u["username"]: u for u in json.loads(relata(["users", "list", "--json"], relata_server.env))
    }
    assert users[CORA]["workspaces"]["atlas"] == "owner"
    assert not users[CORA]["is_admin"]

    # cora signs in with the new password (the first no longer works) and is no administrator.
    cora = cora_page
    cora.goto(relata_server.url("/sign-in"))
    check_page(cora)
    cora.get_by_label("Username").fill(CORA)
    cora.get_by_label("Password").fill(FIRST_PASSWORD)
    cora.get_by_role("button", name="Sign in").click()
    expect(cora.get_by_role("alert")).to_contain_text("incorrect")
    check_page(cora, expected_console=(r"status of 401",))
    cora.get_by_label("Username").fill(CORA)
    cora.get_by_label("Password").fill(NEW_PASSWORD)
    cora.get_by_role("button", name="Sign in").click()
    expect(cora).to_have_url(re.compile(r"/w/[a-z0-9-]+/library"))
    expect(
        cora.get_by_role("navigation", name="Main").get_by_role("link", name="Admin")
    ).to_have_count(0)
    check_page(cora)
    cora.goto(relata_server.url("/admin"))
    expect(cora.locator("main")).to_contain_text("only administrators")
    check_page(cora, expected_console=(r"status of 403",))
