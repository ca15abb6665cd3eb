"""The /api/v1 router. Each endpoint group is its own module, included here."""

from __future__ import annotations

from fastapi import APIRouter

from relata.api.v1 import answers, items, jobs, models, search, system

router = APIRouter(prefix="/api/v1")
router.include_router(system.router)
router.include_router(jobs.router)
router.include_router(items.router)
router.include_router(search.router)
router.include_router(answers.router)
router.include_router(models.router)
