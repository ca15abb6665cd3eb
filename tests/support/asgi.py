"""Driving an ASGI app with a request body fed chunk by chunk, counting what it pulls.

``call(app, method, path, chunks=...)`` runs one request through the app (the real app of
``create_app``, or a middleware around a small test app) with a ``receive`` that hands out
``chunks`` one ``http.request`` message at a time, and reports the response together with
how many body bytes the app pulled: what a limit that applies "while the body streams in"
must keep small.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message


@dataclass
class Answer:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: Body bytes the app pulled from ``receive``, and how many times it called it.
    pulled: int = 0
    receives: int = 0

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = self.json()["error"]
        return error


def endless(chunk: bytes) -> Iterator[bytes]:
    """A body that never ends (only a limit stops it)."""
    while True:
        yield chunk


def call(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    chunks: Iterable[bytes] = (),
    host: str = "localhost",
    scheme: str = "http",
    pause: float = 0.0,
) -> Answer:
    """One request through ``app``; ``chunks`` is the body (send a ``content-length`` in
    ``headers`` to declare its length, else it goes as chunked), each chunk ``pause``
    seconds after the app asked for it."""
    answer = Answer()
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    names = {k for k, _ in raw}
    if b"content-length" not in names:
        raw.append((b"transfer-encoding", b"chunked"))
    raw.append((b"host", host.encode()))
    body = iter(chunks)
    finished = False

    async def receive() -> Message:
        nonlocal finished
        answer.receives += 1
        if finished:
            await asyncio.sleep(0)
            return {"type": "http.disconnect"}
        if pause:
            await asyncio.sleep(pause)
        try:
            chunk = next(body)
        except StopIteration:
            finished = True
            return {"type": "http.request", "body": b"", "more_body": False}
        answer.pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = int(message["status"])
            answer.headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in message.get("headers", [])
            }
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": scheme,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": raw,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }

    async def run() -> None:
        await app(scope, receive, send)

    # In a thread of its own: this thread may already run an event loop (Playwright's).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(run())).result()
    return answer
