"""The job responses (``GET /api/v1/jobs``, the re-embed receipt, ``relata jobs --json``).

The payload is not part of them (it holds ids and options, and is nobody's business but the
handler's); ``last_error`` is the failure's type and a short message, never content.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from relata.domain.models import Job, JobStatus


class JobOut(BaseModel):
    id: str
    kind: str = Field(description="the handler that runs it, e.g. parse_item")
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
    next_offset: int | None = Field(description="offset of the next page; null on the last")
