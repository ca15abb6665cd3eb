"""Jobs: status, failures and their errors; retry."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
