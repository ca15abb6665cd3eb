"""Entities, one entity with its mentions, and alias candidates to review."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
