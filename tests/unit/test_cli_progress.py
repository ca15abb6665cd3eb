"""``relata ingest`` progress: on a terminal one redrawn line with the current file and an ETA,
cleared before the summary; off a terminal nothing at all (piped output is the summary)."""

from __future__ import annotations

import io

import pytest

from relata.cli.ingest import Progress, eta
from relata.ingest.bulk import Tally


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_sees_the_current_file_counts_and_an_eta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    clock = _Clock()
    tty = _Tty()
    progress = Progress(tty, total=10, clock=clock)
    clock.now += 4.0  # 4 of 10 files in 4 s: 6 s to go
    progress.ingesting(Tally(scanned=4, ingested=4), current="notes/tides.md")
    line = tty.getvalue()
    assert line.startswith("\r\x1b[K") and "\n" not in line
    assert "[########------------] 4/10" in line
    assert "new 4, duplicates 0, rejected 0" in line
    assert "notes/tides.md" in line and "ETA 6s" in line


def test_the_line_never_wraps_on_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    tty = _Tty()
    Progress(tty, total=10).ingesting(Tally(scanned=1), current="a/very/long/path/" * 5)
    drawn = tty.getvalue().removeprefix("\r\x1b[K")
    assert len(drawn) < 40 and drawn.endswith("…")


def test_redraws_are_throttled_and_the_line_is_cleared_at_the_end() -> None:
    clock = _Clock()
    tty = _Tty()
    progress = Progress(tty, total=3, clock=clock)
    progress.ingesting(Tally(scanned=1), current="a.md")
    progress.ingesting(Tally(scanned=2), current="b.md")  # same instant: not drawn
    assert "b.md" not in tty.getvalue()
    clock.now += 1.0
    progress.start_processing()
    clock.now += 2.0
    progress.processing({"ready": 1, "failed": 1}, 3)
    assert "ready 1, failed 1" in tty.getvalue() and "ETA 1s" in tty.getvalue()
    progress.clear()
    assert tty.getvalue().endswith("\r\x1b[K")


def test_off_a_terminal_nothing_is_written() -> None:
    plain = io.StringIO()
    progress = Progress(plain, total=2)
    progress.ingesting(Tally(scanned=1), current="a.md")
    progress.processing({"ready": 1}, 2)
    progress.clear()
    assert plain.getvalue() == ""


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.4, "0s"), (42, "42s"), (187, "3:07"), (3723, "1:02:03")]
)
def test_eta_reads_as_seconds_minutes_or_hours(seconds: float, shown: str) -> None:
    assert eta(seconds) == shown
