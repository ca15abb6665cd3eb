"""``relata ingest`` and ``relata seed`` as a user runs them: subprocesses configured only by
environment variables, judged by exit code, output and what ends up stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relata.bootstrap import build
from relata.config.settings import Settings
from relata.domain.models import ItemStatus
from tests.fuzz.docgen import make_docx


def _relata(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "RELATA_DATA_DIR": str(tmp_path / "data"),
        "RELATA_LOG_FORMAT": "text",
        "RELATA_EMBEDDING_PROVIDER": "none",
        "RELATA_JOB_POLL_SECONDS": "0.05",
    }


def _statuses(env: dict[str, str]) -> dict[str, str]:
    """original filename (or external id) -> status, read back from the store."""
    c = build(Settings(data_dir=env["RELATA_DATA_DIR"]))
    try:
        ws = c.workspaces.resolve()
        items = c.repos.items.list(ws.id, limit=100)
    finally:
        c.close()
    return {
        (i.original_filename or i.metadata.get("external_id") or i.title): i.status.value
        for i in items
    }


def test_ingesting_a_folder_processes_it_and_names_each_rejected_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.md").write_text("# Notes\n\nThe array has twelve turbines.\n")
    (folder / "data.json").write_text(json.dumps({"site": "Halloran Sound"}))
    (folder / "sub" / "minutes.docx").write_bytes(make_docx([("p", "The council met.")]))
    (folder / "sub" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    (folder / ".hidden.txt").write_text("skipped")

    r = _relata(["ingest", "--recursive", str(folder)], env)
    assert r.returncode == 1, r.stderr
    assert "scanned 4, ingested 3, duplicates 0, rejected 1" in r.stdout
    assert "processed 3: ready 3, failed 0" in r.stdout
    rejected = [line for line in r.stderr.splitlines() if line.startswith("rejected:")]
    assert len(rejected) == 1
    assert "photo.png" in rejected[0] and "PNG image" in rejected[0]
    assert "Traceback" not in r.stderr
    assert _statuses(env) == {
        "notes.md": ItemStatus.READY.value,
        "data.json": ItemStatus.READY.value,
        "sub/minutes.docx": ItemStatus.READY.value,
    }

    again = _relata(["ingest", "--recursive", "--no-wait", str(folder / "notes.md")], env)
    assert again.returncode == 0, again.stderr
    assert "scanned 1, ingested 0, duplicates 1, rejected 0" in again.stdout


def test_a_folder_without_recursive_takes_only_its_own_files(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "top.txt").write_text("Top level.")
    (folder / "sub" / "deep.txt").write_text("Deeper.")
    r = _relata(["ingest", "--no-wait", str(folder), str(tmp_path / "missing.txt")], env)
    assert r.returncode == 1
    assert "scanned 2, ingested 1, duplicates 0, rejected 1" in r.stdout
    assert "missing.txt: no such file or directory" in r.stderr
    assert "processing left to" in r.stdout
    assert _statuses(env) == {"top.txt": ItemStatus.PENDING.value}


def test_a_jsonl_corpus_keeps_external_ids_and_rejects_bad_lines_by_number(
    env: dict[str, str], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = [
        json.dumps({"_id": "d1", "title": "First", "text": "Tidal power is predictable."}),
        json.dumps({"_id": 2, "title": "Second", "text": "Seals feed in the turbine lanes."}),
        "{not json",
        json.dumps({"_id": "d4", "title": "No text"}),
        "",
        json.dumps(["a list"]),
    ]
    corpus.write_text("\n".join(lines) + "\n")
    r = _relata(
        ["ingest", "--jsonl", str(corpus), "--id-field", "_id", "--text-field", "text"], env
    )
    assert r.returncode == 1
    assert "scanned 5, ingested 2, duplicates 0, rejected 3" in r.stdout
    assert f"{corpus}:3: not valid JSON" in r.stderr
    assert f"{corpus}:4: field 'text' must be a non-empty string" in r.stderr
    assert f"{corpus}:6: not a JSON object" in r.stderr
    assert _statuses(env) == {"d1": "ready", "2": "ready"}


def test_usage_errors_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    r = _relata(["ingest"], env)
    assert r.returncode == 2 and "PATH" in r.stderr


def test_seed_ingests_the_demo_corpus_once(env: dict[str, str]) -> None:
    first = _relata(["seed"], env)
    assert first.returncode == 0, first.stderr
    assert "'default' created" in first.stdout
    assert "demo corpus: ingested 5" in first.stdout
    assert "processed: ready 5 of 5" in first.stdout
    statuses = _statuses(env)
    assert len(statuses) == 5 and set(statuses.values()) == {"ready"}

    second = _relata(["seed"], env)
    assert second.returncode == 0, second.stderr
    assert "already exists" in second.stdout
    assert "demo corpus already there (5 documents)" in second.stdout
    assert len(_statuses(env)) == 5


def test_bench_ingest_reports_rates_as_json_on_the_last_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"_id": str(i), "title": f"T{i}", "text": f"Abstract number {i}. " * 30})
            for i in range(12)
        )
        + "\n"
    )
    r = _relata(["bench", "ingest", "--jsonl", str(corpus), "--limit", "10", "--json"], env)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["items"] == 10 and report["ready"] == 10 and report["finished"] is True
    assert report["chunks"] >= 10 and report["total"]["chunks_per_s"] > 0
    stages = {s: v["runs"] for s, v in report["stages"].items()}
    # Every stage of the pipeline ran once per item (later features add stages after these).
    assert {"parse", "chunk", "embed"} <= set(stages) and set(stages.values()) == {10}
    # Statements are counted per job: at least a claim and a completion each.
    pipeline = report["pipeline"]
    assert pipeline["jobs_by_kind"]["parse_item"] == 10
    assert pipeline["jobs_by_kind"]["chunk_item"] == 10
    assert pipeline["jobs"] == sum(pipeline["jobs_by_kind"].values())
    assert pipeline["statements"] >= 2 * pipeline["jobs"]
    assert pipeline["statements_per_job"] == round(pipeline["statements"] / pipeline["jobs"], 2)
    assert report["ingest"]["statements"] > 0 and report["total"]["cpu_seconds"] > 0
    assert f"{pipeline['statements_per_job']} statements and" in r.stdout
    assert report["machine"]["cpus"] >= 1
    # A fresh temporary data dir: nothing was written to the configured one.
    assert not (Path(env["RELATA_DATA_DIR"]) / "relata.db").exists()


@pytest.mark.slow
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
