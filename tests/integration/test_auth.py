"""People and access on SQLite (the session and token storage on PostgreSQL too): sessions (idle
and absolute expiry on the manual clock, rotation, revocation at sign-out and password change),
CSRF, sign-in rate limiting and indistinguishable failures, API tokens (never stored or logged,
revoked at once, bound to their workspace), host and origin checks, viewers' writes, and 401 on
every route that is not public."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.auth.accounts import ADDRESS_FACTOR
from relata.auth.passwords import PRODUCTION_COST, Argon2Hasher
from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.ports import PasswordHasher
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from relata.storage.sql import migrate
from tests.support.api import PASSWORD, anonymous_client, api_client, make_user
from tests.support.passwords import TEST_HASHER

HOUR = 3600.0
DAY = 24 * HOUR


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@contextmanager
def _built(
    settings: Settings, clock: ManualClock, hasher: PasswordHasher = TEST_HASHER
) -> Iterator[Container]:
    container = build(
        settings.replace(embedding_provider="none", login_max_failures=3),
        clock=clock,
        password_hasher=hasher,
    )
    migrate.upgrade(container.db)
    container.workspaces.ensure(settings.default_workspace)
    try:
        yield container
    finally:
        container.close()


@pytest.fixture
def c(settings: Settings, clock: ManualClock) -> Iterator[Container]:
    with _built(settings, clock) as container:
        yield container


class RecordingHasher(Argon2Hasher):
    """Production's Argon2id, noting the parameters of every hash it verifies against."""

    def __init__(self) -> None:
        super().__init__()
        self.verified: list[str] = []

    def verify(self, stored_hash: str, password: str) -> bool:
        self.verified.append(stored_hash.split("$")[3])  # $argon2id$v=19$m=...,t=...,p=...$
        return super().verify(stored_hash, password)


def _client(c: Container) -> TestClient:
    return anonymous_client(c, raise_server_exceptions=False)


