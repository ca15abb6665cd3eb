"""``relata bench scale``: hybrid search at 100k-1M chunks on sqlite-vec and pgvector.

A synthetic corpus (``benchmarks.synthetic``: Zipf-distributed made-up words, clustered
vectors, deterministic from ``--seed``) is written into a fresh deployment: the embedded
default (SQLite + sqlite-vec in a temporary data dir) or the empty PostgreSQL database
``--database`` with pgvector. Items and chunks go through the repositories (so the full-text
indexes and per-workspace term statistics are the real ones), vectors through the configured
``VectorStore``. Then every query runs through the real ``SearchService``, every leg on, as
the API calls it; the only thing not real is the query embedding, a table lookup of the
query's synthetic vector (the embedding model's cost is ``relata bench embed``'s subject).

Reported per store: load time, search p50/p95 wall time, CPU per query (this process plus,
on PostgreSQL, its server backends), the per-step p50 the service records, where the target
chunk's item ranks (MRR@10: search works, not only fast), and the vector store's recall@10
against exact search computed here with numpy over all vectors (1.0 by construction for
sqlite-vec, which is exact; pgvector's HNSW is approximate).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    machine,
    machine_line,
    opened,
    positive_int,
    quiet_settings,
)
from relata.cli.benchmarks.synthetic import SyntheticCorpus, SyntheticQuery
from relata.cli.benchmarks.text_legs import _cpu
from relata.cli.common import CliError
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.models import Chunk, Item, ItemStatus, SourceType, Workspace
from relata.domain.ports import VectorRecord
from relata.ids import chunk_id, content_hash
from relata.search.evaluation import percentile
from relata.search.service import SearchQuery
from relata.storage.sql.tables import chunks as chunk_table
from relata.storage.sql.text_search.postgres import PostgresTextSearch
from relata.storage.vectors.pgvector import PgvectorStore

DESCRIPTION = (
    "Write a synthetic corpus of --chunks chunks (made-up words with a Zipf distribution, "
    "clustered vectors, deterministic from --seed) into a fresh embedded deployment "
    "(--store sqlite-vec) or the empty PostgreSQL database --database (--store pgvector), "
    "then run --queries hybrid searches through the search service: latency p50/p95, CPU "
    "per query, per-step times, MRR@10 of the chunk each query was made from, and the "
    "vector store's recall@10 against exact search."
)
CHUNKS_PER_ITEM = 10
BATCH = 1000
MODEL_ID = "synthetic"
_NAMESPACE = uuid.UUID("4f1d2c9e-7b1a-4c55-9a53-52656c617461")
Progress = Callable[[str], None]


def register(group: Any) -> None:
    p = group.add_parser(
        "scale",
        help="hybrid search at 100k-1M synthetic chunks, sqlite-vec or pgvector",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--chunks",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="chunks to write (default 100000)",
    )
    p.add_argument(
        "--store",
        choices=("sqlite-vec", "pgvector"),
        default="sqlite-vec",
        help="the vector store to measure (default sqlite-vec, in a temporary file)",
    )
    p.add_argument(
        "--database",
        metavar="URL",
        help="with --store pgvector: an empty PostgreSQL database with the vector extension "
        "available, e.g. postgresql+psycopg://postgres@127.0.0.1/bench",
    )
    p.add_argument(
        "--queries",
        type=positive_int,
        default=200,
        metavar="N",
        help="searches to time (default 200)",
    )
    p.add_argument(
        "--dimensions",
        type=positive_int,
        default=384,
        metavar="D",
        help="vector dimensions (default 384, as the bundled embedder)",
    )
    p.add_argument("--seed", type=int, default=7, help="corpus and query seed (default 7)")
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="with --store sqlite-vec: the data dir to write into and keep (default a "
        "temporary one); a data dir or --database that already holds this corpus (same "
        "--chunks, --seed and --dimensions) is searched again without writing it",
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_scale)


def _bench_scale(args: argparse.Namespace) -> int:
    if args.store == "pgvector" and not args.database:
        raise CliError("--store pgvector needs --database (an empty PostgreSQL database)")
    if args.store == "sqlite-vec" and args.database:
        raise CliError("--database is for --store pgvector; sqlite-vec uses a temporary file")
    if args.store == "pgvector" and args.data_dir:
        raise CliError("--data-dir is for --store sqlite-vec; pgvector uses --database")
    if args.dimensions < 2:
        raise CliError("--dimensions must be at least 2")

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr)

    report = run_scale(
        chunks=args.chunks,
        store=args.store,
        database=args.database,
        queries=args.queries,
        dimensions=args.dimensions,
        seed=args.seed,
        progress=progress,
        data_dir=args.data_dir,
    )
    report["machine"] = machine()
    emit(report, _lines(report), as_json=args.json)
    return 0


class QueryTable:
    """The ``Embedder`` port over the benchmark's queries: each query text's synthetic
    vector. Anything else is a programming error of the benchmark."""

    provider = "synthetic"
    model_id = MODEL_ID

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self._vectors: dict[str, list[float]] = {}

    def add(self, text: str, vector: Sequence[float]) -> None:
        self._vectors[text] = [float(x) for x in vector]

    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]:
        if cancel.cancelled:
            raise Cancelled("cancelled")
        return [self._vectors[t] for t in texts]

    def close(self) -> None:
        pass


def run_scale(
    *,
    chunks: int,
    store: str,
    database: str | None,
    queries: int,
    dimensions: int,
    seed: int,
    progress: Progress,
    data_dir: str | None = None,
) -> dict[str, Any]:
    corpus = SyntheticCorpus(chunks=chunks, dimensions=dimensions, seed=seed)
    table = QueryTable(dimensions)
    with contextlib.ExitStack() as stack:
        tmp = data_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="relata-scale-"))
        settings = quiet_settings().replace(
            data_dir=tmp,
            database_url=database or "",
            vector_store=store,
            embedding_dimensions=dimensions,
            ai_provider="",
            analysis_enabled=False,
        )
        with opened(settings, embedder=table) as c:
            if c.db.dialect != ("postgresql" if store == "pgvector" else "sqlite"):
                raise CliError(f"--store {store} cannot run on a {c.db.dialect} database")
            c.vectors.prepare()
            t0, cpu0 = time.perf_counter(), _cpu(c.db)
            ws, vectors, sample, item_of, chunk_ids, written = _load(c, corpus, progress)
            if written and c.db.dialect == "postgresql":
                with c.db.write() as conn:
                    conn.exec_driver_sql("ANALYZE")
            load: dict[str, Any] = {
                "wall_s": round(time.perf_counter() - t0, 1),
                "cpu_s": round(_cpu(c.db) - cpu0, 1),
                "written": written,
            }
            what = "loaded" if written else "generated (already written)"
            progress(f"{what} {chunks} chunks in {load['wall_s']} s; {queries} queries")
            qs = corpus.queries(queries, sample, vectors)
            for q in qs:
                table.add(q.text, q.vector.tolist())
            out: dict[str, Any] = {
                "store": store,
                "chunks": chunks,
                "items": len(set(item_of)),
                "dimensions": dimensions,
                "topics": corpus.topics,
                "seed": seed,
                "queries": len(qs),
                "load": load,
            }
            out.update(_searches(c, ws, qs, item_of))
            out["vector_recall@10"] = _recall(c, ws, qs, vectors, chunk_ids)
    return out


def corpus_ids(seed: int, chunks: int, dimensions: int) -> tuple[str, Callable[[int], str]]:
    """The workspace id of a corpus and its ``n``-th item's id: fixed by the corpus's shape,
    so a database that holds it can be searched again without writing it anew."""
    base = f"relata-bench-scale:{seed}:{chunks}:{dimensions}"
    return str(uuid.uuid5(_NAMESPACE, base)), lambda n: str(uuid.uuid5(_NAMESPACE, f"{base}:{n}"))


def _load(
    c: Container, corpus: SyntheticCorpus, progress: Progress
) -> tuple[str, np.ndarray[Any, Any], dict[int, str], list[str], list[str], bool]:
    """Write the corpus, or find it already written (same seed, size and width); returns
    the workspace, every vector (in order), the texts of every 97th chunk (the query
    targets), each chunk's item id, each chunk's id, and whether it was written now.

    Written a batch at a time: the batch's items in one statement, their chunks in
    another, their vectors in one upsert; on pgvector the HNSW index is built once over
    every row at the end (``PgvectorStore.bulk_load``), not grown row by row."""
    ws, item_id = corpus_ids(corpus.seed, corpus.chunks, corpus.dimensions)
    with c.db.read() as conn:
        held = conn.execute(sa.text("SELECT count(*) FROM items")).scalar_one()
        mine = conn.execute(
            sa.text("SELECT count(*) FROM chunks WHERE workspace_id = :w"), {"w": ws}
        ).scalar_one()
    write = held == 0
    if not write and mine != corpus.chunks:
        raise CliError(
            "the database already holds items (not this corpus: --chunks, --seed and "
            "--dimensions must match to search it again); give an empty one"
        )
    if write:
        c.repos.workspaces.create(
            Workspace(id=ws, slug="scale", name="scale", created_at=datetime.now(UTC))
        )
    else:
        progress(f"the database holds this corpus ({corpus.chunks} chunks): searching it again")
    vectors = np.empty((corpus.chunks, corpus.dimensions), dtype=np.float32)
    sample: dict[int, str] = {}
    item_of: list[str] = []
    chunk_ids: list[str] = []
    now = datetime.now(UTC)
    n = 0
    bulk = write and isinstance(c.vectors, PgvectorStore)
    # The HNSW graph's memory (the vectors and about 400 bytes of links a row), with room.
    graph_mb = corpus.chunks * (4 * corpus.dimensions + 400) * 5 // 4 // 2**20
    with contextlib.ExitStack() as loading:
        if bulk and isinstance(c.vectors, PgvectorStore):
            loading.enter_context(c.vectors.bulk_load(memory_mb=max(64, graph_mb)))
        if write and isinstance(c.text_search, PostgresTextSearch):
            loading.enter_context(c.text_search.bulk_load())
        for batch in corpus.batches(BATCH):
            records: list[VectorRecord] = []
            new_items: list[Item] = []
            new_chunks: list[list[Chunk]] = []
            for start in range(0, len(batch), CHUNKS_PER_ITEM):
                part = batch[start : start + CHUNKS_PER_ITEM]
                text = "\n\n".join(ch.text for ch in part)
                item = Item(
                    id=item_id(n // CHUNKS_PER_ITEM),
                    workspace_id=ws,
                    title=" ".join(part[0].text.split()[:6]),
                    source_type=SourceType.TEXT,
                    content_hash=content_hash(f"{n}:{text}"),
                    size_bytes=len(text),
                    ingested_at=now,
                    created_at=now,
                    status=ItemStatus.READY,
                    text=text,
                    chunk_count=len(part),
                )
                rows: list[Chunk] = []
                offset = 0
                for seq, ch in enumerate(part):
                    digest = content_hash(ch.text)
                    cid = chunk_id(ws, item.id, seq, digest)
                    rows.append(
                        Chunk(
                            id=cid,
                            workspace_id=ws,
                            item_id=item.id,
                            sequence=seq,
                            text=ch.text,
                            content_hash=digest,
                            start_offset=offset,
                            end_offset=offset + len(ch.text),
                        )
                    )
                    offset += len(ch.text) + 2
                    records.append(
                        VectorRecord(cid, ws, item.id, "text", now, MODEL_ID, ch.vector.tolist())
                    )
                    vectors[n] = ch.vector
                    if n % 97 == 0:
                        sample[n] = ch.text
                    item_of.append(item.id)
                    chunk_ids.append(cid)
                    n += 1
                new_items.append(item)
                new_chunks.append(rows)
            if write:
                c.repos.items.create_many(new_items)
                # The batch's chunks in one statement: the statement-level triggers that keep
                # PostgreSQL's term statistics then upsert each lexeme once per batch, not once
                # per item (10x faster to load); the rows are what replace_chunks writes.
                with c.db.write(durable=False) as conn:
                    conn.execute(
                        chunk_table.insert(),
                        [_chunk_row(ch, now) for rows in new_chunks for ch in rows],
                    )
                c.vectors.upsert(records)
                if n % 50_000 < BATCH:
                    progress(f"{n} chunks written")
        if bulk:
            progress(f"{n} chunks written; building the vector index and text statistics")
    return ws, vectors, sample, item_of, chunk_ids, write


def _chunk_row(ch: Chunk, now: datetime) -> dict[str, Any]:
    return {
        "id": ch.id,
        "workspace_id": ch.workspace_id,
        "item_id": ch.item_id,
        "sequence": ch.sequence,
        "text": ch.text,
        "content_hash": ch.content_hash,
        "heading_path": list(ch.heading_path),
        "start_offset": ch.start_offset,
        "end_offset": ch.end_offset,
        "page": ch.page,
        "token_count": ch.token_count,
        "embedding_model": ch.embedding_model,
        "created_at": now,
    }


def _searches(
    c: Container, ws: str, qs: list[SyntheticQuery], item_of: list[str]
) -> dict[str, Any]:
    c.search.search(ws, SearchQuery(text=qs[0].text))  # warm up: caches, prepared plans
    walls: list[float] = []
    steps: dict[str, list[float]] = {}
    reciprocal = 0.0
    cpu0 = _cpu(c.db)
    for q in qs:
        t0 = time.perf_counter()
        res = c.search.search(ws, SearchQuery(text=q.text, limit=10))
        walls.append((time.perf_counter() - t0) * 1000)
        for step, ms in (res.timings_ms).items():
            steps.setdefault(str(step), []).append(float(ms))
        ranked = [r.item.id for r in res.results]
        target = item_of[q.target]
        if target in ranked:
            reciprocal += 1 / (ranked.index(target) + 1)
    cpu = _cpu(c.db) - cpu0
    return {
        "p50_ms": round(percentile(walls, 50), 1),
        "p95_ms": round(percentile(walls, 95), 1),
        "cpu_ms_per_query": round(cpu * 1000 / len(qs), 1),
        "steps_p50_ms": {k: round(percentile(v, 50), 2) for k, v in sorted(steps.items())},
        "steps_p95_ms": {k: round(percentile(v, 95), 2) for k, v in sorted(steps.items())},
        "target_mrr@10": round(reciprocal / len(qs), 4),
    }


def _recall(
    c: Container,
    ws: str,
    qs: list[SyntheticQuery],
    vectors: np.ndarray[Any, Any],
    ids: list[str],
) -> float:
    """The store's top 10 against exact cosine search over every vector (``ids[i]`` is the
    chunk of ``vectors[i]``)."""
    found = 0
    for q in qs:
        exact = np.argpartition(-(vectors @ q.vector), 10)[:10]
        want = {ids[int(i)] for i in exact}
        got = {h.chunk_id for h in c.vectors.search(ws, q.vector.tolist(), k=10)}
        found += len(want & got)
    return round(found / (10 * len(qs)), 4)


def _lines(r: dict[str, Any]) -> list[str]:
    steps = "  ".join(f"{k} {v}" for k, v in r["steps_p50_ms"].items())
    tails = "  ".join(f"{k} {v}" for k, v in r.get("steps_p95_ms", {}).items())
    return [
        f"{r['store']}: {r['chunks']} chunks in {r['items']} items, {r['dimensions']} dims, "
        f"{r['topics']} topics, seed {r['seed']}",
        f"load: {r['load']['wall_s']} s wall / {r['load']['cpu_s']} s CPU",
        f"{r['queries']} hybrid searches: p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  "
        f"CPU {r['cpu_ms_per_query']} ms/query  target MRR@10 {r['target_mrr@10']}",
        f"per step (p50 ms): {steps}",
        f"per step (p95 ms): {tails}",
        f"vector recall@10 vs exact: {r['vector_recall@10']}",
        machine_line(r.get("machine", {})),
    ]
