"""``relata bench retrieval``: retrieval quality and latency on a BEIR-format dataset.

The corpus is ingested into a fresh data dir through the real ingest service and pipeline
(in-process workers), or the data dir cached by an earlier run is copied, when the corpus
bytes, schema, parser, chunker, chunk sizes, embedding provider, model, width, vector store
and pipeline stages are the same (``corpus_key``). Then every query of the split that has
judgements goes through the search service the API uses: once with 100 results for the
quality figures (``relata.search.evaluation``: nDCG@10, recall@100, MRR@10), once at the API's
default page size of 10 for latency, and once per leg alone, so the fusion's gain over its
legs is visible.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relata.bootstrap import Container
from relata.chunking import CHUNKER_VERSION
from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    fresh_settings,
    ingest_records,
    machine,
    opened,
    positive_float,
    positive_int,
    quiet_settings,
    run_pipeline,
)
from relata.cli.common import CliError
from relata.config.settings import Settings
from relata.ingest.bulk import JsonlFields, jsonl_requests
from relata.ingest.catalog import MAX_PAGE
from relata.parsing import PARSER_VERSION
from relata.search.evaluation import BeirDataset, evaluate, load_qrels, load_queries, percentile
from relata.search.service import SearchQuery
from relata.storage.sql import migrate

CACHE_FORMAT = "1"
LEGS_ALONE = ("text", "chunk_text", "vector")
Progress = Callable[[str], None]

DESCRIPTION = (
    "Ingest a BEIR dataset's corpus.jsonl through the real pipeline into a fresh data dir "
    "(or copy the one cached by an earlier run with the same corpus, model, chunker and "
    "settings), run every judged query of the split through the search service, and report "
    "nDCG@10, recall@100, MRR@10 and p50/p95 latency, fused and per leg. Progress goes to "
    "stderr. The configured data dir and database are not touched."
)


@dataclass(frozen=True, slots=True)
class BenchOptions:
    dataset: Path
    split: str
    cache_dir: Path | None
    max_queries: int | None = None
    legs_alone: bool = True
    timeout: float = 3600.0
    workers: int | None = None


def register(group: Any) -> None:
    p = group.add_parser(
        "retrieval",
        help="nDCG@10, recall@100, MRR@10 and latency on a BEIR dataset",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--dataset",
        required=True,
        metavar="DIR",
        help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv",
    )
    p.add_argument("--split", required=True, metavar="NAME", help="the judgements: qrels/NAME.tsv")
    p.add_argument(
        "--cache-dir",
        default=".bench-cache",
        metavar="DIR",
        help="where ingested corpora are kept for reuse (default .bench-cache; '' disables)",
    )
    p.add_argument(
        "--max-queries",
        type=positive_int,
        default=None,
        metavar="N",
        help="only the first N judged queries",
    )
    p.add_argument("--no-legs", action="store_true", help="skip the per-leg runs")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker threads for the ingestion (default: RELATA_WORKERS)",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=3600.0,
        metavar="SECONDS",
        help="give up on the ingestion after this long (default 3600)",
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_retrieval)


def _bench_retrieval(args: argparse.Namespace) -> int:
    base = quiet_settings()
    opts = BenchOptions(
        dataset=Path(args.dataset),
        split=args.split,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        max_queries=args.max_queries,
        legs_alone=not args.no_legs,
        timeout=args.timeout,
        workers=args.workers,
    )
    report = run_retrieval_bench(base, opts, lambda msg: print(msg, file=sys.stderr))
    report["machine"] = machine()
    emit(report, _lines(report), as_json=args.json)
    return 0


def corpus_key(settings: Settings, corpus: Path, model_id: str, stages: tuple[str, ...]) -> str:
    """What a cached ingestion depends on: the corpus bytes and everything that shapes chunks
    and vectors."""
    h = hashlib.sha256()
    with corpus.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    parts = [
        CACHE_FORMAT,
        migrate.head_revision(),
        PARSER_VERSION,
        CHUNKER_VERSION,
        str(settings.chunk_target_chars),
        str(settings.chunk_overlap_chars),
        settings.embedding_provider,
        model_id,
        str(settings.embedding_dimensions),
        settings.vector_store,
        ",".join(stages),
    ]
    h.update("\x1f".join(parts).encode())
    return h.hexdigest()[:24]


def _ingest(c: Container, corpus: Path, opts: BenchOptions, progress: Progress) -> dict[str, Any]:
    ws, _ = c.workspaces.ensure(c.settings.default_workspace)
    t0 = time.perf_counter()
    with corpus.open("rb") as stream:
        tally = ingest_records(
            c,
            ws.id,
            jsonl_requests(
                stream, JsonlFields("_id", "title", "text"), c.settings.max_upload_bytes
            ),
        )
    progress(f"ingested {tally.ingested} items; running the pipeline")
    settled = run_pipeline(
        c,
        ws.id,
        tally.item_ids,
        workers=opts.workers,
        timeout=opts.timeout,
        poll_seconds=0.5,
        on_progress=lambda counts: progress(f"pipeline: {counts}"),
    )
    if not settled.finished:
        raise CliError(f"the pipeline did not finish within {opts.timeout:g} s (--timeout)")
    return {
        "items": tally.ingested,
        "rejected": len(tally.rejected),
        "failed": settled.counts.get("failed", 0),
        "seconds": round(time.perf_counter() - t0, 1),
    }


@contextmanager
def prepared_container(
    base: Settings, opts: BenchOptions, progress: Progress
) -> Iterator[tuple[Container, dict[str, Any]]]:
    """A container over a data dir holding the ingested corpus, from the cache when possible."""
    ds = BeirDataset.locate(opts.dataset, opts.split)
    with tempfile.TemporaryDirectory(prefix="relata-retrieval-") as tmp:
        data = Path(tmp) / "data"
        settings = fresh_settings(base, data)
        # What the cache key needs (the model and the stages this deployment runs), as built.
        with opened(fresh_settings(base, Path(tmp) / "probe"), migrated=False) as probe:
            model_id = probe.embedder.model_id if probe.embedder else "none"
            stages = tuple(
                str(s.kind) for s in probe.pipeline.stages if probe.pipeline.is_available(s)
            )
        key = corpus_key(settings, ds.corpus, model_id, stages)
        cached = opts.cache_dir / key if opts.cache_dir else None
        info: dict[str, Any] = {"cache_key": key, "model": model_id}
        if cached is not None and (cached / "relata.db").is_file():
            progress(f"reusing the ingested corpus from {cached}")
            shutil.copytree(cached, data)
            info["ingestion"] = json.loads((cached / "ingestion.json").read_text())
            info["cache"] = "hit"
        else:
            with opened(settings) as c:
                info["ingestion"] = _ingest(c, ds.corpus, opts, progress)
            (data / "ingestion.json").write_text(json.dumps(info["ingestion"]))
            info["cache"] = "miss"
            if cached is not None:
                _store(data, cached)
        with opened(settings) as c:
            yield c, info


def _store(data: Path, cached: Path) -> None:
    """Copy the ingested data dir into the cache, appearing there whole or not at all."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp_copy = cached.with_name(cached.name + ".tmp")
    shutil.rmtree(tmp_copy, ignore_errors=True)
    shutil.copytree(data, tmp_copy)
    tmp_copy.rename(cached)