def _sign_in(client: TestClient, username: str, password: str = PASSWORD) -> str:
    r = client.post("/api/v1/auth/sign-in", json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    csrf: str = r.json()["csrf_token"]
    return csrf


def _items(c: Container) -> int:
    return len(c.repos.items.list(c.workspaces.resolve().id, limit=100))


# ---------------------------------------------------------------- sessions
def test_sign_in_sets_a_session_cookie_and_me_answers(c: Container) -> None:
    user = make_user(c, username="ada")
    with _client(c) as client:
        r = client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": PASSWORD})
        assert r.status_code == 200, r.text
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("relata_session=")
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain HTTP here; HTTPS gets __Host- and Secure
        me = client.get("/api/v1/auth/me").json()
        assert me["user"]["id"] == user.id and me["kind"] == "session"
        assert me["workspace"]["slug"] == "default" and me["workspace"]["role"] == "owner"
        assert me["csrf_token"] == r.json()["csrf_token"]
        assert "password" not in r.text and "hash" not in r.text


def test_over_https_the_cookie_is_secure_and_host_prefixed(c: Container) -> None:
    make_user(c, username="ada")
    with TestClient(create_app(c), base_url="https://localhost") as client:
        r = client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": PASSWORD})
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("__Host-relata_session=") and "Secure" in cookie
        assert client.get("/api/v1/auth/me").status_code == 200


def test_a_form_sign_in_redirects_home(c: Container) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        r = client.post(
            "/api/v1/auth/sign-in",
            data={"username": "ada", "password": PASSWORD},
            follow_redirects=False,
        )
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert client.get("/api/v1/auth/me").status_code == 200


@pytest.mark.both_dialects
def test_a_session_ends_after_the_idle_time_and_use_moves_it_on(
    c: Container, clock: ManualClock
) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        _sign_in(client, "ada")
        for _ in range(3):  # used every 11 hours: alive after 33 hours > the 12 h idle time
            clock.advance(11 * HOUR)
            assert client.get("/api/v1/auth/me").status_code == 200
        clock.advance(12 * HOUR + 1)
        r = client.get("/api/v1/auth/me")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.both_dialects
def test_a_session_ends_at_its_absolute_expiry_however_used(
    c: Container, clock: ManualClock
) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        _sign_in(client, "ada")
        for _ in range(16):  # 16 x 10 h = 160 h < 168 h = 7 days
            clock.advance(10 * HOUR)
            assert client.get("/api/v1/auth/me").status_code == 200
        clock.advance(8 * HOUR)  # 168 h
        assert client.get("/api/v1/auth/me").status_code == 401


@pytest.mark.both_dialects
def test_sign_in_rotates_the_token_and_never_promotes_a_planted_one(c: Container) -> None:
    make_user(c, username="ada")
    creds = {"username": "ada", "password": PASSWORD}
    planted = {"Cookie": "relata_session=rs_planted-by-an-attacker"}
    with _client(c) as client:
        first = client.post("/api/v1/auth/sign-in", json=creds, headers=planted)
        second = client.post("/api/v1/auth/sign-in", json=creds)
    one, two = first.cookies["relata_session"], second.cookies["relata_session"]
    assert "rs_planted-by-an-attacker" not in (one, two) and one != two
    with _client(c) as other:
        assert other.get("/api/v1/auth/me", headers=planted).status_code == 401
        other.cookies.set("relata_session", one)
        assert other.get("/api/v1/auth/me").status_code == 200  # both sessions live on


@pytest.mark.both_dialects
def test_sign_out_revokes_the_session_at_once(c: Container) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        csrf = _sign_in(client, "ada")
        token = client.cookies.get("relata_session")
        assert client.post("/api/v1/auth/sign-out").status_code == 403  # no CSRF token
        r = client.post("/api/v1/auth/sign-out", headers={"X-CSRF-Token": csrf})
        assert r.status_code == 204
    with _client(c) as replay:
        replay.cookies.set("relata_session", token or "")
        assert replay.get("/api/v1/auth/me").status_code == 401
    events = c.audit.list(c.workspaces.resolve().id, action=AuditAction.SIGNED_OUT)
    assert len(events) == 1


@pytest.mark.both_dialects
def test_a_password_change_ends_every_session_of_the_user(c: Container) -> None:
    user = make_user(c, username="ada")
    with _client(c) as one, _client(c) as two:
        _sign_in(one, "ada")
        _sign_in(two, "ada")
        assert c.accounts.change_password(user.id, "a brand new password!") == 2
        assert one.get("/api/v1/auth/me").status_code == 401
        assert two.get("/api/v1/auth/me").status_code == 401
        _sign_in(one, "ada", "a brand new password!")


@pytest.mark.both_dialects
def test_expired_sessions_are_purged(c: Container, clock: ManualClock) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        _sign_in(client, "ada")
        clock.advance(8 * DAY)
        assert c.accounts.sessions.purge() == 1
    with c.db.read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM sessions")).scalar_one() == 0


# ---------------------------------------------------------------- CSRF
def test_a_cookie_write_without_the_right_csrf_token_is_403_and_changes_nothing(
    c: Container,
) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        csrf = _sign_in(client, "ada")
        body = {"text": "A note about herons.", "title": "Herons"}
        # The right token with its last character changed (never to itself: a 1-in-16 flake).
        near = csrf[:-1] + ("1" if csrf[-1] == "0" else "0")
        for headers in ({}, {"X-CSRF-Token": "wrong"}, {"X-CSRF-Token": near}):
            r = client.post("/api/v1/items", json=body, headers=headers)
            assert r.status_code == 403, r.text
            assert (
                r.json()["error"]["code"] == "forbidden" and "CSRF" in r.json()["error"]["message"]
            )
        assert _items(c) == 0
        r = client.post("/api/v1/items", json=body, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 201, r.text
        assert _items(c) == 1


def test_bearer_requests_need_no_csrf_token(c: Container) -> None:
    with api_client(c) as client:
        r = client.post("/api/v1/items", json={"text": "Egrets.", "title": "Egrets"})
        assert r.status_code == 201, r.text


# ---------------------------------------------------------------- sign-in failures
def test_unknown_user_and_wrong_password_get_the_same_answer_at_the_same_cost(
    settings: Settings, clock: ManualClock
) -> None:
    """The same response, and one Argon2id verification at production cost for each: an
    unknown user is checked against a dummy hash with the real hashes' parameters."""
    hasher = RecordingHasher()
    with _built(settings, clock, hasher) as c, _client(c) as client:
        make_user(c, username="ada")
        answers = []
        for username, password in (("ada", "not the password at all"), ("nobody", PASSWORD)):
            before = len(hasher.verified)
            r = client.post(
                "/api/v1/auth/sign-in", json={"username": username, "password": password}
            )
            err = r.json()["error"]
            answers.append((r.status_code, err["code"], err["message"], sorted(err)))
            assert "set-cookie" not in r.headers
            assert len(hasher.verified) == before + 1
        assert answers[0] == answers[1]
        assert answers[0][0] == 401
        cost = PRODUCTION_COST
        production = f"m={cost.memory_kib},t={cost.time_cost},p={cost.parallelism}"
        assert hasher.verified == [production, production]


def test_rate_limiting_engages_after_the_failures_and_releases_after_the_window(
    c: Container, clock: ManualClock
) -> None:
    make_user(c, username="ada")
    with _client(c) as client:
        for _ in range(3):  # login_max_failures=3 in this fixture
            r = client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": "nope"})
            assert r.status_code == 401
        r = client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": PASSWORD})
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
        assert 0 < int(r.headers["retry-after"]) <= 900
        clock.advance(901)
        _sign_in(client, "ada")


def test_the_client_address_is_limited_across_accounts(c: Container) -> None:
    """One address (an office behind a proxy) may fail ADDRESS_FACTOR times as often as one
    account before everyone there is refused."""
    make_user(c, username="ada")
    with _client(c) as client:
        names = [f"x{n}" for n in range(ADDRESS_FACTOR * 3)]  # login_max_failures=3
        for name in names[:3]:
            client.post("/api/v1/auth/sign-in", json={"username": name, "password": "nope"})
        _sign_in(client, "ada")  # others' typos do not lock ada out
        for name in names[3:]:
            client.post("/api/v1/auth/sign-in", json={"username": name, "password": "nope"})
        r = client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": PASSWORD})
        assert r.status_code == 429
        assert "try again in 15 minutes" in r.json()["error"]["message"]


def test_failed_and_successful_sign_ins_are_audited(c: Container) -> None:
    user = make_user(c, username="ada")
    with _client(c) as client:
        client.post("/api/v1/auth/sign-in", json={"username": "ada", "password": "nope"})
        _sign_in(client, "ada")
    events = c.audit.list(c.workspaces.resolve().id)
    actions = [e.action for e in events if e.actor_user_id == user.id]
    assert actions.count(AuditAction.SIGN_IN_FAILED) == 1
    assert actions.count(AuditAction.SIGN_IN_SUCCEEDED) == 1


# ---------------------------------------------------------------- tokens
def test_a_token_secret_is_never_stored_nor_logged(
    c: Container, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with api_client(c) as client:
        r = client.post("/api/v1/tokens", json={"name": "script", "role": "editor"})
        assert r.status_code == 201, r.text
        secret = r.json()["token"]
        assert secret.startswith(f"rl_{r.json()['prefix']}_")
        listed = client.get("/api/v1/tokens").json()
        assert all("token" not in t for t in listed) and secret not in str(listed)
        client.get("/api/v1/items", headers={"Authorization": f"Bearer {secret}"})
    with c.db.read() as conn:
        rows = conn.execute(sa.text("SELECT * FROM api_tokens")).all()
        events = conn.execute(sa.text("SELECT * FROM audit_events")).all()
    dumped = repr(rows) + repr(events)
    # The secret part is URL-safe base64 and may itself contain "_": split at the first two only.
    secret_part = secret.split("_", 2)[2]
    assert len(secret_part) == 43
    assert secret not in dumped and secret_part not in dumped
    assert secret not in caplog.text


@pytest.mark.both_dialects
def test_a_revoked_token_is_refused_at_once(c: Container) -> None:
    with api_client(c) as client:
        made = client.post("/api/v1/tokens", json={"name": "short-lived"}).json()
        bearer = {"Authorization": f"Bearer {made['token']}"}
        assert client.get("/api/v1/items", headers=bearer).status_code == 200
        assert client.delete(f"/api/v1/tokens/{made['id']}", headers=bearer).status_code == 409
        assert client.delete(f"/api/v1/tokens/{made['id']}").status_code == 204
        assert client.get("/api/v1/items", headers=bearer).status_code == 401
    ws = c.workspaces.resolve().id
    assert len(c.audit.list(ws, action=AuditAction.TOKEN_REVOKED)) == 1


@pytest.mark.both_dialects
def test_an_expired_token_is_refused(c: Container, clock: ManualClock) -> None:
    with api_client(c) as client:
        until = (clock.now().replace(microsecond=0)).isoformat().replace("+00:00", "Z")
        r = client.post("/api/v1/tokens", json={"name": "past", "expires_at": until})
        assert r.status_code == 400 and r.json()["error"]["field"] == "expires_at"
        clock_later = clock.now().timestamp() + HOUR
        from datetime import UTC, datetime

        later = datetime.fromtimestamp(clock_later, UTC).isoformat()
        made = client.post("/api/v1/tokens", json={"name": "hour", "expires_at": later}).json()
        bearer = {"Authorization": f"Bearer {made['token']}"}
        assert client.get("/api/v1/items", headers=bearer).status_code == 200
        clock.advance(HOUR)
        assert client.get("/api/v1/items", headers=bearer).status_code == 401


def test_a_token_cannot_be_minted_above_its_creators_role(c: Container) -> None:
    with api_client(c, role=Role.EDITOR) as client:
        r = client.post("/api/v1/tokens", json={"name": "up", "role": "owner"})
        assert r.status_code == 403


@pytest.mark.both_dialects
def test_a_token_of_workspace_a_cannot_reach_b(c: Container) -> None:
    b, _ = c.workspaces.ensure("b")
    theirs = c.ingest.ingest(b.id, IngestRequest(text="B's private note.", title="Theirs"))
    with api_client(c) as client:
        missing = client.get("/api/v1/items/00000000-0000-4000-8000-000000000000")
        other = client.get(f"/api/v1/items/{theirs.id}")
        assert other.status_code == missing.status_code == 404
        assert other.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
        r = client.get("/api/v1/items", headers={"X-Relata-Workspace": "b"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert client.get("/api/v1/tokens").json() != []  # its own workspace's, not B's
    with api_client(c, workspace=b) as client_b:
        [token_b] = client_b.get("/api/v1/tokens").json()
    with api_client(c) as client:
        assert client.delete(f"/api/v1/tokens/{token_b['id']}").status_code == 404


def test_a_session_may_pick_a_workspace_it_is_a_member_of_and_no_other(c: Container) -> None:
    user = make_user(c, username="ada")
    shared, _ = c.workspaces.ensure("shared")
    c.workspaces.ensure("secret")
    c.accounts.add_member(shared.id, user.id, Role.VIEWER)
    with _client(c) as client:
        _sign_in(client, "ada")
        r = client.get("/api/v1/workspaces/current", headers={"X-Relata-Workspace": "shared"})
        assert r.status_code == 200 and r.json()["slug"] == "shared"
        secret = client.get("/api/v1/items", headers={"X-Relata-Workspace": "secret"})
        nowhere = client.get("/api/v1/items", headers={"X-Relata-Workspace": "nowhere"})
        assert secret.status_code == nowhere.status_code == 404
        me = client.get("/api/v1/auth/me").json()
        assert {w["slug"]: w["role"] for w in me["workspaces"]} == {
            "default": "owner",
            "shared": "viewer",
        }


# ---------------------------------------------------------------- roles
def test_a_viewer_reads_but_cannot_write(c: Container) -> None:
    ws = c.workspaces.resolve().id
    item = c.ingest.ingest(ws, IngestRequest(text="A note on cormorants.", title="Cormorants"))
    with api_client(c, role=Role.VIEWER) as viewer:
        assert viewer.get("/api/v1/items").status_code == 200
        for method, path, kw in (
            ("POST", "/api/v1/items", {"json": {"text": "x", "title": "x"}}),
            ("DELETE", f"/api/v1/items/{item.id}", {}),
            ("POST", f"/api/v1/items/{item.id}/reprocess", {}),
            ("POST", "/api/v1/relationships/x/review", {"json": {"decision": "confirm"}}),
        ):
            r = viewer.request(method, path, **kw)
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["error"]["code"] == "forbidden"
            assert "viewer" in r.json()["error"]["message"]
        assert viewer.get("/api/v1/audit").status_code == 403  # owners only
        r = viewer.post("/api/v1/tokens", json={"name": "mine"})
        assert r.status_code == 201 and r.json()["role"] == "viewer"
    assert _items(c) == 1


# ---------------------------------------------------------------- host and origin
def test_a_cross_origin_upload_is_refused(c: Container) -> None:
    with api_client(c) as client:
        body = {"text": "Planted.", "title": "Planted"}
        for headers in (
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
            {"Origin": "null", "Sec-Fetch-Site": "same-site"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            r = client.post("/api/v1/items", json=body, headers=headers)
            assert r.status_code == 403, (headers, r.text)
            assert r.json()["error"]["code"] == "forbidden"
        assert _items(c) == 0
        ok = client.post("/api/v1/items", json=body, headers={"Origin": "http://localhost"})
        assert ok.status_code == 201, ok.text
        # A same-origin form post under our Referrer-Policy: no-referrer: Chromium sends
        # Origin: null, and Sec-Fetch-Site (which no page can set) says it is same-origin.
        form_like = {"Origin": "null", "Sec-Fetch-Site": "same-origin"}
        again = client.post("/api/v1/items", json={**body, "text": "Other."}, headers=form_like)
        assert again.status_code == 201, again.text


def test_a_host_not_allowed_is_refused_before_any_handler(c: Container) -> None:
    with api_client(c) as client:
        for host in ("evil.example:8080", "evil.example", "localhost.evil.example"):
            r = client.get("/api/v1/items", headers={"Host": host})
            assert r.status_code == 400, host
            assert r.json()["error"]["code"] == "invalid_request"
        assert client.get("/healthz", headers={"Host": "evil.example"}).status_code == 400
        for host in ("127.0.0.1:8080", "[::1]:9000", "localhost"):
            assert client.get("/api/v1/items", headers={"Host": host}).status_code == 200, host


# ---------------------------------------------------------------- every route
PUBLIC = {
    ("POST", "/api/v1/auth/sign-in"),
    ("GET", "/api/v1/version"),
    ("GET", "/api/v1/auth/oidc/start"),
    ("GET", "/api/v1/auth/oidc/callback"),
}


def test_every_api_route_but_the_public_ones_requires_a_principal(c: Container) -> None:
    """Every operation of the OpenAPI document (so a new route cannot be missed)."""
    app = create_app(c)
    paths = app.openapi()["paths"]
    operations = [
        (method.upper(), path, op)
        for path, item in paths.items()
        if path.startswith("/api/v1")
        for method, op in item.items()
    ]
    assert len(operations) > 20
    with TestClient(app, base_url="http://localhost", raise_server_exceptions=False) as client:
        for method, path, op in operations:
            url = path.replace("{", "").replace("}", "")  # any id will do
            r = client.request(method, url)
            if (method, path) in PUBLIC:
                assert op["security"] == [] and r.status_code != 401, (method, path)
                continue
            assert "security" not in op and "401" in op["responses"], (method, path)
            assert r.status_code == 401, (method, path, r.status_code)
            assert r.json()["error"]["code"] == "unauthorized"
            bad = client.request(method, url, headers={"Authorization": "Bearer rl_x"})
            assert bad.status_code == 401, (method, path)
    for public in ("/", "/docs", "/api/v1/openapi.json", "/healthz", "/readyz"):
        with anonymous_client(c) as client:
            assert client.get(public).status_code == 200, public
