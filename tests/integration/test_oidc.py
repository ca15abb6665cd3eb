"""Federated sign-in against a real OpenID provider (panva's oidc-provider under Node,
tests/support/oidc.py), on SQLite (provisioning, replay and the races on PostgreSQL too): the
app's TestClient is the browser on Relata's side, httpx the browser at the provider.

Sign-in works end to end and provisions one user with a private workspace, which is all they
see; a tampered state, a missing or forged flow cookie, another attempt's nonce, a replayed
code, another issuer (configured, or in the callback) and a token signed by another key are
refused with nothing provisioned; two concurrent first sign-ins give one user and one
workspace.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import RSAKey

from relata.api.app import create_app
from relata.auth.oidc import FLOW_COOKIE, IdTokenVerifier, OidcService
from relata.auth.sessions import COOKIE_NAME
from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.errors import Unauthenticated
from relata.domain.vocabulary import AuditAction
from relata.storage.sql import migrate
from relata.web import web_routes
from tests.support.oidc import KEY_ID, OidcProvider, serve_oidc_provider, sign_in_at_provider

BASE_URL = "http://localhost"
REDIRECT_URI = f"{BASE_URL}/api/v1/auth/oidc/callback"
# One worker under pytest-xdist: one provider (a Node process) for the module.
pytestmark = pytest.mark.xdist_group("oidc")


@pytest.fixture(scope="module")
def op() -> Iterator[OidcProvider]:
    with serve_oidc_provider(REDIRECT_URI) as provider:
        yield provider


@pytest.fixture
def settings(tmp_path: Path, database_url: str, op: OidcProvider) -> Settings:
    return Settings(
        data_dir=str(tmp_path / "data"),
        database_url=database_url,
        oidc_issuer=op.issuer,
        oidc_client_id=op.client_id,
        oidc_client_secret=op.client_secret,
    )


@pytest.fixture
def oidc(container: Container) -> OidcService:
    service = container.oidc
    assert service is not None
    return service


def browser(c: Container) -> TestClient:
    return TestClient(create_app(c), base_url=BASE_URL, follow_redirects=False)


def start(client: TestClient) -> str:
    """GET start: the provider's authorization URL (the flow cookie is now in ``client``)."""
    r = client.get("/api/v1/auth/oidc/start")
    assert r.status_code == 302, r.text
    assert FLOW_COOKIE in client.cookies
    return r.headers["location"]


def replace_flow(client: TestClient, value: str) -> None:
    """Put ``value`` in place of the browser's flow cookie (as an attacker could)."""
    (jar_cookie,) = [k for k in client.cookies.jar if k.name == FLOW_COOKIE]
    client.cookies.delete(FLOW_COOKIE)
    client.cookies.set(FLOW_COOKIE, value, domain=jar_cookie.domain, path=jar_cookie.path)


def federated(c: Container) -> list[Any]:
    return [u for u in c.accounts.users() if u.oauth_provider is not None]


def sign_in(client: TestClient, login: str) -> dict[str, str]:
    """Start, sign in at the provider, and return the callback's query (not yet sent)."""
    return sign_in_at_provider(start(client), login, REDIRECT_URI)


