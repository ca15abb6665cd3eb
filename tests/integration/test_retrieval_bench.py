"""``relata bench retrieval`` on a small BEIR folder: every query finds its one judged
document, the figures are scored from the real search service, and a second run reuses the
cached ingestion instead of ingesting again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relata.cli.main import main

DOCS = {
    "d1": ("Tidal turbines", "The array has twelve turbines rated at 1.5 MW each."),
    "d2": ("Seal colony", "The grey seal colony on Skerry Rock grew to 143 animals."),
    "d3": ("Peat bogs", "Sphagnum moss keeps the blanket bog waterlogged and acidic."),
    "d4": ("Lighthouse keepers", "The keepers trimmed the lamp wicks every four hours."),
}
QUERIES = {"q1": "turbines rated MW", "q2": "grey seal colony", "q3": "sphagnum bog moss"}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, (t, x) in DOCS.items())
    )
    queries = {**QUERIES, "q9": "a query without judgements is not run"}
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\nq3\td4\t0\n"
    )
    return root


def _bench(
    dataset: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], str]:
    argv = ["bench", "retrieval", "--dataset", str(dataset), "--split", "test"]
    assert main([*argv, "--cache-dir", str(cache), "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out.strip().splitlines()[-1]), out


def test_retrieval_bench_scores_the_search_service_and_reuses_its_cache(
    dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RELATA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_JOB_POLL_SECONDS", "0.05")
    cache = tmp_path / "cache"

    first, out = _bench(dataset, cache, capsys)
    assert first["cache"] == "miss" and first["model"] == "none"
    assert first["queries"] == 3 and first["corpus_items"] == 4
    ingestion = first["ingestion"]
    assert ingestion["items"] == 4 and ingestion["rejected"] == 0 and ingestion["failed"] == 0
    assert first["ndcg@10"] == 1.0 and first["mrr@10"] == 1.0 and first["recall@100"] == 1.0
    assert set(first["legs_alone"]) == {"text", "chunk_text"}  # no vector leg without a model
    assert "fused: ndcg@10 1.0000" in out and "chunk_text alone:" in out
    # Where the timed run's time went: the service's steps, and its CPU beside its wall time.
    assert {"text", "chunk_text", "entity", "relationship", "excerpts"} <= set(first["steps_ms"])
    assert "vector" not in first["steps_ms"]  # no model: the leg did not run
    assert all(0 <= v["p50"] <= v["p95"] for v in first["steps_ms"].values())
    assert first["timed_run"]["wall_s"] > 0 and first["timed_run"]["cpu_s"] > 0
    assert "timed run (page of 10):" in out
    assert not (tmp_path / "data" / "relata.db").exists()  # the configured data dir is untouched

    second, _ = _bench(dataset, cache, capsys)
    assert second["cache"] == "hit" and second["cache_key"] == first["cache_key"]
    assert second["ingestion"] == first["ingestion"]
    assert second["ndcg@10"] == first["ndcg@10"] and second["corpus_items"] == 4
