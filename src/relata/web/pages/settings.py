"""Settings: providers, models, vector count check, re-embed, API tokens, members."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
