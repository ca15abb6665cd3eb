"""Several worker processes on one machine (``relata worker --processes N``): a supervisor
that starts them, restarts one that dies, and drains them all on SIGTERM/SIGINT.

Each child is a fresh interpreter running its own command (``relata worker --workers M``):
it builds its own container, database engine and model session after it starts, so nothing
(a SQLAlchemy pool, an onnxruntime session, a lock) is ever shared across a ``fork``. The
supervisor builds none of them. Children share only the database: they claim jobs from one
queue exactly as workers on other machines do (docs/decisions/0004, 0033).

- **Restarts.** A child that exits when it was not asked to is started again after a
  backoff (``RestartPolicy``: 1 s, doubling to 30 s). A child that lived ``healthy_seconds``
  before dying starts the count again; one that dies ``max_restarts`` times in a row without
  that makes the supervisor give up: it drains the others and exits non-zero, so whatever
  runs the supervisor (systemd, a container runtime) sees a failure instead of a loop.
- **Signals.** Children run in their own process group, so a terminal's Ctrl-C reaches the
  supervisor only; it forwards one SIGTERM to every child, which drains within
  RELATA_SHUTDOWN_TIMEOUT. A repeated signal is forwarded again (children then cancel their
  running jobs at once). A child still running ``exit_grace_seconds`` after the deadline is
  SIGKILLed; its jobs' leases expire and return them to the queue.
- **A dead supervisor.** Children are told its pid and drain when it goes away
  (``runner.run_until_signalled``), so killing the supervisor leaves no orphan at work.

``relata serve --processes N`` supervises its HTTP processes with the same class (ADR 36):
``pass_fds`` hands each child the listening socket, and ``role`` names them in the log.

The commands are given per child, so children need not be alike (one role per process is
how issue 30 puts knowledge stages beside the embedder).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

log = logging.getLogger("relata.jobs")

EXIT_OK = 0
EXIT_CHILDREN_FAILING = 1


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    max_restarts: int = 5  # deaths in a row (without a healthy run between) before giving up
    healthy_seconds: float = 60.0  # a child that lived this long starts its count again
    backoff_seconds: float = 1.0
    backoff_max_seconds: float = 30.0

    def delay(self, failures: int) -> float:
        """Seconds before restarting a child after its ``failures``-th death in a row."""
        grown = self.backoff_seconds * float(2 ** max(0, failures - 1))
        return min(self.backoff_max_seconds, grown)


@dataclass
class _Child:
    slot: int
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float | None = None
    starts: int = 0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def threads_per_process(processes: int, cores: int) -> int:
    """Default worker threads of each of ``processes`` processes on ``cores`` cores: two
    per core across the machine, at least one per process. A process runs Python on one
    core at a time (the GIL), so one thread per core keeps the cores busy and a second one
    covers its waits on the database and the model; more only queue (ADR 33)."""
    if processes < 1 or cores < 1:
        raise ValueError("processes and cores must be at least 1")
    return max(1, (2 * cores) // processes)


class ProcessSupervisor:
    def __init__(
        self,
        commands: Sequence[Sequence[str]],
        *,
        shutdown_timeout: float,
        policy: RestartPolicy | None = None,
        env: Mapping[str, str] | None = None,
        poll_seconds: float = 0.2,
        exit_grace_seconds: float = 10.0,
        pass_fds: Sequence[int] = (),
        role: str = "worker",
    ) -> None:
        if not commands:
            raise ValueError("a supervisor needs at least one command")
        self._children = [_Child(slot=i, argv=list(argv)) for i, argv in enumerate(commands)]
        self._shutdown_timeout = max(0.0, shutdown_timeout)
        self._policy = policy or RestartPolicy()
        self._env = dict(env) if env is not None else None
        self._poll = poll_seconds
        self._exit_grace = exit_grace_seconds
        self._lock = threading.Lock()
        #: Descriptors every child inherits (``relata serve``'s listening socket).
        self._pass_fds = tuple(pass_fds)
        self._role = role  # what the log calls a child: "worker" or "HTTP"

    # ------------------------------------------------------------ what tests and logs see
    @property
    def pids(self) -> list[int]:
        """Pids of the children running now."""
        with self._lock:
            return [c.proc.pid for c in self._children if c.proc and c.proc.poll() is None]

    # ------------------------------------------------------------ running
    def run(self, stop: threading.Event) -> int:
        """Start every child and keep them running until ``stop`` is set (then drain them) or
        one keeps dying (then drain the others); ``EXIT_OK`` or ``EXIT_CHILDREN_FAILING``."""
        code = EXIT_OK
        try:
            if not all([self._start(child) for child in self._children]):
                code = EXIT_CHILDREN_FAILING
            while code == EXIT_OK and not stop.wait(self._poll):
                if not self._tend():
                    code = EXIT_CHILDREN_FAILING
                    break
        finally:
            self._stop_all()
        return code

    def signal_children(self, signum: int = signal.SIGTERM) -> None:
        """Send ``signum`` to every running child (the repeated shutdown signal)."""
        with self._lock:
            procs = [c.proc for c in self._children if c.proc is not None]
        for proc in procs:
            _send(proc, signum)

    def _start(self, child: _Child) -> bool:
        """Start ``child``; False when it could not start and must not be tried again."""
        child.restart_at = None
        child.starts += 1
        child.started = time.monotonic()
        try:
            # The commands are the supervisor's own (``relata worker`` by absolute interpreter
            # path), never input: nothing here comes from a request or a file.
            proc = subprocess.Popen(  # noqa: S603
                child.argv,
                env=self._env,
                stdin=subprocess.DEVNULL,
                process_group=0,  # a terminal's Ctrl-C goes to the supervisor only
                pass_fds=self._pass_fds,
            )
        except OSError as exc:
            log.error(
                f"could not start a {self._role} process",
                extra={"fields": {"slot": child.slot, "error": type(exc).__name__}},
            )
            return self._died(child, None, time.monotonic())
        with self._lock:
            child.proc = proc
        log.info(
            f"{self._role} process started",
            extra={"fields": {"slot": child.slot, "pid": proc.pid, "start": child.starts}},
        )
        return True

    def _tend(self) -> bool:
        """Notice exits and restart what is due; False when a child keeps dying."""
        now = time.monotonic()
        for child in self._children:
            if child.proc is not None:
                code = child.proc.poll()
                if code is not None and not self._died(child, code, now):
                    return False
            elif (
                child.restart_at is not None and now >= child.restart_at and not self._start(child)
            ):
                return False
        return True

    def _died(self, child: _Child, code: int | None, now: float) -> bool:
        """Record a child's death and schedule its restart; False when it must not be."""
        lived = now - child.started
        pid = child.proc.pid if child.proc is not None else None
        with self._lock:
            child.proc = None
        if lived >= self._policy.healthy_seconds:
            child.failures = 0
        child.failures += 1
        fields: dict[str, object] = {
            "slot": child.slot,
            "pid": pid,
            "lived_s": round(lived, 1),
            "deaths_in_a_row": child.failures,
        }
        if code is not None:
            fields["exit"] = f"signal {signal.Signals(-code).name}" if code < 0 else code
        if child.failures > self._policy.max_restarts:
            log.error(f"a {self._role} process keeps dying; giving up", extra={"fields": fields})
            return False
        delay = self._policy.delay(child.failures)
        child.restart_at = now + delay
        fields["restart_in_s"] = round(delay, 1)
        log.warning(f"{self._role} process exited; restarting it", extra={"fields": fields})
        return True

    # ------------------------------------------------------------ stopping
    def _stop_all(self) -> None:
        """SIGTERM every child, wait for the drain (RELATA_SHUTDOWN_TIMEOUT plus the grace),
        SIGKILL whatever is left, and reap them all."""
        with self._lock:
            running = [c.proc for c in self._children if c.proc is not None]
        for proc in running:
            _send(proc, signal.SIGTERM)
        deadline = time.monotonic() + self._shutdown_timeout + self._exit_grace
        for proc in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        for proc in running:
            if proc.poll() is None:
                log.warning(
                    f"a {self._role} process did not drain in time; killing it (a worker's "
                    "jobs return to the queue when their leases expire)",
                    extra={"fields": {"pid": proc.pid}},
                )
                proc.kill()
                proc.wait()
        codes = [proc.returncode for proc in running]
        log.info(f"{self._role} processes stopped", extra={"fields": {"exit_codes": codes}})


def _send(proc: subprocess.Popen[bytes], signum: int) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # exited since the poll
            proc.send_signal(signum)
