"""The ID token verifier (``relata.auth.oidc.IdTokenVerifier``) against locally generated
key sets: what a real provider signs is accepted; another key's signature, an unknown key,
a forbidden algorithm, another issuer or audience, an expired token and another nonce are
refused. The real provider's side is tests/integration/test_oidc.py."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from relata.auth.oidc import FlowSealer, IdTokenVerifier, federated_username, s256_challenge
from relata.domain.errors import Unauthenticated, ValidationError

ISSUER = "https://op.example"
CLIENT = "relata"
NONCE = "n-0S6_WzA2Mj"


class Clock:
    def __init__(self) -> None:
        self.t = datetime.now(UTC)

    def now(self) -> datetime:
        return self.t


class Keys:
    """A provider's JWKS as a ``KeySource``: public keys only, counting the fetches."""

    def __init__(self, *keys: RSAKey) -> None:
        self.current = list(keys)
        self.fetches = 0

    def keys(self, *, refresh: bool = False) -> KeySet:
        self.fetches += 1
        return KeySet.import_key_set({"keys": [k.as_dict(private=False) for k in self.current]})


def rsa(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": CLIENT,
        "sub": "248289761001",
        "iat": now,
        "exp": now + 300,
        "nonce": NONCE,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def sign(key: Any, payload: dict[str, Any], alg: str = "RS256", kid: str | None = None) -> str:
    header = {"alg": alg, "kid": kid if kid is not None else key.kid}
    return jwt.encode(header, payload, key, algorithms=[alg])


@pytest.fixture
def provider_key() -> RSAKey:
    return rsa("k1")


@pytest.fixture
def keys(provider_key: RSAKey) -> Keys:
    return Keys(provider_key)


@pytest.fixture
def verifier(keys: Keys) -> IdTokenVerifier:
    return IdTokenVerifier(issuer=ISSUER, client_id=CLIENT, keys=keys, clock=Clock())


def test_a_token_the_provider_signed_is_accepted(
    verifier: IdTokenVerifier, provider_key: RSAKey
) -> None:
    got = verifier.verify(sign(provider_key, claims()), NONCE)
    assert got["sub"] == "248289761001"


def test_another_keys_signature_under_the_providers_kid_is_refused(
    verifier: IdTokenVerifier,
) -> None:
    forger = rsa("k1")  # same kid, different key
    with pytest.raises(Unauthenticated):
        verifier.verify(sign(forger, claims()), NONCE)


def test_an_unknown_key_refetches_the_jwks_once_then_refuses(
    verifier: IdTokenVerifier, keys: Keys
) -> None:
    with pytest.raises(Unauthenticated):
        verifier.verify(sign(rsa("k9"), claims()), NONCE)
    assert keys.fetches == 2  # the cached set, then one refetch


def test_a_rotated_key_is_found_by_the_refetch(
    verifier: IdTokenVerifier, keys: Keys, provider_key: RSAKey
) -> None:
    verifier.verify(sign(provider_key, claims()), NONCE)
    rotated = rsa("k2")
    keys.current.append(rotated)
    assert verifier.verify(sign(rotated, claims()), NONCE)["sub"] == "248289761001"


@pytest.mark.parametrize(
    "bad",
    [
        {"iss": "https://evil.example"},
        {"iss": ISSUER + "/"},
        {"aud": "another-client"},
        {"aud": [CLIENT, "another-client"]},  # several audiences and no azp
        # A fixed id: one with the time in it differs between pytest-xdist workers.
        pytest.param({"exp": int(time.time()) - 3600}, id="{'exp': an hour ago}"),
        {"exp": None},
        {"iat": None},
        {"sub": None},
        {"nonce": "another-attempt"},
        {"nonce": None},
    ],
    ids=repr,
)
def test_a_wrong_claim_is_refused(
    verifier: IdTokenVerifier, provider_key: RSAKey, bad: dict[str, Any]
) -> None:
    with pytest.raises(Unauthenticated):
        verifier.verify(sign(provider_key, claims(**bad)), NONCE)


def test_several_audiences_are_accepted_when_azp_is_this_client(
    verifier: IdTokenVerifier, provider_key: RSAKey
) -> None:
    token = sign(provider_key, claims(aud=[CLIENT, "api"], azp=CLIENT))
    assert verifier.verify(token, NONCE)["azp"] == CLIENT


def test_symmetric_and_unsigned_tokens_are_refused(verifier: IdTokenVerifier) -> None:
    hs = OctKey.import_key("a-client-secret-anyone-with-it-could-use-0123456789")
    with pytest.raises(Unauthenticated):
        verifier.verify(sign(hs, claims(), alg="HS256", kid="k1"), NONCE)
    unsigned = (
        ".".join(
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
            for part in ({"alg": "none", "kid": "k1"}, claims())
        )
        + "."
    )
    with pytest.raises(Unauthenticated):
        verifier.verify(unsigned, NONCE)
    for junk in ("", "not.a.token", "a" * 20_000):
        with pytest.raises(Unauthenticated):
            verifier.verify(junk, NONCE)


def test_the_flow_cookie_is_refused_when_forged() -> None:
    sealer = FlowSealer.for_secret("secret")
    cookie = sealer.seal({"s": "state", "n": "nonce"})
    assert sealer.open(cookie) == {"s": "state", "n": "nonce"}
    body, mac = cookie.split(".")
    forged = FlowSealer.for_secret("another").seal({"s": "state", "n": "other"})
    for bad in (None, "", body, f"{body}.{mac[:-2]}xx", forged, f"{forged.split('.')[0]}.{mac}"):
        with pytest.raises(ValidationError):
            sealer.open(bad)


def test_pkce_s256_matches_rfc_7636_appendix_b() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert s256_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_federated_usernames_are_valid_slugs_and_depend_on_the_subject_only() -> None:
    a = federated_username("oidc", "1", {"preferred_username": "Ana María.O'Neil"})
    assert a.startswith("ana-mar") and a.split("-")[-1].isalnum()
    assert federated_username("oidc", "1", {"email": "x@y"}).endswith(a[-10:])
    assert federated_username("oidc", "2", {"preferred_username": "Ana"})[-10:] != a[-10:]
    assert federated_username("oidc", "1", {}).startswith("user-")
