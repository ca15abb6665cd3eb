"""Ask: a cited answer, or why not with the sources and their contradictions."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