def _external_ids(c: Container, workspace_id: str) -> dict[str, str]:
    """item id -> the corpus document id kept in metadata."""
    out: dict[str, str] = {}
    offset = 0
    while page := c.items.list(workspace_id, limit=MAX_PAGE, offset=offset):
        for item in page:
            ext = item.metadata.get("external_id")
            if ext:
                out[item.id] = ext
        offset += len(page)
    return out


def _run_queries(
    c: Container,
    workspace_id: str,
    queries: dict[str, str],
    ids: dict[str, str],
    *,
    legs: frozenset[str] | None,
    limit: int,
    stages: dict[str, list[float]] | None = None,
) -> tuple[dict[str, list[str]], list[float]]:
    """Each query through the search service: its results (corpus ids) and wall-clock
    latency; ``stages`` collects the service's own timing of each of its steps."""
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        resp = c.search.search(workspace_id, SearchQuery(text=text, limit=limit, legs=legs))
        latencies.append((time.perf_counter() - t0) * 1000)
        run[qid] = [ids[r.item.id] for r in resp.results if r.item.id in ids]
        if stages is not None:
            for step, ms in resp.timings_ms.items():
                stages.setdefault(step, []).append(ms)
    return run, latencies


def run_retrieval_bench(base: Settings, opts: BenchOptions, progress: Progress) -> dict[str, Any]:
    ds = BeirDataset.locate(opts.dataset, opts.split)
    qrels = load_qrels(ds.qrels)
    queries = {q: t for q, t in load_queries(ds.queries).items() if q in qrels}
    if opts.max_queries is not None:
        queries = dict(list(queries.items())[: opts.max_queries])
        qrels = {q: qrels[q] for q in queries}  # score only the queries that were run
    with prepared_container(base, opts, progress) as (c, info):
        ws = c.workspaces.resolve()
        ids = _external_ids(c, ws.id)
        # Warm-up: load the model and the caches before timing anything.
        c.search.search(ws.id, SearchQuery(text="warm up", limit=10))
        progress(f"running {len(queries)} queries (fused, 100 results each)")
        run, _ = _run_queries(c, ws.id, queries, ids, legs=None, limit=100)
        report = evaluate(run, qrels)
        progress("timing the fused search at the API's default page size (10)")
        steps: dict[str, list[float]] = {}
        cpu0, wall0 = time.process_time(), time.perf_counter()
        _, latencies = _run_queries(c, ws.id, queries, ids, legs=None, limit=10, stages=steps)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        out: dict[str, Any] = {
            **report.as_dict(),
            "p50_ms": round(percentile(latencies, 50), 2),
            "p95_ms": round(percentile(latencies, 95), 2),
            # The timed run as a whole (all threads of the process), and where a query's time
            # goes: the service's own timing of each step (the legs run side by side).
            "timed_run": {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)},
            "steps_ms": {
                step: {
                    "p50": round(percentile(ms, 50), 2),
                    "p95": round(percentile(ms, 95), 2),
                }
                for step, ms in sorted(steps.items())
            },
            "corpus_items": len(ids),
            "split": opts.split,
            "fusion": {"k": c.settings.rrf_k, "weights": dict(c.search.fusion_weights)},
            **info,
        }
        if opts.legs_alone:
            out["legs_alone"] = _legs_alone(c, ws.id, queries, ids, qrels, progress)
    return out


