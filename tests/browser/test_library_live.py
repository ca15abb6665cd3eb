"""The library follows new uploads and status changes without a reload, in Chromium against
the real ``relata serve``: in its own empty workspace (``live``), a document uploaded over
the API appears as a row and turns ready while the page stays loaded (a marker set in the
page before the upload survives, so the page was never reloaded); items deleted elsewhere
leave the page, and the last one gone shows the empty notice again. The page passes
``check_page`` (no CSP violation, no console error, axe clean) before and after."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import check_page
from tests.browser.server import ADMIN, Server, relata

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LIVE = "live"
#: Long enough for the server's workers to process a short text on a loaded machine.
PROCESSING_MS = 60_000


def test_an_upload_appears_and_turns_ready_without_a_reload(
    signed_in: Page, relata_server: Server
) -> None:
    env = relata_server.env
    relata(["workspaces", "create", LIVE, "--name", "Live", "--owner", ADMIN], env)
    out = relata(["tokens", "create", "--user", ADMIN, "--name", "live", "--workspace", LIVE], env)
    token = out.splitlines()[0].strip()
    page = signed_in
    page.goto(relata_server.url(f"/w/{LIVE}/library"))
    expect(page.locator("#library-empty")).to_contain_text("No items yet")
    check_page(page)
    page.evaluate("window.__sameDocument = true")

    r = httpx.post(
        relata_server.url("/api/v1/items"),
        headers={"Authorization": f"Bearer {token}", "X-Relata-Workspace": LIVE},
        timeout=30,
        files={"file": ("tideway.txt", b"Tideway notes. The weir gates opened at noon.\n")},
    )
    assert r.status_code == 201, r.text
    item_id = r.json()["id"]

    row = page.locator(f'tr[data-row-of="{item_id}"]')
    expect(row).to_be_visible(timeout=PROCESSING_MS)
    expect(page.locator("#library-empty")).to_be_hidden()
    expect(row.locator(".status")).to_have_text("ready", timeout=PROCESSING_MS)
    expect(page.locator("#status-announcer")).to_contain_text("ready")
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    # The row is the one a reload shows: a link to the item and a checkbox to select it.
    expect(row.get_by_role("link", name="tideway.txt")).to_be_visible()
    expect(row.get_by_label("Select tideway.txt")).to_be_visible()
    check_page(page)


def _workspace_token(server: Server, slug: str) -> str:
    env = server.env
    relata(["workspaces", "create", slug, "--name", slug.title(), "--owner", ADMIN], env)
    out = relata(["tokens", "create", "--user", ADMIN, "--name", slug, "--workspace", slug], env)
    return out.splitlines()[0].strip()


def test_deleted_items_leave_the_page_without_a_reload(
    signed_in: Page, relata_server: Server
) -> None:
    slug = "live-delete"
    token = _workspace_token(relata_server, slug)
    headers = {"Authorization": f"Bearer {token}", "X-Relata-Workspace": slug}
    ids = []
    with httpx.Client(base_url=relata_server.url("/api/v1"), headers=headers, timeout=30) as api:
        for name, text in (
            ("weir.txt", b"Weir notes. The gates opened.\n"),
            ("kelp.txt", b"Kelp.\n"),
        ):
            r = api.post("/items", files={"file": (name, text)})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        page = signed_in
        page.goto(relata_server.url(f"/w/{slug}/library"))
        rows = page.locator("tr[data-row-of]")
        expect(rows).to_have_count(2)
        expect(page.locator("#library-empty")).to_be_hidden()
        check_page(page)
        page.evaluate("window.__sameDocument = true")

        assert api.delete(f"/items/{ids[0]}").status_code == 204
        expect(page.locator(f'tr[data-row-of="{ids[0]}"]')).to_have_count(0, timeout=PROCESSING_MS)
        expect(page.locator("#status-announcer")).to_contain_text("No longer in the list")
        expect(rows).to_have_count(1)

        assert api.delete(f"/items/{ids[1]}").status_code == 204
        expect(rows).to_have_count(0, timeout=PROCESSING_MS)
        expect(page.locator("#library-empty")).to_be_visible()
        expect(page.locator("#library-rows")).to_be_hidden()
        assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
        check_page(page)
