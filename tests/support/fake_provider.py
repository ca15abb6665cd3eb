"""A real local HTTP server that speaks the Ollama and OpenAI shapes, and misbehaves on request.

Use it to test provider adapters over a real socket (never by patching internals)::

    with FakeProvider(dimensions=8) as fake:
        fake.enqueue(Reply(status=503), Reply(status=429, headers={"Retry-After": "0"}))
        embedder = OllamaEmbedder(fake.url, model="m", dimensions=8, ...)
        ...
        assert len(fake.requests) == 3

Routes (anything else is 404 with an error envelope):

* ``POST /api/embed``            Ollama embeddings  ``{"embeddings": [[...], ...]}``
* ``POST /v1/embeddings``        OpenAI embeddings  ``{"data": [{"index", "embedding"}], ...}``
* ``POST /api/chat``             Ollama chat        ``{"message": {"content"}, "done": true}``
* ``POST /v1/chat/completions``  OpenAI chat        ``{"choices": [{"message": {"content"}}]}``
* ``GET  /api/tags``             Ollama model list  ``{"models": [{"name": ...}]}``
* ``GET  /v1/models``            OpenAI model list  ``{"data": [{"id": ...}]}``

A chat request with ``"stream": true`` is streamed in each provider's own wire format: on
``/v1/chat/completions`` as an OpenAI-compatible event stream (the content in
``stream_piece``-character deltas, ``chat.completion.chunk`` events, then ``data: [DONE]``); on
``/api/chat`` as Ollama's JSON Lines (``application/x-ndjson``: one object per line with
``message.content`` and ``"done": false``, then a last ``"done": true`` line with
``done_reason`` and the counts, as ``ollama serve`` writes them). ``Reply(pause=...)`` (else
``stream_pause``) waits that long before each event or line, ``Reply(cut_after=n)`` ends the
stream after ``n`` of them without the end marker, and ``Reply(trickle=...)`` (Ollama only)
writes the lines in 7-byte pieces, so a line arrives split across reads.

Vectors are deterministic per text (``fake_vector``), so a test can check order and pairing.
Chat content is ``chat_content`` (a string, or a function of the request JSON).

Misbehaviour is scripted with ``enqueue(Reply(...))``: each request takes the first queued
reply whose ``path`` matches (``None`` matches any route); with none queued, the server
behaves. A ``Reply`` can set any status and headers, replace the body (``body`` bytes or
``json``), rewrite the normal answer (``transform``), pad it past a size (``pad_to``), send it
chunked without a Content-Length (``chunked``), wait before answering (``delay``) or send it
a few bytes at a time (``trickle``). Helpers build the common cases: ``Reply.error``,
``Reply.redirect``, ``Reply.malformed``, ``Reply.oversized``, ``Reply.slow``.

With ``api_key`` set, a request without ``Authorization: Bearer <api_key>`` gets a 401 whose
message echoes the key it was sent, as some real providers do: adapters must redact it.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JsonTransform = Callable[[Any], Any]


def fake_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector for ``text`` (distinct texts give distinct vectors)."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = raw[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


@dataclass
class Reply:
    """One scripted answer. Fields left at their defaults keep the normal behaviour."""

    path: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    json: Any = None
    transform: JsonTransform | None = None
    pad_to: int = 0
    chunked: bool = False
    delay: float = 0.0
    trickle: float = 0.0
    pause: float = 0.0
    cut_after: int | None = None

    @classmethod
    def error(cls, status: int, message: str = "provider error", **kw: Any) -> Reply:
        return cls(status=status, json={"error": {"message": message, "code": status}}, **kw)

    @classmethod
    def redirect(cls, location: str, status: int = 302, **kw: Any) -> Reply:
        return cls(status=status, headers={"Location": location}, body=b"", **kw)

    @classmethod
    def malformed(cls, body: bytes = b"{not json", **kw: Any) -> Reply:
        return cls(body=body, **kw)

    @classmethod
    def oversized(cls, size: int, *, chunked: bool = False, **kw: Any) -> Reply:
        return cls(pad_to=size, chunked=chunked, **kw)

    @classmethod
    def slow(cls, seconds: float, **kw: Any) -> Reply:
        return cls(delay=seconds, **kw)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class FakeProvider:
    def __init__(
        self,
        *,
        dimensions: int = 8,
        models: tuple[str, ...] = ("fake-embed", "fake-chat"),
        chat_content: str | Callable[[Any], str] = "ok",
        api_key: str = "",
        stream_piece: int = 5,
        stream_pause: float = 0.0,
    ) -> None:
        self.dimensions = dimensions
        self.stream_piece = stream_piece
        self.stream_pause = stream_pause
        self.models = models
        self.chat_content = chat_content
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> FakeProvider:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # ------------------------------------------------------------ scripting
    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def requests_to(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _next_reply(self, path: str) -> Reply | None:
        with self._lock:
            for i, reply in enumerate(self._queue):
                if reply.path is None or reply.path == path:
                    return self._queue.pop(i)
        return None

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    # ------------------------------------------------------------ normal answers
    def answer(self, method: str, path: str, doc: Any) -> tuple[int, Any]:
        routes: dict[tuple[str, str], Callable[[Any], Any]] = {
            ("POST", "/api/embed"): self._ollama_embed,
            ("POST", "/v1/embeddings"): self._openai_embed,
            ("POST", "/api/chat"): self._ollama_chat,
            ("POST", "/v1/chat/completions"): self._openai_chat,
            ("GET", "/api/tags"): lambda _: {
                "models": [{"name": f"{m}:latest"} for m in self.models]
            },
            ("GET", "/v1/models"): lambda _: {
                "object": "list",
                "data": [{"id": m, "object": "model"} for m in self.models],
            },
        }
        handler = routes.get((method, path))
        if handler is None:
            return 404, {"error": {"message": f"no route {method} {path}"}}
        if method == "POST" and not isinstance(doc, dict):
            return 400, {"error": {"message": "request body must be a JSON object"}}
        return 200, handler(doc)

    @staticmethod
    def _inputs(doc: dict[str, Any]) -> list[str]:
        raw = doc.get("input", [])
        return [raw] if isinstance(raw, str) else [str(t) for t in raw]

    def _ollama_embed(self, doc: dict[str, Any]) -> Any:
        vectors = [fake_vector(t, self.dimensions) for t in self._inputs(doc)]
        return {"model": doc.get("model"), "embeddings": vectors}

    def _openai_embed(self, doc: dict[str, Any]) -> Any:
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, self.dimensions)}
            for i, t in enumerate(self._inputs(doc))
        ]
        return {
            "object": "list",
            "data": data,
            "model": doc.get("model"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    def _content(self, doc: dict[str, Any]) -> str:
        c = self.chat_content
        return c(doc) if callable(c) else c

    def _ollama_chat(self, doc: dict[str, Any]) -> Any:
        return {
            "model": doc.get("model"),
            "message": {"role": "assistant", "content": self._content(doc)},
            "done": True,
            "done_reason": "stop",
        }

    def _openai_chat(self, doc: dict[str, Any]) -> Any:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": doc.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self._content(doc)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


def _make_handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 5  # an idle keep-alive connection is dropped after this

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = raw.decode("utf-8", errors="replace")
            path = self.path.split("?", 1)[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake._record(Recorded(method, path, headers, doc))
            reply = fake._next_reply(path) or Reply()
            if reply.delay and fake._closing.wait(reply.delay):
                return
            streamed = isinstance(doc, dict) and doc.get("stream") is True
            plain = reply.body is None and reply.json is None and reply.status == 200
            if streamed and path == "/v1/chat/completions" and plain and self._authorised(headers):
                self._send_stream(fake._content(doc), doc, reply)
                return
            if streamed and path == "/api/chat" and plain:
                self._send_ndjson(fake._content(doc), doc, reply)
                return
            status, body = self._body(method, path, doc, headers, reply)
            self._send(status, reply, body)

        def _body(
            self, method: str, path: str, doc: Any, headers: dict[str, str], reply: Reply
        ) -> tuple[int, bytes]:
            if reply.body is not None:
                return reply.status, reply.body
            if reply.json is not None:
                return reply.status, json.dumps(reply.json).encode()
            given = headers.get("authorization", "")
            if fake.api_key and given != f"Bearer {fake.api_key}":
                presented = given.removeprefix("Bearer ")
                message = f"Incorrect API key provided: {presented}"
                return 401, json.dumps({"error": {"message": message}}).encode()
            status, answer = fake.answer(method, path, doc)
            if reply.transform is not None and status == 200:
                answer = reply.transform(answer)
            if reply.status != 200:
                status = reply.status
            payload = json.dumps(answer).encode()
            if reply.pad_to > len(payload):
                # Still valid JSON: the padding is whitespace after the document.
                payload += b" " * (reply.pad_to - len(payload))
            return status, payload

        def _authorised(self, headers: dict[str, str]) -> bool:
            return not fake.api_key or headers.get("authorization") == f"Bearer {fake.api_key}"

        def _send_stream(self, content: str, doc: dict[str, Any], reply: Reply) -> None:
            n = max(1, fake.stream_piece)
            events = [
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "model": doc.get("model"),
                    "choices": [{"index": 0, "delta": {"content": content[i : i + n]}}],
                }
                for i in range(0, len(content), n)
            ]
            frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
            if reply.cut_after is not None:
                frames = frames[: reply.cut_after]
            else:
                frames.append(b"data: [DONE]\n\n")
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                pause = reply.pause or fake.stream_pause
                for piece in frames:
                    if pause and fake._closing.wait(pause):
                        return
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped listening

        def _send_ndjson(self, content: str, doc: dict[str, Any], reply: Reply) -> None:
            n = max(1, fake.stream_piece)
            model = doc.get("model")
            stamp = "2026-01-01T00:00:00.000000Z"
            lines = [
                {
                    "model": model,
                    "created_at": stamp,
                    "message": {"role": "assistant", "content": content[i : i + n]},
                    "done": False,
                }
                for i in range(0, len(content), n)
            ]
            frames = [json.dumps(line).encode() + b"\n" for line in lines]
            if reply.cut_after is not None:
                frames = frames[: reply.cut_after]
            else:
                last = {
                    "model": model,
                    "created_at": stamp,
                    "message": {"role": "assistant", "content": ""},
                    "done_reason": "stop",
                    "done": True,
                    "total_duration": 1000,
                    "prompt_eval_count": 12,
                    "eval_count": len(lines),
                }
                frames.append(json.dumps(last).encode() + b"\n")
            if reply.trickle:
                joined = b"".join(frames)
                frames = [joined[i : i + 7] for i in range(0, len(joined), 7)]
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                pause = reply.pause or fake.stream_pause or reply.trickle
                for piece in frames:
                    if pause and fake._closing.wait(pause):
                        return
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped listening

        def _send(self, status: int, reply: Reply, payload: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                for piece in _pieces(payload, 16 if reply.trickle else 64 * 1024):
                    if reply.trickle and fake._closing.wait(reply.trickle):
                        return
                    if reply.chunked:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    else:
                        self.wfile.write(piece)
                    self.wfile.flush()
                if reply.chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (too large, cancelled): expected in these tests

    return Handler


def _pieces(payload: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(payload), size):
        yield payload[start : start + size]
