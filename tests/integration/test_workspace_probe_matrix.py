"""The cross-workspace probe matrix, generated from the OpenAPI document (SQLite; the
workspace filter on PostgreSQL is test_workspace_isolation's and the storage contracts').

Workspaces ``alpha`` and ``bravo`` hold the processed demo corpus each (items, chunks,
entities, aliases, claims, a contradiction, relationships, jobs), ``bravo`` also a memo of
its own with words, an entity and claims found nowhere else, a member besides its owner and
an API token. Alice owns ``alpha`` (probed twice: by API token and by session cookie), Vic
is a viewer of ``alpha``.

For **every operation** of ``app.openapi()`` the table ``PROBES`` says how to probe it; an
operation missing from the table fails the test, so a new route cannot be left out:

- Alice's request with bravo's ids (in the path, or in the query or body where the operation
  takes ids or words) answers exactly what the same request with a random valid id answers:
  status, error code and message (the probed value masked in both), or for a success the
  same body; no answer to alice ever contains one of bravo's ids or words.
- ``X-Relata-Workspace: bravo`` answers exactly like a workspace that does not exist.
- Vic's attempt at every unsafe operation (with alpha's own ids) is 403 ``forbidden``, but
  for the operations a viewer may call (``VIEWER_MAY_WRITE``, checked against the table).
- Afterwards bravo's rows (every table with a ``workspace_id``, its members' users, its
  originals on disk) are unchanged, and vic changed nothing in alpha.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.api.deps import SAFE_METHODS, VIEWER_MAY_WRITE
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR, Workspace
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from relata.seed import demo_documents
from relata.storage.sql.tables import metadata, users, workspace_members, workspaces
from tests.support.api import BASE_URL, PASSWORD, make_token, make_user
from tests.support.ingest import built, drain

#: bravo's own memo: words, an entity and claims no other workspace holds.
MEMO = (
    "Quillmere Observatory memo. The Quillmere Observatory opened on 3 May 2011, Zorvath "
    "Instruments said. The Quillmere Observatory measured zorblatite dust."
)
RARE_WORD = "zorblatite"
SUBJECT = "Quillmere Observatory"


@dataclass(frozen=True)
class Probe:
    """How to probe one operation. ``path`` maps each path parameter to a key of the
    workspace's values (``Values``); ``query`` and ``body`` may hold ``{key}`` placeholders
    filled the same way. ``public``: anyone may call it. ``viewer_may``: an unsafe operation
    a viewer may call. ``ends_session``: not called by the session principal (it would sign
    her out mid-matrix). ``own``: path parameters filled with alpha's value instead of
    bravo's in a second probe (e.g. bravo's username under alpha's own slug)."""

    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    public: bool = False
    viewer_may: bool = False
    ends_session: bool = False
    own: tuple[str, ...] = ()

    @property
    def keys(self) -> set[str]:
        text = json.dumps([dict(self.query), self.body])
        return set(self.path.values()) | set(re.findall(r"\{(\w+)\}", text))


