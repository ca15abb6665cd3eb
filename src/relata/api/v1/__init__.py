"""The /api/v1 router. Each endpoint group is its own module, included here.

Every group but ``system`` reads or writes the database through the caller's workspace, so
each may answer 503 (``busy``, with Retry-After) while another writer holds the database.
"""

from __future__ import annotations

from fastapi import APIRouter

from relata.api.openapi import errors
from relata.api.v1 import (
    answers,
    audit,
    claims,
    entities,
    items,
    jobs,
    model_status,
    relationships,
    search,
    system,
)

router = APIRouter(prefix="/api/v1")
router.include_router(system.router)
for group in (jobs, items, search, answers, entities, claims, relationships, model_status, audit):
    router.include_router(group.router, responses=errors(503))
