"""``relata bench``: benchmarks, one subcommand each (``bench ingest``; ``bench embed`` and
``bench retrieval`` join through ``BENCHMARKS``).

``bench ingest --jsonl FILE`` ingests a corpus into a *fresh* temporary data dir (its own
SQLite file; ``RELATA_DATA_DIR`` and ``RELATA_DATABASE_URL`` are not touched) through the
real ingest service, then runs the real pipeline with in-process workers until every item
is ready or failed. It reports items/s for ingestion, for the pipeline and in total, chunks/s,
and per stage (from the processing runs the stages record) the handler time. With ``--json``
the last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.cli.bench_embed import add_embed
from relata.cli.bench_retrieval import add_retrieval
from relata.cli.common import CliError, settings_or_exit
from relata.ingest.bulk import (
    BulkIngest,
    JsonlFields,
    Tally,
    jsonl_requests,
    wait_until_settled,
)
from relata.ingest.service import IngestRequest
from relata.observability.logging import configure_logging
from relata.storage.sql import migrate
from relata.storage.sql.tables import processing_runs

#: Each adds one ``relata bench <name>`` subcommand to the ``bench`` group's subparsers.
BENCHMARKS: list[Callable[[Any], None]] = []


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmarks (ingest, ...)", description=__doc__)
    group = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for add in BENCHMARKS:
        add(group)


def _register_ingest(group: Any) -> None:
    p = group.add_parser(
        "ingest",
        help="ingest a JSONL corpus into a fresh data dir and time the pipeline",
        description="Ingest a JSONL corpus (one {_id, title, text} object per line) into a "
        "fresh temporary data dir through the real service and pipeline, and report "
        "items/s and chunks/s.",
    )
    p.add_argument("--jsonl", required=True, metavar="FILE", help="the corpus")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N lines")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="default RELATA_WORKERS")
    p.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS")
    p.add_argument("--id-field", default="_id")
    p.add_argument("--title-field", default="title")
    p.add_argument("--text-field", default="text")
    p.add_argument("--json", action="store_true", help="end with one JSON object on a line")
    p.set_defaults(handler=_bench_ingest)


BENCHMARKS.append(_register_ingest)
BENCHMARKS.append(add_embed)
BENCHMARKS.append(add_retrieval)


def machine() -> dict[str, Any]:
    """Cores, CPU model and memory, for the record next to the figures."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return info


def _stage_times(c: Container, workspace_id: str) -> dict[str, dict[str, Any]]:
    """Per stage: runs, their summed handler time, and the wall-clock window they span."""
    with c.db.read() as conn:
        rows = conn.execute(
            sa.select(
                processing_runs.c.stage,
                processing_runs.c.outcome,
                processing_runs.c.started_at,
                processing_runs.c.finished_at,
            ).where(processing_runs.c.workspace_id == workspace_id)
        ).all()
    stages: dict[str, dict[str, Any]] = {}
    for stage, outcome, started, finished in rows:
        s = stages.setdefault(
            stage,
            {
                "runs": 0,
                "failed": 0,
                "skipped": 0,
                "busy_s": 0.0,
                "first": started,
                "last": finished,
            },
        )
        s["runs"] += 1
        s["skipped"] += outcome == "skipped"
        s["failed"] += outcome not in ("succeeded", "skipped")
        if finished is not None:
            s["busy_s"] += (finished - started).total_seconds()
            s["last"] = max(s["last"] or finished, finished)
        s["first"] = min(s["first"], started)
    out: dict[str, dict[str, Any]] = {}
    for stage, s in stages.items():
        window = (s["last"] - s["first"]).total_seconds() if s["last"] else 0.0
        out[stage] = {
            "runs": s["runs"],
            "failed": s["failed"],
            "skipped": s["skipped"],
            "handler_seconds": round(s["busy_s"], 3),
            "window_seconds": round(window, 3),
            "items_per_handler_s": round(s["runs"] / s["busy_s"], 1) if s["busy_s"] else None,
        }
    return out


def _rate(n: int, seconds: float) -> float | None:
    return round(n / seconds, 1) if seconds > 0 else None


