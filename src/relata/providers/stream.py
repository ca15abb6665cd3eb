"""Streamed outbound HTTP: a provider's answer as it arrives, under the rules of ``http.py``.

``post_sse`` POSTs a JSON body and yields the answer's Server-Sent Events as they arrive (an
OpenAI-compatible ``"stream": true`` chat completion); ``post_ndjson`` yields the lines of a
JSON Lines answer (``application/x-ndjson``: Ollama's ``/api/chat`` with ``"stream": true``).
Both keep every rule of the one safe
HTTP path (``relata.providers.http``): redirects refused (``Permanent``), an error status read
up to 64 KiB for its message (``StatusError``, with ``Retry-After``), every secret and bearer
token redacted from errors, bodies never logged. Streaming adds two bounds of its own:

* **size**: at most ``max_bytes`` in all (``ResponseTooLarge``), a line at most
  ``MAX_LINE_BYTES`` and one event's data at most ``MAX_EVENT_BYTES`` (``MalformedResponse``);
  a reply of another content type than the one asked for is ``MalformedResponse``;
* **time**: the whole stream must end within ``min(the client's timeout,
  cancel.remaining())``, and no byte may be more than ``idle_timeout`` seconds after the last
  one (docs/decisions/0042-streaming-answers.md, ``RELATA_AI_STREAM_IDLE_TIMEOUT``). Either
  is ``ProviderUnreachable``; cancellation is ``Cancelled`` within 50 ms.

As in ``http.py``, synchronous httpx cannot be interrupted: the request runs on a helper
thread that hands chunks over a small queue; the consumer polls it in 50 ms steps. When the
consumer stops (it closed the generator, was cancelled, or a bound was hit) the helper stops
at its next chunk, or at the latest when its own read timeout expires.

``SseParser`` is the event-stream format of the WHATWG HTML standard (section 9.2), reduced
to what a provider sends: ``event``, ``data`` (multi-line data joined by ``\\n``), comments
ignored, ``id`` and ``retry`` ignored, an event dispatched at a blank line, an unfinished
event at the end of the stream discarded. ``NdjsonParser`` splits JSON Lines at LF (a CR
before it dropped, blank lines skipped); a last line without its LF is still a line.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent
from relata.providers.http import (
    ERROR_BODY_LIMIT,
    ResponseTooLarge,
    error_message,
    redact,
    retry_after,
    safe_url,
)
from relata.providers.retry import MalformedResponse, ProviderUnreachable, StatusError

log = logging.getLogger(__name__)

MAX_LINE_BYTES: Final = 256 * 1024
MAX_EVENT_BYTES: Final = 1024 * 1024
_POLL_SECONDS: Final = 0.05
_QUEUE_CHUNKS: Final = 64
NDJSON: Final = "application/x-ndjson"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its type (``message`` unless named) and its data."""

    data: str
    event: str = "message"


class SseParser:
    """Bytes in, events out (see the module docstring). Lines end in CRLF, LF or CR."""

    def __init__(
        self, *, max_line_bytes: int = MAX_LINE_BYTES, max_event_bytes: int = MAX_EVENT_BYTES
    ) -> None:
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._line = bytearray()
        self._after_cr = False
        self._data: list[str] = []
        self._data_bytes = 0
        self._event = ""
        self._bom_checked = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        out: list[SseEvent] = []
        for b in chunk:
            if self._after_cr:
                self._after_cr = False
                if b == 0x0A:  # the LF of a CRLF
                    continue
            if b in (0x0A, 0x0D):
                self._after_cr = b == 0x0D
                event = self._line_done(bytes(self._line))
                self._line.clear()
                if event is not None:
                    out.append(event)
                continue
            self._line.append(b)
            if len(self._line) > self._max_line:
                raise MalformedResponse(f"event stream line longer than {self._max_line} bytes")
        return out

    def _line_done(self, raw: bytes) -> SseEvent | None:
        if not self._bom_checked:
            self._bom_checked = True
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        line = raw.decode("utf-8", errors="replace")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_bytes += len(value) + 1
            if self._data_bytes > self._max_event:
                raise MalformedResponse(f"event stream event larger than {self._max_event} bytes")
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> SseEvent | None:
        data, kind = self._data, self._event
        self._data, self._data_bytes, self._event = [], 0, ""
        if not data:
            return None
        return SseEvent("\n".join(data), kind or "message")


