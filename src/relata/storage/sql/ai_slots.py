"""AI-call slots shared by every process of a PostgreSQL deployment: advisory locks.

Slot ``i`` of ``limit`` is the session-level advisory lock ``(NAMESPACE, i)`` in the
deployment's database (advisory locks are per database, so two deployments on one server do
not share slots). Taking a slot is one statement that tries the slots in order and stops at
the first it gets; the connection that holds it stays checked out of the pool for the length
of the model call and is returned after ``pg_advisory_unlock``. When a process dies, its
sessions end and PostgreSQL releases their locks: a SIGKILLed worker never keeps a slot, and
nothing needs a lease or a sweeper. A holding connection that fails is discarded, not
pooled, which ends its session and releases the lock the same way.

Nothing is written: no table, no WAL, no vacuum; the cost is one statement (plus the pool's
pre-ping) to take a slot and one to give it back. See docs/decisions/0033-worker-processes.md.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.concurrency import FileSlots, HeldSlot, SlotGate, machine_slots_dir
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import unavailable

#: The first key of every Relata AI-call slot lock ("RELA" in ASCII, an int4).
NAMESPACE = 0x52454C41

# The planner evaluates the filter row by row and the limit stops at the first lock taken,
# so one statement takes at most one slot (a test counts the locks the session holds).
_TAKE = sa.text(
    "SELECT slot FROM generate_series(0, :last) AS slot "
    "WHERE pg_try_advisory_lock(:ns, slot) LIMIT 1"
)
_GIVE = sa.text("SELECT pg_advisory_unlock(:ns, :slot)")


class _AdvisorySlot:
    def __init__(self, conn: Connection, slot: int) -> None:
        self._conn: Connection | None = conn
        self.slot = slot
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute(_GIVE, {"ns": NAMESPACE, "slot": self.slot})
            conn.commit()
        except sa.exc.SQLAlchemyError:
            # The session is unusable or gone: discard it (its lock goes with it).
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.invalidate()
        finally:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.close()


class AdvisorySlots:
    """``limit`` AI-call slots shared by every process using ``db`` (PostgreSQL only)."""

    def __init__(self, db: Database, limit: int) -> None:
        if db.dialect != "postgresql":
            raise ValueError("advisory-lock slots need PostgreSQL")
        if limit < 1:
            raise ValueError("a slot gate needs at least one slot")
        self._db = db
        self._limit = limit

    @property
    def limit(self) -> int:
        return self._limit

    def try_acquire(self) -> HeldSlot | None:
        try:
            conn = self._db.engine.connect()
        except sa.exc.DBAPIError as exc:
            raise _mapped(exc) from exc
        try:
            slot = conn.execute(_TAKE, {"last": self._limit - 1, "ns": NAMESPACE}).scalar()
            conn.commit()  # the lock is the session's: no transaction stays open meanwhile
        except sa.exc.DBAPIError as exc:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.invalidate()  # a lock may have been taken before the failure
            conn.close()
            raise _mapped(exc) from exc
        if slot is None:
            conn.close()
            return None
        return _AdvisorySlot(conn, int(slot))

    def held(self) -> int:
        """How many slots are held now, by every process (for tests and the status page)."""
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                        "AND database = (SELECT oid FROM pg_database "
                        "WHERE datname = current_database()) "
                        "AND classid = CAST(:ns AS oid) AND granted"
                    ),
                    {"ns": NAMESPACE},
                ).scalar_one()
            )


def _mapped(exc: sa.exc.DBAPIError) -> Exception:
    mapped = unavailable(exc)
    return mapped if mapped is not None else exc


# ---------------------------------------------------------------- which slots a model gets
def database_identity(db: Database) -> str:
    """What names the deployment on this machine: the SQLite file, or the PostgreSQL
    database's address (never its password)."""
    url = db.engine.url
    if db.dialect == "sqlite":
        if url.database and url.database != ":memory:":
            return f"sqlite:{Path(url.database).resolve()}"
        return f"sqlite-memory:{os.getpid()}:{id(db)}"
    return url.set(password=None).render_as_string(hide_password=True)


def model_server_gate(db: Database, limit: int) -> SlotGate:
    """Slots for calls to a model *server* (Ollama, an OpenAI-compatible API, llama.cpp),
    which every process of the deployment shares: advisory locks on PostgreSQL (every
    machine); on SQLite, whose processes are on one machine by construction, file locks."""
    if db.dialect == "postgresql":
        return AdvisorySlots(db, limit)
    return FileSlots(machine_slots_dir(f"model-server|{database_identity(db)}"), limit)


def local_model_gate(db: Database, limit: int) -> SlotGate:
    """Slots for the in-process model (the ONNX embedder): its calls are this machine's
    cores, so they are shared by this machine's processes of the deployment only."""
    return FileSlots(machine_slots_dir(f"local-model|{database_identity(db)}"), limit)
