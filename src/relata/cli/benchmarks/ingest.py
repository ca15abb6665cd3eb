"""``relata bench ingest``: a JSONL corpus through the ingest service and the whole pipeline.

The corpus is read and decoded first (outside the timing), then ingested into a fresh
temporary data dir through the real ingest service (validation, sniffing, hashing, duplicate
check, stored originals, rows, ``parse_item`` jobs); then an in-process worker pool runs the
pipeline until every item is ready or failed. Reported: wall-clock and CPU seconds of the
ingest phase, the pipeline phase and both; items/s and chunks/s; the SQL statements and
transactions per pipeline job (the worker pool's threads, the benchmark's own polling left
out) and per ingested item; and per stage, from the processing runs the stages record, the
runs and their summed handler time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from relata.bootstrap import Container
from relata.cli.benchmarks.common import (
    Record,
    StatementCounter,
    add_json_flag,
    emit,
    existing_file,
    fresh_settings,
    ingest_records,
    machine,
    machine_line,
    opened,
    positive_float,
    positive_int,
    quiet_settings,
    rate,
    run_pipeline,
)
from relata.cli.benchmarks.processes import run_pipeline_in_processes
from relata.cli.common import CliError
from relata.domain.vocabulary import RunOutcome
from relata.ingest.bulk import JsonlFields, Settled, Tally, jsonl_requests
from relata.jobs.queue import MAX_PAGE
from relata.storage.sql.tables import items

DESCRIPTION = (
    "Ingest a JSONL corpus (one {_id, title, text} object per line) into a fresh temporary "
    "data dir through the real ingest service, run the pipeline with in-process workers "
    "until every item is ready or failed, and report wall-clock and CPU seconds, items/s, "
    "chunks/s, SQL statements per job and handler time per stage. The configured data dir "
    "and database are not touched; the other settings (embedding provider, chunk sizes, "
    "workers) apply."
)


def register(group: Any) -> None:
    p = group.add_parser(
        "ingest",
        help="time ingestion and the pipeline on a JSONL corpus",
        description=DESCRIPTION,
    )
    p.add_argument("--jsonl", required=True, metavar="FILE", help="the corpus, one JSON per line")
    p.add_argument(
        "--limit", type=positive_int, default=None, metavar="N", help="only the first N lines"
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker threads (default: RELATA_WORKERS)",
    )
    p.add_argument(
        "--processes",
        type=positive_int,
        default=None,
        metavar="N",
        help="run the pipeline with `relata worker --processes N` (child processes) instead of "
        "in-process workers; --workers is then threads per process",
    )
    p.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="use this (empty) database instead of a fresh SQLite file, e.g. PostgreSQL; "
        "the run's data is left in it",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=1800.0,
        metavar="SECONDS",
        help="stop waiting for the pipeline after this long (default 1800)",
    )
    p.add_argument(
        "--id-field", default="_id", metavar="NAME", help="the document id's field (default _id)"
    )
    p.add_argument(
        "--title-field", default="title", metavar="NAME", help="the title's field (default title)"
    )
    p.add_argument(
        "--text-field", default="text", metavar="NAME", help="the text's field (default text)"
    )
    p.add_argument(
        "--stages",
        type=_stages,
        default=None,
        metavar="LIST",
        help="run only these pipeline stages, comma-separated (default: all), e.g. parse,chunk",
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_ingest)


def _stages(value: str) -> tuple[str, ...]:
    from relata.domain.vocabulary import StageKind

    wanted = {v.strip() for v in value.split(",") if v.strip()}
    known = [k.value for k in StageKind]
    unknown = sorted(wanted - set(known))
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(f"stages are some of: {', '.join(known)}")
    return tuple(k for k in known if k in wanted)


def _bench_ingest(args: argparse.Namespace) -> int:
    base = quiet_settings()
    corpus = existing_file(args.jsonl)
    if args.processes is not None and args.stages is not None:
        raise CliError("--stages needs in-process workers: it cannot be used with --processes")
    with tempfile.TemporaryDirectory(prefix="relata-bench-") as tmp:
        settings = fresh_settings(base, tmp)
        if args.database:
            settings = settings.replace(database_url=args.database)
        with opened(settings, stages=args.stages) as c:
            _require_empty(c)
            report = _run(c, args, corpus)
    report["machine"] = machine()
    report["command"] = (
        f"relata bench ingest --jsonl {args.jsonl}"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --workers {args.workers}" if args.workers else "")
        + (f" --processes {args.processes}" if args.processes else "")
        + (" --database URL" if args.database else "")
        + (f" --stages {','.join(args.stages)}" if args.stages else "")
    )
    emit(report, _lines(report), as_json=args.json)
    return 0


def _run(c: Container, args: argparse.Namespace, corpus: Path) -> dict[str, Any]:
    ws, _ = c.workspaces.ensure(c.settings.default_workspace)
    fields = JsonlFields(args.id_field, args.title_field, args.text_field)
    with corpus.open("rb") as stream:  # read and decode first: the service is what is timed
        records: list[Record] = list(
            jsonl_requests(stream, fields, c.settings.max_upload_bytes, limit=args.limit)
        )
    if args.processes is not None:
        return _run_in_processes(c, args, corpus, ws.id, records)
    workers = args.workers if args.workers is not None else max(1, c.settings.workers)
    with StatementCounter(c.db.engine) as sql:
        t0, cpu0 = time.perf_counter(), time.process_time()
        tally = ingest_records(c, ws.id, records)
        ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        ingest_sql = sql.own

        t1, cpu1 = time.perf_counter(), time.process_time()
        settled = run_pipeline(
            c, ws.id, tally.item_ids, workers=workers, timeout=args.timeout, poll_seconds=0.1
        )
        pipeline_s, pipeline_cpu = time.perf_counter() - t1, time.process_time() - cpu1
        pipeline_sql = sql.others  # the pool's threads only: not the polling above
    jobs = _jobs_by_kind(c, ws.id)
    job_count = sum(jobs.values())
    chunks = c.repos.chunks.count(ws.id)
    items = tally.ingested
    total_s = ingest_s + pipeline_s
    return {
        **_outcome(c, corpus, records, tally, settled, chunks),
        "workers": workers,
        "ingest": {
            "seconds": round(ingest_s, 3),
            "cpu_seconds": round(ingest_cpu, 3),
            "items_per_s": rate(items, ingest_s),
            "statements": ingest_sql.statements,
            "statements_per_item": _per(ingest_sql.statements, items),
        },
        "pipeline": {
            "seconds": round(pipeline_s, 3),
            "cpu_seconds": round(pipeline_cpu, 3),
            "items_per_s": rate(items, pipeline_s),
            "chunks_per_s": rate(chunks, pipeline_s),
            "jobs": job_count,
            "jobs_by_kind": jobs,
            "statements": pipeline_sql.statements,
            "transactions": pipeline_sql.transactions,
            "statements_per_job": _per(pipeline_sql.statements, job_count),
            "transactions_per_job": _per(pipeline_sql.transactions, job_count),
        },
        "total": {
            "seconds": round(total_s, 3),
            "cpu_seconds": round(ingest_cpu + pipeline_cpu, 3),
            "items_per_s": rate(items, total_s),
            "chunks_per_s": rate(chunks, total_s),
        },
        "stages": _stage_times(c, ws.id, list(tally.item_ids)),
    }


def _outcome(
    c: Container,
    corpus: Path,
    records: list[Record],
    tally: Tally,
    settled: Settled,
    chunks: int,
) -> dict[str, Any]:
    """The report's first part: what was read, ingested and settled, and the settings."""
    return {
        "corpus": str(corpus),
        "lines": len(records),
        "items": tally.ingested,
        "duplicates": tally.duplicates,
        "rejected": len(tally.rejected),
        "ready": settled.counts.get("ready", 0),
        "failed": settled.counts.get("failed", 0),
        "finished": settled.finished,
        "chunks": chunks,
        "chunk_target_chars": c.settings.chunk_target_chars,
        "chunk_overlap_chars": c.settings.chunk_overlap_chars,
        "database": c.db.dialect,
    }


