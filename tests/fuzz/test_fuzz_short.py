"""A short run of every atheris fuzz target, so none can rot or regress unnoticed.

Each target runs in its own process (``python -m tests.fuzz.run``) from its seed corpus for
a fixed number of executions; a crash (an exception the target does not declare, or a
broken invariant) fails the test with the fuzzer's report. The long runs (10^6 executions
each) and their figures are in docs/reliability.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
#: Executions per target: a few thousand where one costs well under a millisecond, fewer
#: for the slow parsers (PDF, Markdown, the chunker, the Office formats), so all fifteen stay
#: within ~2 min of CPU.
RUNS = {
    "pdf": 300,
    "markdown": 400,
    "chunker": 400,
    "multipart": 1000,
    "docx": 1000,
    "xlsx": 300,
    "pptx": 200,
    "email": 1000,
    "html": 1000,
}
DEFAULT_RUNS = 3000

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_runs_clean(target: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is a dev dependency (pyproject [dev])")
    runs = RUNS.get(target, DEFAULT_RUNS)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.run",
            target,
            str(tmp_path / "corpus"),
            f"-runs={runs}",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    report = result.stderr[-4000:]
    assert result.returncode == 0, f"{target} crashed:\n{report}"
    assert re.search(rf"Done {runs} runs", result.stderr), report
    assert not list(tmp_path.glob("crash-*")), report