@pytest.mark.both_dialects
def test_sign_in_works_end_to_end(c: Container, op: OidcProvider) -> None:
    workspaces_before = {w.id for w in c.repos.workspaces.list()}
    with browser(c) as client:
        url = start(client)
        assert url.startswith(op.issuer + "/auth?")
        asked = parse_qs(urlsplit(url).query)
        assert asked["code_challenge_method"] == ["S256"]
        assert asked["redirect_uri"] == [REDIRECT_URI]  # derived from the request
        assert len(asked["state"][0]) >= 32 and len(asked["nonce"][0]) >= 32
        assert "code_verifier" not in asked
        query = sign_in_at_provider(url, "alice", REDIRECT_URI)
        r = client.get("/api/v1/auth/oidc/callback", params=query)
        assert r.status_code == 303, r.text
        assert r.headers["location"] == "/"
        assert COOKIE_NAME in client.cookies and FLOW_COOKIE not in client.cookies
        me = client.get("/api/v1/auth/me")
        assert me.status_code == 200, me.text
        body = me.json()
    assert body["kind"] == "session"
    assert body["user"]["username"].startswith("alice-")
    assert body["user"]["display_name"] == "Test alice"
    # A private workspace, owned, and nothing else: not the default workspace.
    assert [w["role"] for w in body["workspaces"]] == ["owner"]
    assert body["workspace"]["id"] not in workspaces_before
    # Its slug is random: a global name must not tell that "alice" has an account (ADR 28).
    assert re.fullmatch(r"ws-[0-9a-f]{10}", body["workspace"]["slug"]), body["workspace"]
    assert "alice" not in body["workspace"]["slug"]
    (user,) = federated(c)
    assert (user.oauth_provider, user.oauth_subject, user.password_hash) == ("oidc", "alice", None)
    actions = [e.action for e in c.audit.list(body["workspace"]["id"])]
    assert AuditAction.WORKSPACE_CREATED in actions and AuditAction.SIGN_IN_SUCCEEDED in actions

    # The second sign-in of the subject finds the same user; no second workspace.
    with browser(c) as again:
        r = again.get("/api/v1/auth/oidc/callback", params=sign_in(again, "alice"))
        assert r.status_code == 303, r.text
        assert again.get("/api/v1/auth/me").json()["user"]["id"] == user.id
    assert len(federated(c)) == 1
    assert len(c.repos.workspaces.list()) == len(workspaces_before) + 1


def test_the_provisioned_user_sees_only_their_own_workspace(c: Container) -> None:
    default = c.workspaces.resolve()
    with browser(c) as client:
        assert client.get("/api/v1/auth/oidc/callback", params=sign_in(client, "bob")).is_redirect
        assert client.get("/api/v1/items").json()["items"] == []
        r = client.get("/api/v1/items", headers={"X-Relata-Workspace": default.slug})
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "not_found"


def refused(r: Any, status: int, c: Container) -> None:
    assert r.status_code == status, r.text
    assert set(r.json()["error"]) >= {"code", "message", "request_id"}
    assert COOKIE_NAME not in r.cookies
    assert federated(c) == []  # nothing provisioned


def test_a_tampered_state_is_refused(c: Container) -> None:
    with browser(c) as client:
        query = sign_in(client, "mallory")
        tampered = {**query, "state": query["state"][:-2] + "xx"}
        refused(client.get("/api/v1/auth/oidc/callback", params=tampered), 400, c)
        missing = {k: v for k, v in query.items() if k != "state"}
        refused(client.get("/api/v1/auth/oidc/callback", params=missing), 400, c)


def test_a_callback_without_this_browsers_attempt_is_refused(c: Container) -> None:
    """Login CSRF: an attacker's own code and state, sent to a victim's browser."""
    with browser(c) as attacker:
        query = sign_in(attacker, "mallory")
    with browser(c) as victim:
        refused(victim.get("/api/v1/auth/oidc/callback", params=query), 400, c)


def test_a_forged_flow_cookie_is_refused(c: Container) -> None:
    with browser(c) as client:
        query = sign_in(client, "mallory")
        body, mac = client.cookies[FLOW_COOKIE].split(".")
        replace_flow(client, f"{body}.{mac[::-1]}")
        refused(client.get("/api/v1/auth/oidc/callback", params=query), 400, c)


def test_another_attempts_nonce_is_refused(c: Container, oidc: OidcService) -> None:
    """The code and state of attempt A, but the nonce of attempt B: the provider's ID token
    carries A's nonce, so it is not the token this attempt asked for."""
    with browser(c) as first, browser(c) as second:
        query = sign_in(first, "mallory")
        start(second)
        flow_a = oidc.sealer.open(first.cookies[FLOW_COOKIE])
        flow_b = oidc.sealer.open(second.cookies[FLOW_COOKIE])
        assert flow_a["n"] != flow_b["n"]
        swapped = oidc.sealer.seal({**flow_a, "n": flow_b["n"]})
        replace_flow(first, swapped)
        r = first.get("/api/v1/auth/oidc/callback", params=query)
        refused(r, 401, c)
        assert "ID token" in r.json()["error"]["message"]


