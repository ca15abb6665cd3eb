"""How many HTTP processes ``relata serve`` runs (ADR 36), and ``relata bench serve``'s inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from relata.cli.benchmarks.serve import read_queries
from relata.cli.common import CliError
from relata.cli.serve_processes import http_processes, listen
from relata.config.settings import Settings
from relata.jobs.supervisor import usable_cores


def test_the_default_is_one_process_per_usable_core() -> None:
    assert http_processes(None, Settings()) == usable_cores()


def test_the_setting_and_then_the_flag_choose() -> None:
    assert http_processes(None, Settings(http_processes=3)) == 3
    assert http_processes(1, Settings(http_processes=3)) == 1


@pytest.mark.parametrize("flag", [0, 65, -1])
def test_a_flag_out_of_range_is_refused_with_its_range(flag: int) -> None:
    with pytest.raises(CliError, match="1-64 HTTP processes"):
        http_processes(flag, Settings())


def test_a_taken_address_is_a_clear_error() -> None:
    first = listen("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with pytest.raises(CliError, match=f"cannot listen on 127.0.0.1:{port}"):
            listen("127.0.0.1", port)
    finally:
        first.close()


def test_queries_come_from_beir_jsonl_or_plain_lines(tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"_id": "1", "text": "aspirin and stroke"}\n\n{"_id": "2", "text": ""}\n')
    assert read_queries(jsonl) == ["aspirin and stroke"]
    plain = tmp_path / "q.txt"
    plain.write_text("one\ntwo\n")
    assert read_queries(plain) == ["one", "two"]
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(CliError, match="no queries"):
        read_queries(tmp_path / "empty.txt")
