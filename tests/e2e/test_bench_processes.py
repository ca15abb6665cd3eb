"""``relata bench ingest --processes N --database URL`` as a user runs it: the pipeline run by
``relata worker --processes N`` child processes over the given (empty) database, with the
workers' CPU in the report; a database that already holds items is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _relata(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_bench_ingest_with_worker_processes_on_a_given_database(
    tmp_path: Path, database_url: str
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"_id": str(i), "title": f"T{i}", "text": f"Abstract number {i}. " * 20})
            + "\n"
            for i in range(6)
        )
    )
    env = {
        "RELATA_DATA_DIR": str(tmp_path / "configured"),
        "RELATA_LOG_FORMAT": "text",
        "RELATA_EMBEDDING_PROVIDER": "none",
        "RELATA_VECTOR_STORE": "sqlite-vec",
        "RELATA_JOB_POLL_SECONDS": "0.05",
    }
    args = ["bench", "ingest", "--jsonl", str(corpus), "--processes", "2", "--json"]
    r = _relata([*args, "--database", database_url], env)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    dialect = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    assert report["processes"] == 2 and report["database"] == dialect
    assert report["items"] == 6 and report["ready"] == 6 and report["finished"] is True
    assert report["pipeline"]["cpu_seconds"] > 0  # the worker processes' CPU, not ours
    assert {v["runs"] for v in report["stages"].values()} == {6}
    assert "x 2 processes" in r.stdout
    # The run's data stays in the given database, so a second run there is refused.
    again = _relata([*args, "--database", database_url], env)
    assert again.returncode == 2
    assert "--database must be empty" in again.stderr