@pytest.mark.both_dialects
def test_a_replayed_callback_is_refused(c: Container) -> None:
    with browser(c) as client:
        query = sign_in(client, "alice")
        flow = client.cookies[FLOW_COOKIE]
        assert client.get("/api/v1/auth/oidc/callback", params=query).status_code == 303
    with browser(c) as replay:  # the same cookie and code again: the code is spent
        start(replay)
        replace_flow(replay, flow)
        r = replay.get("/api/v1/auth/oidc/callback", params=query)
        assert r.status_code == 401, r.text
        assert COOKIE_NAME not in r.cookies


def test_another_issuer_in_the_callback_is_refused(c: Container) -> None:
    """RFC 9207: the provider names itself in the callback; a mix-up names another."""
    with browser(c) as client:
        query = sign_in(client, "mallory")
        assert "iss" in query
        mixed = {**query, "iss": "https://evil.example"}
        refused(client.get("/api/v1/auth/oidc/callback", params=mixed), 400, c)


def test_a_configured_issuer_the_provider_does_not_claim_is_refused(
    tmp_path: Path, op: OidcProvider
) -> None:
    """Same provider, same keys, another issuer string (localhost, not 127.0.0.1): its
    discovery document names another issuer, so no attempt starts."""
    port = urlsplit(op.issuer).port
    settings = Settings(
        data_dir=str(tmp_path / "data"),
        oidc_issuer=f"http://localhost:{port}",
        oidc_client_id=op.client_id,
        oidc_client_secret=op.client_secret,
    )
    c = build(settings)
    try:
        migrate.upgrade(c.db)
        with browser(c) as client:
            r = client.get("/api/v1/auth/oidc/start")
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "not_configured"
        assert "issuer" in r.json()["error"]["message"]
    finally:
        c.close()


def provider_id_token(c: Container, oidc: OidcService, login: str) -> tuple[str, str]:
    """A real ID token from the provider, and the nonce it was asked for."""
    with browser(c) as client:
        query = sign_in(client, login)
        flow = oidc.sealer.open(client.cookies[FLOW_COOKIE])
    tokens = oidc.provider.exchange(query["code"], redirect_uri=flow["r"], verifier=flow["v"])
    return tokens["id_token"], flow["n"]


def test_a_real_id_token_is_refused_for_another_issuer_or_signer(
    c: Container, oidc: OidcService, op: OidcProvider
) -> None:
    id_token, nonce = provider_id_token(c, oidc, "alice")
    assert oidc.verifier.verify(id_token, nonce)["sub"] == "alice"
    for issuer in (f"http://localhost:{urlsplit(op.issuer).port}", op.issuer + "/"):
        other = IdTokenVerifier(
            issuer=issuer, client_id=op.client_id, keys=oidc.provider, clock=c.clock
        )
        with pytest.raises(Unauthenticated):
            other.verify(id_token, nonce)
    # The same claims signed by another key under the provider's key id.
    claims = jwt.decode(id_token, oidc.provider.keys()).claims
    forger = RSAKey.generate_key(2048, parameters={"kid": KEY_ID})
    forged = jwt.encode({"alg": "RS256", "kid": KEY_ID}, claims, forger, algorithms=["RS256"])
    with pytest.raises(Unauthenticated):
        oidc.verifier.verify(forged, nonce)
    # The signature is the provider's but one byte of the payload changed.
    head, payload, sig = id_token.split(".")
    flipped = payload[:-3] + ("A" if payload[-3] != "A" else "B") + payload[-2:]
    with pytest.raises(Unauthenticated):
        oidc.verifier.verify(f"{head}.{flipped}.{sig}", nonce)
    assert federated(c) == []


