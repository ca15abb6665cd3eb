"""The retrieval benchmark: a BEIR dataset through the real pipeline and the real search service.

``run_retrieval_bench`` ingests the corpus into a fresh data dir with the real ingest service
and pipeline (in-process workers), or copies a cached data dir made earlier by the same corpus,
embedding model, parser, chunker and settings; then runs every query through the search
service the API uses and scores the rankings with ``evaluation``. The same queries are run with
each leg alone too, so the fusion's gain over its legs is visible.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relata.bootstrap import Container, build
from relata.chunking import CHUNKER_VERSION
from relata.config.settings import Settings
from relata.domain.errors import ValidationError
from relata.ingest.bulk import BulkIngest, JsonlFields, Tally, jsonl_requests, wait_until_settled
from relata.parsing import PARSER_VERSION
from relata.search.evaluation import BeirDataset, evaluate, load_qrels, load_queries, percentile
from relata.search.service import SearchQuery
from relata.storage.sql import migrate

CACHE_FORMAT = "1"
LEGS_ALONE = ("text", "chunk_text", "vector")
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BenchOptions:
    dataset: Path
    split: str
    cache_dir: Path | None
    max_queries: int | None = None
    legs_alone: bool = True
    timeout: float = 3600.0
    workers: int | None = None


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
    migrate.upgrade(c.db)
    ws, _ = c.workspaces.ensure(c.settings.default_workspace)
    tally = Tally()
    t0 = time.perf_counter()
    bulk = BulkIngest(c.ingest, ws.id, tally)
    with corpus.open("rb") as stream:
        for lineno, request in jsonl_requests(
            stream, JsonlFields("_id", "title", "text"), c.settings.max_upload_bytes
        ):
            bulk.add(f"line {lineno}", request)
    bulk.flush()
    progress(f"ingested {tally.ingested} items; running the pipeline")
    pool = c.worker_pool(workers=opts.workers)
    pool.start()
    try:
        settled = wait_until_settled(
            c.repos.items,
            c.queue,
            ws.id,
            list(tally.item_ids),
            timeout=opts.timeout,
            poll_seconds=0.5,
            progress_seconds=30,
            on_progress=lambda counts: progress(f"pipeline: {counts}"),
        )
    finally:
        pool.stop(c.settings.shutdown_timeout)
    if not settled.finished:
        raise ValidationError("the pipeline did not finish within the timeout", field="timeout")
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
        settings = base.replace(data_dir=str(data), database_url="")
        probe = build(settings.replace(data_dir=str(Path(tmp) / "probe")))
        model_id = probe.embedder.model_id if probe.embedder else "none"
        stages = probe.pipeline.after_chunk
        probe.close()
        key = corpus_key(settings, ds.corpus, model_id, stages)
        cached = opts.cache_dir / key if opts.cache_dir else None
        info: dict[str, Any] = {"cache_key": key, "model": model_id}
        if cached is not None and (cached / "relata.db").is_file():
            progress(f"reusing the ingested corpus from {cached}")
            shutil.copytree(cached, data)
            info["ingestion"] = json.loads((cached / "ingestion.json").read_text())
            info["cache"] = "hit"
        else:
            c = build(settings)
            try:
                info["ingestion"] = _ingest(c, ds.corpus, opts, progress)
            finally:
                c.close()
            (data / "ingestion.json").write_text(json.dumps(info["ingestion"]))
            info["cache"] = "miss"
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp_copy = cached.with_name(cached.name + ".tmp")
                shutil.rmtree(tmp_copy, ignore_errors=True)
                shutil.copytree(data, tmp_copy)
                tmp_copy.rename(cached)
        c = build(settings)
        try:
            migrate.upgrade(c.db)
            yield c, info
        finally:
            c.close()


def _external_ids(c: Container, workspace_id: str) -> dict[str, str]:
    """item id -> the corpus document id kept in metadata."""
    out: dict[str, str] = {}
    offset = 0
    while True:
        page = c.repos.items.list(workspace_id, limit=1000, offset=offset)
        if not page:
            return out
        for item in page:
            ext = item.metadata.get("external_id")
            if ext:
                out[item.id] = ext
        offset += len(page)


def _run_queries(
    c: Container,
    workspace_id: str,
    queries: dict[str, str],
    ids: dict[str, str],
    *,
    legs: frozenset[str] | None,
    limit: int,
) -> tuple[dict[str, list[str]], list[float]]:
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        resp = c.search.search(workspace_id, SearchQuery(text=text, limit=limit, legs=legs))
        latencies.append((time.perf_counter() - t0) * 1000)
        run[qid] = [ids[r.item.id] for r in resp.results if r.item.id in ids]
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
        _, latencies = _run_queries(c, ws.id, queries, ids, legs=None, limit=10)
        out: dict[str, Any] = {
            **report.as_dict(),
            "p50_ms": round(percentile(latencies, 50), 2),
            "p95_ms": round(percentile(latencies, 95), 2),
            "corpus_items": len(ids),
            "split": opts.split,
            "fusion": {"k": c.settings.rrf_k, "weights": dict(c.search.fusion_weights)},
            **info,
        }
        if opts.legs_alone:
            alone: dict[str, Any] = {}
            for leg in LEGS_ALONE:
                if leg == "vector" and c.embedder is None:
                    continue
                progress(f"leg {leg} alone")
                leg_run, leg_lat = _run_queries(
                    c, ws.id, queries, ids, legs=frozenset({leg}), limit=100
                )
                alone[leg] = {
                    **evaluate(leg_run, qrels).as_dict(),
                    "p50_ms": round(percentile(leg_lat, 50), 2),
                    "p95_ms": round(percentile(leg_lat, 95), 2),
                }
            out["legs_alone"] = alone
    return out
