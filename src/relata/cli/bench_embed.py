"""``relata bench embed``: the embed stage's speed against raw onnxruntime, in one run.

Reads ``title + text`` of the first ``--limit`` documents of a JSONL corpus and times, on the
very same texts, interleaved part by part (``relata.embeddings.bench``): bare
``session.run`` over the embedder's own batches (the floor), ``OnnxEmbedder.embed``, and the
embed stage's path: each document as one item, its passage embedded and upserted into a
fresh temporary sqlite-vec store through the stage's ``VectorWriter``, exactly as
``embed_item`` does. The target: the stage within 10% of raw (``stage_ratio`` >= 0.9). The
local model is used whatever RELATA_EMBEDDING_PROVIDER says (raw onnxruntime needs it); its
model directory, batch size and threads come from the settings. With ``--json`` the last line
of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relata.cli.common import CliError, settings_or_exit
from relata.domain.cancel import Cancel
from relata.domain.models import Chunk
from relata.domain.ports import ChunkToEmbed
from relata.embeddings.bench import bench_embed, read_corpus
from relata.embeddings.onnx import OnnxEmbedder
from relata.embeddings.stage import VectorWriter
from relata.ids import chunk_id, content_hash, new_id
from relata.observability.logging import configure_logging
from relata.storage.sql.engine import Database
from relata.storage.vectors.sqlite_vec import SqliteVecStore


def add_embed(group: Any) -> None:
    p = group.add_parser(
        "embed",
        help="texts/s of the embed stage against raw onnxruntime on the same texts",
        description="Embed the first N documents of a JSONL corpus ({title, text} per line) "
        "with raw onnxruntime, the local embedder and the embed stage's own path (passages, "
        "embedding, upsert into a temporary vector store), interleaved, and report texts/s "
        "and the ratios.",
    )
    p.add_argument("--jsonl", required=True, metavar="FILE", help="the corpus")
    p.add_argument("--limit", type=int, default=512, metavar="N", help="documents (default 512)")
    p.add_argument(
        "--rounds", type=int, default=1, metavar="N", help="repeat; the best round counts"
    )
    p.add_argument("--json", action="store_true", help="end with one JSON object on a line")
    p.set_defaults(handler=_bench_embed)


class StagePath:
    """The stage's path over given texts: one item per text, one ``write`` per item."""

    def __init__(self, writer: VectorWriter, texts: Sequence[str]) -> None:
        self._writer = writer
        self._cancel = Cancel.never()
        workspace_id, now = new_id(), datetime.now(UTC)
        self.workspace_id = workspace_id
        self._work: dict[str, ChunkToEmbed] = {}
        for text in texts:
            item_id, digest = new_id(), content_hash(text)
            chunk = Chunk(
                id=chunk_id(workspace_id, item_id, 0, digest),
                workspace_id=workspace_id,
                item_id=item_id,
                sequence=0,
                text=text,
                content_hash=digest,
                start_offset=0,
                end_offset=len(text),
            )
            # No title: the passage is the text itself, the very string raw onnxruntime gets.
            self._work[text] = ChunkToEmbed(chunk, "", "text", now)

    def run(self, texts: Sequence[str]) -> None:
        for text in texts:
            self._writer.write([self._work[text]], self._cancel)


def _bench_embed(args: argparse.Namespace) -> int:
    from relata.cli.bench import machine  # here: relata.cli.bench imports this module

    if args.limit < 1 or args.rounds < 1:
        raise CliError("--limit and --rounds must be at least 1", exit_code=2)
    settings = settings_or_exit()
    configure_logging("error", settings.log_format)
    corpus = Path(args.jsonl)
    if not corpus.is_file():
        raise CliError(f"{corpus} is not a file", exit_code=2)
    texts = read_corpus(corpus, args.limit)
    if not texts:
        raise CliError(f"{corpus} holds no documents", exit_code=2)
    embedder = OnnxEmbedder(
        settings.embedding_model_dir or None,
        model_id=settings.embedding_model or None,
        dimensions=settings.embedding_dimensions,
        batch_size=settings.embedding_batch_size,
        threads=settings.embedding_threads,
    )
    with tempfile.TemporaryDirectory(prefix="relata-bench-embed-") as tmp:
        db = Database.from_url(f"sqlite:///{Path(tmp) / 'vectors.db'}")
        store = SqliteVecStore(db, embedder.dimensions)
        try:
            path = StagePath(
                VectorWriter(embedder, store, batch_size=settings.embedding_batch_size), texts
            )
            report = bench_embed(texts, embedder, rounds=args.rounds, stage=path.run)
            report["vectors_stored"] = store.count(path.workspace_id)
        finally:
            store.close()
            db.dispose()
    report["batch_size"] = settings.embedding_batch_size
    report["machine"] = machine()
    report["command"] = f"relata bench embed --jsonl {args.jsonl} --limit {args.limit}" + (
        f" --rounds {args.rounds}" if args.rounds > 1 else ""
    )
    _print(report)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    return 0


def _print(r: dict[str, Any]) -> None:
    print(
        f"{r['texts']} texts, {r['tokens']} tokens (at most {r['max_tokens']} per text), "
        f"model {r['model']}, batches of {r['batch_size']}"
    )
    rows = [
        ("raw onnxruntime", r["raw_onnxruntime_seconds"], r["raw_onnxruntime_texts_per_s"], 1.0),
        ("embedder.embed", r["embed_seconds"], r["embed_texts_per_s"], r["ratio"]),
        ("embed stage", r["stage_seconds"], r["stage_texts_per_s"], r["stage_ratio"]),
    ]
    for name, seconds, rate, ratio in rows:
        print(f"  {name:<16} {seconds:>8.2f} s  {rate:>7.1f} texts/s  ratio to raw {ratio:.3f}")
    print(
        f"  CPU: raw {r['raw_onnxruntime_cpu_seconds']:.2f} s, stage "
        f"{r['stage_cpu_seconds']:.2f} s (ratio {r['stage_cpu_ratio']:.3f}); "
        f"{r['vectors_stored']} vectors stored"
    )
    verdict = "within" if r["stage_ratio"] >= 0.9 else "NOT within"
    print(f"  the stage is {verdict} 10% of raw onnxruntime")
    m = r["machine"]
    print(f"machine: {m.get('cpus')} CPUs, {m.get('cpu_model', '?')}, {m.get('ram_gib', '?')} GiB")
