"""Export from the web (the settings page's Export form, ``GET /w/{slug}/export``): any member,
a viewer too, downloads the workspace's knowledge in each format as the API streams it; the
format is checked; a workspace the person is not a member of is not found; it is audited as
the person."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import networkx as nx
import pytest

from relata.bootstrap import Container
from relata.domain.vocabulary import AuditAction, Role
from tests.support.web import web_client

EXPORT = "/w/default/export"


@pytest.mark.parametrize(
    ("fmt", "media_type"),
    [
        ("graphml", "application/graphml+xml"),
        ("jsonl", "application/x-ndjson"),
        ("csv", "application/zip"),
    ],
)
def test_a_viewer_downloads_each_format_from_the_settings_page(
    demo_container: Container, fmt: str, media_type: str, tmp_path: Path
) -> None:
    c = demo_container
    viewer = web_client(c, role=Role.VIEWER)
    page = viewer.get("/w/default/settings").text
    assert f'action="{EXPORT}"' in page and f'value="{fmt}"' in page
    with viewer.stream("GET", EXPORT, params={"format": fmt}) as resp:
        assert resp.status_code == 200
        body = b"".join(resp.iter_bytes())
        assert resp.headers["content-type"].startswith(media_type)
        assert "content-length" not in resp.headers  # the API's stream, not built whole
        assert resp.headers["content-disposition"].startswith(
            'attachment; filename="relata-default.'
        )
    ws = c.workspaces.resolve()
    titles = {i.title for i in c.items.list(ws.id, limit=50)}
    if fmt == "graphml":
        (tmp_path / "w.graphml").write_bytes(body)
        graph = nx.read_graphml(tmp_path / "w.graphml")
        assert {d["label"] for _, d in graph.nodes(data=True) if d["kind"] == "item"} == titles
    elif fmt == "jsonl":
        records = [json.loads(line) for line in body.splitlines()]
        assert {r["title"] for r in records if r["record"] == "item"} == titles
    else:
        assert "relationships.csv" in zipfile.ZipFile(io.BytesIO(body)).namelist()
    [event] = c.audit.list(ws.id, action=AuditAction.WORKSPACE_EXPORTED)
    assert event.actor_kind == "user" and event.details["format"] == fmt


def test_a_bad_format_is_named_and_another_workspace_is_not_found(
    demo_container: Container,
) -> None:
    c = demo_container
    other, _ = c.workspaces.ensure("other")
    member = web_client(c, role=Role.OWNER)
    bad = member.get(EXPORT, params={"format": "xlsx"})
    assert bad.status_code == 400 and "format must be one of" in bad.text
    assert member.get(EXPORT).status_code == 400
    stranger = web_client(c, role=Role.OWNER, workspace=other)
    refused = stranger.get(EXPORT, params={"format": "jsonl"})
    assert refused.status_code == 404
    assert "relata-export" not in refused.text
    with_originals = member.get(EXPORT, params={"format": "jsonl", "with_originals": "1"})
    items = [json.loads(x) for x in with_originals.text.splitlines() if '"record":"item"' in x]
    assert items and all(i["original"] for i in items)
    both = member.get(EXPORT, params={"format": "csv", "with_originals": "1"})
    assert both.status_code == 400
    ws = c.workspaces.resolve()
    assert len(c.audit.list(ws.id, action=AuditAction.WORKSPACE_EXPORTED)) == 1