@pytest.mark.both_dialects
def test_two_concurrent_first_sign_ins_give_one_user_and_one_workspace(c: Container) -> None:
    before = len(c.repos.workspaces.list())
    clients = [browser(c) for _ in range(2)]
    queries = [sign_in(client, "carol") for client in clients]
    barrier = threading.Barrier(len(clients))
    answers: list[Any] = [None] * len(clients)

    def callback(i: int) -> None:
        barrier.wait()
        answers[i] = clients[i].get("/api/v1/auth/oidc/callback", params=queries[i])

    threads = [threading.Thread(target=callback, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert [a.status_code for a in answers] == [303, 303], [a.text for a in answers]
    ids = {client.get("/api/v1/auth/me").json()["user"]["id"] for client in clients}
    for client in clients:
        client.close()
    (user,) = federated(c)
    assert ids == {user.id}
    assert len(c.repos.workspaces.list()) == before + 1
    assert [m.role.value for m in c.accounts.memberships(user.id)] == ["owner"]


@pytest.mark.both_dialects
def test_racing_provisions_converge_on_the_index(c: Container, oidc: OidcService) -> None:
    """More first sign-ins than the request test, straight at the service: every caller
    gets the one user, exactly one of them created it."""
    before = len(c.repos.workspaces.list())
    claims = {"sub": "dave", "preferred_username": "dave", "iat": int(time.time())}
    barrier = threading.Barrier(4)
    results: list[Any] = []
    lock = threading.Lock()

    def provision() -> None:
        barrier.wait()
        got = oidc.user_for(claims)
        with lock:
            results.append(got)

    threads = [threading.Thread(target=provision) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4
    assert len({user.id for user, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, False, False, True]
    assert len(c.repos.workspaces.list()) == before + 1
    assert len(federated(c)) == 1


@pytest.fixture
def c(container: Container) -> Container:
    return container


def test_an_error_answer_from_the_provider_is_refused(c: Container) -> None:
    """The person declined at the provider: it sends ``error`` instead of a code."""
    with browser(c) as client:
        url = start(client)
        state = parse_qs(urlsplit(url).query)["state"][0]
        r = client.get(
            "/api/v1/auth/oidc/callback",
            params={"error": "access_denied", "state": state, "iss": c.settings.oidc_issuer},
        )
        refused(r, 401, c)
        assert "access_denied" in r.json()["error"]["message"]


def test_with_the_web_interface_a_refused_callback_is_a_page_saying_why(c: Container) -> None:
    """A person's browser lands on the callback: the refusal is the web's error page in the
    layout (status and reason as the API's), the flow cookie cleared, nobody signed in."""
    with TestClient(
        create_app(c, web=web_routes(c)), base_url=BASE_URL, follow_redirects=False
    ) as client:
        url = start(client)
        state = parse_qs(urlsplit(url).query)["state"][0]
        r = client.get(
            "/api/v1/auth/oidc/callback",
            params={"error": "access_denied", "state": state, "iss": c.settings.oidc_issuer},
        )
        assert r.status_code == 401
        assert r.headers["content-type"].startswith("text/html")
        assert "access_denied" in r.text and 'href="/static/relata.css"' in r.text
        assert r.headers["cache-control"] == "no-store"
        assert FLOW_COOKIE not in client.cookies
        assert federated(c) == []


def test_federated_sign_in_is_off_without_an_issuer(tmp_path: Path) -> None:
    c = build(Settings(data_dir=str(tmp_path / "data")))
    try:
        assert c.oidc is None
        with browser(c) as client:
            for path in ("/api/v1/auth/oidc/start", "/api/v1/auth/oidc/callback"):
                r = client.get(path)
                assert r.status_code == 404, r.text
                assert r.json()["error"]["code"] == "not_found"
    finally:
        c.close()


def test_a_public_clients_sign_in_may_finish_in_another_process(
    tmp_path: Path, database_url: str
) -> None:
    """A client without a secret: two containers on one database (two HTTP processes of
    ``relata serve --processes 2``) share the flow cookie's key, so the callback may reach
    the process that did not start the attempt (docs/decisions/0036)."""
    with serve_oidc_provider(REDIRECT_URI, public=True) as public:
        assert public.client_secret == ""
        settings = Settings(
            data_dir=str(tmp_path / "data"),
            database_url=database_url,
            oidc_issuer=public.issuer,
            oidc_client_id=public.client_id,
        )
        first, second = build(settings), build(settings)
        try:
            migrate.upgrade(first.db)
            with browser(first) as starting, browser(second) as finishing:
                query = sign_in_at_provider(start(starting), "bob", REDIRECT_URI)
                finishing.cookies.set(FLOW_COOKIE, starting.cookies[FLOW_COOKIE])
                r = finishing.get("/api/v1/auth/oidc/callback", params=query)
                assert r.status_code == 303, r.text
                me = finishing.get("/api/v1/auth/me")
                assert me.status_code == 200 and me.json()["user"]["username"].startswith("bob-")
        finally:
            first.close()
            second.close()
