"""Jobs: the workspace's background jobs with their status and failures; retry a failed one.

The list is ``c.queue.list`` (as ``GET /api/v1/jobs``), newest first, filtered by status and
paged; each stage job names the item it works on (as ``relata jobs`` does), and a failed
job shows its ``last_error`` (Relata's short description, never content).

Retrying is how the system itself retries: a failed stage job reprocesses its item from that
stage (``c.items.reprocess(from_stage=...)``: a new pass, that stage and the later ones, with
the item ``pending`` again and audited), and a failed re-embedding starts re-embedding again
(``c.reembed.start``). A job that has not failed is not retried (409). Editors and owners
only, like reprocessing in the API.

``static/jobs.js`` polls ``GET /api/v1/jobs`` with the page's filters (bounded) and updates the
rows in place; without it the page shows the state on reload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.params import MAX_OFFSET
from relata.domain.errors import Conflict, NotFound, ValidationError
from relata.domain.models import Job, JobStatus
from relata.domain.vocabulary import Role, StageKind
from relata.embeddings.reembed import REEMBED_WORKSPACE
from relata.jobs.queue import parse_status
from relata.schemas.jobs import JobOut
from relata.web.context import Page, form, page
from relata.web.templating import NOTICES, render

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()
PAGE_SIZE = 25
#: The states a job is still moving through: the page's script polls while one is shown.
LIVE = frozenset({JobStatus.PENDING, JobStatus.RUNNING})

NOTICES.update({"retry_nothing": "Nothing to retry: everything is embedded already."})


def _item_id(job: Job) -> str | None:
    value = job.payload.get("item_id")
    return value if isinstance(value, str) and value else None


def retryable(job: Job) -> bool:
    """Whether ``retry`` knows how to run this job's work again (once it has failed)."""
    if job.kind == REEMBED_WORKSPACE:
        return True
    return StageKind.from_job_kind(job.kind) is not None and _item_id(job) is not None


def _rows(c: Container, workspace_id: str, jobs: list[Job]) -> list[dict[str, Any]]:
    """Each job's response shape with the item it works on (None: not an item's job; an
    item dict without a title: deleted since)."""
    ids = list(dict.fromkeys(i for i in map(_item_id, jobs) if i))
    found = c.items.briefs(workspace_id, ids)
    names = {i.id: i.title or i.original_filename or i.id for i in found}
    rows = []
    for job in jobs:
        item_id = _item_id(job)
        item = None if item_id is None else {"id": item_id, "title": names.get(item_id)}
        stage = StageKind.from_job_kind(job.kind)
        rows.append(
            {
                "job": JobOut.of(job),
                "item": item,
                "stage": stage.value if stage is not None else None,
                "retryable": retryable(job) and (item is None or item["title"] is not None),
            }
        )
    return rows


@router.get("/w/{slug}/jobs", name="web_jobs")
async def jobs(
    request: Request,
    who: Annotated[Page, Depends(page)],
    status: str | None = None,
    kind: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    c = container(request)
    chosen = parse_status(status)
    kinds = c.registry.kinds()
    if kind and kind not in kinds:
        raise ValidationError(f"kind must be one of {', '.join(kinds)}", field="kind")

    def load() -> tuple[list[Job], list[dict[str, Any]]]:
        found = c.queue.list(
            who.workspace_id,
            status=chosen.value if chosen else None,
            kind=kind or None,
            limit=PAGE_SIZE + 1,
            offset=offset,
        )
        return found, _rows(c, who.workspace_id, found[:PAGE_SIZE])

    found, rows = await run_in_threadpool(load)
    filters = {"status": chosen.value if chosen else None, "kind": kind or None}
    return render(
        request,
        "jobs.html",
        page=who,
        rows=rows,
        filters=filters,
        statuses=[s.value for s in JobStatus],
        kinds=kinds,
        offset=offset,
        next_offset=offset + PAGE_SIZE if len(found) > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        live=any(r["job"].status in LIVE for r in rows),
        can_retry=who.can(Role.EDITOR),
        page_size=PAGE_SIZE,
    )


def _retry(c: Container, who: Page, job_id: str) -> str:
    """Run the failed job's work again (see the module docstring); the notice code."""
    job = c.queue.get(who.workspace_id, job_id)
    if job.status is not JobStatus.FAILED:
        raise Conflict(f"only a failed job can be retried; this one is {job.status.value}")
    if job.kind == REEMBED_WORKSPACE:
        again = c.reembed.start(
            who.workspace_id, all_chunks=job.payload.get("all") is True, actor=who.principal.actor
        )
        return "retried" if again is not None else "retry_nothing"
    stage = StageKind.from_job_kind(job.kind)
    item_id = _item_id(job)
    if stage is None or item_id is None:
        raise Conflict(f"a {job.kind} job cannot be retried from here")
    try:
        c.items.reprocess(
            who.workspace_id, item_id, from_stage=stage.value, actor=who.principal.actor
        )
    except NotFound:
        raise NotFound("the item this job worked on has been deleted") from None
    return "retried"


@router.post("/w/{slug}/jobs/{job_id}/retry", name="web_job_retry")
async def retry(request: Request, job_id: str) -> Response:
    who, _ = await form(request)
    c = container(request)
    done = await run_in_threadpool(_retry, c, who, job_id)
    return RedirectResponse(f"{who.url('jobs')}?done={done}", status_code=303)
