"""The settings page's watched folders in a real browser: a folder watched by another
process (``relata watch --once``) is listed with its state and counts, and the page passes
the CSP, console and axe-core checks (docs/decisions/0047-watched-folder.md)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser import checks, server
from tests.browser.server import Server


def test_a_watched_folder_is_listed_on_the_settings_page(
    signed_in: Page, relata_server: Server, tmp_path: Path
) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    # Only a refused file: the shared server's workspace gains no item.
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    server.relata(["watch", str(folder), "--once", "--no-process"], relata_server.env)
    page = signed_in
    page.goto(relata_server.workspace_url("settings"))
    checks.check_page(page)
    section = page.locator("#watches")
    expect(section.get_by_role("heading", name="Watched folders")).to_be_visible()
    row = section.locator("tbody tr").first
    expect(row).to_contain_text(str(folder.resolve()))
    expect(row).to_contain_text("stopped")
    expect(row.locator('[data-count="failed"]')).to_have_text("1")
    expect(row.locator('[data-count="tracked"]')).to_have_text("0")