ITEM = {"item_id": "item"}
P = Probe
PROBES: dict[str, Probe] = {
    # Public: no principal at all. Sign-in with bravo's user answers like an unknown one.
    "GET /api/v1/version": P(public=True),
    "POST /api/v1/auth/sign-in": P(
        public=True, body={"username": "{username}", "password": "not the password"}
    ),
    # Federated sign-in (off here: no issuer configured): the browser's way in, no principal.
    "GET /api/v1/auth/oidc/start": P(public=True),
    "GET /api/v1/auth/oidc/callback": P(public=True, query={"code": "{token}", "state": "{slug}"}),
    "POST /api/v1/auth/sign-out": P(viewer_may=True, ends_session=True),
    "GET /api/v1/auth/me": P(),
    "GET /api/v1/workspaces/current": P(),
    "GET /api/v1/workspaces": P(),
    # Slugs are instance-wide (a taken slug is 409 whoever holds it); the body takes no id.
    "POST /api/v1/workspaces": P(viewer_may=True),
    "GET /api/v1/workspaces/{slug}/members": P(path={"slug": "slug"}),
    "PATCH /api/v1/workspaces/{slug}/members/{username}": P(
        path={"slug": "slug", "username": "username"}, body={"role": "viewer"}, own=("slug",)
    ),
    "DELETE /api/v1/workspaces/{slug}/members/{username}": P(
        path={"slug": "slug", "username": "username"}, own=("slug",)
    ),
    # Invitations: bravo's invitation id under alpha's own slug is alpha's "not found"; an
    # id given as a code is no code (one answer for every code that cannot be used).
    "GET /api/v1/workspaces/{slug}/invitations": P(path={"slug": "slug"}),
    "POST /api/v1/workspaces/{slug}/invitations": P(path={"slug": "slug"}, body={"role": "viewer"}),
    "DELETE /api/v1/workspaces/{slug}/invitations/{invitation_id}": P(
        path={"slug": "slug", "invitation_id": "invitation"}, own=("slug",)
    ),
    "POST /api/v1/invitations/accept": P(viewer_may=True, body={"code": "{invitation}"}),
    "POST /api/v1/invitations/decline": P(viewer_may=True, body={"code": "{invitation}"}),
    "POST /api/v1/workspaces/current/reembed": P(),
    "GET /api/v1/jobs": P(),
    "POST /api/v1/items": P(body={"text": "{memo}", "title": "memo"}),
    "GET /api/v1/items": P(),
    "GET /api/v1/items/{item_id}": P(path=ITEM),
    "PATCH /api/v1/items/{item_id}": P(path=ITEM, body={"title": "memo"}),
    "DELETE /api/v1/items/{item_id}": P(path=ITEM),
    "GET /api/v1/items/{item_id}/original": P(path=ITEM),
    "GET /api/v1/items/{item_id}/text": P(path=ITEM),
    "GET /api/v1/items/{item_id}/chunks": P(path=ITEM),
    "POST /api/v1/items/{item_id}/reprocess": P(path=ITEM),
    "GET /api/v1/items/{item_id}/entities": P(path=ITEM),
    "GET /api/v1/items/{item_id}/claims": P(path=ITEM),
    "GET /api/v1/items/{item_id}/related": P(path=ITEM),
    # A new version: the item is looked up before the body is read, so any body will do.
    "PUT /api/v1/items/{item_id}/content": P(path=ITEM, body={"text": "{memo}"}),
    "GET /api/v1/items/{item_id}/versions": P(path=ITEM),
    "GET /api/v1/items/{item_id}/versions/{number}/original": P(
        path={"item_id": "item", "number": "version"}
    ),
    "GET /api/v1/search": P(query={"q": "{word}"}),
    "POST /api/v1/answers": P(viewer_may=True, body={"question": "What is {word}?"}),
    "GET /api/v1/entities": P(query={"q": "{subject}"}),
    "GET /api/v1/entities/{entity_id}": P(path={"entity_id": "entity"}),
    "GET /api/v1/graph": P(query={"entity": "{entity}"}),
    "GET /api/v1/export": P(query={"format": "jsonl"}),
    # Owners only, into an empty workspace (alpha is not): a JSON body is no export (415).
    "POST /api/v1/import": P(body={"record": "item", "id": "{item}"}),
    "GET /api/v1/aliases": P(),
    "POST /api/v1/aliases/{alias_id}/decision": P(
        path={"alias_id": "alias"}, body={"status": "rejected"}
    ),
    "GET /api/v1/claims": P(query={"subject": "{subject}"}),
    "GET /api/v1/contradictions": P(query={"item": "{item}", "subject": "{subject}"}),
    "GET /api/v1/contradictions/{contradiction_id}": P(path={"contradiction_id": "contradiction"}),
    "POST /api/v1/contradictions/{contradiction_id}/resolution": P(
        path={"contradiction_id": "contradiction"}, body={"resolution": "both_valid"}
    ),
    "GET /api/v1/disagreements": P(query={"subject": "{subject}"}),
    "GET /api/v1/disagreements/{disagreement_id}": P(path={"disagreement_id": "disagreement"}),
    "POST /api/v1/disagreements/{disagreement_id}/resolution": P(
        path={"disagreement_id": "disagreement"}, body={"resolution": "both_valid"}
    ),
    "GET /api/v1/relationships/review-queue": P(),
    "GET /api/v1/relationships/{relationship_id}": P(path={"relationship_id": "relationship"}),
    "POST /api/v1/relationships/{relationship_id}/review": P(
        path={"relationship_id": "relationship"}, body={"decision": "reject"}
    ),
    "GET /api/v1/settings/models": P(),
    "GET /api/v1/settings/watches": P(),
    "GET /api/v1/audit": P(),
    "GET /api/v1/tokens": P(),
    "POST /api/v1/tokens": P(viewer_may=True, body={"name": "probe"}),
    "DELETE /api/v1/tokens/{token_id}": P(path={"token_id": "token"}, viewer_may=True),
}


