"""Search with filters and legs, highlighted excerpts and explanations."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
