"""Federated sign-in with OpenID Connect (the authorization code flow with PKCE), by seam:

- ``flow``: the signed flow cookie of an attempt (state, nonce, PKCE verifier);
- ``provider``: the provider over the safe HTTP path (discovery, JWKS, token endpoint: no
  redirects, a timeout and a size cap on every answer) and the configuration;
- ``idtoken``: the ID token's verification with joserfc;
- ``service``: ``OidcService``, the two legs (``begin``, ``complete``) and the user
  provisioned on a first sign-in.

docs/decisions/0023-federated-sign-in.md says why.
"""

from relata.auth.oidc.flow import (
    FLOW_COOKIE,
    FLOW_TTL,
    SECURE_FLOW_COOKIE,
    START_AGAIN,
    Begun,
    FlowSealer,
    s256_challenge,
)
from relata.auth.oidc.idtoken import ALLOWED_ALGORITHMS, IdTokenVerifier, KeySource
from relata.auth.oidc.provider import (
    MAX_DISCOVERY_BYTES,
    MAX_JWKS_BYTES,
    MAX_TOKEN_RESPONSE_BYTES,
    OidcConfig,
    ProviderClient,
    ProviderMetadata,
    oidc_config_from,
)
from relata.auth.oidc.service import FederatedIdentityStore, OidcService, federated_username

__all__ = [
    "ALLOWED_ALGORITHMS",
    "FLOW_COOKIE",
    "FLOW_TTL",
    "MAX_DISCOVERY_BYTES",
    "MAX_JWKS_BYTES",
    "MAX_TOKEN_RESPONSE_BYTES",
    "SECURE_FLOW_COOKIE",
    "START_AGAIN",
    "Begun",
    "FederatedIdentityStore",
    "FlowSealer",
    "IdTokenVerifier",
    "KeySource",
    "OidcConfig",
    "OidcService",
    "ProviderClient",
    "ProviderMetadata",
    "federated_username",
    "oidc_config_from",
    "s256_challenge",
]
