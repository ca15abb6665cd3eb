"""``relata bench scale`` on a small synthetic corpus: the embedded store and pgvector both
load it, search finds what each query was made from, exact and approximate vector search
agree, and the command refuses what it cannot run; the corpus is deterministic and
Zipf-shaped."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from relata.cli.benchmarks.synthetic import SyntheticCorpus
from relata.cli.main import main


def _report(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main(["bench", "scale", "--chunks", "300", "--queries", "8", *argv, "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return report


def _check(report: dict[str, Any], store: str) -> None:
    assert report["store"] == store
    assert report["chunks"] == 300 and report["items"] == 30 and report["queries"] == 8
    steps = report["steps_p50_ms"]
    assert isinstance(steps, dict) and {"text", "chunk_text", "vector"} <= set(steps)
    # Each query is its target chunk's words and vector: search must rank its item high.
    assert float(report["target_mrr@10"]) >= 0.75
    assert float(report["p50_ms"]) > 0 and float(report["cpu_ms_per_query"]) > 0


def test_scale_bench_on_the_embedded_store(capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(capsys, [])
    _check(report, "sqlite-vec")
    assert report["vector_recall@10"] == 1.0  # sqlite-vec is exact


@pytest.mark.slow
def test_scale_bench_on_pgvector(pgvector_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(capsys, ["--store", "pgvector", "--database", pgvector_url])
    _check(report, "pgvector")
    assert float(report["vector_recall@10"]) >= 0.9
    # The database now holds a corpus: a second run would mix two, so it is refused.
    assert (
        main(
            ["bench", "scale", "--chunks", "10", "--store", "pgvector", "--database", pgvector_url]
        )
        != 0
    )
    assert "already holds items" in capsys.readouterr().err


def test_pgvector_needs_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale", "--store", "pgvector"]) != 0
    assert "--database" in capsys.readouterr().err


def test_the_synthetic_corpus_is_deterministic_and_zipf_shaped() -> None:
    def texts(seed: int) -> list[str]:
        corpus = SyntheticCorpus(chunks=120, dimensions=16, seed=seed, vocabulary_size=2000)
        return [c.text for batch in corpus.batches(50) for c in batch]

    first = texts(3)
    assert first == texts(3) and first != texts(4)
    counts = Counter(w for t in first for w in t.rstrip(".").lower().split())
    ranked = [n for _, n in counts.most_common()]
    # A few words everywhere, most words rare: the head is far above the median.
    assert ranked[0] > 20 * ranked[len(ranked) // 2]
