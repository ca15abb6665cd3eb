"""Safe outbound HTTP: the only way adapters talk to a provider (AI providers, and the OpenID
provider of federated sign-in).

Every call made here:

* refuses redirects (``follow_redirects=False``; a 3xx is ``Permanent``): a compromised
  provider must not bounce requests, or the API key, elsewhere;
* reads the body as a stream and stops past ``max_bytes`` (``ResponseTooLarge``, a
  ``Permanent``); a declared ``Content-Length`` over it is refused before reading a byte; an
  error body is read only up to 64 KiB, for its message;
* is bounded in time: the whole request, not only each socket read, must finish within
  ``min(configured timeout, cancel.remaining())``; a slow or trickling server is reported as
  ``ProviderUnreachable`` (transient);
* honours cancellation while in flight. Synchronous httpx cannot be interrupted, so the request
  runs on a short-lived helper thread while the caller waits on it in 50 ms steps; on
  cancellation the caller raises ``Cancelled`` at once and the helper stops at its next chunk
  or, at the latest, when its own timeout expires. The caller never touches the helper's
  connection (closing it across threads could deadlock the connection pool);
* turns failures into Relata errors (``StatusError``, ``MalformedResponse``,
  ``ProviderUnreachable``, ``Permanent``) whose messages have every secret, and any
  ``Bearer`` token, redacted. Request and response bodies are never logged.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent
from relata.providers.retry import MalformedResponse, ProviderUnreachable, StatusError

log = logging.getLogger(__name__)

ERROR_BODY_LIMIT = 64 * 1024
ERROR_MESSAGE_CHARS = 300
_POLL_SECONDS = 0.05
_BEARER = re.compile(r"(?i)\bBearer\s+[^\s\"',;]+")
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def make_client(timeout: float) -> httpx.Client:
    """An httpx client that never follows redirects, with every timeout set explicitly."""
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    return httpx.Client(
        follow_redirects=False,
        timeout=httpx.Timeout(
            connect=min(timeout, 10.0), read=timeout, write=timeout, pool=timeout
        ),
        headers={"User-Agent": "relata", "Accept": "application/json"},
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace each secret, any ``Bearer <token>`` and anything shaped like an OpenAI key."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    text = _BEARER.sub("Bearer [REDACTED]", text)
    return _OPENAI_KEY.sub("[REDACTED]", text)


def safe_url(url: str) -> str:
    """``scheme://host[:port]/path``: no user info, query or fragment (they may hold keys)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class ResponseTooLarge(Permanent):
    """A successful answer whose body is over the caller's ``max_bytes``."""

    def __init__(self, message: str, *, max_bytes: int) -> None:
        super().__init__(message)
        self.max_bytes = max_bytes


def post_json(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    cancel: Cancel,
    secrets: Iterable[str] = (),
) -> Any:
    """POST ``body`` as JSON and return the decoded JSON answer (see the module docstring)."""
    return _call(client, "POST", url, body, op, headers, max_bytes, cancel, tuple(secrets))


def post_form(
    client: httpx.Client,
    url: str,
    form: Mapping[str, str],
    *,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    cancel: Cancel,
    secrets: Iterable[str] = (),
) -> Any:
    """POST ``form`` URL-encoded (an OAuth token request) and return the decoded JSON answer."""
    return _call(
        client, "POST", url, None, op, headers, max_bytes, cancel, tuple(secrets), dict(form)
    )


def get_json(
    client: httpx.Client,
    url: str,
    *,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    cancel: Cancel,
    secrets: Iterable[str] = (),
) -> Any:
    """GET ``url`` and return the decoded JSON answer (health checks, model lists)."""
    return _call(client, "GET", url, None, op, headers, max_bytes, cancel, tuple(secrets))


@dataclass
class _Outcome:
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None


