"""``relata bench embed``: the embed stage's speed against raw onnxruntime, in one run.

``bench_embed`` cuts the texts into parts of ``chunk`` texts and, for each part, times
(1) bare ``session.run`` over the very batches ``OnnxEmbedder`` makes of that part (tokenised
beforehand, outside the timing): the floor no embedder can beat; (2) ``OnnxEmbedder.embed``
on the same part, which also tokenises, pads, pools, normalises and converts to lists; and
(3) ``embed_array``, the same without the list conversion; and, when a ``stage`` callable
is given, (4) the embed stage's own path on the same part (``relata bench embed`` passes the
stage's ``VectorWriter``: passages, embedding, upsert into a temporary vector store). They are
interleaved part by part in a rotating order, so load from elsewhere on the machine falls on
all of them alike; with ``rounds`` > 1 the best round of each counts. The stage should stay
within 10% of raw (``ratio`` = raw seconds / embed seconds >= 0.9; ``stage_ratio`` likewise
for the stage path). Process CPU seconds (all threads) are reported too: on a machine shared
with other work, ``cpu_ratio`` is the steadier figure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from relata.domain.cancel import Cancel
from relata.embeddings.onnx import OnnxEmbedder


def read_corpus(path: str | Path, limit: int) -> list[str]:
    """``title + text`` of the first ``limit`` documents of a BEIR ``corpus.jsonl``."""
    texts: list[str] = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if len(texts) >= limit:
                break
            doc = json.loads(line)
            texts.append(f"{doc.get('title', '')}\n{doc.get('text', '')}".strip())
    return texts


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
