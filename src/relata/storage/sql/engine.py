"""Engine construction for both dialects, and the ``Database`` handle repositories share.

SQLite runs on ``pysqlite3`` (the standard library's build here cannot load extensions, and
sqlite-vec is an extension), in WAL mode with foreign keys on and a busy timeout. SQLAlchemy's
pysqlite driver would otherwise issue its own deferred ``BEGIN`` lazily; we take over
transaction control so that write transactions start with ``BEGIN IMMEDIATE``: a deferred
transaction that later writes can fail with SQLITE_BUSY without waiting, which is exactly
the race two job workers would hit. The ``BEGIN`` goes straight to the driver's connection
(a driver error wrapped as SQLAlchemy wraps one): every read and write opens a transaction,
and through SQLAlchemy's execution path a ``BEGIN`` cost as much as a query.

Durability (docs/decisions/0029-sqlite-durability.md): WAL mode survives a killed process
with any ``synchronous`` level; a power loss or an OS crash is another matter. A write is
**durable** by default: ``PRAGMA synchronous=FULL`` for its transaction, so its commit
fsyncs the WAL and whatever was acknowledged (an upload's row and first job, a deletion, a
review decision, a token) survives a power loss, with every transaction committed before it
(the WAL is appended in order). ``write(durable=False)`` is for what the pipeline re-derives:
a stage's result with its run and the next job, a job's lease, claim, renewal and completion.
Those commit with ``synchronous=NORMAL`` (no fsync; synced by the next durable commit or the
checkpoint), and a power loss can only roll them back to an earlier consistent state, which
the queue's leases run again. PostgreSQL commits durably either way (``synchronous_commit``
is left at its default, ``on``).

The busy timeout is 10 s unless the SQLite URL says otherwise (``sqlite:///x.db?timeout=0.5``,
seconds, SQLAlchemy's own parameter). A lock held past it, and PostgreSQL's lock, deadlock,
serialization and connection failures, leave ``read``/``write`` as the domain's ``Busy`` or
``Unavailable`` (``errors.unavailable``), never as a driver exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from relata.domain.errors import ConfigError
from relata.storage.sql.errors import unavailable

_CACHE_KIB = 32 * 1024
_MMAP_BYTES = 1024 * 1024 * 1024
_BUSY_TIMEOUT_MS = 10_000
_PG_LOCK_TIMEOUT = f"-c lock_timeout={_BUSY_TIMEOUT_MS}"
_WRITE_OPTION = "relata_write"
_DURABLE_OPTION = "relata_durable"


def _sqlite_engine(url: sa.URL) -> Engine:
    import pysqlite3.dbapi2 as pysqlite3

    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    busy_ms = _busy_timeout_ms(url)
    engine = sa.create_engine(
        url,
        module=pysqlite3,
        connect_args={"timeout": busy_ms / 1000, "check_same_thread": False},
        pool_pre_ping=False,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see module docstring)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={busy_ms}")
        cur.execute("PRAGMA synchronous=NORMAL")
        # Reads of a large file: a bigger page cache per connection and memory-mapped reads
        # (the OS's page cache, shared by every connection) instead of a read() per page
        # missing from the default 2 MiB cache; see docs/decisions/0026-sqlite-read-caching.md.
        cur.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
        cur.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        cur.close()
        _load_sqlite_vec(dbapi_conn)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        write = bool(options.get(_WRITE_OPTION))
        statement = "BEGIN IMMEDIATE" if write else "BEGIN DEFERRED"
        # Straight to the driver: through ``exec_driver_sql`` a BEGIN cost as much of
        # SQLAlchemy's execution machinery as a real query, and every read and write opens
        # one. A driver error is raised as SQLAlchemy would have wrapped it, so that
        # ``Database.read``/``write`` still map a lock held past the timeout to ``Busy``.
        dbapi = conn.connection.dbapi_connection
        try:
            if write:  # the level this transaction's COMMIT syncs with (module docstring)
                level = "FULL" if options.get(_DURABLE_OPTION, True) else "NORMAL"
                dbapi.execute(f"PRAGMA synchronous={level}")  # type: ignore[union-attr]
            dbapi.execute(statement)  # type: ignore[union-attr]
        except pysqlite3.Error as exc:
            raise sa.exc.DBAPIError.instance(
                statement, None, exc, pysqlite3.Error, dialect=engine.dialect
            ) from exc

    return engine


def _busy_timeout_ms(url: sa.URL) -> int:
    raw = url.query.get("timeout")
    if raw is None:
        return _BUSY_TIMEOUT_MS
    text = raw if isinstance(raw, str) else raw[-1]
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:
        raise ConfigError("RELATA_DATABASE_URL: timeout must be 0-3600 seconds")
    return int(seconds * 1000)


def _load_sqlite_vec(dbapi_conn: Any) -> None:
    try:
        import sqlite_vec
    except ImportError:  # pragma: no cover - declared dependency
        return
    dbapi_conn.enable_load_extension(True)
    try:
        sqlite_vec.load(dbapi_conn)
    finally:
        dbapi_conn.enable_load_extension(False)


def create_engine(url: str) -> Engine:
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        # A lock held by another writer fails after this long (then 503 busy, or a retry of
        # the job) instead of waiting forever; ``?options=-c lock_timeout=...`` overrides it.
        connect_args = {} if "options" in parsed.query else {"options": _PG_LOCK_TIMEOUT}
        return sa.create_engine(
            parsed, pool_pre_ping=True, pool_size=10, max_overflow=10, connect_args=connect_args
        )
    raise ConfigError(f"RELATA_DATABASE_URL: unsupported database {backend!r}")


@contextmanager
def _domain_errors() -> Iterator[None]:
    """A busy, locked or unreachable database leaves as ``Busy``/``Unavailable``."""
    try:
        yield
    except (sa.exc.DBAPIError, sa.exc.TimeoutError) as exc:
        mapped = unavailable(exc)
        if mapped is None:
            raise
        raise mapped from exc


class Database:
    """An engine plus the two kinds of transaction repositories use."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # The read transaction of the ``snapshot`` block this thread is in, if any.
        self._shared: ContextVar[Connection | None] = ContextVar(
            f"relata_snapshot_{id(self)}", default=None
        )

    @classmethod
    def from_url(cls, url: str) -> Database:
        return cls(create_engine(url))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def read(self, *, shared: bool = True) -> Iterator[Connection]:
        """A read transaction: the enclosing ``snapshot``'s, or its own (always its own with
        ``shared=False``: for a store that creates its tables lazily, since a snapshot begun
        before that DDL would not see them)."""
        outer = self._shared.get() if shared else None
        if outer is not None:
            with _domain_errors():
                yield outer
            return
        with _domain_errors(), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every ``read`` inside the block, in this thread, runs in one read transaction: one
        consistent view of the database, and one connection and ``BEGIN`` instead of one per
        read (docs/decisions/0016). Writes are not affected (``write`` has its own
        transaction, which the block's reads do not see). Nested blocks share the outer one.
        Keep it short: on SQLite an open read transaction holds back the WAL's checkpoint."""
        if self._shared.get() is not None:
            yield
            return
        with _domain_errors(), self.engine.connect() as conn:
            if self.dialect == "postgresql":
                # READ COMMITTED would give each statement the latest commits; a read-only
                # REPEATABLE READ transaction sees one snapshot and never fails to serialise.
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                token = self._shared.set(conn)
                try:
                    yield
                finally:
                    self._shared.reset(token)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` on SQLite, ordinary on PostgreSQL.
        ``durable=False``: for data the pipeline re-derives, a commit without an fsync on
        SQLite (see the module docstring); it still survives a killed process."""
        with _domain_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE_OPTION: True, _DURABLE_OPTION: durable})
            with conn.begin():
                yield conn

    @staticmethod
    def is_write(conn: Connection) -> bool:
        """Whether ``conn`` was opened by ``write`` (its changes may yet be rolled back)."""
        return bool(conn.get_execution_options().get(_WRITE_OPTION))

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(sa.text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()
