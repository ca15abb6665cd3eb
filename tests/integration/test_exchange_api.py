"""GET /api/v1/export over HTTP (TestClient against the real app, the processed demo corpus):
a viewer may export; each format streams with its content type as an attachment; the
export is the caller's workspace only, another workspace answering like a missing one; bad
arguments name the field; the export is audited with the token that asked."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import networkx as nx
import pytest

from relata.bootstrap import Container
from relata.domain.vocabulary import AuditAction, Role
from tests.support.api import anonymous_client, api_client


@pytest.mark.parametrize(
    ("fmt", "media_type", "name"),
    [
        ("jsonl", "application/x-ndjson", "relata-default.jsonl"),
        ("csv", "application/zip", "relata-default.zip"),
        ("graphml", "application/graphml+xml", "relata-default.graphml"),
    ],
)
def test_a_viewer_exports_each_format_as_a_streamed_attachment(
    demo_container: Container, fmt: str, media_type: str, name: str, tmp_path: Path
) -> None:
    c = demo_container
    with (
        api_client(c, role=Role.VIEWER) as client,
        client.stream("GET", "/api/v1/export", params={"format": fmt}) as resp,
    ):
        assert resp.status_code == 200
        body = b"".join(resp.iter_bytes())
        assert resp.headers["content-type"].startswith(media_type)
        assert "content-length" not in resp.headers  # streamed, not built whole first
        assert resp.headers["content-disposition"].startswith(f'attachment; filename="{name}"')
        assert resp.headers["cache-control"] == "private, no-store"
    titles = set(_titles(c))
    if fmt == "jsonl":
        records = [json.loads(line) for line in body.decode().splitlines()]
        assert records[0]["record"] == "relata-export"
        assert {r["title"] for r in records if r["record"] == "item"} == titles
    elif fmt == "csv":
        assert "claims.csv" in zipfile.ZipFile(io.BytesIO(body)).namelist()
    else:
        path = tmp_path / "w.graphml"
        path.write_bytes(body)
        graph = nx.read_graphml(path)
        assert {d["label"] for _, d in graph.nodes(data=True) if d["kind"] == "item"} == titles
    events = c.audit.list(c.workspaces.resolve().id, action=AuditAction.WORKSPACE_EXPORTED)
    assert len(events) == 1 and events[0].details == {"format": fmt, "with_originals": False}
    assert events[0].actor_kind == "token"


def _titles(c: Container) -> list[str]:
    ws = c.workspaces.resolve()
    return [i.title for i in c.items.list(ws.id, limit=50)]


def test_another_workspace_is_not_found_and_never_in_the_export(demo_container: Container) -> None:
    c = demo_container
    other, _ = c.workspaces.ensure("other")
    with api_client(c, role=Role.OWNER, workspace=other) as client:
        mine = client.get("/api/v1/export", params={"format": "jsonl"})
        assert mine.status_code == 200
        records = [json.loads(line) for line in mine.text.splitlines()]
        assert [r["record"] for r in records] == ["relata-export"]  # nothing of "default"
        refused = client.get(
            "/api/v1/export",
            params={"format": "jsonl"},
            headers={"X-Relata-Workspace": "default"},
        )
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "not_found"


def test_bad_arguments_and_no_credentials(demo_container: Container) -> None:
    c = demo_container
    with api_client(c, role=Role.EDITOR) as client:
        bad = client.get("/api/v1/export", params={"format": "xlsx"})
        assert bad.status_code == 400 and "format" in bad.text
        both = client.get("/api/v1/export", params={"format": "csv", "with_originals": "true"})
        assert both.status_code == 400
        assert both.json()["error"]["field"] == "with_originals"
        whole = client.get("/api/v1/export", params={"format": "jsonl", "with_originals": "true"})
        items = [json.loads(x) for x in whole.text.splitlines() if '"record":"item"' in x]
        assert len(items) == 5 and all(i["original"] and i["text"] for i in items)
    with anonymous_client(c) as anonymous:
        assert anonymous.get("/api/v1/export", params={"format": "jsonl"}).status_code == 401
