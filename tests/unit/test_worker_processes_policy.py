"""The rules of ``relata worker --processes`` that need no process: threads per process, the
restart backoff, and a shutdown signal delivered twice at once counting as one request."""

from __future__ import annotations

import signal

import pytest

from relata.jobs.runner import REPEAT_AFTER_SECONDS, ShutdownSignal
from relata.jobs.supervisor import RestartPolicy, threads_per_process


@pytest.mark.parametrize(
    ("processes", "cores", "threads"),
    [(1, 2, 4), (2, 2, 2), (4, 2, 1), (8, 2, 1), (3, 8, 5), (64, 1, 1)],
)
def test_threads_per_process_are_two_per_core_across_the_processes(
    processes: int, cores: int, threads: int
) -> None:
    assert threads_per_process(processes, cores) == threads
    assert threads * processes <= max(2 * cores, processes)  # never more than that


def test_threads_per_process_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        threads_per_process(0, 2)


def test_restart_backoff_doubles_up_to_its_cap() -> None:
    policy = RestartPolicy(backoff_seconds=1.0, backoff_max_seconds=30.0)
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_signal_repeated_at_once_is_the_same_request_and_a_later_one_cancels() -> None:
    clock = FakeClock()
    sig = ShutdownSignal(clock=clock)
    repeats: list[int] = []
    sig.on_repeat = lambda: repeats.append(1)

    sig.handle(signal.SIGTERM, None)  # the process manager, to the whole group
    sig.handle(signal.SIGTERM, None)  # the supervisor forwarding the same request
    assert sig.event.is_set() and repeats == []

    clock.now += REPEAT_AFTER_SECONDS
    sig.handle(signal.SIGINT, None)  # a person pressing Ctrl-C again: cancel now
    assert repeats == [1]
