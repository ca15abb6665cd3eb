"""The library's text filter, a failed item's reason on its row, and reprocessing and deleting
ticked items, in Chromium against the real ``relata serve``. It works in its own workspace
(``shelf``, owned by the administrator, filled by ``relata ingest``) so that the tour's pages
see the default workspace as they expect. Every page reached is checked (``check_page``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import check_page
from tests.browser.server import ADMIN, Server, relata

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHELF = "shelf"
#: Long enough for the server's workers to parse a broken PDF on a loaded machine.
PROCESSING_MS = 60_000


@pytest.fixture
def shelf(relata_server: Server, tmp_path: Path) -> str:
    """The ``shelf`` workspace with three text files and a PDF that cannot be read."""
    relata(["workspaces", "create", SHELF, "--name", "Shelf", "--owner", ADMIN], relata_server.env)
    files = {
        "harbour-log.txt": "Harbour log. The ferry left at dawn.",
        "harbour-map.txt": "Harbour map. Pier two is closed.",
        "orchard.txt": "Orchard notes. The pears ripened late.",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00not a pdf body\xff" * 64)
    relata(
        ["ingest", str(tmp_path), "--workspace", SHELF, "--no-wait"],
        relata_server.env,
    )
    return relata_server.url(f"/w/{SHELF}/library")


def _titles(page: Page) -> list[str]:
    return page.locator("table.items [data-title-of]").all_inner_texts()


def test_filter_select_reprocess_and_delete_in_the_library(
    signed_in: Page, relata_server: Server, shelf: str
) -> None:
    page = signed_in
    page.goto(shelf)
    expect(page.locator("table.items tbody tr")).to_have_count(4)
    check_page(page)

    # The failed PDF says why on its row, once the workers have got to it.
    page.goto(f"{shelf}?status=failed")
    reason = page.locator("table.items .reason")
    expect(reason).to_have_count(1, timeout=PROCESSING_MS)
    expect(reason).not_to_be_empty()
    check_page(page)

    # The text filter: any case, on the file name or the title.
    page.goto(shelf)
    page.get_by_role("searchbox", name="Title or file name").fill("HARBOUR")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"q=HARBOUR"))
    expect(page.locator("table.items tbody tr")).to_have_count(2)
    check_page(page)

    # Reprocess both, then delete one after the confirmation page.
    page.get_by_label(re.compile("^Select ")).nth(0).check()
    page.get_by_label(re.compile("^Select ")).nth(1).check()
    page.get_by_role("button", name="Reprocess selected").click()
    expect(page.get_by_role("status")).to_contain_text("being processed again")
    check_page(page)

    page.goto(f"{shelf}?q=harbour-map")
    expect(page.locator("table.items tbody tr")).to_have_count(1)
    check_page(page)
    page.get_by_label(re.compile("^Select ")).check()
    page.get_by_role("button", name="Delete selected").click()
    expect(page.get_by_role("heading", level=1, name="Delete 1 item?")).to_be_visible()
    check_page(page)
    page.get_by_role("button", name="Delete 1 item").click()
    expect(page.get_by_role("status")).to_contain_text("were deleted")
    check_page(page)
    titles = " ".join(_titles(page))
    assert "map" not in titles.lower() and len(_titles(page)) == 3

    items = json.loads(relata(["items", "--workspace", SHELF, "--json"], relata_server.env))
    assert len(items) == 3