# ---------------------------------------------------------------- the two workspaces
Values = dict[str, str]


def _first(c: Container, sql: str, ws: str) -> str:
    with c.db.read() as conn:
        value = conn.execute(sa.text(sql), {"ws": ws}).scalar()
    assert value is not None, sql
    return str(value)


def _values(c: Container, ws: Workspace, username: str, token_id: str, word: str) -> Values:
    return {
        "slug": ws.slug,
        "username": username,
        "item": _first(
            c, "SELECT first_item_id FROM contradictions WHERE workspace_id = :ws", ws.id
        ),
        "entity": _first(c, "SELECT min(id) FROM entities WHERE workspace_id = :ws", ws.id),
        "alias": _first(c, "SELECT min(id) FROM entity_aliases WHERE workspace_id = :ws", ws.id),
        "contradiction": _first(
            c, "SELECT min(id) FROM contradictions WHERE workspace_id = :ws", ws.id
        ),
        "relationship": _first(
            c, "SELECT min(id) FROM relationships WHERE workspace_id = :ws", ws.id
        ),
        "disagreement": _first(
            c, "SELECT min(id) FROM disagreements WHERE workspace_id = :ws", ws.id
        ),
        "token": token_id,
        # Not "1": probed values are masked in the answers compared, digit by digit. The item
        # is what a version is scoped by, and is looked up first.
        "version": "999983",
        "invitation": _first(c, "SELECT min(id) FROM invitations WHERE workspace_id = :ws", ws.id),
        "word": word,
        "subject": SUBJECT if word == RARE_WORD else "Nothing Such",
        "memo": MEMO,
    }


def _missing() -> Values:
    """Random valid ids, slugs, names and words: what nobody holds."""
    tag = uuid.uuid4().hex[:10]
    return {
        "slug": f"nowhere-{tag}",
        "username": f"nobody-{tag}",
        **{k: str(uuid.uuid4()) for k in ("item", "entity", "alias", "contradiction")},
        **{k: str(uuid.uuid4()) for k in ("relationship", "token", "invitation")},
        "disagreement": str(uuid.uuid4()),
        "version": "999983",
        "word": f"qq{tag}",
        "subject": f"Nobody {tag}",
        "memo": f"A memo about nothing in particular, number {tag}.",
    }