class NdjsonParser:
    """Bytes in, lines out (JSON Lines, see the module docstring); each line at most
    ``max_line_bytes``. Lines are returned as text, not decoded as JSON: the caller judges."""

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line_bytes
        self._line = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        out: list[str] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if len(self._line) + len(piece) > self._max_line:
                raise MalformedResponse(f"JSON Lines line longer than {self._max_line} bytes")
            self._line += piece
            if end < 0:
                return out
            line = self._take()
            if line:
                out.append(line)
            start = end + 1

    def finish(self) -> list[str]:
        """The last line, when the stream ended without its LF."""
        line = self._take()
        return [line] if line else []

    def _take(self) -> str:
        raw = bytes(self._line).removesuffix(b"\r")
        self._line.clear()
        return raw.decode("utf-8", errors="replace").strip()


def post_sse(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    idle_timeout: float,
    cancel: Cancel,
    secrets: tuple[str, ...] = (),
) -> Generator[SseEvent, None, None]:
    """POST ``body`` as JSON and yield the response's events as they arrive (see the module
    docstring). Close the generator to stop early."""
    chunks = _post_stream(
        client,
        url,
        body,
        op=op,
        headers=headers,
        kind="text/event-stream",
        max_bytes=max_bytes,
        idle_timeout=idle_timeout,
        cancel=cancel,
        secrets=secrets,
    )
    parser = SseParser()
    try:
        for chunk in chunks:
            yield from parser.feed(chunk)
    finally:
        chunks.close()


def post_ndjson(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    idle_timeout: float,
    cancel: Cancel,
    secrets: tuple[str, ...] = (),
) -> Generator[str, None, None]:
    """POST ``body`` as JSON and yield the lines of the JSON Lines response as they arrive
    (see the module docstring). Close the generator to stop early."""
    chunks = _post_stream(
        client,
        url,
        body,
        op=op,
        headers=headers,
        kind=NDJSON,
        max_bytes=max_bytes,
        idle_timeout=idle_timeout,
        cancel=cancel,
        secrets=secrets,
    )
    parser = NdjsonParser()
    try:
        for chunk in chunks:
            yield from parser.feed(chunk)
        yield from parser.finish()
    finally:
        chunks.close()


def _post_stream(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    op: str,
    headers: Mapping[str, str],
    kind: str,
    max_bytes: int,
    idle_timeout: float,
    cancel: Cancel,
    secrets: tuple[str, ...],
) -> Generator[bytes, None, None]:
    """The response body's chunks as they arrive, every bound of the module docstring held."""
    if idle_timeout <= 0:
        raise ValueError("idle_timeout must be positive")
    cancel.raise_if_cancelled()
    configured = client.timeout.read or 30.0
    remaining = cancel.remaining()
    budget = configured if remaining is None else min(configured, remaining)
    if budget <= 0:
        raise Cancelled(cancel.reason or "deadline exceeded")
    idle = min(idle_timeout, budget)
    where = f"POST {safe_url(url)}"
    feed = _Feed()
    request = _StreamRequest(
        client, url, body, op, {**headers, "Accept": kind}, kind, max_bytes, idle, secrets
    )
    worker = threading.Thread(
        target=request.run, args=(feed,), name=f"relata-stream-{op}", daemon=True
    )
    started = time.monotonic()
    deadline = started + budget
    last = started
    chunks = 0
    worker.start()
    try:
        while True:
            try:
                item = feed.items.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                item = None
            now = time.monotonic()
            if cancel.cancelled:
                raise Cancelled(cancel.reason or "cancelled")
            if item is None:
                if now >= deadline:
                    raise ProviderUnreachable(f"{op}: {where} did not finish within {budget:.1f}s")
                if now - last >= idle:
                    raise ProviderUnreachable(f"{op}: {where} sent nothing for {idle:.1f}s")
                continue
            if isinstance(item, BaseException):
                if cancel.cancelled:
                    raise Cancelled(cancel.reason or "cancelled") from item
                raise item
            if item is _END or not isinstance(item, bytes):
                break
            last = now
            chunks += 1
            yield item
            if time.monotonic() >= deadline:
                raise ProviderUnreachable(f"{op}: {where} did not finish within {budget:.1f}s")
    finally:
        feed.stop.set()
        log.debug(
            "provider stream finished",
            extra={
                "fields": {
                    "op": op,
                    "chunks": chunks,
                    "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
                }
            },
        )


