"""``relata bench text-legs`` on a small BEIR folder: both dialects are loaded with the same
documents, every query finds its judged document on each, and the command refuses a database
that already holds items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relata.cli.main import main
from tests.integration.test_retrieval_bench import dataset  # noqa: F401 - the fixture
from tests.support.databases import ON_POSTGRESQL

pytestmark = pytest.mark.both_dialects


@ON_POSTGRESQL
@pytest.mark.empty_database
def test_text_legs_bench_scores_both_dialects_alike(
    dataset: Path,  # noqa: F811 - the imported fixture
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["bench", "text-legs", "--dataset", str(dataset), "--split", "test"]
    assert main([*argv, "--database", database_url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["queries"] == 3
    assert report["documents"] == 4
    for dialect in ("sqlite", "postgresql"):
        for leg in ("text", "chunk_text", "fused_text"):
            assert report[dialect][leg]["ndcg@10"] == 1.0, (dialect, leg)
        calls = report[dialect]["per_call_cpu_ms"]
        assert set(calls) == {
            f"{leg}_{kind}" for leg in ("items", "chunks") for kind in ("marked", "ranked_only")
        }
        assert all(ms >= 0 for ms in calls.values())
    # The database now holds the corpus: a second run would mix two, so it is refused.
    assert main([*argv, "--database", database_url]) != 0
    assert "already holds items" in capsys.readouterr().err