def _seed(c: Container, ws: Workspace, *, memo: bool) -> None:
    if memo:
        c.ingest.ingest(ws.id, IngestRequest(text=MEMO, title="Quillmere memo"))
    for doc in demo_documents():
        c.ingest.ingest(
            ws.id, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
    drain(c)


@dataclass
class World:
    c: Container
    alpha: Workspace
    bravo: Workspace
    a: Values  # alpha's own values (the viewer's probes)
    b: Values  # bravo's
    alice_token: str
    vic_token: str
    secrets: list[str]  # bravo's ids and words: never in an answer to alpha


@pytest.fixture
def world(settings: Settings) -> Iterator[World]:
    with built(settings, embedding_provider="none") as c:
        alpha, _ = c.workspaces.ensure("alpha")
        bravo, _ = c.workspaces.ensure("bravo")
        alice = make_user(c, workspace=alpha, username="alice")
        vic = make_user(c, workspace=alpha, username="vic", role=Role.VIEWER)
        bob = make_user(c, workspace=bravo, username="bob")
        make_user(c, workspace=bravo, username="bea", role=Role.EDITOR)
        _seed(c, alpha, memo=False)
        _seed(c, bravo, memo=True)
        make_token(c, bob, workspace=bravo)
        for ws, owner in ((alpha, alice), (bravo, bob)):
            c.invitations.create(ws.id, Role.EDITOR, created_by=owner.id, actor=CLI_ACTOR)
        [bob_token] = c.tokens.list(bravo.id)
        vic_api = make_token(c, vic, workspace=alpha, role=Role.VIEWER)
        alice_api = make_token(c, alice, workspace=alpha)
        alpha_token = next(t for t in c.tokens.list(alpha.id) if t.user_id == vic.id)
        a = _values(c, alpha, "vic", alpha_token.id, "harbour")
        b = _values(c, bravo, "bea", bob_token.id, RARE_WORD)
        with c.db.read() as conn:
            ids = [
                str(r[0])
                for t in ("items", "chunks", "entities", "entity_aliases", "claims")
                for r in conn.execute(
                    sa.text(f"SELECT id FROM {t} WHERE workspace_id = :ws"),
                    {"ws": bravo.id},
                )
            ]
            ids += [
                str(r[0])
                for t in (
                    "contradictions",
                    "disagreements",
                    "relationships",
                    "jobs",
                    "api_tokens",
                    "invitations",
                )
                for r in conn.execute(
                    sa.text(f"SELECT id FROM {t} WHERE workspace_id = :ws"),
                    {"ws": bravo.id},
                )
            ]
        secrets = [*ids, bravo.id, RARE_WORD, "Quillmere", "Zorvath", bob.id]
        yield World(c, alpha, bravo, a, b, alice_api, vic_api, secrets)


def _snapshot(c: Container, ws: Workspace) -> dict[str, Any]:
    """Every row of the workspace, its members' users, its originals on disk."""
    out: dict[str, Any] = {}
    with c.db.read() as conn:
        for table in metadata.sorted_tables:
            if "workspace_id" in table.c:
                q = sa.select(table).where(table.c.workspace_id == ws.id)
                if table.name == "audit_events":
                    # A failed sign-in on one of its members' accounts is recorded in their
                    # workspace, whoever tried: that is the log doing its work.
                    q = q.where(table.c.action != AuditAction.SIGN_IN_FAILED.value)
                rows = conn.execute(q).all()
                out[table.name] = sorted(repr(tuple(r)) for r in rows)
        member_ids = sa.select(workspace_members.c.user_id).where(
            workspace_members.c.workspace_id == ws.id
        )
        rows = conn.execute(sa.select(users).where(users.c.id.in_(member_ids))).all()
        out["users"] = sorted(repr(tuple(r)) for r in rows)
        out["workspace"] = repr(
            conn.execute(sa.select(workspaces).where(workspaces.c.id == ws.id)).one()
        )
    root: Path = c.settings.data_path / "originals" / ws.id
    out["originals"] = sorted(
        (str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*") if p.is_file()
    )
    return out


# ---------------------------------------------------------------- making the requests
def _fill(template: Any, values: Values) -> Any:
    if isinstance(template, str):
        return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    return template


def _send(
    client: TestClient,
    key: str,
    probe: Probe,
    values: Values,
    headers: Mapping[str, str] | None = None,
    path_values: Values | None = None,
) -> Any:
    method, path = key.split(" ", 1)
    pv = path_values or values
    url = re.sub(r"\{(\w+)\}", lambda m: pv[probe.path[m.group(1)]], path)
    return client.request(
        method,
        url,
        params=_fill(dict(probe.query), values) or None,
        json=_fill(probe.body, values),
        headers=dict(headers or {}),
        follow_redirects=False,
    )


def _masked(resp: Any, values: Values) -> tuple[int, Any]:
    """The status and body with the probed values masked and the request id dropped."""
    text = resp.text
    for k, v in sorted(values.items(), key=lambda kv: -len(kv[1])):
        # Whole values only: a short one (the username "bea") is also a run of hex digits
        # inside some random UUID, which must stay as it is.
        text = re.sub(rf"(?<![0-9A-Za-z-]){re.escape(v)}(?![0-9A-Za-z-])", f"<{k}>", text)
    try:
        body: Any = json.loads(text) if text else None
    except json.JSONDecodeError:  # a file (an export): compared and searched as text
        body = text
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body["error"].pop("request_id", None)
    return resp.status_code, body


_CREATES = {"POST /api/v1/items", "POST /api/v1/tokens", "POST /api/v1/workspaces"}


def _operations(c: Container) -> dict[str, tuple[dict[str, Any], str]]:
    """Every operation of the app's OpenAPI document: "METHOD path" -> (operation, the
    route's name, recovered from FastAPI's operation id ``name + path + _method``)."""
    doc = create_app(c).openapi()
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for path, item in doc["paths"].items():
        for m, op in item.items():
            if m not in {"get", "put", "post", "patch", "delete"}:
                continue
            suffix = re.sub(r"\W", "_", path) + "_" + m
            assert op["operationId"].endswith(suffix), op["operationId"]
            out[f"{m.upper()} {path}"] = (op, op["operationId"][: -len(suffix)])
    return out


def _clients(w: World) -> Iterator[tuple[str, TestClient]]:
    app = create_app(w.c)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as by_token:
        by_token.headers["Authorization"] = f"Bearer {w.alice_token}"
        yield "token", by_token
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as by_session:
        r = by_session.post(
            "/api/v1/auth/sign-in", json={"username": "alice", "password": PASSWORD}
        )
        assert r.status_code == 200, r.text
        by_session.headers["X-CSRF-Token"] = r.json()["csrf_token"]
        yield "session", by_session


# ---------------------------------------------------------------- the matrix
def test_the_table_covers_every_operation_and_matches_the_viewer_rules(world: World) -> None:
    ops = _operations(world.c)
    missing = sorted(set(ops) - set(PROBES))
    assert not missing, f"operations without a probe in PROBES (add one): {missing}"
    stale = sorted(set(PROBES) - set(ops))
    assert not stale, f"PROBES lists operations the API no longer has: {stale}"
    for key, (op, name) in ops.items():
        probe = PROBES[key]
        assert probe.public == (op.get("security") == []), key
        method = key.split(" ", 1)[0]
        if method not in SAFE_METHODS and not probe.public:
            assert probe.viewer_may == (name in VIEWER_MAY_WRITE), key
        params = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]
        assert sorted(params) == sorted(probe.path), key


def test_another_workspaces_ids_answer_exactly_like_missing_ones(world: World) -> None:
    w = world
    before = _snapshot(w.c, w.bravo)
    ops = _operations(w.c)
    assert set(ops) <= set(PROBES)
    checked = 0
    for kind, client in _clients(w):
        for key in sorted(ops, key=lambda k: k.startswith("POST /api/v1/auth/sign-out")):
            probe = PROBES[key]
            if probe.ends_session and kind == "session":
                continue
            caller = client
            if probe.public:
                caller = TestClient(client.app, base_url=BASE_URL, raise_server_exceptions=False)
            missing = _missing()
            variants: list[Values | None] = [None]
            if probe.own:
                own = dict(w.b)
                own.update({k: w.a[k] for k in probe.own})
                variants.append(own)
            for path_b in variants:
                path_m = None
                if path_b is not None:
                    path_m = dict(missing)
                    path_m.update({k: w.a[k] for k in probe.own})
                cross = _send(caller, key, probe, w.b, path_values=path_b)
                gone = _send(caller, key, probe, missing, path_values=path_m)
                where = f"{kind}: {key} {'(own ' + ','.join(probe.own) + ')' if path_b else ''}"
                assert cross.status_code < 500, (where, cross.text)
                shown = json.dumps(_masked(cross, w.b))
                leaked = [s for s in w.secrets if s in shown]
                assert not leaked, (where, leaked)
                if key == "POST /api/v1/items":  # bravo's memo is no duplicate in alpha
                    assert cross.status_code == 201, (where, cross.text)
                    for made in (cross, gone):
                        caller.delete(f"/api/v1/items/{made.json()['id']}")
                if probe.keys and key not in _CREATES:
                    assert _masked(cross, w.b) == _masked(gone, missing), where
                else:
                    assert cross.status_code == gone.status_code, (where, cross.text, gone.text)
                checked += 1
            if probe.public:
                continue
            # The header that picks a workspace: bravo is exactly a workspace that is not.
            fake = _missing()["slug"]
            r_b = _send(client, key, probe, missing, {"X-Relata-Workspace": w.bravo.slug})
            r_m = _send(client, key, probe, missing, {"X-Relata-Workspace": fake})
            assert _masked(r_b, {"slug": w.bravo.slug}) == _masked(r_m, {"slug": fake}), key
            if not probe.path.get("slug"):
                assert r_b.status_code == 404 and r_b.json()["error"]["code"] == "not_found"
        client.close()
    assert checked >= 2 * len(ops) - 2
    assert _snapshot(w.c, w.bravo) == before


def test_a_viewer_can_change_nothing(world: World) -> None:
    w = world
    before_bravo = _snapshot(w.c, w.bravo)
    ops = _operations(w.c)
    refused = 0
    with TestClient(create_app(w.c), base_url=BASE_URL, raise_server_exceptions=False) as vic:
        vic.headers["Authorization"] = f"Bearer {w.vic_token}"
        assert vic.get("/api/v1/auth/me").status_code == 200  # its last use, written now
        before_alpha = _snapshot(w.c, w.alpha)
        for key in sorted(ops):
            probe = PROBES[key]
            method = key.split(" ", 1)[0]
            if method in SAFE_METHODS or probe.public or probe.viewer_may:
                continue
            r = _send(vic, key, probe, w.a)
            assert r.status_code == 403, (key, r.text)
            assert r.json()["error"]["code"] == "forbidden", key
            refused += 1
    assert refused >= 10
    assert _snapshot(w.c, w.alpha) == before_alpha
    assert _snapshot(w.c, w.bravo) == before_bravo
