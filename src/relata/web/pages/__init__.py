"""The web's page routers, one module per area, included in one router."""

from __future__ import annotations

from fastapi import APIRouter

from relata.web.pages import (
    admin,
    ask,
    audit,
    auth,
    contradictions,
    entities,
    exchange,
    graph,
    invitations,
    item_edit,
    items,
    jobs,
    library,
    review,
    search,
    settings,
    upload,
    versions,
)

router = APIRouter(include_in_schema=False)
for _area in (
    auth,
    library,
    upload,
    items,
    item_edit,
    versions,
    search,
    ask,
    entities,
    graph,
    review,
    contradictions,
    jobs,
    settings,
    exchange,
    invitations,
    audit,
    admin,
):
    router.include_router(_area.router)
