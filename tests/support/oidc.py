"""A real OpenID provider for tests: panva's ``oidc-provider`` (tests/support/oidc_provider,
installed by ``make install-dev`` with ``npm ci``) under Node on 127.0.0.1.

``serve_oidc_provider`` starts one on a free port with one confidential client, waits for its
discovery document and stops it afterwards. ``sign_in_at_provider`` plays the browser at the
provider: it follows the authorization URL through the development interactions (login as
any name, then consent, both plain HTML forms) and returns the query the provider sends back
to the redirect URI (``code``, ``state``, ``iss``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx
import pytest

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
CLIENT_ID = "relata-tests"
#: The kid of the provider's signing key (provider.js).
KEY_ID = "relata-test-1"
START_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class OidcProvider:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def serve_oidc_provider(redirect_uri: str, *, public: bool = False) -> Iterator[OidcProvider]:
    """The provider, its client registered with ``redirect_uri`` (``public``: a client with
    no secret, PKCE only). Skipped where Node or the npm packages are missing, a failure
    under CI."""
    node = shutil.which("node")
    if node is None:
        _missing("node is not installed (the OpenID provider runs under Node)")
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        _missing(f"npm packages missing: run `npm ci` in {PROVIDER_DIR} (make install-dev)")
    assert node is not None
    port = _free_port()
    secret = "" if public else secrets.token_urlsafe(24)
    env = {
        **os.environ,
        "OIDC_PORT": str(port),
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": secret,
        "OIDC_REDIRECT_URIS": redirect_uri,
    }
    proc = subprocess.Popen(
        [node, "provider.js"],
        cwd=PROVIDER_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                pytest.fail(f"the OpenID provider exited ({proc.returncode}): {err[-2000:]}")
            try:
                r = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2)
                if r.status_code == 200 and r.json().get("issuer") == issuer:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the OpenID provider did not serve its discovery document in time")
            time.sleep(0.1)
        yield OidcProvider(issuer, CLIENT_ID, secret, redirect_uri)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stderr:
            proc.stderr.close()


def sign_in_at_provider(authorization_url: str, login: str, redirect_uri: str) -> dict[str, str]:
    """Be the browser at the provider: log in as ``login``, consent, and return the query
    of the redirect back to ``redirect_uri`` (not followed: that is the app's callback)."""
    with httpx.Client(follow_redirects=False, timeout=10) as http:
        response = http.get(authorization_url)
        for _ in range(12):
            if response.status_code in (302, 303):
                target = urljoin(str(response.url), response.headers["location"])
                if target.startswith(redirect_uri):
                    return dict(parse_qsl(urlsplit(target).query))
                response = http.get(target)
            elif response.status_code == 200 and "/interaction/" in response.url.path:
                if 'name="login"' in response.text:
                    form = {"prompt": "login", "login": login, "password": "any"}
                elif 'value="consent"' in response.text:
                    form = {"prompt": "consent"}
                else:
                    raise AssertionError(f"unexpected provider page: {response.text[:500]}")
                response = http.post(str(response.url), data=form)
            else:
                raise AssertionError(
                    f"provider answered {response.status_code}: {response.text[:500]}"
                )
        raise AssertionError("the provider never redirected back")
