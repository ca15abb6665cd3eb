"""The append-only audit log on real SQLite and PostgreSQL: every audited action, through the
API and through the CLI, writes exactly one event (per item) with the right actor, action,
target and request id and no document content; the database itself refuses UPDATE, DELETE
(and TRUNCATE, and an upsert over an event) even through raw SQL; listing filters and pages;
another workspace's events are invisible; deleting a workspace is not blocked by its events;
migration 0007 goes down and up again."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient

from relata.audit import AuditService
from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.errors import ValidationError
from relata.domain.models import CLI_ACTOR, Actor, AuditEvent, Workspace
from relata.domain.vocabulary import ActorKind, AuditAction, AuditTarget
from relata.ids import new_id
from relata.ingest.service import IngestRequest
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.records import SqlAuditRepository
from tests.support.api import api_client
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id
from tests.support.relationships import MINUTES, PRESS, SURVEY

pytestmark = pytest.mark.both_dialects

MEETING = (
    "Dr. Ines Vaughan of the Meridian Tidal Institute (MTI) met Kestrel Marine Systems in "
    "Port Halloran. Vaughan said the MTI survey would go on."
)
DOCS = {"Press release": PRESS, "Council minutes": MINUTES, "Seal survey": SURVEY}
APPEND_ONLY = "audit_events is append-only"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedder=FakeEmbedder(384, "audit-model")) as container:
        yield container


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def _events(c: Container, ws: str) -> list[AuditEvent]:
    return c.audit.list(ws, limit=1000)


def _one_new(c: Container, ws: str, before: list[AuditEvent]) -> AuditEvent:
    """The single event recorded since ``before`` (fails on none or several)."""
    seen = {e.id for e in before}
    new = [e for e in _events(c, ws) if e.id not in seen]
    assert len(new) == 1, [(e.action, e.target_id) for e in new]
    return new[0]


def _assert_event(
    e: AuditEvent,
    action: AuditAction,
    target_kind: AuditTarget,
    target_id: str,
    *,
    actor: ActorKind,
    request_id: str | None,
    user_id: str | None = None,
    token_id: str | None = None,
) -> None:
    assert (e.action, e.target_kind, e.target_id) == (action, target_kind, target_id)
    assert (e.actor_kind, e.actor_user_id, e.actor_token_id) == (actor, user_id, token_id)
    assert e.request_id == request_id


def _no_content(c: Container, ws: str) -> None:
    """No title and no words of any document are in any event."""
    dumped = json.dumps([e.details for e in _events(c, ws)])
    for title in (*DOCS, "Meeting", "doc-0"):
        assert title not in dumped
    for word in ("Sabrewing", "Vaughan", "Kestrel", "Seal", "Harbour", "MTI"):
        assert word not in dumped


def test_every_api_action_writes_one_event_as_the_calling_token(
    c: Container, client: TestClient
) -> None:
    ws = workspace_id(c)
    # The fixture created the workspace (Relata itself did), then the client's token (the CLI).
    created, token_created = sorted(_events(c, ws), key=lambda e: e.at)
    assert created.action == AuditAction.WORKSPACE_CREATED and created.target_id == ws
    assert token_created.action == AuditAction.TOKEN_CREATED
    assert created.actor_kind == ActorKind.SYSTEM

    def post(path: str, rid: str, **kw: Any) -> Any:
        resp = client.post(path, headers={"X-Request-ID": rid}, **kw)
        assert resp.status_code < 300, resp.text
        return resp.json() if resp.content else None

    user_id = client.get("/api/v1/auth/me").json()["user"]["id"]
    [token] = client.get("/api/v1/tokens").json()
    local: dict[str, Any] = {
        "actor": ActorKind.TOKEN,
        "user_id": user_id,
        "token_id": token["id"],
    }
    ids = {}
    for title, text in {**DOCS, "Meeting": MEETING}.items():
        before = _events(c, ws)
        rid = f"upload-{len(ids)}"
        item = post("/api/v1/items", rid, json={"text": text, "title": title})
        ids[title] = item["id"]
        e = _one_new(c, ws, before)
        _assert_event(
            e, AuditAction.ITEM_UPLOADED, AuditTarget.ITEM, item["id"], request_id=rid, **local
        )
        assert e.details == {"source_type": "text", "size_bytes": len(text.encode())}
    # A duplicate upload is refused and records nothing.
    before = _events(c, ws)
    dup = client.post("/api/v1/items", json={"text": PRESS})
    assert dup.status_code == 409 and _events(c, ws) == before
    drain(c)

    [alias] = c.entities.aliases(ws, limit=1)
    before = _events(c, ws)
    post(f"/api/v1/aliases/{alias.alias.id}/decision", "alias-1", json={"status": "confirmed"})
    e = _one_new(c, ws, before)
    _assert_event(
        e,
        AuditAction.ALIAS_DECIDED,
        AuditTarget.ALIAS,
        alias.alias.id,
        request_id="alias-1",
        **local,
    )
    assert e.details == {"decision": "confirmed"}

    [contradiction] = c.claims.contradictions(ws)
    before = _events(c, ws)
    post(
        f"/api/v1/contradictions/{contradiction.id}/resolution",
        "resolve-1",
        json={"resolution": "both_valid", "note": "the array was tested first"},
    )
    e = _one_new(c, ws, before)
    _assert_event(
        e,
        AuditAction.CONTRADICTION_RESOLVED,
        AuditTarget.CONTRADICTION,
        contradiction.id,
        request_id="resolve-1",
        **local,
    )
    assert e.details == {"resolution": "both_valid"}  # the note is not copied

    [rel, *_] = c.relationships.queue(ws)
    before = _events(c, ws)
    post(
        f"/api/v1/relationships/{rel.id}/review",
        "review-1",
        json={"decision": "edit", "relationship_type": "updates"},
    )
    e = _one_new(c, ws, before)
    _assert_event(
        e,
        AuditAction.RELATIONSHIP_REVIEWED,
        AuditTarget.RELATIONSHIP,
        rel.id,
        request_id="review-1",
        **local,
    )
    assert e.details == {"decision": "edited", "relationship_type": "updates"}

    before = _events(c, ws)
    receipt = post(f"/api/v1/items/{ids['Seal survey']}/reprocess?from=chunk", "again-1")
    e = _one_new(c, ws, before)
    _assert_event(
        e,
        AuditAction.ITEM_REPROCESSED,
        AuditTarget.ITEM,
        ids["Seal survey"],
        request_id="again-1",
        **local,
    )
    assert e.details == {
        "from_stage": "chunk",
        "generation": receipt["generation"],
        "job_id": receipt["job_id"],
        "scope": "item",
    }
    drain(c)

    before = _events(c, ws)
    job = post("/api/v1/workspaces/current/reembed?all=true", "reembed-1")
    e = _one_new(c, ws, before)
    _assert_event(
        e, AuditAction.REEMBED_STARTED, AuditTarget.WORKSPACE, ws, request_id="reembed-1", **local
    )
    assert e.details == {"all_chunks": True, "job_id": job["id"], "failed_items_restarted": 0}
    drain(c)
    # Nothing left to do is still a request someone made: recorded, with no job.
    before = _events(c, ws)
    assert client.post("/api/v1/workspaces/current/reembed").status_code == 204
    assert _one_new(c, ws, before).details["job_id"] is None

    before = _events(c, ws)
    resp = client.delete(f"/api/v1/items/{ids['Press release']}", headers={"X-Request-ID": "d-1"})
    assert resp.status_code == 204
    e = _one_new(c, ws, before)
    _assert_event(
        e,
        AuditAction.ITEM_DELETED,
        AuditTarget.ITEM,
        ids["Press release"],
        request_id="d-1",
        **local,
    )

    # The API lists all of it, newest first, with nothing of the documents' content.
    page = client.get("/api/v1/audit", params={"limit": 100})
    assert page.status_code == 200, page.text
    events = page.json()["events"]
    assert [x["id"] for x in events] == [x.id for x in _events(c, ws)]
    assert events[0]["action"] == "item.deleted"
    assert events[0]["actor"] == {"kind": "token", "user_id": user_id, "token_id": token["id"]}
    assert events[0]["target"] == {"kind": "item", "id": ids["Press release"]}
    assert events[0]["request_id"] == "d-1"
    assert events[-1]["action"] == "workspace.created"
    for title, text in {**DOCS, "Meeting": MEETING}.items():
        assert title not in page.text and text[:40] not in page.text
    assert "the array was tested first" not in page.text
    _no_content(c, ws)


@pytest.fixture
def cli(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_LOG_FORMAT", "text")
    return c


def test_every_cli_action_writes_one_event_as_the_cli_and_relata_audit_lists_them(
    cli: Container, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = cli
    folder = tmp_path / "docs"
    folder.mkdir()
    for n, text in enumerate([PRESS, MINUTES, SURVEY, MEETING]):
        (folder / f"doc-{n}.txt").write_text(text)
    (folder / "copy.txt").write_text(PRESS)  # a duplicate: no event
    assert main(["ingest", "--no-wait", str(folder)]) == 0
    ws = workspace_id(c)
    uploads = c.audit.list(ws, action=AuditAction.ITEM_UPLOADED)
    items = {i.id for i in c.items.list(ws)}
    assert {e.target_id for e in uploads} == items and len(uploads) == 4 == len(items)
    assert {(e.actor_kind, e.request_id) for e in uploads} == {(ActorKind.CLI, None)}
    drain(c)
    capsys.readouterr()

    def run(*argv: str) -> AuditEvent:
        before = _events(c, ws)
        assert main(list(argv)) == 0, capsys.readouterr().err
        return _one_new(c, ws, before)

    cli_actor = {"actor": ActorKind.CLI, "request_id": None}
    [alias] = c.entities.aliases(ws, limit=1)
    e = run("aliases", "--reject", alias.alias.id)
    _assert_event(e, AuditAction.ALIAS_DECIDED, AuditTarget.ALIAS, alias.alias.id, **cli_actor)
    [contradiction] = c.claims.contradictions(ws)
    e = run("resolve", contradiction.id, "--as", "first_correct")
    _assert_event(
        e,
        AuditAction.CONTRADICTION_RESOLVED,
        AuditTarget.CONTRADICTION,
        contradiction.id,
        **cli_actor,
    )
    [rel, *_] = c.relationships.queue(ws)
    e = run("review", "--confirm", rel.id)
    _assert_event(
        e, AuditAction.RELATIONSHIP_REVIEWED, AuditTarget.RELATIONSHIP, rel.id, **cli_actor
    )
    target = sorted(items)[0]
    e = run("reprocess", target)
    _assert_event(e, AuditAction.ITEM_REPROCESSED, AuditTarget.ITEM, target, **cli_actor)
    drain(c)
    e = run("delete", target, "--yes")
    _assert_event(e, AuditAction.ITEM_DELETED, AuditTarget.ITEM, target, **cli_actor)

    # --failed: one event per item it restarted, none when nothing failed.
    before = _events(c, ws)
    assert main(["reprocess", "--failed"]) == 0
    assert _events(c, ws) == before
    failed = sorted(items - {target})[:2]
    with c.db.write() as conn:  # two items as a failed parse leaves them
        conn.execute(
            sa.text(
                "UPDATE items SET status = 'failed', failed_stage = 'chunk' WHERE id IN :ids"
            ).bindparams(sa.bindparam("ids", expanding=True)),
            {"ids": failed},
        )
    assert main(["reprocess", "--failed"]) == 0
    new = [e for e in _events(c, ws) if e not in before]
    assert sorted(e.target_id or "" for e in new) == failed
    assert {(e.action, e.actor_kind, e.details["scope"], e.details["from_stage"]) for e in new} == {
        (AuditAction.ITEM_REPROCESSED, ActorKind.CLI, "failed", "chunk")
    }
    drain(c)
    capsys.readouterr()

    assert main(["audit", "--json", "--limit", "1000"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [x["id"] for x in shown] == [x.id for x in _events(c, ws)]
    assert main(["audit", "--action", "item.deleted"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["AT", "ACTION", "ACTOR", "TARGET", "REQUEST", "DETAILS"]
    assert len(lines) == 2 and f"item:{target}" in lines[1] and " cli " in lines[1]
    future = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    assert main(["audit", "--since", future]) == 0
    assert capsys.readouterr().out.strip() == "no audit events"
    assert main(["audit", "--since", "yesterday"]) == 1
    assert "--since" in capsys.readouterr().err
    _no_content(c, ws)


def test_seeding_a_new_workspace_records_its_creation_by_the_cli(
    cli: Container, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELATA_DEFAULT_WORKSPACE", "second")
    assert main(["seed", "--no-demo"]) == 0
    ws = cli.workspaces.resolve("second")
    [e] = cli.audit.list(ws.id)
    _assert_event(
        e,
        AuditAction.WORKSPACE_CREATED,
        AuditTarget.WORKSPACE,
        ws.id,
        actor=ActorKind.CLI,
        request_id=None,
    )
    assert main(["seed", "--no-demo"]) == 0  # already there: nothing created, nothing recorded
    assert len(cli.audit.list(ws.id)) == 1


# ---------------------------------------------------------------- append-only, in the database
def _raw_refused(db: Database, sql: str, params: dict[str, Any] | None = None) -> None:
    with pytest.raises(sa.exc.DBAPIError) as caught, db.engine.begin() as conn:
        conn.execute(sa.text(sql), params or {})
    assert APPEND_ONLY in str(caught.value.orig)


def test_the_database_refuses_to_change_or_delete_an_event(container: Container) -> None:
    c = container
    db = c.db
    ws = workspace_id(c)
    event = c.audit.record(
        ws, AuditAction.ITEM_DELETED, CLI_ACTOR, target_kind=AuditTarget.ITEM, target_id=new_id()
    )
    before = _events(c, ws)
    assert len(before) == 2  # and the workspace's creation
    _raw_refused(db, "UPDATE audit_events SET action = 'nothing.happened'")
    _raw_refused(
        db, "UPDATE audit_events SET actor_kind = 'system' WHERE id = :id", {"id": event.id}
    )
    _raw_refused(db, "DELETE FROM audit_events WHERE id = :id", {"id": event.id})
    _raw_refused(db, "DELETE FROM audit_events")
    values = "(:id, :ws, 'item.uploaded', 'system', '{}', :at)"  # an upsert over the recorded id
    columns = "(id, workspace_id, action, actor_kind, details, at)"
    params = {"id": event.id, "ws": ws, "at": datetime.now(UTC)}
    if db.dialect == "postgresql":
        _raw_refused(db, "TRUNCATE audit_events")
        _raw_refused(
            db,
            f"INSERT INTO audit_events {columns} VALUES {values} "
            "ON CONFLICT (id) DO UPDATE SET action = excluded.action",
            params,
        )
    else:
        _raw_refused(db, f"INSERT OR REPLACE INTO audit_events {columns} VALUES {values}", params)
        _raw_refused(db, f"REPLACE INTO audit_events {columns} VALUES {values}", params)
    assert _events(c, ws) == before
    # The repository has no way to change an event either; appending still works.
    assert not {"update", "delete", "remove"} & set(dir(SqlAuditRepository))
    c.audit.record(ws, AuditAction.ITEM_UPLOADED, CLI_ACTOR)
    assert len(_events(c, ws)) == 3


def test_deleting_a_workspace_is_not_blocked_by_its_events(container: Container) -> None:
    c = container
    ws, created = c.workspaces.ensure("short-lived", actor=CLI_ACTOR)
    assert created and len(c.audit.list(ws.id)) == 1
    with c.db.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM workspaces WHERE id = :id"), {"id": ws.id})
    [kept] = c.audit.list(ws.id)  # the record outlives what it is about
    assert kept.action == AuditAction.WORKSPACE_CREATED and kept.target_id == ws.id


# ---------------------------------------------------------------- listing
def test_listing_filters_pages_and_stays_in_its_workspace(db: Database) -> None:
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    audit = AuditService(SqlAuditRepository(db), clock)
    spaces = SqlWorkspaceRepository(db)
    a, b = (
        spaces.create(Workspace(id=new_id(), slug=s, name=s, created_at=clock.now()))
        for s in ("a", "b")
    )
    someone = Actor(ActorKind.USER, user_id=new_id(), token_id=new_id())
    recorded = []
    for n in range(6):
        action = AuditAction.ITEM_UPLOADED if n % 2 == 0 else AuditAction.ITEM_DELETED
        recorded.append(
            audit.record(
                a.id,
                action,
                someone,
                target_kind=AuditTarget.ITEM,
                target_id=new_id(),
                details={"n": n},
            )
        )
        clock.advance(3600)
    audit.record(b.id, AuditAction.ITEM_UPLOADED, CLI_ACTOR)
    # The same instant for a batch: still a total order (ties by id), so pages never overlap.
    batch = audit.record_each(
        a.id,
        AuditAction.ITEM_REPROCESSED,
        CLI_ACTOR,
        AuditTarget.ITEM,
        [(new_id(), {"scope": "failed"}) for _ in range(3)],
    )
    newest_first = sorted(batch, key=lambda e: e.id, reverse=True) + recorded[::-1]
    assert [e.id for e in audit.list(a.id)] == [e.id for e in newest_first]
    paged = (
        audit.list(a.id, limit=4)
        + audit.list(a.id, limit=4, offset=4)
        + audit.list(a.id, limit=4, offset=8)
    )
    assert [e.id for e in paged] == [e.id for e in newest_first]

    got = audit.list(a.id, action=AuditAction.ITEM_DELETED)
    assert [e.details["n"] for e in got] == [5, 3, 1]
    assert got[0].actor_kind == "user" and got[0].actor_user_id == someone.user_id
    assert got[0].actor_token_id == someone.token_id
    start = recorded[2].at
    window = audit.list(a.id, since=start, until=recorded[4].at)  # since <= at < until
    assert [e.details["n"] for e in window] == [3, 2]
    assert audit.list(a.id, action="item.uploaded", since=start)[-1].details == {"n": 2}

    [theirs] = audit.list(b.id)
    assert theirs.actor_kind == "cli" and all(e.workspace_id == a.id for e in audit.list(a.id))
    with pytest.raises(ValidationError) as bad:
        audit.list(a.id, action="item.stolen")
    assert bad.value.field == "action"
    with pytest.raises(ValidationError) as bad:
        audit.list(a.id, since=start, until=start)
    assert bad.value.field == "since"
    with pytest.raises(ValidationError):
        audit.list(a.id, limit=0)


def test_the_api_filters_and_refuses_what_it_cannot_read(container: Container) -> None:
    c = container
    ws = workspace_id(c)
    other, _ = c.workspaces.ensure("other")
    c.ingest.ingest(other.id, IngestRequest(text="Another workspace's note.", title="Theirs"))
    item = c.ingest.ingest(ws, IngestRequest(text="Ours.", title="Ours"))
    with api_client(c, raise_server_exceptions=False) as client:
        got = client.get("/api/v1/audit", params={"action": "item.uploaded"}).json()
        assert [e["target"]["id"] for e in got["events"]] == [item.id]
        assert got["next_offset"] is None
        assert client.get("/api/v1/audit", params={"since": "2999-01-01"}).json()["events"] == []
        assert (
            len(client.get("/api/v1/audit", params={"until": "2999-01-01"}).json()["events"]) == 3
        )
        one = client.get("/api/v1/audit", params={"limit": 1}).json()
        assert len(one["events"]) == 1 and one["next_offset"] == 1
        for params, field in (
            ({"action": "item.stolen"}, "action"),
            ({"since": "soon"}, "since"),
            ({"since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ):
            resp = client.get("/api/v1/audit", params=params)
            assert resp.status_code == 400, resp.text
            assert field in resp.text


def test_details_stay_small_and_structured(container: Container) -> None:
    ws = workspace_id(container)
    for details in (
        {"text": "x" * 500},
        {"nested": {"a": 1}},
        {"list": [1, 2]},
        {f"k{n}": n for n in range(40)},
    ):
        with pytest.raises(ValueError):
            container.audit.record(ws, AuditAction.ITEM_UPLOADED, CLI_ACTOR, details=details)
    assert [e.action for e in _events(container, ws)] == [AuditAction.WORKSPACE_CREATED]


# ---------------------------------------------------------------- the migration
def _alembic(db: Database) -> tuple[Config, sa.Connection]:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrate.__file__).parent / "migrations"))
    conn = db.engine.connect()
    cfg.attributes["connection"] = conn
    return cfg, conn


def test_the_migration_downgrades_and_upgrades_again(db: Database) -> None:
    audit = AuditService(SqlAuditRepository(db), ManualClock())
    ws = SqlWorkspaceRepository(db).create(
        Workspace(id=new_id(), slug="w", name="W", created_at=datetime.now(UTC))
    )
    kept = audit.record(ws.id, AuditAction.ITEM_UPLOADED, CLI_ACTOR)
    gone = SqlWorkspaceRepository(db).create(
        Workspace(id=new_id(), slug="gone", name="G", created_at=datetime.now(UTC))
    )
    audit.record(gone.id, AuditAction.WORKSPACE_CREATED, CLI_ACTOR)
    with db.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM workspaces WHERE id = :id"), {"id": gone.id})

    cfg, conn = _alembic(db)
    with conn:
        command.downgrade(cfg, "0006")
        conn.commit()
    assert migrate.current_revision(db) == "0006"
    insp = sa.inspect(db.engine)
    columns = {col["name"] for col in insp.get_columns("audit_events")}
    assert {"actor_kind", "actor_token_id"}.isdisjoint(columns)
    assert [fk["referred_table"] for fk in insp.get_foreign_keys("audit_events")] == ["workspaces"]
    with db.engine.begin() as conn:  # no trigger any more; the orphan went with the FK back
        rows = conn.execute(sa.text("SELECT id FROM audit_events")).scalars().all()
        assert rows == [kept.id]
        conn.execute(
            sa.text("UPDATE audit_events SET request_id = 'r' WHERE id = :id"), {"id": kept.id}
        )

    migrate.upgrade(db)
    assert migrate.is_current(db)
    assert sa.inspect(db.engine).get_foreign_keys("audit_events") == []
    [back] = audit.list(ws.id)
    assert back.id == kept.id and back.actor_kind == "system" and back.request_id == "r"
    _raw_refused(db, "DELETE FROM audit_events")
    _raw_refused(db, "UPDATE audit_events SET request_id = NULL")
