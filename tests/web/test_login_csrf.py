"""Login CSRF: no other page can sign a browser in (to an account of its choosing).

- An unsafe request's ``Origin`` must be the request's own origin: scheme, host *and port*
  (a page on another port of localhost is same-site to a browser, not same-origin).
- The sign-in form carries the token of the browser's pre-session cookie; a sign-in without
  it, or with another browser's, is refused with the form shown again and nobody signed in.
- A sign-in refused for too many failures says when to retry (``Retry-After``), on the web
  page as in the API.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.web import web_routes
from relata.web.pages.auth import FORM_EXPIRED
from tests.support.api import PASSWORD, make_user
from tests.support.ingest import built
from tests.support.web import csrf, sign_in, web_app_client

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", login_max_failures=2) as container:
        make_user(container, username="ann")
        yield container


def _signed_in(client: TestClient) -> bool:
    return client.get("/api/v1/auth/me").status_code == 200


def _client(c: Container, base_url: str) -> TestClient:
    return TestClient(create_app(c, web=web_routes(c)), base_url=base_url, follow_redirects=False)


# ---------------------------------------------------------------- Origin: scheme, host, port
@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:3000",  # the probe: another port of the same host
        "https://localhost",  # another scheme
        "http://127.0.0.1",  # another name for the same machine is another origin
        "http://localhost:80.evil.example",
        "http://localhost:x",
        "http://user@localhost",
    ],
)
def test_a_sign_in_from_another_origin_is_refused_before_the_handler(
    c: Container, origin: str
) -> None:
    client = web_app_client(c)
    token = csrf(client, "/sign-in")
    data = {"username": "ann", "password": PASSWORD, "csrf_token": token}
    r = client.post("/sign-in", data=data, headers={"Origin": origin})
    assert r.status_code == 403, r.text
    assert "cross-origin request refused" in r.json()["error"]["message"]
    assert "relata_session" not in r.headers.get("set-cookie", "")
    api = client.post(
        "/api/v1/auth/sign-in",
        data={"username": "ann", "password": PASSWORD},
        headers={"Origin": origin},
    )
    assert api.status_code == 403 and "set-cookie" not in api.headers
    assert not _signed_in(client)


def test_a_sign_in_from_the_same_origin_passes(c: Container) -> None:
    client = web_app_client(c)
    data = {"username": "ann", "password": PASSWORD, "csrf_token": csrf(client, "/sign-in")}
    r = client.post("/sign-in", data=data, headers={"Origin": "http://localhost"})
    assert r.status_code == 303 and _signed_in(client)


@pytest.mark.parametrize(
    ("base_url", "same", "other"),
    [
        ("http://localhost:8080", "http://localhost:8080", "http://localhost"),
        ("http://[::1]:8080", "http://[::1]:8080", "http://[::1]:8081"),
        ("https://localhost", "https://localhost:443", "http://localhost"),
        ("http://127.0.0.1", "http://127.0.0.1:80", "https://127.0.0.1"),
    ],
)
def test_the_origin_is_compared_with_the_scheme_host_and_port_the_request_came_to(
    c: Container, base_url: str, same: str, other: str
) -> None:
    client = _client(c, base_url)
    token = csrf(client, "/sign-in")
    data = {"username": "ann", "password": PASSWORD, "csrf_token": token}
    refused = client.post("/sign-in", data=data, headers={"Origin": other})
    assert refused.status_code == 403, (other, refused.text)
    ok = client.post("/sign-in", data=data, headers={"Origin": same})
    assert ok.status_code == 303, (same, ok.text)


def test_an_https_origin_over_plain_http_names_the_trusted_proxies_setting(c: Container) -> None:
    client = _client(c, "http://localhost")
    r = client.post(
        "/api/v1/auth/sign-in",
        json={"username": "ann", "password": PASSWORD},
        headers={"Origin": "https://localhost"},
    )
    assert r.status_code == 403 and "RELATA_TRUSTED_PROXIES" in r.json()["error"]["message"]


# ---------------------------------------------------------------- the pre-session token
def test_the_sign_in_page_sets_a_strict_short_lived_pre_session_cookie(c: Container) -> None:
    client = web_app_client(c)
    r = client.get("/sign-in")
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("relata_signin=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=7200" in cookie
    assert 'name="csrf_token"' in r.text
    again = client.get("/sign-in")  # the same browser keeps its cookie: every tab's form works
    assert "set-cookie" not in again.headers
    assert csrf(client, "/sign-in") == csrf(client, "/sign-in")


def test_over_https_the_pre_session_cookie_is_secure_and_host_prefixed(c: Container) -> None:
    client = _client(c, "https://localhost")
    cookie = client.get("/sign-in").headers["set-cookie"]
    assert cookie.startswith("__Host-relata_signin=") and "Secure" in cookie
    assert sign_in(client, "ann").status_code == 303 and _signed_in(client)


@pytest.mark.parametrize("token", [None, "", "forged"])
def test_a_sign_in_without_the_forms_token_signs_nobody_in(c: Container, token: str | None) -> None:
    client = web_app_client(c)
    csrf(client, "/sign-in")  # the browser holds a pre-session cookie
    data = {"username": "ann", "password": PASSWORD}
    if token is not None:
        data["csrf_token"] = token
    r = client.post("/sign-in", data=data)
    assert r.status_code == 403 and r.headers["content-type"].startswith("text/html")
    assert FORM_EXPIRED in r.text and 'value="ann"' in r.text  # the form again, to retry
    assert "relata_session" not in r.headers.get("set-cookie", "")
    assert not _signed_in(client)
    assert sign_in(client, "ann").status_code == 303 and _signed_in(client)  # the retry works


def test_another_browsers_token_does_not_sign_this_one_in(c: Container) -> None:
    """An attacker's page can post its own copy of the form's token, but not the cookie that
    goes with it: this browser's cookie is another."""
    attacker = web_app_client(c)
    victim = web_app_client(c)
    victim.get("/sign-in")
    planted = {"username": "ann", "password": PASSWORD, "csrf_token": csrf(attacker, "/sign-in")}
    r = victim.post("/sign-in", data=planted)
    assert r.status_code == 403 and not _signed_in(victim)
    without_cookie = web_app_client(c).post("/sign-in", data=planted)
    assert without_cookie.status_code == 403
    assert without_cookie.headers["set-cookie"].startswith("relata_signin=")  # to retry


def test_a_sign_in_replaces_the_pre_session_cookie(c: Container) -> None:
    client = web_app_client(c)
    r = sign_in(client, "ann")
    assert r.status_code == 303
    cookies = r.headers.get_list("set-cookie")
    assert any(h.startswith("relata_session=") for h in cookies)
    assert any(h.startswith("relata_signin=") and "Max-Age=0" in h for h in cookies)


# ---------------------------------------------------------------- too many failures
def test_the_web_sign_ins_429_says_when_to_retry(c: Container) -> None:
    client = web_app_client(c)
    for _ in range(2):  # login_max_failures=2
        assert sign_in(client, "ann", "wrong").status_code == 401
    r = sign_in(client, "ann", "wrong")
    assert r.status_code == 429 and r.headers["content-type"].startswith("text/html")
    assert int(r.headers["retry-after"]) > 0
    assert 'role="alert"' in r.text
    api = client.post("/api/v1/auth/sign-in", json={"username": "ann", "password": "wrong"})
    assert api.status_code == 429 and int(api.headers["retry-after"]) > 0
