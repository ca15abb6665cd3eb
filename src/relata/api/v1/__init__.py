"""The /api/v1 router. Each endpoint group is its own module, included here.

Every group but ``system`` reads or writes the database through the caller's workspace, so
each may answer 503 (``busy``, with Retry-After) while another writer holds the database.
Every group requires a principal (``relata.api.deps.principal``, added here so that no route
can forget it: 401 without credentials, 403 for a viewer's write or a missing CSRF token);
only ``POST /auth/sign-in``, ``GET /version`` and the two federated sign-in steps
(``relata.api.v1.oidc``) are public.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from relata.api.deps import principal
from relata.api.openapi import errors
from relata.api.v1 import (
    answers,
    audit,
    auth,
    claims,
    entities,
    exchange,
    graph,
    invitations,
    item_versions,
    items,
    jobs,
    model_status,
    oidc,
    relationships,
    search,
    system,
    tokens,
    watches,
    workspaces,
)

router = APIRouter(prefix="/api/v1")
router.include_router(system.router)
router.include_router(auth.router, responses=errors(503))
# Federated sign-in: public browser navigations (start, callback), not in the schema yet.
router.include_router(oidc.router)
_GROUPS = (
    jobs,
    items,
    item_versions,
    search,
    answers,
    entities,
    claims,
    relationships,
    graph,
    model_status,
    watches,
    audit,
    tokens,
    workspaces,
    invitations,
    exchange,
)
for group in _GROUPS:
    router.include_router(group.router, responses=errors(503), dependencies=[Depends(principal)])