def _bench_ingest(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise CliError("--limit must be at least 1", exit_code=2)
    base = settings_or_exit()
    configure_logging("error", base.log_format)
    corpus = Path(args.jsonl)
    if not corpus.is_file():
        raise CliError(f"{corpus} is not a file", exit_code=2)
    with tempfile.TemporaryDirectory(prefix="relata-bench-") as tmp:
        settings = base.replace(data_dir=tmp, database_url="")
        c = build(settings)
        try:
            report = _run(c, args, corpus)
        finally:
            c.close()
    report["machine"] = machine()
    report["command"] = (
        "relata bench ingest --jsonl "
        + str(args.jsonl)
        + (f" --limit {args.limit}" if args.limit else "")
    )
    _print(report)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    return 0


def _run(c: Container, args: argparse.Namespace, corpus: Path) -> dict[str, Any]:
    migrate.upgrade(c.db)
    ws, _ = c.workspaces.ensure(c.settings.default_workspace)
    fields = JsonlFields(args.id_field, args.title_field, args.text_field)
    with corpus.open("rb") as stream:  # read and decode first: the service is what is timed
        records: list[tuple[int, IngestRequest | str]] = list(
            jsonl_requests(stream, fields, c.settings.max_upload_bytes, limit=args.limit)
        )
    tally = Tally()
    t0, cpu0 = time.perf_counter(), time.process_time()
    bulk = BulkIngest(c.ingest, ws.id, tally)
    for lineno, request in records:
        bulk.add(f"line {lineno}", request)
    bulk.flush()
    ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - cpu0

    workers = args.workers if args.workers is not None else max(1, c.settings.workers)
    pool = c.worker_pool(workers=workers)
    t1, cpu1 = time.perf_counter(), time.process_time()
    pool.start()
    try:
        settled = wait_until_settled(
            c.repos.items,
            c.queue,
            ws.id,
            list(tally.item_ids),
            timeout=args.timeout,
            poll_seconds=0.1,
        )
    finally:
        pool.stop(c.settings.shutdown_timeout)
    pipeline_s, pipeline_cpu = time.perf_counter() - t1, time.process_time() - cpu1
    chunks = c.repos.chunks.count(ws.id)
    items = tally.ingested
    total_s = ingest_s + pipeline_s
    return {
        "corpus": str(corpus),
        "lines": len(records),
        "items": items,
        "duplicates": tally.duplicates,
        "rejected": len(tally.rejected),
        "ready": settled.counts.get("ready", 0),
        "failed": settled.counts.get("failed", 0),
        "finished": settled.finished,
        "chunks": chunks,
        "workers": workers,
        "chunk_target_chars": c.settings.chunk_target_chars,
        "chunk_overlap_chars": c.settings.chunk_overlap_chars,
        "database": c.db.dialect,
        "ingest": {
            "seconds": round(ingest_s, 3),
            "cpu_seconds": round(ingest_cpu, 3),
            "items_per_s": _rate(items, ingest_s),
        },
        "pipeline": {
            "seconds": round(pipeline_s, 3),
            "cpu_seconds": round(pipeline_cpu, 3),
            "items_per_s": _rate(items, pipeline_s),
            "chunks_per_s": _rate(chunks, pipeline_s),
        },
        "total": {
            "seconds": round(total_s, 3),
            "cpu_seconds": round(ingest_cpu + pipeline_cpu, 3),
            "items_per_s": _rate(items, total_s),
            "chunks_per_s": _rate(chunks, total_s),
        },
        "stages": _stage_times(c, ws.id),
    }


def _print(r: dict[str, Any]) -> None:
    print(
        f"corpus {r['corpus']}: {r['lines']} lines, {r['items']} items ingested, "
        f"{r['duplicates']} duplicates, {r['rejected']} rejected"
    )
    print(
        f"{r['chunks']} chunks (target {r['chunk_target_chars']} chars, overlap "
        f"{r['chunk_overlap_chars']}); {r['workers']} workers; {r['database']}"
    )
    for phase in ("ingest", "pipeline", "total"):
        p = r[phase]
        extra = f", {p['chunks_per_s']} chunks/s" if "chunks_per_s" in p else ""
        print(
            f"  {phase:<9} {p['seconds']:>8.2f} s ({p['cpu_seconds']:.2f} s CPU)  "
            f"{p['items_per_s']} items/s{extra}"
        )
    for stage, s in sorted(r["stages"].items()):
        print(
            f"  stage {stage:<6} {s['runs']} runs, {s['failed']} failed, {s['skipped']} skipped, "
            "handler time "
            f"{s['handler_seconds']:.2f} s ({s['items_per_handler_s']} items per handler-second)"
        )
    if not r["finished"]:
        print("  WARNING: the pipeline did not finish within --timeout")
    m = r["machine"]
    print(f"machine: {m.get('cpus')} CPUs, {m.get('cpu_model', '?')}, {m.get('ram_gib', '?')} GiB")
