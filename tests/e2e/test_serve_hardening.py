"""The real ``relata serve`` on loopback, spoken to over raw sockets as a hostile client would:

- a body declared at 200 MB by a caller without credentials is refused (413) before one byte
  of it is sent, and the connection is closed rather than left reading;
- a request head of 1 MB is refused and the server goes on answering others;
- ``X-Forwarded-For`` and ``X-Forwarded-Proto`` count only from a proxy named in
  ``RELATA_TRUSTED_PROXIES``: by default a local client cannot give itself another address to
  escape the per-address sign-in limit, nor claim HTTPS.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.browser.server import Server, free_port, relata_env, serve

#: Nothing here waits on a slow operation: each answer comes at once or the test fails.
ANSWER_TIMEOUT = 20.0


def _serve(data_dir: Path, **env: str) -> Server:
    port = free_port()
    full = relata_env(data_dir, port)
    full.update(RELATA_WORKERS="0", RELATA_LOGIN_MAX_FAILURES="1", **env)
    return serve(data_dir, full, port)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = _serve(tmp_path_factory.mktemp("serve") / "data")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = _serve(
        tmp_path_factory.mktemp("proxied") / "data", RELATA_TRUSTED_PROXIES="127.0.0.1"
    )
    try:
        yield running
    finally:
        running.stop()


def _connect(server: Server) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=ANSWER_TIMEOUT)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout fails)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_an_anonymous_200_mb_body_is_refused_before_a_byte_of_it_is_sent(server: Server) -> None:
    port = server.base_url.rsplit(":", 1)[1]
    for framing in (b"Content-Length: 200000000", b"Transfer-Encoding: chunked"):
        with _connect(server) as sock:
            sock.sendall(
                b"POST /api/v1/tokens HTTP/1.1\r\nHost: 127.0.0.1:" + port.encode() + b"\r\n"
                b"Content-Type: application/json\r\n" + framing + b"\r\n\r\n"
            )
            # Not one byte of the body is sent: the answer comes, and the server closes.
            answer = _read_all(sock)
        head, _, body = answer.partition(b"\r\n\r\n")
        status = b"413" if framing.startswith(b"Content-Length") else b"401"
        assert head.startswith(b"HTTP/1.1 " + status), answer[:300]
        assert b"connection: close" in head.lower()
        assert b'"error"' in body
    assert httpx.get(server.url("/healthz"), timeout=ANSWER_TIMEOUT).status_code == 200


def test_a_one_megabyte_header_is_refused_and_others_are_still_answered(server: Server) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        # The server may close before all of it is written, and reset the connection.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"a" * 1_000_000 + b"\r\n\r\n")
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            answer = _read_all(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert httpx.get(server.url("/healthz"), timeout=ANSWER_TIMEOUT).status_code == 200


def _bad_sign_in(server: Server, username: str, forwarded_for: str) -> int:
    r = httpx.post(
        server.url("/api/v1/auth/sign-in"),
        json={"username": username, "password": "not the password"},
        headers={"X-Forwarded-For": forwarded_for},
        timeout=ANSWER_TIMEOUT,
    )
    return r.status_code


def test_by_default_a_forwarded_address_does_not_escape_the_per_address_limit(
    server: Server,
) -> None:
    """RELATA_LOGIN_MAX_FAILURES=1: an address may fail four times (other usernames each time,
    so only the address limit counts)."""
    statuses = [_bad_sign_in(server, f"nobody-{n}", f"203.0.113.{n}") for n in range(6)]
    assert statuses == [401, 401, 401, 401, 429, 429]


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_clients(
    behind_proxy: Server,
) -> None:
    spread = [_bad_sign_in(behind_proxy, f"spread-{n}", f"203.0.113.{n}") for n in range(6)]
    assert spread == [401] * 6  # six clients, one failure each
    one = [_bad_sign_in(behind_proxy, f"one-{n}", "198.51.100.7") for n in range(6)]
    assert one == [401, 401, 401, 401, 429, 429]  # one client behind the proxy, limited


def test_the_forwarded_scheme_is_believed_only_from_a_trusted_proxy(
    server: Server, behind_proxy: Server
) -> None:
    def post(target: Server) -> httpx.Response:
        port = target.base_url.rsplit(":", 1)[1]
        return httpx.post(
            target.url("/api/v1/auth/sign-in"),
            json={"username": "nobody", "password": "x"},
            headers={"X-Forwarded-Proto": "https", "Origin": f"https://127.0.0.1:{port}"},
            timeout=ANSWER_TIMEOUT,
        )

    refused = post(server)  # a local client claiming HTTPS is still on plain HTTP
    assert refused.status_code == 403 and "RELATA_TRUSTED_PROXIES" in refused.text
    assert post(behind_proxy).status_code == 401  # the origin matches; the password does not
