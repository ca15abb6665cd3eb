"""Federated sign-in with OpenID Connect: the authorization code flow with PKCE.

``begin`` sends the browser to the provider with a fresh ``state``, ``nonce`` and PKCE
verifier (S256), kept in a short-lived, HttpOnly, HMAC-signed *flow cookie*, so nothing is
stored server-side for an attempt that is never finished. ``complete`` (the callback) checks,
in order, refusing at the first failure with nothing written:

1. the flow cookie: present, its signature, its expiry (10 minutes);
2. ``state`` against the cookie's, in constant time (a forged callback, login CSRF), and the
   ``iss`` parameter when the provider sends one (RFC 9207: a mix-up with another provider);
3. the code exchange at the token endpoint (client secret, the PKCE verifier, a timeout);
4. the ID token, with joserfc (``IdTokenVerifier``): an asymmetric algorithm only, the
   signature against the provider's JWKS (refetched once when the token names a key it
   lacks: the provider rotated), then ``iss`` exactly, ``aud`` (and ``azp``), ``exp``,
   ``iat``, ``sub``, and ``nonce`` against the cookie's in constant time (a replayed token).

Only then is the user found by (provider label, ``sub``), or provisioned: the first sign-in
of a subject creates one user, a private workspace and the owner membership in one
transaction that the partial unique index ``uq_users_oauth_identity`` arbitrates, so two
concurrent first sign-ins give one user and one workspace. The session is the accounts'
(``SessionService.start``), like a password sign-in; success is audited like one.

Network calls to the provider (discovery, JWKS, token) have a timeout; the discovery document
is cached for an hour, its ``issuer`` must be exactly the configured one. Neither the code,
the tokens nor the client secret are ever logged or put in an error message.
docs/decisions/0023-federated-sign-in.md says why.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import quote_plus, urlencode, urlsplit

import httpx
from joserfc import jws, jwt
from joserfc.errors import (
    BadSignatureError,
    ClaimError,
    DecodeError,
    InvalidKeyIdError,
    JoseError,
)
from joserfc.jwk import KeySet

from relata.auth.accounts import AccountService, SignedIn
from relata.domain.errors import (
    ConfigError,
    Forbidden,
    NotConfigured,
    Unauthenticated,
    Unavailable,
    ValidationError,
)
from relata.domain.models import Actor, User, Workspace
from relata.domain.ports import AuditRecorder, Clock
from relata.domain.vocabulary import ActorKind, AuditAction, AuditTarget
from relata.ids import new_id
from relata.workspaces import private_slug

log = logging.getLogger(__name__)

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
FLOW_COOKIE = "relata_oidc"
SECURE_FLOW_COOKIE = "__Host-relata_oidc"
FLOW_TTL = timedelta(minutes=10)
DISCOVERY_TTL = timedelta(hours=1)
#: A token naming an unknown key refetches the JWKS, but not more often than this (so random
#: key ids cannot make Relata hammer the provider).
JWKS_REFETCH_INTERVAL = timedelta(seconds=10)
CLOCK_LEEWAY_SECONDS = 60
MAX_TOKEN_CHARS = 16_384
RETRY_AFTER = 5
START_AGAIN = "the sign-in attempt is unknown, expired or was tampered with; start again"
ID_TOKEN_REFUSED = "the provider's ID token was refused"  # noqa: S105 - a message
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


class FederatedIdentityStore(Protocol):
    """Users by their federated identity (``relata.storage.sql.identities``)."""

    def find(self, provider: str, subject: str) -> User | None: ...

    def provision(self, user: User, workspace: Workspace) -> tuple[User, bool]:
        """User, private workspace and owner membership at once; ``(existing, False)``
        when the identity exists already (a concurrent first sign-in won)."""
        ...


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    #: The callback URL registered at the provider; empty: derived from each request.
    redirect_url: str = ""
    #: The label stored in ``users.oauth_provider``.
    provider_name: str = "oidc"
    timeout: float = 10.0
    scope: str = "openid profile email"


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


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
    """Signs and opens the flow cookie: ``base64url(json) . base64url(HMAC-SHA256)``.

    The key is derived from the client secret (so every process of a deployment shares it
    and a restart does not break an attempt in progress), or random per process for a
    public client. The cookie carries the PKCE verifier; it is HttpOnly and never leaves
    the browser except to Relata, which is what PKCE needs (the code alone is useless)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def for_secret(cls, client_secret: str) -> FlowSealer:
        if not client_secret:
            return cls(secrets.token_bytes(32))
        return cls(hashlib.sha256(b"relata oidc flow cookie\x1f" + client_secret.encode()).digest())

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())

    def seal(self, payload: Mapping[str, Any]) -> str:
        body = _b64(json.dumps(dict(payload), separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{self._mac(body)}"

    def open(self, cookie: str | None) -> dict[str, Any]:
        """The payload, or ``ValidationError`` for a missing, malformed or forged cookie."""
        if not cookie or len(cookie) > 4096 or cookie.count(".") != 1:
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


class KeySource(Protocol):
    def keys(self, *, refresh: bool = False) -> KeySet:
        """The provider's signing keys; ``refresh`` asks for a fresh copy (a key is missing)."""
        ...


class IdTokenVerifier:
    """Verifies an ID token (OpenID Connect Core 3.1.3.7) with joserfc; every failure is
    ``Unauthenticated`` with one message (the reason is logged, without the token)."""

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


class ProviderClient:
    """The provider's documents over HTTP, each request with a timeout: the discovery
    document (cached an hour; its ``issuer`` must be exactly the configured one), the JWKS
    (cached until a token names a key it lacks) and the token endpoint."""

    def __init__(self, config: OidcConfig, clock: Clock, http: httpx.Client | None = None):
        self._config = config
        self._clock = clock
        self._http = http or httpx.Client(timeout=config.timeout, follow_redirects=False)
        self._lock = threading.Lock()
        self._metadata: tuple[datetime, ProviderMetadata] | None = None
        self._jwks: tuple[datetime, KeySet] | None = None

    def close(self) -> None:
        self._http.close()

    def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            response = self._http.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            log.warning("oidc: %s unreachable: %s", what, type(exc).__name__)
            raise Unavailable(
                f"the OpenID provider did not answer ({what})", retry_after=RETRY_AFTER
            ) from None
        if response.status_code != 200:
            log.warning("oidc: %s answered %s", what, response.status_code)
            raise Unavailable(
                f"the OpenID provider answered {response.status_code} ({what})",
                retry_after=RETRY_AFTER,
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise Unavailable(f"the OpenID provider's {what} is not a JSON object")
        return body

    def metadata(self) -> ProviderMetadata:
        now = self._clock.now()
        with self._lock:
            cached = self._metadata
        if cached is not None and now - cached[0] < DISCOVERY_TTL:
            return cached[1]
        url = self._config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        doc = self._get_json(url, "discovery document")
        if doc.get("issuer") != self._config.issuer:
            raise NotConfigured(
                f"the provider's discovery document names issuer {str(doc.get('issuer'))!r}, "
                f"not RELATA_OIDC_ISSUER {self._config.issuer!r}"
            )
        endpoints = {}
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = doc.get(name)
            if not isinstance(value, str) or urlsplit(value).scheme not in {"http", "https"}:
                raise NotConfigured(f"the provider's discovery document has no usable {name}")
            endpoints[name] = value
        methods = doc.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise NotConfigured("the OpenID provider does not support PKCE with S256")
        meta = ProviderMetadata(issuer=self._config.issuer, **endpoints)
        with self._lock:
            self._metadata = (now, meta)
        return meta

    def keys(self, *, refresh: bool = False) -> KeySet:
        now = self._clock.now()
        with self._lock:
            cached = self._jwks
        if cached is not None and (not refresh or now - cached[0] < JWKS_REFETCH_INTERVAL):
            return cached[1]
        doc = self._get_json(self.metadata().jwks_uri, "JWKS")
        try:
            keyset = KeySet.import_key_set(doc)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise Unavailable("the OpenID provider's JWKS holds no usable key") from None
        with self._lock:
            self._jwks = (now, keyset)
        return keyset

    def exchange(self, code: str, *, redirect_uri: str, verifier: str) -> dict[str, Any]:
        """The token response for ``code``; ``Unauthenticated`` when the provider refuses
        it (used, expired, another client's, or a PKCE verifier that does not match)."""
        meta = self.metadata()
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        headers = {"Accept": "application/json"}
        if self._config.client_secret:
            # client_secret_basic; RFC 6749 2.3.1: both parts form-urlencoded first.
            pair = f"{quote_plus(self._config.client_id)}:{quote_plus(self._config.client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        else:
            data["client_id"] = self._config.client_id
        try:
            response = self._http.post(meta.token_endpoint, data=data, headers=headers)
        except httpx.HTTPError as exc:
            log.warning("oidc: token endpoint unreachable: %s", type(exc).__name__)
            raise Unavailable(
                "the OpenID provider did not answer (token endpoint)", retry_after=RETRY_AFTER
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            log.info("oidc: code exchange refused (%s, %s)", response.status_code, error)
            raise Unauthenticated("the provider refused the sign-in code; start again")
        return body


class OidcService:
    def __init__(
        self,
        config: OidcConfig,
        identities: FederatedIdentityStore,
        accounts: AccountService,
        clock: Clock,
        *,
        audit: AuditRecorder,
        http: httpx.Client | None = None,
    ) -> None:
        self.config = config
        self._identities = identities
        self._accounts = accounts
        self._clock = clock
        self._audit = audit
        self.provider = ProviderClient(config, clock, http)
        self.verifier = IdTokenVerifier(
            issuer=config.issuer, client_id=config.client_id, keys=self.provider, clock=clock
        )
        self.sealer = FlowSealer.for_secret(config.client_secret)

    def close(self) -> None:
        self.provider.close()

    # ------------------------------------------------------------ the two legs
    def begin(self, redirect_uri: str) -> Begun:
        """The provider's authorization URL for a new attempt, and its flow cookie."""
        meta = self.provider.metadata()
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(48)  # 64 characters, within RFC 7636's 43-128
        expires = self._clock.now() + FLOW_TTL
        cookie = self.sealer.seal(
            {"s": state, "n": nonce, "v": verifier, "r": redirect_uri, "x": expires.timestamp()}
        )
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.config.client_id,
                "redirect_uri": redirect_uri,
                "scope": self.config.scope,
                "state": state,
                "nonce": nonce,
                "code_challenge": s256_challenge(verifier),
                "code_challenge_method": "S256",
            }
        )
        sep = "&" if "?" in meta.authorization_endpoint else "?"
        return Begun(
            f"{meta.authorization_endpoint}{sep}{query}", cookie, int(FLOW_TTL.total_seconds())
        )

    def complete(
        self,
        *,
        flow_cookie: str | None,
        state: str | None,
        code: str | None,
        iss: str | None = None,
        error: str | None = None,
    ) -> SignedIn:
        """The callback: a new session for the federated user, or a refusal (nothing
        provisioned): ``ValidationError`` (400) for the attempt itself, ``Unauthenticated``
        (401) for what the provider said or signed."""
        flow = self.sealer.open(flow_cookie)
        expires = flow.get("x")
        if not isinstance(expires, int | float) or self._clock.now().timestamp() >= expires:
            raise ValidationError(START_AGAIN)
        expected = flow.get("s")
        if (
            not isinstance(expected, str)
            or not state
            or not hmac.compare_digest(state.encode(), expected.encode())
        ):
            log.info("oidc: callback refused: state does not match the attempt")
            raise ValidationError(START_AGAIN)
        if iss is not None and not hmac.compare_digest(iss.encode(), self.config.issuer.encode()):
            log.info("oidc: callback refused: iss parameter is another issuer")
            raise ValidationError("the sign-in answer came from another issuer", field="iss")
        if error is not None:
            shown = error if _ERROR_CODE.match(error) else "error"
            raise Unauthenticated(f"the provider did not sign you in ({shown})")
        if not code or len(code) > 2048:
            raise ValidationError("the callback has no code", field="code")
        verifier, redirect_uri, nonce = flow.get("v"), flow.get("r"), flow.get("n")
        if not all(isinstance(v, str) for v in (verifier, redirect_uri, nonce)):
            raise ValidationError(START_AGAIN)
        assert isinstance(verifier, str) and isinstance(redirect_uri, str)
        assert isinstance(nonce, str)
        tokens = self.provider.exchange(code, redirect_uri=redirect_uri, verifier=verifier)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise Unauthenticated("the provider answered without an ID token")
        claims = self.verifier.verify(id_token, nonce)
        return self._sign_in(claims)

    # ------------------------------------------------------------ the user and session
    def user_for(self, claims: Mapping[str, Any]) -> tuple[User, bool]:
        """The user of the token's subject, provisioned on its first sign-in: ``(user,
        created)``. Exactly one user and workspace however many first sign-ins race."""
        provider, subject = self.config.provider_name, str(claims["sub"])
        found = self._identities.find(provider, subject)
        if found is not None:
            return found, False
        username = federated_username(provider, subject, claims)
        now = self._clock.now()
        label = _label(claims) or username
        user = User(
            id=new_id(),
            username=username,
            password_hash=None,
            display_name=label[:200],
            is_admin=False,
            created_at=now,
            oauth_provider=provider,
            oauth_subject=subject,
        )
        # A random slug: a global name must not tell who has an account (ADR 28).
        workspace = Workspace(id=new_id(), slug=private_slug(), name=label[:200], created_at=now)
        user, created = self._identities.provision(user, workspace)
        if created:
            self._audit.record(
                workspace.id,
                AuditAction.WORKSPACE_CREATED,
                Actor(ActorKind.USER, user_id=user.id),
                target_kind=AuditTarget.WORKSPACE,
                target_id=workspace.id,
                details={"method": "oidc"},
            )
        return user, created

    def _sign_in(self, claims: Mapping[str, Any]) -> SignedIn:
        user, _ = self.user_for(claims)
        home = self._accounts.home(user.id)
        actor = Actor(ActorKind.USER, user_id=user.id)
        if user.disabled:
            if home is not None:
                self._audit.record(
                    home.workspace.id,
                    AuditAction.SIGN_IN_FAILED,
                    actor,
                    target_kind=AuditTarget.USER,
                    target_id=user.id,
                    details={"method": "oidc"},
                )
            raise Unauthenticated("this account is disabled")
        if home is None:
            raise Forbidden("this account is not a member of any workspace")
        token, session = self._accounts.sessions.start(user.id, home.workspace.id)
        self._audit.record(
            home.workspace.id,
            AuditAction.SIGN_IN_SUCCEEDED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=user.id,
            details={"method": "oidc"},
        )
        return SignedIn(token, session, user)


def _label(claims: Mapping[str, Any]) -> str:
    for name in ("name", "preferred_username", "email"):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def federated_username(provider: str, subject: str, claims: Mapping[str, Any]) -> str:
    """A username for a new federated user: a readable part
    from the claims and 10 hex characters of ``sha256(provider, subject)``. Deterministic,
    so two racing first sign-ins of a subject pick the same name; the claims never decide
    who a user *is* (only ``sub`` does)."""
    readable = ""
    for name in ("preferred_username", "email", "name"):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            readable = value.split("@", 1)[0] if name == "email" else value
            break
    base = _NOT_SLUG.sub("-", readable.lower()).strip("-")[:40].strip("-") or "user"
    digest = hashlib.sha256(f"{provider}\x1f{subject}".encode()).hexdigest()[:10]
    return f"{base}-{digest}"


def oidc_config_from(
    issuer: str,
    client_id: str,
    client_secret: str,
    redirect_url: str,
    provider_name: str,
) -> OidcConfig | None:
    """The configuration, or None when federated sign-in is off (no issuer)."""
    if not issuer:
        return None
    if not client_id:
        raise ConfigError("RELATA_OIDC_ISSUER is set but RELATA_OIDC_CLIENT_ID is empty")
    return OidcConfig(
        issuer=issuer,
        client_id=client_id,
        client_secret=client_secret,
        redirect_url=redirect_url,
        provider_name=provider_name,
    )


__all__ = [
    "ALLOWED_ALGORITHMS",
    "Begun",
    "FederatedIdentityStore",
    "FlowSealer",
    "IdTokenVerifier",
    "OidcConfig",
    "OidcService",
    "ProviderClient",
    "federated_username",
    "oidc_config_from",
    "s256_challenge",
]
