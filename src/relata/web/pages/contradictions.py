"""Contradictions, open and resolved, both quotations side by side; resolve."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
