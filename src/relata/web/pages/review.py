"""The relationship review queue: evidence side by side; confirm, reject, edit."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