def _require_empty(c: Container) -> None:
    if c.db.dialect == "sqlite" and not c.settings.database_url:
        return  # the fresh file
    with c.db.read() as conn:
        if conn.execute(sa.select(items.c.id).limit(1)).first() is not None:
            raise CliError("--database must be empty: it already holds items", exit_code=2)


def _run_in_processes(
    c: Container, args: argparse.Namespace, corpus: Path, ws: str, records: list[Record]
) -> dict[str, Any]:
    """Ingest as ``_run`` does, then run the pipeline with ``relata worker --processes N``:
    CPU is the worker processes' (and, on PostgreSQL, the database backends'), not this
    process's, and SQL is not counted (it runs in other processes)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    tally = ingest_records(c, ws, records)
    ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    t1 = time.perf_counter()
    run = run_pipeline_in_processes(
        c,
        ws,
        list(tally.item_ids),
        processes=args.processes,
        workers=args.workers,
        timeout=args.timeout,
    )
    pipeline_s = time.perf_counter() - t1
    items_n, chunks = tally.ingested, c.repos.chunks.count(ws)
    jobs = _jobs_by_kind(c, ws)
    return {
        **_outcome(c, corpus, records, tally, run.settled, chunks),
        "processes": args.processes,
        "workers": args.workers or "default",
        "ingest": {
            "seconds": round(ingest_s, 3),
            "cpu_seconds": round(ingest_cpu, 3),
            "items_per_s": rate(items_n, ingest_s),
        },
        "pipeline": {
            "seconds": round(pipeline_s, 3),
            "cpu_seconds": run.worker_cpu_seconds,
            "database_cpu_seconds": run.database_cpu_seconds,
            "items_per_s": rate(items_n, pipeline_s),
            "chunks_per_s": rate(chunks, pipeline_s),
            "jobs": sum(jobs.values()),
            "jobs_by_kind": jobs,
        },
        "total": {
            "seconds": round(ingest_s + pipeline_s, 3),
            "cpu_seconds": round(ingest_cpu + run.worker_cpu_seconds, 3),
            "items_per_s": rate(items_n, ingest_s + pipeline_s),
            "chunks_per_s": rate(chunks, ingest_s + pipeline_s),
        },
        "stages": _stage_times(c, ws, list(tally.item_ids)),
    }


def _per(n: int, of: int) -> float | None:
    return round(n / of, 2) if of else None


def _jobs_by_kind(c: Container, workspace_id: str) -> dict[str, int]:
    """How many jobs of each kind the workspace holds (every one ran: the pipeline settled)."""
    kinds: dict[str, int] = {}
    offset = 0
    while page := c.queue.list(workspace_id, limit=MAX_PAGE, offset=offset):
        for job in page:
            kinds[job.kind] = kinds.get(job.kind, 0) + 1
        offset += len(page)
    return dict(sorted(kinds.items()))


def _stage_times(c: Container, workspace_id: str, item_ids: list[str]) -> dict[str, Any]:
    """Per stage: runs, failed and skipped runs, their summed handler time, and the
    wall-clock window they span (read after the timing, item by item)."""
    stages: dict[str, dict[str, Any]] = {}
    for item_id in item_ids:
        for run in c.repos.runs.list_for_item(workspace_id, item_id):
            s = stages.setdefault(
                run.stage,
                {
                    "runs": 0,
                    "failed": 0,
                    "skipped": 0,
                    "busy_s": 0.0,
                    "cpu_ms": 0.0,
                    "first": None,
                    "last": None,
                },
            )
            cpu = run.details.get("cpu_ms")
            if isinstance(cpu, int | float):
                s["cpu_ms"] += cpu
            s["runs"] += 1
            s["skipped"] += run.outcome == RunOutcome.SKIPPED
            s["failed"] += run.outcome == RunOutcome.FAILED
            s["first"] = min(s["first"] or run.started_at, run.started_at)
            if run.finished_at is not None:
                s["busy_s"] += (run.finished_at - run.started_at).total_seconds()
                s["last"] = max(s["last"] or run.finished_at, run.finished_at)
    out: dict[str, Any] = {}
    for stage, s in sorted(stages.items()):
        window = (s["last"] - s["first"]).total_seconds() if s["last"] else 0.0
        out[stage] = {
            "runs": s["runs"],
            "failed": s["failed"],
            "skipped": s["skipped"],
            "handler_seconds": round(s["busy_s"], 3),
            "cpu_seconds": round(s["cpu_ms"] / 1000, 3),
            "window_seconds": round(window, 3),
            "items_per_handler_s": rate(s["runs"], s["busy_s"]),
        }
    return out


def _lines(r: dict[str, Any]) -> list[str]:
    lines = [
        f"corpus {r['corpus']}: {r['lines']} lines, {r['items']} items ingested, "
        f"{r['duplicates']} duplicates, {r['rejected']} rejected",
        f"{r['chunks']} chunks (target {r['chunk_target_chars']} chars, overlap "
        f"{r['chunk_overlap_chars']}); {r['workers']} workers"
        + (f" x {r['processes']} processes" if r.get("processes") else "")
        + f"; {r['database']}",
    ]
    for phase in ("ingest", "pipeline", "total"):
        p = r[phase]
        extra = f", {p['chunks_per_s']} chunks/s" if "chunks_per_s" in p else ""
        lines.append(
            f"  {phase:<9} {p['seconds']:>8.2f} s ({p['cpu_seconds']:.2f} s CPU)  "
            f"{p['items_per_s']} items/s{extra}"
        )
    p, i = r["pipeline"], r["ingest"]
    if "statements_per_job" in p:
        lines.append(
            f"  sql       {p['statements_per_job']} statements and {p['transactions_per_job']} "
            f"transactions per job ({p['statements']} statements, {p['jobs']} jobs); "
            f"ingest {i['statements_per_item']} statements per item"
        )
    if p.get("database_cpu_seconds") is not None:
        lines.append(f"  database  {p['database_cpu_seconds']:.2f} s CPU in its backends")
    for stage, s in r["stages"].items():
        lines.append(
            f"  stage {stage:<6} {s['runs']} runs, {s['failed']} failed, {s['skipped']} skipped, "
            "handler time "
            f"{s['handler_seconds']:.2f} s ({s['cpu_seconds']:.2f} s CPU; "
            f"{s['items_per_handler_s']} items per handler-second)"
        )
    if not r["finished"]:
        lines.append("  WARNING: the pipeline did not finish within --timeout")
    lines.append(machine_line(r["machine"]))
    return lines
