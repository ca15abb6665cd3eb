"""The graph page: the demo corpus as a graph, listed in two tables (the page without
JavaScript and for a screen reader) and carried as JSON for graph.js to draw with the
vendored cytoscape.js; the neighbourhood of an entity or an item; filters; another
workspace's ids are 404; names from the XSS corpus render escaped, in the tables and in the
JSON block."""

from __future__ import annotations

import json
import re

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from tests.support.demo import DemoSnapshot
from tests.support.ingest import built
from tests.support.web import web_app_client, web_client
from tests.support.xss import leaked
from tests.web.test_entities_pages import XSS_NAME, zebrafish

_DATA = re.compile(r'<script type="application/json" id="graph-data">(.*?)</script>', re.S)


def _drawing(html: str) -> dict:  # type: ignore[type-arg]
    found = _DATA.search(html)
    assert found, "no graph data on the page"
    data: dict = json.loads(found.group(1))  # type: ignore[type-arg]
    return data


def _entity_id(c: Container, name: str) -> str:
    ws = c.workspaces.resolve().id
    found = [e for e in c.entities.list(ws, query=name) if e.name == name]
    assert found, name
    return found[0].id


def test_the_workspace_graph_lists_and_carries_the_demo(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    client = web_client(demo_container, role=Role.VIEWER)
    r = client.get("/w/default/graph")
    assert r.status_code == 200
    html = r.text
    assert '<script src="/static/cytoscape.min.js" defer></script>' in html
    assert '<script src="/static/graph.js" defer></script>' in html
    # The tables: every item, linked to its page; entities linked to theirs.
    for item_id in demo_snapshot.ids.values():
        assert f'href="/w/default/items/{item_id}"' in html
    kestrel = _entity_id(demo_container, "Kestrel Marine Systems")
    assert f'href="/w/default/entities/{kestrel}">Kestrel Marine Systems</a>' in html
    assert 'table class="graph-edges"' in html and "shares subject" in html
    # The drawing: the same nodes, each with the page a click opens, and edges between them.
    data = _drawing(html)
    nodes = [e["data"] for e in data["elements"] if "source" not in e["data"]]
    edges = [e["data"] for e in data["elements"] if "source" in e["data"]]
    ids = {n["id"] for n in nodes}
    assert f"entity:{kestrel}" in ids and edges
    assert all(e["source"] in ids and e["target"] in ids for e in edges)
    urls = {n["id"]: n["url"] for n in nodes}
    assert urls[f"entity:{kestrel}"] == f"/w/default/entities/{kestrel}"
    assert "Graph" in re.findall(r'data-key="m"[^>]*>([^<]+)</a>', html)


def test_the_neighbourhood_of_an_entity_and_its_filters(demo_container: Container) -> None:
    client = web_client(demo_container, role=Role.VIEWER)
    vaughan = _entity_id(demo_container, "Ines Vaughan")
    r = client.get(f"/w/default/graph?entity={vaughan}")
    assert r.status_code == 200
    assert "Graph around" in r.text and ">Ines Vaughan</a></h1>" in r.text
    one = _drawing(r.text)["elements"]
    two = _drawing(client.get(f"/w/default/graph?entity={vaughan}&depth=2").text)["elements"]
    assert len(two) > len(one)
    # Unticking "Show entities" leaves the items and their relationships.
    plain = client.get("/w/default/graph?filtered=1&review_status=unreviewed").text
    kinds = {e["data"].get("kind") for e in _drawing(plain)["elements"]}
    assert kinds == {"item", "relationship"}
    typed = _drawing(client.get("/w/default/graph?relationship_type=contradicts").text)
    labels = {
        e["data"]["label"] for e in typed["elements"] if e["data"].get("kind") == "relationship"
    }
    assert labels == {"contradicts"}
    for bad in (
        "relationship_type=likes",
        "depth=9",
        "min_score=2",
        "review_status=maybe",
        "entity_type=planet",
    ):
        assert client.get(f"/w/default/graph?entity={vaughan}&{bad}").status_code == 400, bad


def test_entity_and_item_pages_link_to_the_graph_around_them(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> None:
    client = web_client(demo_container, role=Role.VIEWER)
    kestrel = _entity_id(demo_container, "Kestrel Marine Systems")
    html = client.get(f"/w/default/entities/{kestrel}").text
    assert f'href="/w/default/graph?entity={kestrel}">Graph around it</a>' in html
    item = next(iter(demo_snapshot.ids.values()))
    html = client.get(f"/w/default/items/{item}").text
    assert f'href="/w/default/graph?item={item}">Graph around it</a>' in html


def test_another_workspaces_entity_is_not_found(demo_container: Container) -> None:
    team, _ = demo_container.workspaces.ensure("team")
    client = web_client(demo_container, workspace=team)
    kestrel = _entity_id(demo_container, "Kestrel Marine Systems")
    r = client.get(f"/w/team/graph?entity={kestrel}")
    assert r.status_code == 404 and "Not found" in r.text
    empty = client.get("/w/team/graph")
    assert empty.status_code == 200 and "Nothing to draw yet" in empty.text
    assert 'id="graph-data"' not in empty.text


def test_signed_out_is_sent_to_sign_in(demo_container: Container) -> None:
    r = web_app_client(demo_container).get("/w/default/graph")
    assert r.status_code == 303 and r.headers["location"].startswith("/sign-in?next=")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_names_render_escaped_in_the_tables_and_the_data(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ids = zebrafish(c, c.workspaces.resolve().id)
        client = web_client(c)
        for path in ("/w/default/graph", f"/w/default/graph?item={ids['third']}"):
            html = client.get(path).text
            assert not leaked(html), path
            labels = {e["data"].get("label") for e in _drawing(html)["elements"]}
            assert any(XSS_NAME[:80] == label for label in labels) or path.endswith("graph")
            assert "</script><" not in _DATA.search(html).group(1)  # type: ignore[union-attr]
