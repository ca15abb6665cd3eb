"""The flow cookie of a sign-in attempt: its ``state``, ``nonce`` and PKCE verifier, signed.

Nothing is stored server-side for an attempt that is never finished: ``begin`` seals the
attempt into a short-lived (``FLOW_TTL``), HttpOnly cookie, ``base64url(json) .
base64url(HMAC-SHA256)``, and the callback opens it again. The key is derived from the client
secret (so every process of a deployment shares it and a restart does not break an attempt
in progress); a public client has no secret, so its key is a random one the deployment keeps
in its database (``shared_key``, read on first use) and every process shares as well. The
cookie carries the PKCE verifier; it never leaves the browser except to Relata, which is what
PKCE needs (the code alone is useless).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from relata.domain.errors import ValidationError

FLOW_COOKIE = "relata_oidc"
SECURE_FLOW_COOKIE = "__Host-relata_oidc"
FLOW_TTL = timedelta(minutes=10)
START_AGAIN = "the sign-in attempt is unknown, expired or was tampered with; start again"
_MAX_COOKIE_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Begun:
    """Where to send the browser, and the flow cookie to set on that redirect."""

    url: str
    cookie: str
    max_age: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def s256_challenge(verifier: str) -> str:
    """The PKCE ``code_challenge`` of a verifier (RFC 7636, S256)."""
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


class FlowSealer:
    """Signs and opens the flow cookie (see the module docstring)."""

    def __init__(self, key: bytes | Callable[[], bytes]) -> None:
        self._key: bytes | None = key if isinstance(key, bytes) else None
        self._make = None if isinstance(key, bytes) else key

    @classmethod
    def for_secret(
        cls, client_secret: str, shared_key: Callable[[], bytes] | None = None
    ) -> FlowSealer:
        """Keyed by ``client_secret``; without one, by ``shared_key()`` (the deployment's
        stored key, asked for on first use), else by a random key of this process only."""
        if not client_secret:
            return cls(shared_key or secrets.token_bytes(32))
        return cls(hashlib.sha256(b"relata oidc flow cookie\x1f" + client_secret.encode()).digest())

    def _mac(self, body: str) -> str:
        if self._key is None:
            assert self._make is not None
            self._key = self._make()
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())

    def seal(self, payload: Mapping[str, Any]) -> str:
        body = _b64(json.dumps(dict(payload), separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{self._mac(body)}"

    def open(self, cookie: str | None) -> dict[str, Any]:
        """The payload, or ``ValidationError`` for a missing, malformed or forged cookie."""
        if not cookie or len(cookie) > _MAX_COOKIE_CHARS or cookie.count(".") != 1:
            raise ValidationError(START_AGAIN)
        body, mac = cookie.split(".")
        if not hmac.compare_digest(self._mac(body), mac):
            raise ValidationError(START_AGAIN)
        try:
            payload = json.loads(_unb64(body))
        except ValueError:
            raise ValidationError(START_AGAIN) from None
        if not isinstance(payload, dict):
            raise ValidationError(START_AGAIN)
        return payload
