"""One item: metadata, runs, text with highlights, chunks, knowledge; its actions."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
