"""The audit log, for owners."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