def _legs_alone(
    c: Container,
    workspace_id: str,
    queries: dict[str, str],
    ids: dict[str, str],
    qrels: dict[str, dict[str, int]],
    progress: Progress,
) -> dict[str, Any]:
    alone: dict[str, Any] = {}
    for leg in LEGS_ALONE:
        if leg == "vector" and c.embedder is None:
            continue
        progress(f"leg {leg} alone")
        leg_run, leg_lat = _run_queries(
            c, workspace_id, queries, ids, legs=frozenset({leg}), limit=100
        )
        alone[leg] = {
            **evaluate(leg_run, qrels).as_dict(),
            "p50_ms": round(percentile(leg_lat, 50), 2),
            "p95_ms": round(percentile(leg_lat, 95), 2),
        }
    return alone


def _lines(report: dict[str, Any]) -> list[str]:
    r = report
    lines = [
        f"fused: ndcg@10 {r['ndcg@10']:.4f}  recall@100 {r['recall@100']:.4f}  "
        f"mrr@10 {r['mrr@10']:.4f}  p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  "
        f"({r['queries']} queries, {r['corpus_items']} items, cache {r['cache']})"
    ]
    if "timed_run" in r:
        lines.append(
            f"timed run (page of 10): {r['timed_run']['wall_s']} s wall, "
            f"{r['timed_run']['cpu_s']} s CPU; per step p50/p95 ms: "
            + ", ".join(f"{k} {v['p50']}/{v['p95']}" for k, v in r["steps_ms"].items())
        )
    for leg, s in r.get("legs_alone", {}).items():
        lines.append(
            f"{leg + ' alone:':<18} ndcg@10 {s['ndcg@10']:.4f}  recall@100 {s['recall@100']:.4f}"
            f"  mrr@10 {s['mrr@10']:.4f}  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms"
        )
    return lines
