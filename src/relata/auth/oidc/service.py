"""Federated sign-in with OpenID Connect: the authorization code flow with PKCE.

``begin`` sends the browser to the provider with a fresh ``state``, ``nonce`` and PKCE
verifier (S256), kept in the flow cookie (``flow``). ``complete`` (the callback) checks, in
order, refusing at the first failure with nothing written:

1. the flow cookie: present, its signature, its expiry (10 minutes);
2. ``state`` against the cookie's, in constant time (a forged callback, login CSRF), and the
   ``iss`` parameter when the provider sends one (RFC 9207: a mix-up with another provider);
3. the code exchange at the token endpoint (``provider``: client secret, the PKCE verifier,
   a timeout and a size cap);
4. the ID token (``idtoken``).

Only then is the user found by (provider label, ``sub``), or provisioned: the first sign-in
of a subject creates one user, a private workspace and the owner membership in one
transaction that the partial unique index ``uq_users_oauth_identity`` arbitrates, so two
concurrent first sign-ins give one user and one workspace. The session is the accounts'
(``SessionService.start``), like a password sign-in; success is audited like one.
docs/decisions/0023-federated-sign-in.md says why.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlencode

import httpx

from relata.auth.accounts import AccountService, SignedIn
from relata.auth.oidc.flow import FLOW_TTL, START_AGAIN, Begun, FlowSealer, s256_challenge
from relata.auth.oidc.idtoken import IdTokenVerifier
from relata.auth.oidc.provider import ERROR_CODE, OidcConfig, ProviderClient
from relata.domain.errors import Forbidden, Unauthenticated, ValidationError
from relata.domain.models import Actor, User, Workspace
from relata.domain.ports import AuditRecorder, Clock
from relata.domain.vocabulary import ActorKind, AuditAction, AuditTarget
from relata.ids import new_id
from relata.workspaces import private_slug

log = logging.getLogger("relata.auth.oidc")

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


class FederatedIdentityStore(Protocol):
    """Users by their federated identity (``relata.storage.sql.identities``)."""

    def find(self, provider: str, subject: str) -> User | None: ...

    def provision(self, user: User, workspace: Workspace) -> tuple[User, bool]:
        """User, private workspace and owner membership at once; ``(existing, False)``
        when the identity exists already (a concurrent first sign-in won)."""
        ...


class OidcService:
    def __init__(
        self,
        config: OidcConfig,
        identities: FederatedIdentityStore,
        accounts: AccountService,
        clock: Clock,
        *,
        audit: AuditRecorder,
        http: httpx.Client,
        flow_key: Callable[[], bytes] | None = None,
    ) -> None:
        """``http``: the safe HTTP path's client (``relata.providers.http.make_client``),
        built by bootstrap and closed with this service; ``flow_key``: the deployment's shared
        key for a public client's flow cookie (``FlowSealer.for_secret``)."""
        self.config = config
        self._identities = identities
        self._accounts = accounts
        self._clock = clock
        self._audit = audit
        self.provider = ProviderClient(config, clock, http)
        self.verifier = IdTokenVerifier(
            issuer=config.issuer, client_id=config.client_id, keys=self.provider, clock=clock
        )
        self.sealer = FlowSealer.for_secret(config.client_secret, flow_key)

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
            shown = error if ERROR_CODE.match(error) else "error"
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
