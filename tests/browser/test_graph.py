"""The graph page in Chromium against the real ``relata serve`` with the demo corpus: the
vendored cytoscape.js draws the nodes the page lists (pixels on its canvas, under the strict
CSP, axe clean), and a click on a node opens that entity's page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import check_page
from tests.browser.server import Server

# One worker under pytest-xdist: one Chromium and one `relata serve` for the session.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

ENTITY = "Kestrel Marine Systems"

# How many pixels of the graph's canvases are painted (not transparent).
_PAINTED = """() => {
  let painted = 0;
  for (const canvas of document.querySelectorAll("#graph-canvas canvas")) {
    if (!canvas.width || !canvas.height) continue;
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted += 1;
  }
  return painted;
}"""

# The on-screen position of the node labelled ``name``, relative to the page.
_WHERE = """(name) => {
  const cy = window.relataGraph;
  const node = cy.nodes().filter(n => n.data("label") === name)[0];
  const box = document.getElementById("graph-canvas").getBoundingClientRect();
  const at = node.renderedPosition();
  return {x: box.left + at.x, y: box.top + at.y};
}"""


def test_the_graph_draws_the_listed_nodes_and_a_click_opens_one(
    signed_in: Page, relata_server: Server
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Graph").click()
    expect(page).to_have_url(relata_server.workspace_url("graph"))
    expect(page.get_by_role("heading", level=1, name="Graph")).to_be_visible()
    canvas = page.locator("#graph-canvas")
    expect(canvas).to_be_visible()
    expect(canvas).to_have_attribute("data-drawn", re.compile(r"^[1-9]\d*$"))
    listed = page.locator("table.graph-nodes tbody tr").count()
    assert listed > 5
    assert canvas.get_attribute("data-drawn") == str(listed)
    # Drawn, not only laid out: the canvases hold painted pixels.
    page.wait_for_function(_PAINTED.replace("return painted;", "return painted > 500;"))
    assert page.evaluate(_PAINTED) > 500
    check_page(page)

    # Fit the view around the node, then click it: its entity page opens.
    page.evaluate(
        "(name) => { const cy = window.relataGraph;"
        " cy.zoom(1.5); cy.center(cy.nodes().filter(n => n.data('label') === name)); }",
        ENTITY,
    )
    where = page.evaluate(_WHERE, ENTITY)
    page.mouse.click(where["x"], where["y"])
    expect(page).to_have_url(re.compile(r"/w/default/entities/[0-9a-f-]{36}$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text(ENTITY)
    check_page(page)


def test_the_neighbourhood_of_an_entity_is_drawn_around_it(
    signed_in: Page, relata_server: Server
) -> None:
    page = signed_in
    page.goto(relata_server.workspace_url("graph"))
    check_page(page)
    # The tables are the keyboard's way: each node's "around it" link names the node.
    page.get_by_role("link", name=f"around it ({ENTITY})", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Graph around {ENTITY}")
    expect(page.locator("#graph-canvas")).to_have_attribute("data-drawn", re.compile(r"^[1-9]"))
    centre = page.evaluate("() => window.relataGraph.nodes('[?centre]').data('label')")
    assert centre == ENTITY
    check_page(page)
