"""``relata ask`` on a terminal prints the answer as the model writes it (a pseudo-terminal
around a real subprocess, against a real local OpenAI-compatible server that streams slowly):
the text arrives piece by piece, without citation markers, then the checked answer with its
markers and verdicts follows. Piped, the output is the whole answer at once
(tests/e2e/test_ask_cli.py)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from typing import Any

from tests.e2e.test_ask_cli import ANSWER, QUESTION
from tests.e2e.test_ask_cli import env as env  # the fixture: two processed documents
from tests.support.fake_provider import FakeProvider

#: A hang guard only: the answer streams in about 3 seconds.
HANG_GUARD_SECONDS = 120.0


def _content(doc: Any) -> str:
    ref = ""
    for line in doc["messages"][1]["content"].split("\n"):
        if line.startswith("<<<SOURCE "):
            ref = line.rsplit("ref=", 1)[1].removesuffix(">>>")
        elif "twelve turbines" in line:
            break
    return json.dumps({"answer": f"{ANSWER} [{ref}].", "sufficient": True, "citations": [ref]})


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, list[tuple[float, str]]]:
    """Run ``relata`` with stdout on a pseudo-terminal; its exit code and what it printed,
    each piece with the time it arrived."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    full.update(env)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "relata.cli.main", *args],
        env=full,
        stdout=slave,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    pieces: list[tuple[float, str]] = []
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:  # the terminal closed: the process is done
                    break
                if not data:
                    break
                pieces.append((time.monotonic(), data.decode("utf-8", "replace")))
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=HANG_GUARD_SECONDS)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, pieces


def test_on_a_terminal_the_answer_is_printed_as_it_is_written(env: dict[str, str]) -> None:
    with FakeProvider(chat_content=_content, stream_piece=3, stream_pause=0.1) as fake:
        model = {
            **env,
            "RELATA_AI_PROVIDER": "openai",
            "RELATA_AI_MODEL": "fake-chat",
            "RELATA_OPENAI_BASE_URL": fake.url + "/v1",
            "RELATA_AI_TIMEOUT": "60",
        }
        code, pieces = _on_a_terminal(["ask", QUESTION], model)
    out = "".join(text for _, text in pieces).replace("\r\n", "\n")
    assert code == 0, out
    draft, checked = out.split("\n\n", 1)
    assert draft == ANSWER + "."  # the markers held back while it was being written
    assert checked.startswith(ANSWER + " [S")  # then the checked answer, markers and all
    assert "checked sentence by sentence: 1 supported" in checked
    # The words came while the model was still writing: the first well before the last.
    first = next(t for t, text in pieces if "Sabrewing" in text or "The" in text)
    last = next(t for t, text in pieces if "cited:" in text)
    assert last - first > 1.0, pieces
