"""``relata bench embed``: the embed stage's speed against raw onnxruntime, in one run.

``bench_embed`` cuts the texts into parts of ``chunk`` texts and, for each part, times
(1) bare ``session.run`` over the very batches ``OnnxEmbedder`` makes of that part (tokenised
beforehand, outside the timing): the floor no embedder can beat; (2) ``OnnxEmbedder.embed``
on the same part, which also tokenises, pads, pools, normalises and converts to lists; and
(3) ``embed_array``, the same without the list conversion; and, when a ``stage`` callable
is given, (4) the embed stage's own path on the same part (the command passes ``StagePath``:
each text as one item's passage, embedded and upserted through the stage's ``VectorWriter``
into the vector store of a fresh temporary container, one write per item as ``embed_item``
does). They are interleaved part by part in a rotating order, so load from elsewhere on the
machine falls on all of them alike; with ``rounds`` > 1 the best round of each counts. The
target: the stage within 10% of raw (``ratio`` = raw seconds / embed seconds >= 0.9;
``stage_ratio`` likewise for the stage path). Process CPU seconds (all threads) are reported
too: on a machine shared with other work, ``cpu_ratio`` is the steadier figure.

The local model is used whatever RELATA_EMBEDDING_PROVIDER says (raw onnxruntime needs it);
its model directory, batch size and threads come from the settings.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    existing_file,
    fresh_settings,
    machine,
    machine_line,
    opened,
    positive_int,
    quiet_settings,
)
from relata.cli.common import CliError
from relata.domain.cancel import Cancel
from relata.domain.models import Chunk
from relata.domain.ports import ChunkToEmbed
from relata.embeddings.onnx import OnnxEmbedder
from relata.embeddings.stage import VectorWriter
from relata.ids import chunk_id, content_hash, new_id
from relata.search.evaluation import iter_corpus

DESCRIPTION = (
    "Embed the first N documents of a JSONL corpus ({_id, title, text} per line) with raw "
    "onnxruntime, the local embedder and the embed stage's own path (one item per document: "
    "its passage embedded and upserted into a temporary vector store), interleaved part by "
    "part, and report texts/s, CPU seconds and the ratios to raw onnxruntime (target: the "
    "stage within 10%). Always the local model; RELATA_EMBEDDING_MODEL_DIR, "
    "RELATA_EMBEDDING_BATCH_SIZE and RELATA_EMBEDDING_THREADS apply."
)


def register(group: Any) -> None:
    p = group.add_parser(
        "embed",
        help="the embed stage's texts/s against raw onnxruntime on the same texts",
        description=DESCRIPTION,
    )
    p.add_argument("--jsonl", required=True, metavar="FILE", help="the corpus, one JSON per line")
    p.add_argument(
        "--limit", type=positive_int, default=512, metavar="N", help="documents (default 512)"
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        metavar="N",
        help="repeat the measurement; the best round counts (default 1)",
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_embed)


def read_corpus(path: str | Path, limit: int) -> list[str]:
    """``title + "\\n" + text`` of the first ``limit`` documents of a BEIR ``corpus.jsonl``."""
    return [f"{d.title}\n{d.text}".strip() for d in islice(iter_corpus(path), max(0, limit))]


class StagePath:
    """The stage's path over given texts: one item per text, one ``write`` per item."""

    def __init__(self, writer: VectorWriter, texts: Sequence[str], workspace_id: str) -> None:
        self._writer = writer
        self._cancel = Cancel.never()
        self.workspace_id = workspace_id
        now = datetime.now(UTC)
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
    settings = quiet_settings()
    corpus = existing_file(args.jsonl)
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
    with (
        tempfile.TemporaryDirectory(prefix="relata-bench-embed-") as tmp,
        # The vector store the stage writes to, in the temporary SQLite file.
        opened(
            fresh_settings(settings, tmp).replace(vector_store="sqlite-vec"), embedder=embedder
        ) as c,
    ):
        ws, _ = c.workspaces.ensure(c.settings.default_workspace)
        writer = VectorWriter(embedder, c.vectors, batch_size=settings.embedding_batch_size)
        path = StagePath(writer, texts, ws.id)
        report = bench_embed(texts, embedder, rounds=args.rounds, stage=path.run)
        report["vectors_stored"] = c.vectors.count(ws.id)
    report["batch_size"] = settings.embedding_batch_size
    report["machine"] = machine()
    report["command"] = f"relata bench embed --jsonl {args.jsonl} --limit {args.limit}" + (
        f" --rounds {args.rounds}" if args.rounds > 1 else ""
    )
    emit(report, _lines(report), as_json=args.json)
    return 0


def _run_raw(embedder: OnnxEmbedder, batches: list[tuple[Any, dict[str, Any]]]) -> None:
    for _, feeds in batches:
        embedder.run_raw(feeds)


