"""What Relata reads from an OpenID provider is bounded (issue 28): a real local HTTP server
(not the certified provider of test_oidc.py, which answers properly) serves an oversized
discovery document, JWKS or token response, declared or streamed without a length, a body
that trickles, and a redirect. Each is refused with a clear error naming what and the limit,
after reading at most about the limit (the server counts what it could send), and nothing is
provisioned."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.auth.oidc import (
    MAX_DISCOVERY_BYTES,
    MAX_JWKS_BYTES,
    MAX_TOKEN_RESPONSE_BYTES,
    OidcConfig,
    ProviderClient,
)
from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.clock import SystemClock
from relata.domain.errors import Unavailable
from relata.providers.http import make_client
from relata.storage.sql import migrate

#: What an oversized answer would hold in all: far more than any limit, so a client that
#: read it whole would be caught by the count of what was sent.
HUGE = 256 * 1024 * 1024
CHUNK = 64 * 1024
#: Loopback socket buffers let a server get a few MiB out before a reader that stopped reading
#: blocks it; reading it whole would be ``HUGE``.
SENT_BOUND = 48 * 1024 * 1024
#: A trickle of one byte every 0.2 s: two minutes for the whole body.
TRICKLE_BYTES = 600


@dataclass
class Provider:
    """How each path answers: ``"ok"``, ``"huge"`` (declared length), ``"stream"`` (no
    length), ``"trickle"`` (a byte every 0.2 s) or ``"redirect"``."""

    modes: dict[str, str] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    issuer: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def document(self, path: str) -> bytes:
        if path == "/.well-known/openid-configuration":
            doc: dict[str, Any] = {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/auth",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "code_challenge_methods_supported": ["S256"],
            }
        elif path == "/jwks":
            doc = {"keys": []}
        else:
            doc = {"id_token": "x", "token_type": "Bearer"}
        return json.dumps(doc).encode()


def _handler(provider: Provider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self._answer()

        def _count(self, n: int) -> None:
            with provider.lock:
                provider.sent[self.path] = provider.sent.get(self.path, 0) + n

        def _answer(self) -> None:
            mode = provider.modes.get(self.path, "ok")
            try:
                if mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if mode == "ok":
                    body = provider.document(self.path)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if mode == "huge":
                    self.send_header("Content-Length", str(HUGE))
                self.end_headers()
                if mode == "trickle":
                    for _ in range(TRICKLE_BYTES):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        self._count(1)
                        time.sleep(0.2)
                    return
                # A JSON string that never ends: valid as far as it goes.
                self.wfile.write(b'{"issuer": "')
                block = b"x" * CHUNK
                for _ in range(HUGE // CHUNK):
                    self.wfile.write(block)
                    self._count(CHUNK)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what the test wants

    return Handler


@pytest.fixture
def provider() -> Iterator[Provider]:
    p = Provider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(p))
    server.daemon_threads = True
    p.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield p
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def c(tmp_path: Path, provider: Provider) -> Iterator[Container]:
    settings = Settings(
        data_dir=str(tmp_path / "data"),
        oidc_issuer=provider.issuer,
        oidc_client_id="relata",
        oidc_client_secret="a-client-secret",
    )
    container = build(settings)
    migrate.upgrade(container.db)
    try:
        yield container
    finally:
        container.close()


def _start(c: Container) -> Any:
    with TestClient(create_app(c), base_url="http://localhost", follow_redirects=False) as client:
        return client.get("/api/v1/auth/oidc/start")


@pytest.mark.parametrize("mode", ["huge", "stream"])
def test_an_oversized_discovery_document_is_refused_naming_the_limit(
    c: Container, provider: Provider, mode: str
) -> None:
    provider.modes["/.well-known/openid-configuration"] = mode
    r = _start(c)
    assert r.status_code == 503, r.text
    message = r.json()["error"]["message"]
    assert message == (
        f"the OpenID provider sent more than {MAX_DISCOVERY_BYTES} bytes "
        "(discovery document): refused"
    )
    assert "retry-after" not in r.headers  # asking again will not make it smaller
    assert provider.sent.get("/.well-known/openid-configuration", 0) < SENT_BOUND
    assert c.accounts.users() == []


@pytest.mark.parametrize("mode", ["huge", "stream"])
def test_an_oversized_jwks_is_refused_naming_the_limit(
    c: Container, provider: Provider, mode: str
) -> None:
    provider.modes["/jwks"] = mode
    assert c.oidc is not None
    assert _start(c).status_code == 302  # the discovery document itself is fine
    with pytest.raises(Unavailable) as caught:
        c.oidc.provider.keys()
    assert caught.value.message == (
        f"the OpenID provider sent more than {MAX_JWKS_BYTES} bytes (JWKS): refused"
    )
    assert provider.sent.get("/jwks", 0) < SENT_BOUND


def test_an_oversized_token_response_is_refused_naming_the_limit(
    c: Container, provider: Provider
) -> None:
    provider.modes["/token"] = "stream"
    assert c.oidc is not None
    with pytest.raises(Unavailable) as caught:
        c.oidc.provider.exchange("a-code", redirect_uri="http://localhost/cb", verifier="v" * 43)
    assert caught.value.message == (
        f"the OpenID provider sent more than {MAX_TOKEN_RESPONSE_BYTES} bytes "
        "(token endpoint): refused"
    )
    assert "a-code" not in caught.value.message
    assert provider.sent.get("/token", 0) < SENT_BOUND


def test_a_trickling_provider_is_given_up_on_within_the_timeout(provider: Provider) -> None:
    provider.modes["/.well-known/openid-configuration"] = "trickle"
    config = OidcConfig(issuer=provider.issuer, client_id="relata", timeout=1.0)
    client = ProviderClient(config, SystemClock(), make_client(config.timeout))
    try:
        with pytest.raises(Unavailable) as caught:
            client.metadata()
    finally:
        client.close()
    assert caught.value.message == "the OpenID provider did not answer (discovery document)"
    assert caught.value.retry_after is not None
    # Each byte came well within any per-read timeout: only a bound on the whole request
    # stops it before the end of the trickle.
    assert provider.sent["/.well-known/openid-configuration"] < TRICKLE_BYTES


def test_a_redirect_from_the_provider_is_not_followed(c: Container, provider: Provider) -> None:
    provider.modes["/.well-known/openid-configuration"] = "redirect"
    r = _start(c)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["message"] == (
        "the OpenID provider's discovery document could not be used"
    )
