"""ID token verification (OpenID Connect Core 3.1.3.7) with joserfc.

An asymmetric algorithm only (``ALLOWED_ALGORITHMS``), the signature against the provider's
JWKS (refetched once when the token names a key it lacks: the provider rotated), then
``iss`` exactly, ``aud`` (and ``azp``), ``exp``, ``iat``, ``sub``, and ``nonce`` against the
attempt's in constant time (a replayed token). Every failure is ``Unauthenticated`` with one
message; the reason is logged, never the token.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any, Protocol

from joserfc import jws, jwt
from joserfc.errors import (
    BadSignatureError,
    ClaimError,
    DecodeError,
    InvalidKeyIdError,
    JoseError,
)
from joserfc.jwk import KeySet

from relata.domain.errors import Unauthenticated
from relata.domain.ports import Clock

log = logging.getLogger("relata.auth.oidc")

#: Signatures accepted on an ID token: asymmetric only. ``none`` and the HMAC family (keyed
#: with the client secret, which anyone holding it could forge) are refused.
ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
CLOCK_LEEWAY_SECONDS = 60
MAX_TOKEN_CHARS = 16_384
ID_TOKEN_REFUSED = "the provider's ID token was refused"  # noqa: S105 - a message


class KeySource(Protocol):
    def keys(self, *, refresh: bool = False) -> KeySet:
        """The provider's signing keys; ``refresh`` asks for a fresh copy (a key is missing)."""
        ...


class IdTokenVerifier:
    """Verifies an ID token (see the module docstring)."""

    def __init__(self, *, issuer: str, client_id: str, keys: KeySource, clock: Clock) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._keys = keys
        self._clock = clock

    def _refuse(self, reason: str) -> Unauthenticated:
        log.info("oidc: ID token refused: %s", reason)
        return Unauthenticated(ID_TOKEN_REFUSED)

    def verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The token's claims, once signature, issuer, audience, expiry and nonce hold."""
        if not id_token or len(id_token) > MAX_TOKEN_CHARS:
            raise self._refuse("missing or oversized")
        try:
            header = jws.extract_compact(id_token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError):
            raise self._refuse("not a compact JWS") from None
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            raise self._refuse(f"algorithm {str(alg)[:16]!r} not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise self._refuse("kid is not a string")
        try:
            key = self._key(kid)
            token = jwt.decode(id_token, key, algorithms=[alg])
        except BadSignatureError:
            raise self._refuse("bad signature") from None
        except (DecodeError, InvalidKeyIdError, JoseError, ValueError) as exc:
            raise self._refuse(type(exc).__name__) from None
        claims = dict(token.claims)
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self._clock.now().timestamp()),
            leeway=CLOCK_LEEWAY_SECONDS,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
        )
        try:
            registry.validate(claims)
        except ClaimError as exc:
            raise self._refuse(f"claim {exc.claim!r}: {exc.error}") from None
        aud = claims.get("aud")
        if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != self.client_id:
            raise self._refuse("several audiences and azp is not this client")
        presented = claims.get("nonce")
        if not isinstance(presented, str) or not hmac.compare_digest(
            presented.encode(), nonce.encode()
        ):
            raise self._refuse("nonce mismatch")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not 1 <= len(sub) <= 255:
            raise self._refuse("sub is not a 1-255 character string")
        return claims

    def _key(self, kid: str | None) -> Any:
        try:
            return self._keys.keys().get_by_kid(kid)
        except InvalidKeyIdError:
            # The provider may have rotated its keys since they were fetched: once more.
            return self._keys.keys(refresh=True).get_by_kid(kid)
