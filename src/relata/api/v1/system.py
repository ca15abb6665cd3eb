"""System information: version and the caller's workspace."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

import relata
from relata.api.deps import PrincipalDep
from relata.api.openapi import errors

router = APIRouter(tags=["system"])


class VersionOut(BaseModel):
    version: str


class WorkspaceOut(BaseModel):
    id: str
    slug: str


@router.get("/version", response_model=VersionOut)
def version() -> VersionOut:
    return VersionOut(version=relata.__version__)


@router.get("/workspaces/current", response_model=WorkspaceOut, responses=errors(503))
def current_workspace(p: PrincipalDep) -> WorkspaceOut:
    return WorkspaceOut(id=p.workspace_id, slug=p.workspace_slug)
