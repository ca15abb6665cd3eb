"""``relata ask`` as a new user runs it: subprocesses configured only by environment variables,
first with no model (sources plus the reason, exit 0), then pointed at a local
OpenAI-compatible server (an answer with its cited source and each sentence's verdict),
judged by exit code and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_provider import FakeProvider, Reply

QUESTION = "What is at Halloran Sound?"
ANSWER = "The Sabrewing array at Halloran Sound has twelve turbines"
LATE = "They were installed in 2018"


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
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A data directory holding two processed documents."""
    env = {
        "RELATA_DATA_DIR": str(tmp_path / "data"),
        "RELATA_LOG_FORMAT": "text",
        "RELATA_EMBEDDING_PROVIDER": "none",
        "RELATA_JOB_POLL_SECONDS": "0.05",
    }
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "turbines.txt").write_text(
        "The Sabrewing array at Halloran Sound has twelve turbines, installed in 2019.\n"
    )
    (docs / "minutes.md").write_text(
        "# Council minutes\n\nThe harbour council approved repairs to the slipway at "
        "Halloran Sound in October.\n"
    )
    r = _relata(["ingest", str(docs)], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "processed 2: ready 2" in r.stdout
    yield env


def test_without_a_model_ask_prints_the_sources_and_why_there_is_no_answer(
    env: dict[str, str],
) -> None:
    r = _relata(["ask", QUESTION], env)
    assert r.returncode == 0, r.stderr
    assert "answer unavailable (analysis_disabled)" in r.stdout
    assert "RELATA_AI_PROVIDER" in r.stdout
    assert "sources (2):" in r.stdout
    assert "[S1]" in r.stdout and "[S2]" in r.stdout
    assert "twelve turbines" in r.stdout and "slipway" in r.stdout
    assert "Traceback" not in r.stderr

    j = _relata(["ask", QUESTION, "--json", "--limit", "1"], env)
    assert j.returncode == 0, j.stderr
    body = json.loads(j.stdout)
    assert body["status"] == "unavailable" and body["reason"] == "analysis_disabled"
    assert body["answer"] is None and len(body["sources"]) == 1
    assert body["contradictions"] == []
    assert body["checks"] is None and body["support"] is None


def test_ask_pointed_at_a_local_openai_compatible_server_cites_its_source(
    env: dict[str, str],
) -> None:
    def content(doc: object) -> str:
        """Cite the block holding the turbine text in two sentences (the second with a
        year the source does not give), plus a made-up ref."""
        assert isinstance(doc, dict)
        ref = ""
        for line in doc["messages"][1]["content"].split("\n"):
            if line.startswith("<<<SOURCE "):
                ref = line.rsplit("ref=", 1)[1].removesuffix(">>>")
            elif "twelve turbines" in line:
                break
        answer = f"{ANSWER} [{ref}]. {LATE} [{ref}]."
        return json.dumps({"answer": answer, "sufficient": True, "citations": [ref, "S77"]})

    with FakeProvider(chat_content=content) as fake:
        model = {
            **env,
            "RELATA_AI_PROVIDER": "openai",
            "RELATA_AI_MODEL": "fake-chat",
            "RELATA_OPENAI_BASE_URL": fake.url + "/v1",
            "RELATA_AI_TIMEOUT": "10",
        }
        r = _relata(["ask", QUESTION], model)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(ANSWER)
        cited = r.stdout.split("cited:", 1)[1].split("sources (2):", 1)[0]
        [cited_line] = [line for line in cited.splitlines() if line.strip().startswith("[S")]
        ref = cited_line.split("]", 1)[0].strip() + "]"
        sources = r.stdout.split("sources (2):", 1)[1]
        source_block = sources.split(ref, 1)[1].split("\n  [S", 1)[0]
        assert "twelve turbines" in source_block
        assert "1 citation named no supplied source and was dropped" in r.stdout
        checked = r.stdout.split("checked sentence by sentence: ", 1)[1].split("sources (2):")[0]
        assert checked.startswith("1 supported, 1 unsupported, 0 uncited")
        assert f"1. supported: {ANSWER} {ref}." in checked
        assert f"supported by {ref[1:-1]} [0:77]: The Sabrewing array" in checked
        assert f"2. UNSUPPORTED (date): {LATE} {ref}." in checked
        assert "'in 2018': " in checked and f"{ref[1:-1]} [0:77] says: The Sabrewing" in checked

        j = _relata(["ask", QUESTION, "--json"], model)
        assert j.returncode == 0, j.stderr
        body = json.loads(j.stdout)
        assert body["status"] == "ok" and body["support"] == "unsupported"
        assert [c["verdict"] for c in body["checks"]["sentences"]] == ["supported", "unsupported"]

        fake.enqueue(Reply.error(400, "model 'fake-chat' does not exist"))
        bad = _relata(["ask", QUESTION], model)
        assert bad.returncode == 1
        assert "language model provider refused the request" in bad.stderr
        assert "does not exist" in bad.stderr and "Traceback" not in bad.stderr


def test_ask_names_a_bad_limit(env: dict[str, str]) -> None:
    r = _relata(["ask", QUESTION, "--limit", "50"], env)
    assert r.returncode == 1
    assert "limit must be between 1 and 20" in r.stderr
