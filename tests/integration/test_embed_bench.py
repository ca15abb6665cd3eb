"""``bench_embed`` measures the embed stage against raw onnxruntime on the same texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relata.cli.benchmarks.embed import bench_embed, read_corpus
from relata.embeddings.onnx import OnnxEmbedder


def test_bench_reports_both_speeds_on_the_same_texts(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"_id": str(i), "title": f"Title {i}", "text": "Some words here. " * i} for i in range(30)
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    texts = read_corpus(corpus, limit=12)
    assert len(texts) == 12 and texts[1] == "Title 1\nSome words here."

    report = bench_embed(texts, OnnxEmbedder(batch_size=4), rounds=1, chunk=8)
    assert report["texts"] == 12 and report["batches"] == 3  # parts of 8 and 4 texts
    assert report["tokens"] > 12
    assert report["raw_onnxruntime_texts_per_s"] > 0 and report["embed_texts_per_s"] > 0
    expected_ratio = report["raw_onnxruntime_seconds"] / report["embed_seconds"]
    assert report["ratio"] == pytest.approx(expected_ratio, rel=0.05)  # from rounded seconds
    assert report["embed_cpu_seconds"] > 0 and report["cpu_ratio"] > 0
