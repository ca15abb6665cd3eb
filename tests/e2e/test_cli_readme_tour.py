"""The README's tour works as written: every command of every shell block in the "A first tour"
section, read from README.md itself, runs from the repository root in a fresh data dir and
exits 0 without a traceback.

The commands run through a shell, as a reader pastes them; ``.venv/bin/relata`` is this test's
interpreter running ``relata.cli.main`` (the same code, whichever virtualenv runs the tests).
Nothing else is configured: the tour promises it works with the defaults (the bundled local
embedding model, no language model).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOUR_HEADING = "## A first tour"
RELATA = ".venv/bin/relata"


def tour_commands(readme: str) -> list[str]:
    """The commands of the tour's ``sh`` blocks, in order, as written (comments dropped)."""
    section = readme.split(TOUR_HEADING, 1)[1].split("\n## ", 1)[0]
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL):
        for line in block.splitlines():
            command = _strip_comment(line)
            if command:
                commands.append(command)
    return commands


def _strip_comment(line: str) -> str:
    """``line`` without a shell comment: a ``#`` outside quotes that starts a word."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def test_the_tour_is_found_and_uses_the_relata_command() -> None:
    commands = tour_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= 8
    assert all(c.startswith(RELATA + " ") for c in commands), commands
    assert any(" seed" in c for c in commands) and any(" ingest " in c for c in commands)


@pytest.mark.slow
def test_every_tour_command_works_verbatim_on_a_fresh_data_dir(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env["RELATA_DATA_DIR"] = str(tmp_path / "data")
    relata = f"{shlex.quote(sys.executable)} -m relata.cli.main"
    for command in tour_commands(README.read_text(encoding="utf-8")):
        r = subprocess.run(
            ["bash", "-c", command.replace(RELATA, relata, 1)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        shown = f"$ {command}\n{r.stdout}{r.stderr}"
        assert r.returncode == 0, shown
        assert "Traceback" not in r.stderr, shown
        assert r.stdout.strip(), shown
