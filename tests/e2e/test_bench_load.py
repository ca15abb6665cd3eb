"""``relata bench load`` as a user runs it: a subprocess that prepares a data dir, starts
``relata serve`` and drives it with a few clients, judged by its exit code and its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relata.cli.benchmarks.load import MIX, loopback_url
from relata.cli.common import CliError

pytestmark = [pytest.mark.slow, pytest.mark.both_dialects, pytest.mark.empty_database]


def test_a_short_load_run_reports_every_operation_and_loses_no_upload(
    database_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=str(tmp_path / "unused"),
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_VECTOR_STORE="sqlite-vec",
        RELATA_WORKERS="1",
    )
    args = ["--clients", "3", "--seconds", "4", "--documents", "2", "--seed", "3"]
    args += ["--database", database_url, "--json"]
    r = subprocess.run(
        [sys.executable, "-m", "relata.cli.main", "bench", "load", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["server_errors"] == 0, report["error_samples"]
    assert report["other_errors"] == 0, report["error_samples"]
    assert report["uploads_lost"] == 0
    assert set(report["operations"]) == {op for op, _ in MIX}
    assert report["requests"] == sum(s["requests"] for s in report["operations"].values())
    search = report["operations"]["search"]
    assert search["requests"] > 0 and search["p50_ms"] <= search["p95_ms"]
    assert "server errors (5xx) 0" in r.stdout


@pytest.mark.parametrize(
    "url", ["http://10.0.0.5:8000", "http://example.org", "ftp://127.0.0.1", "http://"]
)
def test_the_load_goes_to_this_machine_only(url: str) -> None:
    with pytest.raises(CliError):
        loopback_url(url)


def test_loopback_servers_are_accepted() -> None:
    assert loopback_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert loopback_url("http://localhost:9") == "http://localhost:9"
    assert loopback_url("http://[::1]:8000") == "http://[::1]:8000"
