"""Invitations in Chromium against the real ``relata serve``: the administrator invites from a
workspace's settings page and copies the link shown once; another person, in their own
browser, opens the link, signs in, sees the workspace and role, and accepts; a second
invitation is revoked from the pending list and its link no longer works. Every page reached
is checked (``check_page``: no CSP violation, no console or script error, no serious or
critical axe-core violation). It works in its own workspace (``team``) so that the tour's
pages see the default workspace as they expect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import checks
from tests.browser.checks import check_page
from tests.browser.server import ADMIN, Server, relata

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEAM = "team"
BEA_PASSWORD = "bea-invitation-password"


@pytest.fixture
def team(relata_server: Server) -> str:
    """A workspace the administrator owns, and bea, a user with a private workspace."""
    relata(
        ["workspaces", "create", TEAM, "--name", "Tide team", "--owner", ADMIN], relata_server.env
    )
    relata(
        ["users", "create", "--username", "bea", "--password-stdin"],
        relata_server.env,
        stdin=BEA_PASSWORD + "\n",
    )
    return f"/w/{TEAM}/settings"


@pytest.fixture
def bea_page(browser: Browser) -> Iterator[Page]:
    """bea's own browser (no cookies shared with the administrator's), watched like ``page``."""
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


def _members(server: Server) -> dict[str, str]:
    """The team's members as the administrator's command line lists them (the API token of
    the other tests is the default workspace's)."""
    out = relata(["members", "list", "--workspace", TEAM, "--json"], server.env)
    return {m["username"]: m["role"] for m in json.loads(out)}


def _invite(page: Page, role: str) -> str:
    page.locator("#invite-role").select_option(role)
    page.locator("#invite-days").select_option("3")
    page.get_by_role("button", name="Create invitation link").click()
    expect(page.get_by_role("heading", level=1, name="Invitation created")).to_be_visible()
    check_page(page)
    link = page.get_by_label("Invitation link").input_value()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/invitations\?code=ri_[0-9a-f]{8}_\S{43}", link)
    return link


def test_an_invitation_from_the_settings_page_accepted_in_another_browser(
    signed_in: Page, bea_page: Page, relata_server: Server, team: str
) -> None:
    admin = signed_in
    admin.goto(relata_server.url(team))
    expect(admin.get_by_role("heading", level=3, name="Invite someone")).to_be_visible()
    expect(admin.get_by_text("No pending invitations.")).to_be_visible()
    check_page(admin)
    link = _invite(admin, "editor")

    # bea opens the link signed out: the sign-in form, then straight back to the invitation.
    bea = bea_page
    bea.goto(link)
    expect(bea).to_have_url(re.compile(r"/sign-in\?next="))
    check_page(bea)
    bea.get_by_label("Username").fill("bea")
    bea.get_by_label("Password").fill(BEA_PASSWORD)
    bea.get_by_role("button", name="Sign in").click()
    expect(bea).to_have_url(link)
    expect(bea.get_by_role("heading", level=1, name="Invitation to a workspace")).to_be_visible()
    expect(bea.locator("main")).to_contain_text("admin invites you to join the workspace Tide team")
    check_page(bea)
    assert _members(relata_server) == {ADMIN: "owner"}  # not before she accepts

    bea.get_by_role("button", name="Accept and join").click()
    expect(bea).to_have_url(re.compile(rf"/w/{TEAM}/library\?done=invitation_accepted$"))
    expect(bea.get_by_role("status")).to_contain_text("you are now a member")
    check_page(bea)
    assert _members(relata_server) == {ADMIN: "owner", "bea": "editor"}

    # The link is used up.
    bea.goto(link)
    expect(bea.get_by_role("alert")).to_contain_text("this invitation is not valid")
    check_page(bea, expected_console=(r"status of 404",))

    # A second invitation, revoked from the pending list: its link stops working.
    admin.goto(relata_server.url(team))
    check_page(admin)
    second = _invite(admin, "viewer")
    admin.goto(relata_server.url(team))
    pending = admin.locator("section#members table").last
    expect(pending.locator("tbody tr")).to_have_count(1)
    check_page(admin)
    admin.once("dialog", lambda d: d.accept())
    pending.get_by_role("button", name=re.compile("^Revoke")).click()
    expect(admin.get_by_role("status")).to_contain_text("The invitation is revoked")
    expect(admin.get_by_text("No pending invitations.")).to_be_visible()
    check_page(admin)
    bea.goto(second)
    expect(bea.get_by_role("alert")).to_contain_text("this invitation is not valid")
    expect(bea.get_by_role("button", name="Accept and join")).to_have_count(0)
    check_page(bea, expected_console=(r"status of 404",))
