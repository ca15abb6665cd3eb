"""GET /api/v1/jobs: the caller's workspace's background jobs, filtered and paged.

The payload is not returned (it holds ids and options, and is nobody's business but the
handler's); ``last_error`` is the failure's type and a short message, never content.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query
from pydantic import BaseModel

from relata.api.deps import ContainerDep, PrincipalDep
from relata.domain.models import Job, JobStatus

router = APIRouter(tags=["jobs"])


class JobOut(BaseModel):
    id: str
    kind: str
    status: JobStatus
    priority: int
    attempts: int
    max_attempts: int
    run_after: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    last_error: str | None
    idempotency_key: str | None
    correlation_id: str | None

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            kind=job.kind,
            status=job.status,
            priority=job.priority,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            run_after=job.run_after,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            last_error=job.last_error,
            idempotency_key=job.idempotency_key,
            correlation_id=job.correlation_id,
        )


class JobPage(BaseModel):
    jobs: list[JobOut]
    limit: int
    offset: int
    next_offset: int | None


@router.get("/jobs", response_model=JobPage)
def list_jobs(
    p: PrincipalDep,
    c: ContainerDep,
    status: JobStatus | None = Query(None, description="Only jobs in this state."),
    kind: str | None = Query(None, max_length=64, description="Only jobs of this kind."),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: int = Query(0, ge=0, description="Jobs to skip (newest first)."),
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
