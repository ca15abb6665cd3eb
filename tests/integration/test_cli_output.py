"""What ``relata reembed --wait`` prints when piped: each line once, no progress on standard
error, and nothing queued when there is nothing to re-embed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relata.cli.main import main
from relata.config.settings import Settings
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id


def test_reembed_wait_prints_the_counts_once_and_then_has_nothing_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"))
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        c.ingest.ingest(ws, IngestRequest(text="Seals feed in the turbine lanes at slack water."))
        drain(c)
        chunks = c.repos.chunks.count(ws)
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("RELATA_JOB_POLL_SECONDS", "0.05")
    assert main(["reembed", "--wait", "--timeout", "120"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    counts = f"{chunks}/{chunks} chunks embedded with the current model"
    assert out.count(counts) == 1 and out.count("chunks embedded") == 1, out
    with built(settings) as c:
        queued = len(c.queue.list(ws, kind="reembed_workspace"))
    assert main(["reembed"]) == 0
    assert capsys.readouterr().out.startswith(f"nothing to re-embed: {counts}")
    with built(settings) as c:
        assert len(c.queue.list(ws, kind="reembed_workspace")) == queued
