"""What every benchmark driver shares: quiet settings, containers over a fresh data dir, bulk
ingestion and the pipeline run, the machine record, SQL statement counting and the output.

A benchmark never touches the configured data: it builds its containers over a temporary
data dir with its own SQLite file (``fresh_settings``), through the composition root, so what
it times is what ``relata serve`` and the workers run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from relata.bootstrap import Container, build
from relata.cli.common import CliError, settings_or_exit
from relata.config.settings import Settings
from relata.domain.ports import Embedder
from relata.ingest.bulk import BulkIngest, Settled, Tally, wait_until_settled
from relata.ingest.service import IngestRequest
from relata.observability.logging import configure_logging
from relata.storage.sql import migrate

#: (line number, the request or why the line could not become one), as ``jsonl_requests`` yields.
Record = tuple[int, IngestRequest | str]


# ---------------------------------------------------------------- arguments and settings
def positive_int(value: str) -> int:
    """An argparse type: an integer of at least 1 (argparse names the option on error)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return number


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="end the output with the report as one JSON line"
    )


def quiet_settings() -> Settings:
    """The environment's settings, with logging cut down to errors (the report is the output)."""
    settings = settings_or_exit()
    configure_logging("error", settings.log_format)
    return settings


def existing_file(value: str) -> Path:
    path = Path(value)
    if not path.is_file():
        raise CliError(f"{path} is not a file", exit_code=2)
    return path


def fresh_settings(base: Settings, data_dir: str | Path) -> Settings:
    """``base`` over ``data_dir`` with its own SQLite file, whatever RELATA_DATABASE_URL says."""
    return base.replace(data_dir=str(data_dir), database_url="")


@contextmanager
def opened(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    migrated: bool = True,
    stages: Sequence[str] | None = None,
) -> Iterator[Container]:
    """A container built from ``settings`` (its schema brought to head), closed afterwards;
    ``stages`` runs only those pipeline stages (in their ``StageKind`` order)."""
    container = build(settings, embedder=embedder, stage_order=stages)
    try:
        if migrated:
            migrate.upgrade(container.db)
        yield container
    finally:
        container.close()


# ---------------------------------------------------------------- ingestion and the pipeline
def ingest_records(c: Container, workspace_id: str, records: Iterable[Record]) -> Tally:
    """Every record through the ingest service in batches, as ``relata ingest --jsonl`` does."""
    tally = Tally()
    bulk = BulkIngest(c.ingest, workspace_id, tally)
    for lineno, request in records:
        bulk.add(f"line {lineno}", request)
    bulk.flush()
    return tally


def run_pipeline(
    c: Container,
    workspace_id: str,
    item_ids: Iterable[str],
    *,
    workers: int | None,
    timeout: float,
    poll_seconds: float,
    on_progress: Callable[[dict[str, int]], None] | None = None,
) -> Settled:
    """Start an in-process worker pool, wait until the items settle (or ``timeout``), stop it."""
    pool = c.worker_pool(workers=workers)
    pool.start()
    try:
        return wait_until_settled(
            c.repos.items,
            c.queue,
            workspace_id,
            list(item_ids),
            timeout=timeout,
            poll_seconds=poll_seconds,
            progress_seconds=30,
            on_progress=on_progress,
        )
    finally:
        pool.stop(c.settings.shutdown_timeout)


# ---------------------------------------------------------------- SQL statements
@dataclass(frozen=True, slots=True)
class SqlCount:
    statements: int = 0
    transactions: int = 0


class StatementCounter:
    """Counts the SQL statements and committed transactions an engine runs while attached
    (``with StatementCounter(engine) as counter:``), apart for the thread that attached it
    (the benchmark's own work and polling: ``own``) and every other thread (the worker pool's
    workers and lease keeper: ``others``).

    A statement is one cursor execution: SQLite's explicit ``BEGIN`` counts (the engine
    sends it straight to the driver, so it is counted from the ``begin`` event), an
    ``executemany`` counts once, and ``COMMIT`` is not a statement but ends a transaction.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._owner = threading.get_ident()
        self._lock = threading.Lock()
        # [statements, transactions] of the owner thread and of the others.
        self._own = [0, 0]
        self._others = [0, 0]
        # PostgreSQL's driver opens its transactions implicitly; SQLite's BEGIN is a statement.
        self._explicit_begin = engine.dialect.name == "sqlite"

    def _bump(self, index: int) -> None:
        tally = self._own if threading.get_ident() == self._owner else self._others
        with self._lock:
            tally[index] += 1

    def _on_statement(self, *_: object) -> None:
        self._bump(0)

    def _on_commit(self, *_: object) -> None:
        self._bump(1)

    @property
    def own(self) -> SqlCount:
        with self._lock:
            return SqlCount(*self._own)

    @property
    def others(self) -> SqlCount:
        with self._lock:
            return SqlCount(*self._others)

    def __enter__(self) -> StatementCounter:
        event.listen(self._engine, "before_cursor_execute", self._on_statement)
        event.listen(self._engine, "commit", self._on_commit)
        if self._explicit_begin:
            event.listen(self._engine, "begin", self._on_statement)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        event.remove(self._engine, "before_cursor_execute", self._on_statement)
        event.remove(self._engine, "commit", self._on_commit)
        if self._explicit_begin:
            event.remove(self._engine, "begin", self._on_statement)


# ---------------------------------------------------------------- the report
def rate(n: float, seconds: float) -> float | None:
    """``n`` per second, one decimal; None when nothing was timed."""
    return round(n / seconds, 1) if seconds > 0 else None


def machine() -> dict[str, Any]:
    """Cores, CPU model and memory, for the record next to the figures."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return info


def machine_line(m: dict[str, Any]) -> str:
    return f"machine: {m.get('cpus')} CPUs, {m.get('cpu_model', '?')}, {m.get('ram_gib', '?')} GiB"


def emit(report: dict[str, Any], lines: Iterable[str], *, as_json: bool) -> None:
    """The report for people, then (``--json``) the same report as the last line."""
    for line in lines:
        print(line)
    if as_json:
        print(json.dumps(report, sort_keys=True))
