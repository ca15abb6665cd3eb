"""``QdrantVectorStore`` in server mode against a real local HTTP server that misbehaves.

No Qdrant server binary exists here, so the contract suite runs on local mode; this file
covers what only server mode has: the API key header, the request timeout, and the
translation of HTTP failures into domain errors (transient ``Unavailable`` vs
``Permanent``), with the key never echoed in an error.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from relata.domain.errors import Permanent, Unavailable
from relata.storage.vectors.qdrant import QdrantVectorStore

KEY = "qdrant-secret-key-123"
pytestmark = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")


class FakeQdrant:
    """Answers every request with ``status`` (after waiting up to ``stall`` seconds)."""

    def __init__(self) -> None:
        self.status = 200
        self.stall = 0.0
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if fake.stall:
                    fake.release.wait(fake.stall)
                body = json.dumps({"status": {"error": f"echo {self.headers.get('api-key')}"}})
                data = body.encode()
                try:
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

            do_GET = do_PUT = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeQdrant]:
    server = FakeQdrant()
    try:
        yield server
    finally:
        server.close()


def _store(url: str, timeout: int = 5) -> QdrantVectorStore:
    return QdrantVectorStore(dimensions=8, url=url, api_key=KEY, timeout=timeout)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_overload_and_server_errors_are_transient(fake: FakeQdrant, status: int) -> None:
    fake.status = status
    store = _store(fake.url)
    try:
        with pytest.raises(Unavailable) as info:
            store.count("ws")
        assert KEY not in str(info.value)
        assert fake.headers[0]["api-key"] == KEY
    finally:
        store.close()


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_refusals_are_permanent_and_never_echo_the_key(fake: FakeQdrant, status: int) -> None:
    fake.status = status
    store = _store(fake.url)
    try:
        with pytest.raises(Permanent) as info:
            store.search("ws", [1.0] * 8, k=3)
        assert str(status) in info.value.message
        assert KEY not in info.value.message
    finally:
        store.close()


def test_an_unreachable_server_is_transient() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = _store(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(Unavailable, match="unreachable"):
            store.count("ws")
    finally:
        store.close()


def test_a_stalled_server_times_out_as_transient(fake: FakeQdrant) -> None:
    fake.stall = 30.0  # released at teardown; the client's 1 s timeout must end it first
    store = _store(fake.url, timeout=1)
    try:
        with pytest.raises(Unavailable):
            store.count("ws")
    finally:
        store.close()
