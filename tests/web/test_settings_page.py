"""The settings page: providers and models, the warning when vectors and chunks differ,
re-embedding and its progress, API tokens (the secret shown once, working as a Bearer token,
revoked), members and the last-owner rule (invitations: ``test_invitations_page``); every
form needs its token, a viewer writes only their own tokens, and stored strings are
escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import CLI_ACTOR, JobStatus
from relata.domain.vocabulary import AuditAction, Role
from relata.embeddings.reembed import REEMBED_WORKSPACE
from relata.ingest.service import IngestRequest
from tests.support.api import BASE_URL, PASSWORD, make_user
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, leaked

SETTINGS = "/w/default/settings"
_SECRET = re.compile(r"rl_[0-9a-f]{8}_[A-Za-z0-9_-]{43}")
MISMATCH = "the counts do not match"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


@pytest.fixture
def embedded(settings: Settings) -> Iterator[Container]:
    """A container with a (fake) embedding provider and two documents processed."""
    with built(settings, embedder=FakeEmbedder(384, "fake-model")) as container:
        ws = workspace_id(container)
        for title, text in (
            ("Tides", "# Tides\n\nTwelve turbines.\n\n## Seals\n\nThe colony grew to 143."),
            ("Harbour", "A second note about the harbour and its dredging."),
        ):
            container.ingest.ingest(ws, IngestRequest(text=text, title=title))
        drain(container)
        yield container


def _bearer(c: Container, secret: str) -> TestClient:
    client = TestClient(create_app(c), base_url=BASE_URL)
    client.headers["Authorization"] = f"Bearer {secret}"
    return client


def _create_token(client: TestClient, **fields: str) -> tuple[int, str]:
    data = {"csrf_token": csrf(client, SETTINGS), "name": "laptop", **fields}
    r = client.post(f"{SETTINGS}/tokens", data=data)
    return r.status_code, r.text


# ---------------------------------------------------------------- providers and counts
def test_without_an_embedding_provider_the_page_says_so_and_warns_of_the_counts(
    demo_container: Container,
) -> None:
    c = demo_container
    ws = workspace_id(c)
    chunks = c.repos.chunks.count(ws)
    assert chunks > 0 and c.vectors.count(ws) == 0
    client = web_client(c)
    r = client.get(SETTINGS)
    assert r.status_code == 200 and "<h1>Settings</h1>" in r.text
    assert "Providers" in r.text and "Embedding (meaning-based search)" in r.text
    assert "meaning-based search is unavailable" in r.text
    assert MISMATCH in r.text
    assert f"holds 0 vectors for {chunks} chunks" in r.text
    assert "RELATA_EMBEDDING_PROVIDER=none" in r.text
    # Nothing to re-embed with: no form, the reason instead.
    assert "settings/reembed" not in r.text and "Re-embedding needs an embedding provider" in r.text
    refused = client.post(f"{SETTINGS}/reembed", data={"csrf_token": csrf(client, SETTINGS)})
    assert refused.status_code == 409 and "re-embedding needs an embedding provider" in refused.text


def test_vectors_in_step_are_no_warning_and_lost_ones_are(embedded: Container) -> None:
    ws = workspace_id(embedded)
    client = web_client(embedded)
    r = client.get(SETTINGS)
    assert r.status_code == 200
    assert "fake-model" in r.text and "384 dimensions" in r.text
    assert (
        "Models and versions seen" in r.text and "<td>embedding</td><td>fake-model</td>" in r.text
    )
    assert MISMATCH not in r.text and "Every chunk has its vector." in r.text
    assert "Warning:" not in r.text

    lost = embedded.items.list(ws)[0]
    embedded.vectors.delete_by_item(ws, lost.id)
    vectors, chunks = embedded.vectors.count(ws), embedded.repos.chunks.count(ws)
    assert vectors < chunks
    r = client.get(SETTINGS)
    assert MISMATCH in r.text and f"holds {vectors} vectors for {chunks} chunks" in r.text
    assert "rebuilding every vector" in r.text  # every chunk says it is embedded: rebuild
    assert "reembed?all=true" in r.text  # the service's own warning with its fix


def test_a_workspace_past_the_embedded_stores_chunk_threshold_is_told_to_move(
    settings: Settings,
) -> None:
    """RELATA_VECTOR_WARN_CHUNKS: with sqlite-vec, more chunks than it is a warning naming
    the way to PostgreSQL with pgvector; at or under it, or with 0, none (bootstrap gives
    no limit with another store: pgvector and Qdrant index the vectors)."""
    text = "# Tides\n\nTwelve turbines.\n\n## Seals\n\nThe colony grew to 143."
    for limit, warned in ((1, True), (1000, False), (0, False)):
        with built(
            settings, embedder=FakeEmbedder(384, "fake-model"), vector_warn_chunks=limit
        ) as c:
            ws = workspace_id(c)
            if not c.repos.chunks.count(ws):
                c.ingest.ingest(ws, IngestRequest(text=text, title="Tides"))
                drain(c)
            chunks = c.repos.chunks.count(ws)
            assert chunks > 1
            page = web_client(c).get(SETTINGS).text
            assert ("relata transfer" in page) is warned
            if warned:
                assert f"this workspace holds {chunks:,} chunks, more than 1 " in page
                assert "RELATA_VECTOR_WARN_CHUNKS" in page and "pgvector" in page
            status = c.model_status.status(ws)
            assert any("relata transfer" in w for w in status.warnings) is warned


def test_reembedding_starts_shows_its_progress_and_ends_in_step(embedded: Container) -> None:
    ws = workspace_id(embedded)
    embedded.vectors.delete_by_item(ws, embedded.items.list(ws)[0].id)
    client = web_client(embedded, role=Role.EDITOR)
    token = csrf(client, SETTINGS)
    assert 'action="/w/default/settings/reembed"' in client.get(SETTINGS).text

    r = client.post(f"{SETTINGS}/reembed", data={"csrf_token": token, "all": "true"})
    assert r.status_code == 303
    assert r.headers["location"] == f"{SETTINGS}?done=reembedding#reembed"
    [job] = embedded.queue.list(ws, kind=REEMBED_WORKSPACE)
    assert job.status is JobStatus.PENDING and job.payload.get("all") is True
    page = client.get(f"{SETTINGS}?done=reembedding").text
    assert "Re-embedding has started." in page
    assert 'data-live="true"' in page and 'data-api="/api/v1/settings/models"' in page
    assert '<progress id="reembed-progress"' in page and 'data-reembed="status">pending' in page
    # What the script polls, by the session cookie and the workspace header.
    api = client.get("/api/v1/settings/models", headers={"X-Relata-Workspace": "default"})
    assert api.status_code == 200 and api.json()["reembed"]["job_id"] == job.id

    drain(embedded)
    chunks = embedded.repos.chunks.count(ws)
    page = client.get(SETTINGS).text
    assert 'data-reembed="status">succeeded' in page and 'data-live="true"' not in page
    assert f'max="{chunks}" value="{chunks}"' in page
    assert MISMATCH not in page
    [event] = embedded.audit.list(ws, action=AuditAction.REEMBED_STARTED)
    assert event.actor_kind == "user" and event.details["all_chunks"] is True

    again = client.post(f"{SETTINGS}/reembed", data={"csrf_token": token})
    assert again.headers["location"] == f"{SETTINGS}?done=reembed_nothing#reembed"
    assert "Nothing to re-embed" in client.get(f"{SETTINGS}?done=reembed_nothing").text


def test_a_viewer_sees_no_reembed_or_member_forms_and_is_refused(embedded: Container) -> None:
    ws = workspace_id(embedded)
    viewer = web_client(embedded, role=Role.VIEWER)
    page = viewer.get(SETTINGS).text
    assert "settings/reembed" not in page and "settings/members" not in page
    assert "settings/invitations" not in page
    assert 'id="members"' not in page and "Open the audit log" not in page
    assert 'action="/w/default/settings/tokens"' in page  # their own tokens: yes
    token = csrf(viewer, SETTINGS)
    assert viewer.post(f"{SETTINGS}/reembed", data={"csrf_token": token}).status_code == 403
    posted = viewer.post(f"{SETTINGS}/invitations", data={"csrf_token": token, "role": "owner"})
    assert posted.status_code == 403
    assert embedded.invitations.live(ws) == []
    assert embedded.queue.list(ws, kind=REEMBED_WORKSPACE) == []


# ---------------------------------------------------------------- API tokens
def test_a_new_tokens_secret_is_shown_once_works_and_stops_when_revoked(c: Container) -> None:
    ws = workspace_id(c)
    client = web_client(c, role=Role.EDITOR)
    data = {
        "csrf_token": csrf(client, SETTINGS),
        "name": "build server",
        "role": "viewer",
        "expires": "2999-12-31",
    }
    r = client.post(f"{SETTINGS}/tokens", data=data)
    assert r.status_code == 201 and "location" not in r.headers  # rendered, not redirected
    assert r.headers["cache-control"] == "no-store"
    [secret] = set(_SECRET.findall(r.text))
    assert "shown only this once" in r.text and "<h1>Token created</h1>" in r.text
    assert "3000-01-01 00:00" in r.text  # it works through that day (UTC)
    [made] = c.tokens.list(ws)
    assert made.name == "build server" and made.role is Role.VIEWER
    assert (
        made.expires_at is not None and made.expires_at.isoformat() == "3000-01-01T00:00:00+00:00"
    )
    assert secret.startswith(f"rl_{made.prefix}_")

    later = client.get(SETTINGS).text
    assert secret not in later
    assert "build server" in later and f"rl_{made.prefix}_" in later

    api = _bearer(c, secret)
    items = api.get("/api/v1/items")
    assert items.status_code == 200
    assert c.tokens.get(ws, made.id).last_used_at is not None
    assert secret not in client.get(SETTINGS).text  # still never again

    revoked = client.post(
        f"{SETTINGS}/tokens/{made.id}/revoke", data={"csrf_token": csrf(client, SETTINGS)}
    )
    assert revoked.status_code == 303
    assert revoked.headers["location"] == f"{SETTINGS}?done=token_revoked#tokens"
    assert api.get("/api/v1/items").status_code == 401
    page = client.get(f"{SETTINGS}?done=token_revoked").text
    assert "The token is revoked." in page and "revoked " in page
    actions = [e.action for e in c.audit.list(ws)]
    assert AuditAction.TOKEN_CREATED in actions and AuditAction.TOKEN_REVOKED in actions


def test_the_token_form_defaults_to_the_least_role_takes_today_and_is_sent_once(
    c: Container,
) -> None:
    ws = workspace_id(c)
    client = web_client(c, role=Role.OWNER)
    page = client.get(SETTINGS).text
    assert '<option value="viewer" selected>' in page
    once = re.search(r'name="once" value="([^"]+)"', page)
    assert once
    today = datetime.now(UTC).date().isoformat()
    data = {
        "csrf_token": csrf(client, SETTINGS),
        "once": once.group(1),
        "name": "today",
        "role": "viewer",
        "expires": today,
    }
    assert client.post(f"{SETTINGS}/tokens", data=data).status_code == 201
    # Reloading the page that showed the secret sends the same form again: no second token.
    again = client.post(f"{SETTINGS}/tokens", data=data)
    assert again.status_code == 409 and "this form was already sent" in again.text
    [made] = c.tokens.list(ws)
    assert made.expires_at is not None and made.expires_at.date().isoformat() > today
    fresh = re.search(r'name="once" value="([^"]+)"', client.get(SETTINGS).text)
    assert fresh and fresh.group(1) != once.group(1)


def test_a_refused_token_is_the_page_again_with_the_reason(c: Container) -> None:
    ws = workspace_id(c)
    client = web_client(c)
    status, text = _create_token(client, expires="2001-01-01")
    assert status == 400 and "expires_at must be in the future" in text
    assert 'role="alert"' in text and 'value="laptop"' in text and "<h1>Settings</h1>" in text
    status, text = _create_token(client, name="   ")
    assert status == 400 and "name must be 1-100 printable characters" in text
    status, text = _create_token(client, role="admin")
    assert status == 400 and "role must be one of" in text
    status, text = _create_token(client, expires="soon")
    assert status == 400 and "expires" in text
    assert c.tokens.list(ws) == []


def test_a_viewer_creates_and_revokes_only_their_own_tokens(c: Container) -> None:
    ws = workspace_id(c)
    owner = make_user(c, username="olga")
    secret_of_owner, olgas = c.tokens.create(
        user_id=owner.id,
        workspace_id=ws,
        name="olgas token",
        role=Role.OWNER,
        creator_role=Role.OWNER,
        actor=CLI_ACTOR,
    )
    viewer = web_client(c, role=Role.VIEWER)
    page = viewer.get(SETTINGS).text
    assert "olgas token" not in page
    assert '<option value="viewer"' in page and '<option value="editor"' not in page
    status, text = _create_token(viewer, name="my reader")
    assert status == 201
    [secret] = set(_SECRET.findall(text))
    mine = next(t for t in c.tokens.list(ws) if t.name == "my reader")
    assert mine.role is Role.VIEWER
    status, _ = _create_token(viewer, name="sneaky", role="owner")
    assert status == 403

    token = csrf(viewer, SETTINGS)
    theirs = viewer.post(f"{SETTINGS}/tokens/{olgas.id}/revoke", data={"csrf_token": token})
    assert theirs.status_code == 404
    assert c.tokens.get(ws, olgas.id).revoked_at is None
    assert _bearer(c, secret_of_owner).get("/api/v1/items").status_code == 200
    ok = viewer.post(f"{SETTINGS}/tokens/{mine.id}/revoke", data={"csrf_token": token})
    assert ok.status_code == 303
    assert _bearer(c, secret).get("/api/v1/items").status_code == 401

    # The owner sees every token of the workspace, with whose it is.
    boss = web_client(c)
    page = boss.get(SETTINGS).text
    assert "olgas token" in page and "my reader" in page and "<td>olga</td>" in page


def test_another_workspaces_token_cannot_be_revoked(c: Container) -> None:
    other, _ = c.workspaces.ensure("other")
    them = make_user(c, workspace=other, username="theo")
    _, theirs = c.tokens.create(
        user_id=them.id,
        workspace_id=other.id,
        name="theirs",
        role=Role.OWNER,
        creator_role=Role.OWNER,
        actor=CLI_ACTOR,
    )
    client = web_client(c)
    assert "theirs" not in client.get(SETTINGS).text
    r = client.post(
        f"{SETTINGS}/tokens/{theirs.id}/revoke", data={"csrf_token": csrf(client, SETTINGS)}
    )
    assert r.status_code == 404
    assert c.tokens.get(other.id, theirs.id).revoked_at is None
    assert client.get("/w/other/settings").status_code == 404


# ---------------------------------------------------------------- members
def test_an_owner_changes_and_removes_members(c: Container) -> None:
    ws = workspace_id(c)
    other, _ = c.workspaces.ensure("other")
    make_user(c, workspace=other, username="bo")
    owner = web_client(c, username="ann")
    token = csrf(owner, SETTINGS)
    page = owner.get(SETTINGS).text
    assert "Members and roles" in page and "ann" in page and "(you)" in page
    assert 'href="/w/default/audit"' in page
    assert "Add a member" not in page and 'name="username"' not in page  # invitations only

    c.members.add(ws, "bo", Role.EDITOR, actor=CLI_ACTOR)  # the administrator's command line
    assert 'id="role-bo"' in owner.get(SETTINGS).text

    changed = owner.post(
        f"{SETTINGS}/members/bo/role", data={"csrf_token": token, "role": "viewer"}
    )
    assert changed.headers["location"] == f"{SETTINGS}?done=member_changed#members"
    assert c.members.member(ws, "bo").role is Role.VIEWER

    removed = owner.post(f"{SETTINGS}/members/bo/remove", data={"csrf_token": token})
    assert removed.headers["location"] == f"{SETTINGS}?done=member_removed#members"
    assert all(m.username != "bo" for m in c.members.members(ws))
    actions = [e.action for e in c.audit.list(ws)]
    for action in (
        AuditAction.MEMBER_CHANGED,
        AuditAction.MEMBER_REMOVED,
    ):
        assert action in actions


def test_refused_member_changes_are_the_page_again_with_the_reason(c: Container) -> None:
    ws = workspace_id(c)
    owner = web_client(c, username="ann")
    make_user(c, username="cy", role=Role.EDITOR)
    token = csrf(owner, SETTINGS)

    last = owner.post(f"{SETTINGS}/members/ann/role", data={"csrf_token": token, "role": "editor"})
    assert last.status_code == 409 and "<h1>Settings</h1>" in last.text
    assert 'role="alert"' in last.text and "must keep at least one owner" in last.text
    gone = owner.post(f"{SETTINGS}/members/ann/remove", data={"csrf_token": token})
    assert gone.status_code == 409 and "must keep at least one owner" in gone.text
    assert c.members.member(ws, "ann").role is Role.OWNER

    bad = owner.post(f"{SETTINGS}/members/cy/role", data={"csrf_token": token, "role": "superuser"})
    assert bad.status_code == 400 and "role must be one of" in bad.text
    # A user who exists elsewhere and a name nobody has: the same refusal, word for word.
    other, _ = c.workspaces.ensure("other")
    make_user(c, workspace=other, username="bo")
    answers = []
    for name in ("bo", "zed"):
        r = owner.post(f"{SETTINGS}/members/{name}/remove", data={"csrf_token": token})
        assert r.status_code == 404 and "not a member of this workspace" in r.text
        answers.append(re.sub(r'value="[^"]*"', "", r.text))
    assert answers[0] == answers[1]

    # With a second owner, the first may step down.
    owner.post(f"{SETTINGS}/members/cy/role", data={"csrf_token": token, "role": "owner"})
    ok = owner.post(f"{SETTINGS}/members/ann/role", data={"csrf_token": token, "role": "editor"})
    assert ok.status_code == 303 and c.members.member(ws, "ann").role is Role.EDITOR
    assert 'id="members"' not in owner.get(SETTINGS).text


def test_an_editor_sees_no_members_and_cannot_change_them(c: Container) -> None:
    ws = workspace_id(c)
    make_user(c, username="cy", role=Role.VIEWER)
    editor = web_client(c, role=Role.EDITOR)
    page = editor.get(SETTINGS).text
    assert 'id="members"' not in page and "settings/members" not in page
    token = csrf(editor, SETTINGS)
    for path, data in (
        ("invitations", {"role": "owner"}),
        ("members/cy/role", {"role": "owner"}),
        ("members/cy/remove", {}),
    ):
        r = editor.post(f"{SETTINGS}/{path}", data={"csrf_token": token, **data})
        assert r.status_code == 403, path
    assert c.members.member(ws, "cy").role is Role.VIEWER
    assert c.invitations.live(ws) == []


def test_every_settings_form_refuses_a_post_without_its_token(embedded: Container) -> None:
    ws = workspace_id(embedded)
    make_user(embedded, username="cy", role=Role.VIEWER)
    owner = web_client(embedded)
    status, _ = _create_token(owner, name="keep")
    assert status == 201
    [kept] = embedded.tokens.list(ws)
    _, pending = embedded.invitations.create(ws, Role.VIEWER, created_by=None, actor=CLI_ACTOR)
    for path, data in (
        ("reembed", {"all": "true"}),
        ("tokens", {"name": "forged"}),
        (f"tokens/{kept.id}/revoke", {}),
        ("invitations", {"role": "owner"}),
        (f"invitations/{pending.id}/revoke", {}),
        ("members/cy/role", {"role": "owner"}),
        ("members/cy/remove", {}),
    ):
        for token in ("forged", None):
            body = {**data, **({"csrf_token": token} if token else {"x": "1"})}
            r = owner.post(f"{SETTINGS}/{path}", data=body)
            assert r.status_code == 403, (path, token)
    assert embedded.queue.list(ws, kind=REEMBED_WORKSPACE) == []
    assert [t.name for t in embedded.tokens.list(ws)] == ["keep"]
    assert embedded.tokens.get(ws, kept.id).revoked_at is None
    assert embedded.members.member(ws, "cy").role is Role.VIEWER
    assert [i.id for i in embedded.invitations.live(ws)] == [pending.id]


# ---------------------------------------------------------------- escaping
def test_token_names_display_names_and_typed_values_are_escaped(c: Container) -> None:
    ws = workspace_id(c)
    owner_user = make_user(c, username="olga")
    for n, text in enumerate(XSS):
        c.tokens.create(
            user_id=owner_user.id,
            workspace_id=ws,
            name=text,
            role=Role.VIEWER,
            creator_role=Role.OWNER,
            actor=CLI_ACTOR,
        )
        c.accounts.create_user(
            f"person-{n}",
            PASSWORD,
            workspace=c.workspaces.resolve(),
            role=Role.VIEWER,
            display_name=text,
        )
    client = web_client(c)
    page = client.get(SETTINGS).text
    assert str(escape(XSS[0])) in page and str(escape(XSS[1])) in page
    assert leaked(page) == []

    typed = client.post(
        f"{SETTINGS}/invitations",
        data={"csrf_token": csrf(client, SETTINGS), "role": XSS[1], "days": XSS[0]},
    )
    assert typed.status_code == 400 and leaked(typed.text) == []
    status, created = _create_token(client, name=XSS[2])
    assert status == 201 and leaked(created) == []


# ---------------------------------------------------------------- watched folders
def test_the_watched_folders_status_comes_from_the_database(c: Container, tmp_path: Path) -> None:
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "otters.txt").write_text("A watched note about the otters of the estuary.")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    client = web_client(c)
    assert "No folder is watched into this workspace" in client.get(SETTINGS).text
    # The watcher is another process's in production; the page reads only the database.
    w = c.watches.watcher(workspace_id(c), folder)
    w.claim()
    w.catch_up()
    text = client.get(SETTINGS).text
    assert "Watched folders" in text and str(folder.resolve()) in text
    assert ">watching<" in text
    assert 'data-count="tracked">1<' in text and 'data-count="ingested">1<' in text
    assert 'data-count="failed">1<' in text
    viewer = web_client(c, role=Role.VIEWER).get(SETTINGS).text
    assert str(folder.resolve()) not in viewer and "a folder on the server" in viewer
    w.release()
    assert ">stopped<" in client.get(SETTINGS).text