def _call(
    client: httpx.Client,
    method: str,
    url: str,
    body: dict[str, Any] | None,
    op: str,
    headers: Mapping[str, str],
    max_bytes: int,
    cancel: Cancel,
    secrets: tuple[str, ...],
    form: dict[str, str] | None = None,
) -> Any:
    cancel.raise_if_cancelled()
    configured = client.timeout.read or 30.0
    remaining = cancel.remaining()
    budget = configured if remaining is None else min(configured, remaining)
    if budget <= 0:
        raise Cancelled(cancel.reason or "deadline exceeded")
    outcome = _Outcome()
    request = _Request(
        client, method, url, body, op, dict(headers), max_bytes, budget, secrets, form
    )
    worker = threading.Thread(
        target=request.run, args=(outcome,), name=f"relata-http-{op}", daemon=True
    )
    started = time.monotonic()
    worker.start()
    deadline = started + budget
    while not outcome.done.wait(_POLL_SECONDS):
        if cancel.cancelled:
            outcome.stop.set()
            raise Cancelled(cancel.reason or "cancelled")
        if time.monotonic() >= deadline:
            outcome.stop.set()
            raise ProviderUnreachable(
                f"{op}: {method} {safe_url(url)} did not complete within {budget:.1f}s"
            )
    log.debug(
        "provider call finished",
        extra={
            "fields": {
                "op": op,
                "ok": outcome.error is None,
                "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
            }
        },
    )
    if outcome.error is not None:
        if cancel.cancelled:  # the helper's own timeout raced the caller's deadline
            raise Cancelled(cancel.reason or "cancelled") from outcome.error
        raise outcome.error
    return outcome.value


@dataclass(frozen=True)
class _Request:
    client: httpx.Client
    method: str
    url: str
    body: dict[str, Any] | None
    op: str
    headers: dict[str, str]
    max_bytes: int
    budget: float
    secrets: tuple[str, ...]
    form: dict[str, str] | None = None

    def run(self, outcome: _Outcome) -> None:
        try:
            outcome.value = self._send(outcome.stop)
        except httpx.TransportError as exc:
            message = f"{self.op}: {self.method} {safe_url(self.url)} failed: "
            message += f"{type(exc).__name__}: {exc}"
            outcome.error = ProviderUnreachable(redact(message, self.secrets))
            outcome.error.__cause__ = exc
        except httpx.HTTPError as exc:
            text = redact(f"{self.op}: {type(exc).__name__}: {exc}", self.secrets)
            outcome.error = Permanent(text, cause=exc)
        except Exception as exc:  # delivered to the caller's thread, never lost
            outcome.error = exc
        finally:
            outcome.done.set()

    def _send(self, stop: threading.Event) -> Any:
        timeout = httpx.Timeout(self.budget, connect=min(self.budget, 10.0))
        with self.client.stream(
            self.method,
            self.url,
            json=self.body,
            data=self.form,
            headers=self.headers,
            timeout=timeout,
        ) as resp:
            status = resp.status_code
            where = f"{self.method} {safe_url(self.url)}"
            if 300 <= status < 400:
                raise Permanent(
                    f"{self.op}: redirect refused ({where} answered HTTP {status}); "
                    "point the provider URL at the final address"
                )
            ok = 200 <= status < 300
            declared = resp.headers.get("content-length", "")
            if ok and declared.isdigit() and int(declared) > self.max_bytes:
                raise self._too_large(where)
            limit = self.max_bytes if ok else min(self.max_bytes, ERROR_BODY_LIMIT)
            buf = bytearray()
            for chunk in resp.iter_bytes():
                if stop.is_set():
                    return None
                buf += chunk
                if len(buf) > limit:
                    if ok:
                        raise self._too_large(where)
                    break
            if not ok:
                raise StatusError(
                    status,
                    op=self.op,
                    body=error_message(bytes(buf[:limit]), self.secrets),
                    retry_after=retry_after(resp.headers.get("retry-after")),
                )
        try:
            return json.loads(bytes(buf))
        except ValueError as exc:
            raise MalformedResponse(f"{self.op}: {where} answered with invalid JSON") from exc

    def _too_large(self, where: str) -> ResponseTooLarge:
        return ResponseTooLarge(
            f"{self.op}: response too large ({where} sent more than {self.max_bytes} bytes)",
            max_bytes=self.max_bytes,
        )


def retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: the backoff schedule applies instead
    return seconds if seconds >= 0 else None


def error_message(raw: bytes, secrets: tuple[str, ...]) -> str:
    """The provider's own message (``error.message``, ``error`` or ``message``), else the text."""
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
        elif isinstance(err, str):
            text = err
        elif isinstance(doc.get("message"), str):
            text = doc["message"]
        elif isinstance(doc.get("detail"), str):
            text = doc["detail"]
    # Redact before truncating, so a secret cut in half at the edge cannot survive.
    text = redact(" ".join(text.split()), secrets)
    if len(text) > ERROR_MESSAGE_CHARS:
        text = text[:ERROR_MESSAGE_CHARS] + "…"
    return text
