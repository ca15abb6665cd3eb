"""Export from the settings page in Chromium against the real ``relata serve`` with the demo
corpus: the person picks a format and downloads it (the API's stream, as an attachment); the
GraphML reads back in networkx with the seeded story's items, the JSON Lines starts with its
header. The page is checked (no CSP violation, no console error, axe clean)."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import check_page
from tests.browser.server import Server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_the_settings_page_downloads_the_export(
    signed_in: Page, relata_server: Server, tmp_path: Path
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page).to_have_url(relata_server.workspace_url("settings"))
    section = page.locator("section#export")
    expect(section.get_by_role("heading", level=2, name="Export")).to_be_visible()
    check_page(page)

    section.get_by_label("Format").select_option("graphml")
    with page.expect_download() as graphml:
        section.get_by_role("button", name="Download").click()
    assert graphml.value.suggested_filename == "relata-default.graphml"
    saved = tmp_path / "default.graphml"
    graphml.value.save_as(saved)
    graph = nx.read_graphml(saved)
    items = {d["label"] for _, d in graph.nodes(data=True) if d["kind"] == "item"}
    assert len(items) == 5 and any("Sabrewing" in t for t in items)
    assert graph.number_of_edges() > len(items)

    section.get_by_label("Format").select_option("jsonl")
    with page.expect_download() as jsonl:
        section.get_by_role("button", name="Download").click()
    assert jsonl.value.suggested_filename == "relata-default.jsonl"
    lines = Path(jsonl.value.path()).read_text().splitlines()
    assert json.loads(lines[0])["record"] == "relata-export"
    assert sum(1 for line in lines if json.loads(line)["record"] == "item") == 5
    expect(page).to_have_url(relata_server.workspace_url("settings"))  # still on the page
    check_page(page)
