"""The OpenID provider over HTTP: its discovery document, its JWKS and its token endpoint.

Every request goes through the project's one safe HTTP path (``relata.providers.http``) on
the client bootstrap builds (``make_client``): no redirects, a timeout on the whole request
(``OidcConfig.timeout``), and a size cap on every answer, refused before reading a byte when
declared larger and while streaming otherwise: ``MAX_DISCOVERY_BYTES``, ``MAX_JWKS_BYTES``,
``MAX_TOKEN_RESPONSE_BYTES``. Its errors are turned into the sign-in's here, in one place:
the provider unreachable, slow, answering 5xx or with something that is not a JSON object is
``Unavailable`` (503; with ``Retry-After`` when retrying may help), a refused code exchange
(4xx) is ``Unauthenticated`` (401). Neither the code, the tokens nor the client secret are
ever logged or put in an error message (they are redacted from the safe path's messages).

The discovery document is cached for an hour and its ``issuer`` must be exactly the
configured one; the JWKS is cached until a token names a key it lacks (then refetched, not
more often than ``JWKS_REFETCH_INTERVAL``).
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote_plus, urlsplit

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import (
    ConfigError,
    NotConfigured,
    Permanent,
    Unauthenticated,
    Unavailable,
)
from relata.domain.ports import Clock
from relata.providers.http import ResponseTooLarge, get_json, post_form
from relata.providers.retry import MalformedResponse, StatusError

log = logging.getLogger("relata.auth.oidc")

DISCOVERY_TTL = timedelta(hours=1)
#: A token naming an unknown key refetches the JWKS, but not more often than this (so random
#: key ids cannot make Relata hammer the provider).
JWKS_REFETCH_INTERVAL = timedelta(seconds=10)
#: The largest answers read from the provider: real ones are a few KiB (a discovery document
#: of 2-8 KiB, a JWKS of a few keys, a token response with an ID token of at most 16 KiB).
MAX_DISCOVERY_BYTES = 256 * 1024
MAX_JWKS_BYTES = 256 * 1024
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
RETRY_AFTER = 5
#: What an OAuth ``error`` code looks like; anything else is not repeated in a log or message.
ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    #: The callback URL registered at the provider; empty: derived from each request.
    redirect_url: str = ""
    #: The label stored in ``users.oauth_provider``.
    provider_name: str = "oidc"
    #: Seconds each request to the provider may take, all of it (connect, send, read).
    timeout: float = 10.0
    scope: str = "openid profile email"


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


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


class ProviderClient:
    """The provider's documents (see the module docstring). ``http`` is the safe HTTP
    path's client (``relata.providers.http.make_client``), closed with this object."""

    def __init__(self, config: OidcConfig, clock: Clock, http: httpx.Client) -> None:
        self._config = config
        self._clock = clock
        self._http = http
        self._lock = threading.Lock()
        self._metadata: tuple[datetime, ProviderMetadata] | None = None
        self._jwks: tuple[datetime, KeySet] | None = None

    def close(self) -> None:
        self._http.close()

    def _request(self, what: str, call: Callable[[Cancel], Any]) -> Any:
        """``call`` through the safe path, its failures as the sign-in's errors: a 4xx is
        left to the caller as ``StatusError`` (only the token endpoint gives it a meaning)."""
        try:
            return call(Cancel.after(self._config.timeout))
        except ResponseTooLarge as exc:
            log.warning("oidc: %s over %s bytes", what, exc.max_bytes)
            raise Unavailable(
                f"the OpenID provider sent more than {exc.max_bytes} bytes ({what}): refused"
            ) from None
        except StatusError as exc:
            log.warning("oidc: %s answered %s", what, exc.status)
            if exc.status == 429 or exc.status >= 500:
                raise Unavailable(
                    f"the OpenID provider answered {exc.status} ({what})", retry_after=RETRY_AFTER
                ) from None
            raise
        except MalformedResponse:
            raise Unavailable(f"the OpenID provider's {what} is not JSON") from None
        except (Unavailable, Cancelled) as exc:  # unreachable, or no answer in time
            log.warning("oidc: %s unreachable: %s", what, type(exc).__name__)
            raise Unavailable(
                f"the OpenID provider did not answer ({what})", retry_after=RETRY_AFTER
            ) from None
        except Permanent as exc:  # a redirect, or a request httpx itself refused
            log.warning("oidc: %s refused: %s", what, exc.message)
            raise Unavailable(f"the OpenID provider's {what} could not be used") from None

    def _get_object(self, url: str, what: str, max_bytes: int) -> dict[str, Any]:
        try:
            body = self._request(
                what,
                lambda cancel: get_json(
                    self._http,
                    url,
                    op=f"oidc {what}",
                    headers={"Accept": "application/json"},
                    max_bytes=max_bytes,
                    cancel=cancel,
                ),
            )
        except StatusError as exc:
            raise Unavailable(f"the OpenID provider answered {exc.status} ({what})") from None
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
        doc = self._get_object(url, "discovery document", MAX_DISCOVERY_BYTES)
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
        doc = self._get_object(self.metadata().jwks_uri, "JWKS", MAX_JWKS_BYTES)
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
        form = {
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
            form["client_id"] = self._config.client_id
        try:
            body = self._request(
                "token endpoint",
                lambda cancel: post_form(
                    self._http,
                    meta.token_endpoint,
                    form,
                    op="oidc token endpoint",
                    headers=headers,
                    max_bytes=MAX_TOKEN_RESPONSE_BYTES,
                    cancel=cancel,
                    secrets=(code, verifier, self._config.client_secret),
                ),
            )
        except StatusError as exc:  # a 4xx: the provider refused the code
            error = exc.body if ERROR_CODE.match(exc.body) else None
            log.info("oidc: code exchange refused (%s, %s)", exc.status, error)
            raise Unauthenticated("the provider refused the sign-in code; start again") from None
        if not isinstance(body, dict):
            raise Unavailable("the OpenID provider's token response is not a JSON object")
        return body


__all__ = [
    "DISCOVERY_TTL",
    "MAX_DISCOVERY_BYTES",
    "MAX_JWKS_BYTES",
    "MAX_TOKEN_RESPONSE_BYTES",
    "OidcConfig",
    "ProviderClient",
    "ProviderMetadata",
    "oidc_config_from",
]
