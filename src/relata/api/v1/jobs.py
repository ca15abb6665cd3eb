"""GET /api/v1/jobs: the caller's workspace's background jobs, filtered and paged.

The ``kind`` filter accepts the registered job kinds (listed in the OpenAPI document by
``relata.api.openapi``); the response shapes are in ``relata.schemas.jobs``.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.v1.params import Offset
from relata.domain.models import JobStatus
from relata.schemas.jobs import JobOut, JobPage

router = APIRouter(tags=["jobs"])


@router.get("/jobs", response_model=JobPage)
def list_jobs(
    p: PrincipalDep,
    c: ContainerDep,
    status: JobStatus | None = Query(None, description="Only jobs in this state."),
    kind: str | None = Query(None, max_length=64, description="Only jobs of this kind."),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> JobPage:
    jobs = c.queue.list(
        p.workspace_id,
        status=status.value if status is not None else None,
        kind=kind,
        limit=limit,
        offset=offset,
    )
    return JobPage(
        jobs=[JobOut.of(j) for j in jobs],
        limit=limit,
        offset=offset,
        next_offset=offset + len(jobs) if len(jobs) == limit else None,
    )
