"""GET /api/v1/export and POST /api/v1/import over HTTP (TestClient against the real app, the
processed demo corpus, SQLite): a viewer may export; each format streams with its content
type as an attachment; the export is the caller's workspace only, another workspace answering
like a missing one; bad arguments name the field; the export is audited with the token that
asked. An owner imports a JSON Lines export, sent chunked, into an empty workspace with its
decisions; viewers and editors are refused, a workspace that holds anything is 409, a bad
line is 400 naming it with nothing written, a body past RELATA_MAX_IMPORT_BYTES is 413."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR, AliasStatus, ReviewStatus
from relata.domain.vocabulary import AuditAction, Resolution, Role
from tests.integration.test_exchange import _decide, _new_id
from tests.support.api import anonymous_client, api_client
from tests.support.ingest import built


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


# ---------------------------------------------------------------- POST /api/v1/import
NDJSON = {"Content-Type": "application/x-ndjson"}


def _pieces(data: bytes, size: int = 1000) -> Iterator[bytes]:
    """The body sent chunked, a piece at a time (no Content-Length): it streams in."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def _spooled(c: Container) -> list[str]:
    return [p.name for p in c.settings.data_path.glob(".import-*")]


def test_an_export_imports_over_the_api_into_an_empty_workspace_with_its_decisions(
    demo_container: Container,
) -> None:
    c = demo_container
    ws = c.workspaces.resolve()
    decided = _decide(c, ws)
    copy, _ = c.workspaces.ensure("copy")
    with api_client(c, role=Role.VIEWER) as reader:
        export = reader.get("/api/v1/export", params={"format": "jsonl"}).content
    with api_client(c, role=Role.OWNER, workspace=copy) as owner:
        resp = owner.post("/api/v1/import", content=_pieces(export), headers=NDJSON)
        assert resp.status_code == 200, resp.text
        out = resp.json()
        again = owner.post("/api/v1/import", content=export, headers=NDJSON)
    assert out["workspace"] == "copy" and out["counts"]["items"] == 5
    assert out["lines"] == len(export.splitlines()) and out["originals"] == 0
    assert out["counts"]["entities"] > 10 and out["counts"]["relationships"] >= 1
    # The same service as `relata import`: new ids, the decisions kept.
    new = {k: _new_id(copy.id, v) for k, v in decided.items()}
    rejected = c.entities.aliases(copy.id, status=AliasStatus.REJECTED)
    assert [(a.alias.id, a.alias.note) for a in rejected] == [(new["alias"], "two ships")]
    rel = c.relationships.get(copy.id, new["relationship"])
    assert rel.review_status == ReviewStatus.CONFIRMED and rel.reviewed_by == "ann"
    dis = c.claims.disagreement(copy.id, new["disagreement"])
    assert dis.resolution == Resolution.POSITION_CORRECT
    # A workspace that holds something is refused, before its body is read.
    assert again.status_code == 409 and "already holds" in again.json()["error"]["message"]
    events = c.audit.list(copy.id, action=AuditAction.WORKSPACE_IMPORTED)
    assert len(events) == 1 and events[0].details["items"] == 5
    assert events[0].actor_kind == "token"
    assert _spooled(c) == []  # the spooled body is removed


def test_only_an_owner_imports_and_only_into_its_own_workspace(
    demo_container: Container,
) -> None:
    c = demo_container
    export = b"".join(c.exchange.export(c.workspaces.resolve(), "jsonl", actor=CLI_ACTOR))
    empty, _ = c.workspaces.ensure("empty")
    for role in (Role.VIEWER, Role.EDITOR):
        with api_client(c, role=role, workspace=empty) as client:
            refused = client.post("/api/v1/import", content=export, headers=NDJSON)
            assert refused.status_code == 403, role
            assert refused.json()["error"]["code"] == "forbidden"
    with api_client(c, role=Role.OWNER, workspace=empty) as owner:
        other = owner.post(
            "/api/v1/import", content=export, headers={**NDJSON, "X-Relata-Workspace": "default"}
        )
        assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    with anonymous_client(c) as anonymous:
        assert anonymous.post("/api/v1/import", content=export, headers=NDJSON).status_code == 401
    assert c.workspaces.resolve("empty").id == empty.id
    assert c.items.list(empty.id, limit=5) == []


def test_a_bad_import_names_what_was_wrong_and_writes_nothing(
    demo_container: Container,
) -> None:
    c = demo_container
    export = b"".join(c.exchange.export(c.workspaces.resolve(), "jsonl", actor=CLI_ACTOR))
    lines = export.splitlines(keepends=True)
    broken = b"".join(lines[:3]) + b'{"record": "item", "id": 7}\n' + b"".join(lines[3:])
    empty, _ = c.workspaces.ensure("empty")
    with api_client(c, role=Role.OWNER, workspace=empty) as owner:
        bad = owner.post("/api/v1/import", content=broken, headers=NDJSON)
        assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("line 4:")
        kind = owner.post("/api/v1/import", content=export, headers={"Content-Type": "text/csv"})
        assert kind.status_code == 415 and kind.json()["error"]["field"] == "content-type"
        nothing = owner.post("/api/v1/import", content=b"", headers=NDJSON)
        assert nothing.status_code == 400
    assert c.items.list(empty.id, limit=5) == [] and _spooled(c) == []


def test_an_import_over_its_limit_is_refused_as_it_streams(settings: Settings) -> None:
    with built(settings, max_import_bytes=4096) as c:
        body = b'{"record": "relata-export"}\n' + b" " * 10_000
        with api_client(c, role=Role.OWNER) as owner:
            chunked = owner.post("/api/v1/import", content=_pieces(body), headers=NDJSON)
            declared = owner.post("/api/v1/import", content=body, headers=NDJSON)
        for resp in (chunked, declared):
            assert resp.status_code == 413
            assert "RELATA_MAX_IMPORT_BYTES" in resp.json()["error"]["message"]
        assert _spooled(c) == []
