"""Uploading several files from the library: bounded, each file reported."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
