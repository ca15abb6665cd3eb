"""``relata bench scale`` on a small synthetic corpus: the embedded store and pgvector both
load it, search finds what each query was made from, exact and approximate vector search
agree, and the command refuses what it cannot run; the corpus is deterministic and
Zipf-shaped."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

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


def test_scale_bench_on_the_embedded_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = _report(capsys, ["--data-dir", str(tmp_path)])
    _check(report, "sqlite-vec")
    assert report["vector_recall@10"] == 1.0  # sqlite-vec is exact
    assert report["load"]["written"] is True
    again = _report(capsys, ["--data-dir", str(tmp_path)])
    assert again["load"]["written"] is False
    assert (again["target_mrr@10"], again["vector_recall@10"]) == (
        report["target_mrr@10"],
        report["vector_recall@10"],
    )
    # Another corpus (another seed) is refused: the data dir holds one already.
    assert (
        main(["bench", "scale", "--chunks", "300", "--seed", "8", "--data-dir", str(tmp_path)]) != 0
    )
    assert "already holds items" in capsys.readouterr().err


@pytest.mark.slow
def test_scale_bench_on_pgvector(pgvector_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(capsys, ["--store", "pgvector", "--database", pgvector_url])
    _check(report, "pgvector")
    assert float(report["vector_recall@10"]) >= 0.9
    assert report["load"]["written"] is True
    # The bulk load turned the statistics triggers off and rebuilt the statistics once: they
    # are on again, the HNSW index is back, and the statistics count every row.
    engine = sa.create_engine(pgvector_url)
    try:
        with engine.connect() as conn:
            off = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%text_stats%' "
                    "AND tgenabled = 'D'"
                )
            ).scalar_one()
            counts = dict(
                conn.execute(sa.text("SELECT index_name, doc_count FROM text_stats")).all()
            )
            index = conn.execute(
                sa.text("SELECT count(*) FROM pg_indexes WHERE indexname LIKE '%_embedding'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert off == 0 and index == 1
    assert counts == {"items": 30, "chunks": 300}
    # The same corpus again: searched without writing it, with the same results.
    again = _report(capsys, ["--store", "pgvector", "--database", pgvector_url])
    assert again["load"]["written"] is False
    assert again["target_mrr@10"] == report["target_mrr@10"]
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
