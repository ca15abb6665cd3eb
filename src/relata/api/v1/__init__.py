"""The /api/v1 router. Each endpoint group is its own module, included here."""

from __future__ import annotations

from fastapi import APIRouter

from relata.api.v1 import system

router = APIRouter(prefix="/api/v1")
router.include_router(system.router)