_END: Final = object()  # the stream ended normally


@dataclass
class _Feed:
    items: queue.Queue[object] = field(default_factory=lambda: queue.Queue(_QUEUE_CHUNKS))
    stop: threading.Event = field(default_factory=threading.Event)

    def put(self, item: object) -> bool:
        """Hand ``item`` to the consumer; False once it has stopped listening."""
        while not self.stop.is_set():
            try:
                self.items.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False


@dataclass(frozen=True)
class _StreamRequest:
    client: httpx.Client
    url: str
    body: dict[str, Any]
    op: str
    headers: dict[str, str]
    kind: str
    max_bytes: int
    idle: float
    secrets: tuple[str, ...]

    def run(self, feed: _Feed) -> None:
        try:
            self._send(feed)
            feed.put(_END)
        except httpx.ReadTimeout:
            message = f"{self.op}: POST {safe_url(self.url)} sent nothing for {self.idle:.1f}s"
            feed.put(ProviderUnreachable(message))
        except httpx.TransportError as exc:
            message = f"{self.op}: POST {safe_url(self.url)} failed: {type(exc).__name__}: {exc}"
            error = ProviderUnreachable(redact(message, self.secrets))
            error.__cause__ = exc
            feed.put(error)
        except httpx.HTTPError as exc:
            text = redact(f"{self.op}: {type(exc).__name__}: {exc}", self.secrets)
            feed.put(Permanent(text, cause=exc))
        except Exception as exc:  # delivered to the consumer's thread, never lost
            feed.put(exc)

    def _send(self, feed: _Feed) -> None:
        timeout = httpx.Timeout(self.idle, connect=min(self.idle, 10.0))
        where = f"POST {safe_url(self.url)}"
        with self.client.stream(
            "POST", self.url, json=self.body, headers=self.headers, timeout=timeout
        ) as resp:
            status = resp.status_code
            if 300 <= status < 400:
                raise Permanent(
                    f"{self.op}: redirect refused ({where} answered HTTP {status}); "
                    "point the provider URL at the final address"
                )
            if not 200 <= status < 300:
                buf = bytearray()
                for chunk in resp.iter_bytes():
                    buf += chunk
                    if len(buf) > ERROR_BODY_LIMIT or feed.stop.is_set():
                        break
                raise StatusError(
                    status,
                    op=self.op,
                    body=error_message(bytes(buf[:ERROR_BODY_LIMIT]), self.secrets),
                    retry_after=retry_after(resp.headers.get("retry-after")),
                )
            kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != self.kind:
                what = "an event stream" if self.kind == "text/event-stream" else self.kind
                raise MalformedResponse(
                    f"{self.op}: {where} answered {kind or 'no content type'}, not {what}"
                )
            total = 0
            for chunk in resp.iter_bytes():
                total += len(chunk)
                if total > self.max_bytes:
                    raise ResponseTooLarge(
                        f"{self.op}: response too large ({where} sent more than "
                        f"{self.max_bytes} bytes)",
                        max_bytes=self.max_bytes,
                    )
                if chunk and not feed.put(chunk):
                    return
