"""The web's page routers, one module per area, included in one router."""

from __future__ import annotations

from fastapi import APIRouter

from relata.web.pages import auth, library

router = APIRouter(include_in_schema=False)
for _area in (auth, library):
    router.include_router(_area.router)
