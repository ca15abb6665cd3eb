"""Runs the atheris harness briefly, seeded with real documents, so it cannot rot unnoticed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.docgen import make_docx, make_pdf

HARNESS = Path(__file__).with_name("atheris_parsers.py")
ROOT = Path(__file__).resolve().parents[2]


def test_atheris_parsers_harness_runs_clean(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is a dev dependency (pyproject [dev])")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # Byte 0 picks the parser (5 = sniff), bytes 1-2 the chunk size (here 20 + 1000).
    seeds = {
        "pdf": make_pdf([["Seed page one."], ["Seed page two."]]),
        "docx": make_docx([("h1", "Seed"), ("p", "Seed body.")]),
        "md": b"# Seed\n\nSome *markdown* with a [link](x).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        "json": b'{"title": "Seed", "items": [{"k": 1}, {"k": [true, null]}]}',
    }
    for name, data in seeds.items():
        (corpus / name).write_bytes(b"\x05\xe8\x03" + data)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            "-runs=600",
            "-max_total_time=20",
            "-max_len=65536",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"Done \d+ runs", result.stderr)
