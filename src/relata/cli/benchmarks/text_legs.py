"""``relata bench text-legs``: the full-text legs on SQLite and PostgreSQL side by side.

The corpus of a BEIR dataset is parsed and chunked as the pipeline does (the same parser and
chunker, the configured chunk sizes) and written, identically, into a fresh SQLite file and
into a PostgreSQL database given by ``--database`` (which must be empty: the command migrates
it and refuses one holding any item). No embedding, no knowledge stages: only what the text
legs read. Then every judged query runs against each database's ``TextSearch`` (the class
bootstrap would choose for it): the item leg (100 items), the chunk leg (chunks until 100
distinct items, best chunk per item, as the search service aggregates them) and the two
fused by reciprocal rank (the service's ``k`` and text / chunk_text weights; no vector leg),
each scored with nDCG@10 / recall@100 / MRR@10 (trec_eval definitions) and timed per query.
CPU is this process's and, on PostgreSQL, its server backends' (/proc). See
docs/benchmarks.md and docs/decisions/0032-text-search-per-dialect.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from relata.chunking import chunk_document
from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    machine,
    positive_int,
    quiet_settings,
)
from relata.cli.benchmarks.processes import _process_cpu
from relata.cli.common import CliError
from relata.domain.models import Chunk, Item, SourceType, Workspace
from relata.ids import chunk_id, content_hash, new_id
from relata.parsing import ParseLimits, parse
from relata.search.evaluation import (
    BeirDataset,
    evaluate,
    load_qrels,
    load_queries,
    percentile,
)
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.text_search import SqlTextSearchBase, build_text_search

DESCRIPTION = (
    "Write a BEIR dataset's corpus (parsed and chunked as the pipeline does, no embedding) "
    "into a fresh SQLite file and, when given, into the empty PostgreSQL database --database, "
    "then run "
    "every judged query of the split through each database's text search: nDCG@10, "
    "recall@100, MRR@10, latency and CPU for the item leg, the chunk leg and the two fused."
)
DEPTH = 100
MAX_CHUNK_PAGE = 1000
RRF_K = 60
WEIGHTS = {"text": 1.0, "chunk_text": 0.5}
Progress = Callable[[str], None]


def register(group: Any) -> None:
    p = group.add_parser(
        "text-legs",
        help="the full-text legs on SQLite and PostgreSQL side by side",
        description=DESCRIPTION,
    )
    p.add_argument("--dataset", required=True, metavar="DIR", help="a BEIR folder")
    p.add_argument("--split", required=True, metavar="NAME", help="the judgements: qrels/NAME.tsv")
    p.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="an empty PostgreSQL database, e.g. postgresql+psycopg://postgres@127.0.0.1/bench "
        "(default: SQLite only)",
    )
    p.add_argument(
        "--max-queries",
        type=positive_int,
        default=None,
        metavar="N",
        help="judge only the first N queries (default: all)",
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_text_legs)


def _bench_text_legs(args: argparse.Namespace) -> int:
    def progress(msg: str) -> None:
        print(msg, file=sys.stderr)

    report = run_text_legs(
        Path(args.dataset), args.split, args.database, args.max_queries, progress
    )
    report["machine"] = machine()
    emit(report, _lines(report), as_json=args.json)
    return 0


def run_text_legs(
    dataset: Path, split: str, pg_url: str | None, max_queries: int | None, progress: Progress
) -> dict[str, Any]:
    ds = BeirDataset.locate(dataset, split)
    qrels = load_qrels(ds.qrels)
    queries = {q: t for q, t in load_queries(ds.queries).items() if q in qrels}
    if max_queries is not None:
        queries = dict(list(queries.items())[:max_queries])
        qrels = {q: qrels[q] for q in queries}
    settings = quiet_settings()
    docs = list(_documents(ds.corpus, settings.chunk_target_chars, settings.chunk_overlap_chars))
    progress(f"{len(docs)} documents, {sum(len(c) for _, _, c in docs)} chunks")
    out: dict[str, Any] = {"split": split, "queries": len(queries), "documents": len(docs)}
    with tempfile.TemporaryDirectory(prefix="relata-text-legs-") as tmp:
        targets = [("sqlite", f"sqlite:///{tmp}/relata.db")]
        if pg_url is not None:
            targets.append(("postgresql", pg_url))
        for name, url in targets:
            db = Database.from_url(url)
            try:
                if db.dialect != name:
                    raise CliError(f"--database must be a PostgreSQL URL, not {db.dialect}")
                migrate.upgrade(db)
                t0, c0 = time.perf_counter(), _cpu(db)
                ws, ids = _load(db, docs, progress)
                if name == "postgresql":
                    # What autovacuum does soon after a bulk load; planned before it, the
                    # statistics tables look empty to the planner.
                    with db.write() as conn:
                        conn.exec_driver_sql("ANALYZE")
                loaded = {
                    "wall_s": round(time.perf_counter() - t0, 1),
                    "cpu_s": round(_cpu(db) - c0, 1),
                }
                progress(f"{name}: loaded in {loaded['wall_s']} s; running {len(queries)} queries")
                out[name] = {"load": loaded, **_legs(db, ws, ids, queries, qrels)}
            finally:
                db.dispose()
    return out


def _documents(corpus: Path, target: int, overlap: int) -> Iterator[tuple[str, Item, list[Any]]]:
    """(external id, item without workspace, chunk drafts) per corpus line."""
    now = datetime.now(UTC)
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            text, title = rec.get("text") or "", rec.get("title") or ""
            if not text.strip():
                continue
            doc = parse(text.encode(), SourceType.TEXT, limits=ParseLimits())
            item = Item(
                id=new_id(),
                workspace_id="",
                title=title[:500] or "untitled",
                source_type=SourceType.TEXT,
                content_hash=content_hash(text),
                size_bytes=len(text.encode()),
                ingested_at=now,
                text=doc.text,
            )
            drafts = chunk_document(doc, target_chars=target, overlap_chars=overlap)
            yield str(rec["_id"]), item, drafts


def _load(
    db: Database, docs: list[tuple[str, Item, list[Any]]], progress: Progress
) -> tuple[str, dict[str, str]]:
    workspaces = SqlWorkspaceRepository(db)
    items, chunks = SqlItemRepository(db), SqlChunkRepository(db)
    with db.read() as conn:
        if conn.execute(sa.text("SELECT count(*) FROM items")).scalar_one():
            raise CliError(f"{db.dialect}: the database already holds items; give an empty one")
    ws = workspaces.create(
        Workspace(id=new_id(), slug="bench", name="bench", created_at=datetime.now(UTC))
    )
    ids: dict[str, str] = {}
    for n, (ext, template, drafts) in enumerate(docs, start=1):
        item = dataclasses.replace(template, id=new_id(), workspace_id=ws.id)
        items.create(item)
        chunks.replace_for_item(
            ws.id,
            item.id,
            [
                Chunk(
                    id=chunk_id(ws.id, item.id, d.sequence, digest),
                    workspace_id=ws.id,
                    item_id=item.id,
                    sequence=d.sequence,
                    text=d.text,
                    content_hash=digest,
                    start_offset=d.start,
                    end_offset=d.end,
                    heading_path=tuple(d.heading_path),
                    page=d.page,
                )
                for d in drafts
                for digest in (content_hash(d.text),)
            ],
        )
        ids[item.id] = ext
        if n % 1000 == 0:
            progress(f"{db.dialect}: {n} documents written")
    return ws.id, ids


def _legs(
    db: Database,
    ws: str,
    ids: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, Any]:
    search = build_text_search(db)
    search.search_items(ws, "warm up", limit=10)
    runs: dict[str, dict[str, list[str]]] = {"text": {}, "chunk_text": {}, "fused_text": {}}
    times: dict[str, list[float]] = {"text": [], "chunk_text": []}
    cpu0 = _cpu(db)
    for qid, text in queries.items():
        t0 = time.perf_counter()
        hits = [ids[h.id] for h in search.search_items(ws, text, limit=DEPTH)]
        t1 = time.perf_counter()
        per_item = _chunk_items(search, ws, text, ids)
        t2 = time.perf_counter()
        times["text"].append((t1 - t0) * 1000)
        times["chunk_text"].append((t2 - t1) * 1000)
        runs["text"][qid] = hits
        runs["chunk_text"][qid] = per_item
        runs["fused_text"][qid] = _rrf({"text": hits, "chunk_text": per_item})
    cpu = _cpu(db) - cpu0
    out: dict[str, Any] = {
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_query": round(cpu * 1000 / max(len(queries), 1), 1),
        "per_call_cpu_ms": _per_call_cpu(db, search, ws, list(queries.values())),
    }
    for leg, run in runs.items():
        scores = evaluate(run, qrels).as_dict()
        out[leg] = {k: scores[k] for k in ("ndcg@10", "recall@100", "mrr@10")}
        if leg in times:
            out[leg]["p50_ms"] = round(percentile(times[leg], 50), 2)
            out[leg]["p95_ms"] = round(percentile(times[leg], 95), 2)
    return out


def _per_call_cpu(
    db: Database, search: SqlTextSearchBase, ws: str, queries: list[str]
) -> dict[str, float]:
    """CPU ms per call of each leg at the search service's depth (100), with the matched
    words and highlights and without them (``marks=False``, as the service ranks, ADR 49)."""
    out: dict[str, float] = {}
    for marks in (True, False):
        for leg, call in (("items", search.search_items), ("chunks", search.search_chunks)):
            cpu0 = _cpu(db)
            for text in queries:
                call(ws, text, limit=DEPTH, marks=marks)
            ms = (_cpu(db) - cpu0) * 1000 / max(len(queries), 1)
            out[f"{leg}_{'marked' if marks else 'ranked_only'}"] = round(ms, 2)
    return out


def _chunk_items(search: SqlTextSearchBase, ws: str, text: str, ids: dict[str, str]) -> list[str]:
    """Items in the order of their best chunk, up to ``DEPTH`` items."""
    seen: dict[str, None] = {}
    for hit in search.search_chunks(ws, text, limit=MAX_CHUNK_PAGE):
        seen.setdefault(ids[hit.item_id], None)
        if len(seen) >= DEPTH:
            break
    return list(seen)


def _rrf(legs: dict[str, list[str]]) -> list[str]:
    scores: dict[str, float] = {}
    for leg, ranked in legs.items():
        for rank, doc in enumerate(ranked, start=1):
            scores[doc] = scores.get(doc, 0.0) + WEIGHTS[leg] / (RRF_K + rank)
    return [d for d, _ in sorted(scores.items(), key=lambda ds: (-ds[1], ds[0]))][:DEPTH]


def _cpu(db: Database) -> float:
    """This process's CPU seconds, plus the PostgreSQL backends' serving ``db``."""
    total = time.process_time()
    if db.dialect == "postgresql":
        with db.read() as conn:
            pids = conn.execute(
                sa.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            ).scalars()
            total += sum(c for c in (_process_cpu(int(p)) for p in pids) if c is not None)
    return total


def _lines(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['queries']} queries, {r['documents']} documents"]
    for name in ("sqlite", "postgresql"):
        d = r.get(name)
        if d is None:
            continue
        lines.append(
            f"{name}: load {d['load']['wall_s']} s wall / {d['load']['cpu_s']} s CPU; "
            f"queries {d['cpu_s']} s CPU ({d['cpu_ms_per_query']} ms a query)"
        )
        calls = d.get("per_call_cpu_ms", {})
        if calls:
            lines.append(
                "  CPU ms a call at 100 results, marked / ranked only: items "
                f"{calls['items_marked']} / {calls['items_ranked_only']}, chunks "
                f"{calls['chunks_marked']} / {calls['chunks_ranked_only']}"
            )
        for leg in ("text", "chunk_text", "fused_text"):
            s = d[leg]
            timing = f"  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms" if "p50_ms" in s else ""
            lines.append(
                f"  {leg:<11} ndcg@10 {s['ndcg@10']:.4f}  recall@100 {s['recall@100']:.4f}  "
                f"mrr@10 {s['mrr@10']:.4f}{timing}"
            )
    return lines