def bench_embed(
    texts: Sequence[str],
    embedder: OnnxEmbedder,
    *,
    rounds: int = 1,
    chunk: int = 256,
    stage: Callable[[Sequence[str]], object] | None = None,
) -> dict[str, Any]:
    """Time raw onnxruntime, ``embed``, ``embed_array`` and (given) the stage on ``texts``."""
    if not texts:
        raise ValueError("bench_embed needs at least one text")
    cancel = Cancel.never()
    parts = [texts[i : i + chunk] for i in range(0, len(texts), max(1, chunk))]
    # The very batches embed() makes of each part: the same padding for both measurements.
    part_batches = [embedder.tokenize(part) for part in parts]
    embedder.run_raw(part_batches[0][0][1])  # warm-up: first-run allocations are not speed
    tokens = sum(int(f["attention_mask"].sum()) for bs in part_batches for _, f in bs)

    best = {"raw": float("inf"), "embed": float("inf"), "array": float("inf")}
    if stage is not None:
        best["stage"] = float("inf")
    best_cpu = dict(best)
    for _ in range(max(1, rounds)):
        spent = dict.fromkeys(best, 0.0)
        cpu = dict.fromkeys(best, 0.0)
        for index, (part, batches) in enumerate(zip(parts, part_batches, strict=True)):
            steps: list[tuple[str, Callable[[], object]]] = [
                ("raw", partial(_run_raw, embedder, batches)),
                ("embed", partial(embedder.embed, part, cancel)),
                ("array", partial(embedder.embed_array, part, cancel)),
            ]
            if stage is not None:
                steps.append(("stage", partial(stage, part)))
            # Interleaved part by part, in a rotating order, so that other load on the
            # machine falls on every measurement alike.
            turn = index % len(steps)
            for name, step in steps[turn:] + steps[:turn]:
                started, started_cpu = time.perf_counter(), time.process_time()
                step()
                spent[name] += time.perf_counter() - started
                cpu[name] += time.process_time() - started_cpu
        best = {name: min(best[name], spent[name]) for name in best}
        best_cpu = {name: min(best_cpu[name], cpu[name]) for name in best}

    n = len(texts)
    report: dict[str, Any] = {
        "model": embedder.model_id,
        "texts": n,
        "tokens": tokens,
        "batches": sum(len(b) for b in part_batches),
        "max_tokens": embedder.max_tokens,
        "raw_onnxruntime_seconds": round(best["raw"], 3),
        "embed_seconds": round(best["embed"], 3),
        "embed_array_seconds": round(best["array"], 3),
        "raw_onnxruntime_texts_per_s": round(n / best["raw"], 1),
        "embed_texts_per_s": round(n / best["embed"], 1),
        "embed_array_texts_per_s": round(n / best["array"], 1),
        "ratio": round(best["raw"] / best["embed"], 3),
        "raw_onnxruntime_cpu_seconds": round(best_cpu["raw"], 3),
        "embed_cpu_seconds": round(best_cpu["embed"], 3),
        "cpu_ratio": round(best_cpu["raw"] / max(best_cpu["embed"], 1e-9), 3),
    }
    if stage is not None:
        report.update(
            {
                "stage_seconds": round(best["stage"], 3),
                "stage_texts_per_s": round(n / best["stage"], 1),
                "stage_ratio": round(best["raw"] / best["stage"], 3),
                "stage_cpu_seconds": round(best_cpu["stage"], 3),
                "stage_cpu_ratio": round(best_cpu["raw"] / max(best_cpu["stage"], 1e-9), 3),
            }
        )
    return report


def _lines(r: dict[str, Any]) -> list[str]:
    lines = [
        f"{r['texts']} texts, {r['tokens']} tokens (at most {r['max_tokens']} per text), "
        f"model {r['model']}, batches of {r['batch_size']}"
    ]
    rows = [
        ("raw onnxruntime", r["raw_onnxruntime_seconds"], r["raw_onnxruntime_texts_per_s"], 1.0),
        ("embedder.embed", r["embed_seconds"], r["embed_texts_per_s"], r["ratio"]),
        ("embed stage", r["stage_seconds"], r["stage_texts_per_s"], r["stage_ratio"]),
    ]
    for name, seconds, per_s, ratio in rows:
        lines.append(
            f"  {name:<16} {seconds:>8.2f} s  {per_s:>7.1f} texts/s  ratio to raw {ratio:.3f}"
        )
    lines.append(
        f"  CPU: raw {r['raw_onnxruntime_cpu_seconds']:.2f} s, stage "
        f"{r['stage_cpu_seconds']:.2f} s (ratio {r['stage_cpu_ratio']:.3f}); "
        f"{r['vectors_stored']} vectors stored"
    )
    verdict = "within" if r["stage_ratio"] >= 0.9 else "NOT within"
    lines.append(f"  the stage is {verdict} 10% of raw onnxruntime")
    lines.append(machine_line(r["machine"]))
    return lines
