"""``relata transfer``: copy a whole deployment into another database (docs/decisions/0034).

In order:

1. **Check both sides.** The source must be at this version's schema head; the target is
   migrated to the same revision. A target that holds rows is refused, unless it holds this
   source's unfinished transfer and ``resume`` is asked, or ``force`` is asked (PostgreSQL
   only: every Relata table is emptied, its vectors deleted, then the copy starts anew).
2. **One snapshot of the source, writers held off.** SQLite: one ``BEGIN IMMEDIATE``
   transaction, so every table is read from one snapshot while any writer waits (and, past
   its busy timeout, fails with "busy"). PostgreSQL: one ``REPEATABLE READ`` transaction that
   first takes ``SHARE`` locks on every table (writers wait, then fail at their lock
   timeout). A job still leased by a live worker refuses the transfer: stop ``relata serve``
   and every ``relata worker`` first.
3. **Every table of the schema** (``tables.metadata.sorted_tables``: parents first, so
   foreign keys hold at every commit), in primary-key order, in bounded batches, one
   transaction each, ids, timestamps and hashes exactly as they are (``transfer.rows``). The
   audit table is only ever inserted into, which its append-only triggers allow.
   Integer identity sequences (none today) are set past the copied ids.
4. **Vectors** of every workspace, page by page from the source's vector store into the
   target's, without re-embedding (``transfer.vectors``); where each workspace got to is
   recorded in the target.
5. **Originals** referenced by the snapshot's items, into the target's data dir
   (``transfer.originals``).
6. **Verify**: every table's row count and checksum computed on both sides, the vectors
   walked side by side, the originals' SHA-256 compared.

**Resuming.** Each table's batches are committed in key order, so after an interruption the
target holds a prefix of every table; a new run continues each table after the last key the
target holds, each workspace's vectors after the recorded chunk id, and skips originals
already copied. The record (table ``relata_transfer`` in the target: the source and the
vector positions) is dropped once everything verified.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import ConfigError, Conflict
from relata.domain.models import JobStatus
from relata.domain.ports import VectorStore
from relata.storage.sql import migrate, workspace_fts
from relata.storage.sql import tables as t
from relata.storage.sql.engine import Database
from relata.storage.vectors.validation import MAX_EXPORT
from relata.transfer.originals import OriginalsReport, compare_originals, copy_originals
from relata.transfer.rows import BATCH_ROWS, TableDigest, copy_table, digest, has_rows, last_key
from relata.transfer.vectors import VectorCheck, compare_vectors, copy_vectors

STATE_TABLE = "relata_transfer"
_state = sa.Table(
    STATE_TABLE,
    sa.MetaData(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
_SOURCE = "source"
_VECTORS = "vectors:"  # + workspace id: the last chunk id copied, or DONE
_DONE = "done"
# A workspace id no store holds: reading it makes a store create its tables, if it never
# had any, before the source is locked (sqlite-vec creates them on first use, a write).
_PROBE = "00000000-0000-4000-8000-000000000000"

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Side:
    """One deployment: its database, its vector store, and its data dir (the originals)."""

    db: Database
    vectors: VectorStore
    data_dir: Path
    label: str  # for messages and the resume record: the database URL, password hidden


@dataclass(frozen=True, slots=True)
class TableCheck:
    source: TableDigest
    target: TableDigest
    copied: int

    @property
    def ok(self) -> bool:
        return (self.source.rows, self.source.sha256) == (self.target.rows, self.target.sha256)


@dataclass
class TransferReport:
    resumed: bool
    tables: list[TableCheck] = field(default_factory=list)
    vectors: list[VectorCheck] = field(default_factory=list)
    originals: OriginalsReport = field(default_factory=OriginalsReport)
    originals_differing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            all(c.ok for c in self.tables)
            and all(v.ok for v in self.vectors)
            and not self.originals_differing
        )


def transfer(
    source: Side,
    target: Side,
    *,
    resume: bool = False,
    force: bool = False,
    batch_rows: int = BATCH_ROWS,
    tables: Sequence[sa.Table] | None = None,
    say: Say = lambda _line: None,
) -> TransferReport:
    """Copy ``source`` into ``target`` and verify it (see the module docstring): rows in
    transactions of ``batch_rows``, vectors in pages of as many. ``tables`` defaults to
    every table of the schema. Refusals raise ``Conflict`` or ``ConfigError`` with what to
    do; a verification that fails is in the report (``ok`` false)."""
    schema = list(tables if tables is not None else t.metadata.sorted_tables)
    if source.label == target.label:
        raise ConfigError("the source and the target are the same database")
    if not 1 <= batch_rows <= MAX_EXPORT:
        raise ConfigError(f"the batch size must be 1..{MAX_EXPORT} rows")
    _require_current(source)
    with source.db.read() as conn:
        _refuse_running_jobs(conn)  # before the target is touched; again in the snapshot
    resumed = _prepare_target(source, target, schema, resume=resume, force=force, say=say)
    source.vectors.export(_PROBE, limit=1)
    target.vectors.prepare()
    report = TransferReport(resumed=resumed)
    copied: dict[str, int] = {}
    with _snapshot(source.db, schema) as snap:
        _refuse_running_jobs(snap)
        for table in schema:
            copied[table.name] = _copy_table(snap, target, table, batch_rows, say)
        if target.db.dialect == "postgresql":
            _advance_sequences(target.db, schema)
        workspaces = [
            str(w)
            for w in snap.execute(
                sa.select(t.workspaces.c.id).order_by(t.workspaces.c.id)
            ).scalars()
        ]
        for workspace_id in workspaces:
            _copy_workspace_vectors(source, target, workspace_id, batch_rows, say)
        say("copying originals")
        report.originals = copy_originals(snap, source.data_dir, target.data_dir)
        say("verifying")
        with target.db.read() as conn:
            for table in schema:
                report.tables.append(
                    TableCheck(digest(snap, table), digest(conn, table), copied[table.name])
                )
        report.vectors = [compare_vectors(source.vectors, target.vectors, w) for w in workspaces]
        if source.data_dir.resolve() != target.data_dir.resolve():
            report.originals_differing = compare_originals(snap, source.data_dir, target.data_dir)
    if report.ok:
        with target.db.write() as conn:
            _state.drop(conn, checkfirst=True)
    return report


# ---------------------------------------------------------------- the two sides
def _require_current(source: Side) -> None:
    current, head = migrate.current_revision(source.db), migrate.head_revision()
    if current != head:
        raise ConfigError(
            f"the source database {source.label} is at schema {current or 'none'} and this "
            f"version copies schema {head}: run `relata migrate` on it first"
        )


def _prepare_target(
    source: Side, target: Side, schema: Sequence[sa.Table], *, resume: bool, force: bool, say: Say
) -> bool:
    """Migrate the target, decide whether this run starts afresh or resumes (refusing a
    non-empty target otherwise), and record the source. True when resuming."""
    migrate.upgrade(target.db)
    with target.db.read() as conn:
        recorded = _recorded_source(conn)
        holding = [table.name for table in schema if has_rows(conn, table)]
    if recorded is not None and not force:
        if recorded != source.label:
            raise Conflict(
                f"the target holds an unfinished transfer from {recorded}, not from "
                f"{source.label}: finish that one, or start over with --force"
            )
        if not resume:
            raise Conflict(
                "the target holds an unfinished transfer from this source: run again with "
                "--resume to continue it, or --force to start over"
            )
    elif holding and not force:
        if resume:
            raise Conflict(
                f"the target database {target.label} holds data but no unfinished transfer "
                "(a transfer that verified leaves none): there is nothing to resume; --force "
                "deletes the target's Relata data and copies again"
            )
        raise Conflict(
            f"the target database {target.label} is not empty ({', '.join(holding[:4])}"
            f"{', ...' if len(holding) > 4 else ''} hold rows): transfer copies into an empty "
            "database; --force deletes the target's Relata data first"
        )
    if force and (holding or recorded is not None):
        say(f"emptying the target ({', '.join(holding) or 'an unfinished transfer'})")
        _empty(target, schema)
        recorded = None
    with target.db.write() as conn:
        _state.create(conn, checkfirst=True)
        if recorded is None:
            conn.execute(sa.insert(_state).values(name=_SOURCE, value=source.label))
    return recorded is not None


def _recorded_source(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table(STATE_TABLE):
        return None
    value = conn.execute(sa.select(_state.c.value).where(_state.c.name == _SOURCE)).scalar()
    return None if value is None else str(value)


def _empty(target: Side, schema: Sequence[sa.Table]) -> None:
    """Delete every Relata row and vector of the target (PostgreSQL only). The audit table's
    append-only triggers are disabled for this one transaction: whoever passes --force is
    the database owner replacing the whole deployment."""
    if target.db.dialect != "postgresql":
        raise ConfigError(
            "--force empties a PostgreSQL target only; a SQLite target must be a new file: "
            "delete it first"
        )
    with target.db.read() as conn:
        workspaces = [str(w) for w in conn.execute(sa.select(t.workspaces.c.id)).scalars()]
    for workspace_id in workspaces:
        target.vectors.delete_by_workspace(workspace_id)
    with target.db.write() as conn:
        preparer = conn.dialect.identifier_preparer
        audit = preparer.quote(t.audit_events.name)
        names = ", ".join(preparer.quote(table.name) for table in schema)
        conn.exec_driver_sql(f"ALTER TABLE {audit} DISABLE TRIGGER USER")
        conn.exec_driver_sql(f"TRUNCATE {names}")
        conn.exec_driver_sql(f"ALTER TABLE {audit} ENABLE TRIGGER USER")
        _state.drop(conn, checkfirst=True)


@contextmanager
def _snapshot(db: Database, schema: Sequence[sa.Table]) -> Iterator[Connection]:
    """One transaction over the source in which every read sees one snapshot and no other
    writer can commit (see the module docstring)."""
    if db.dialect == "sqlite":
        with db.write() as conn:  # BEGIN IMMEDIATE: the write lock, held while reading
            yield conn
        return
    with db.engine.connect() as raw:
        conn = raw.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            preparer = conn.dialect.identifier_preparer
            names = ", ".join(preparer.quote(table.name) for table in schema)
            conn.exec_driver_sql(f"LOCK TABLE {names} IN SHARE MODE")
            yield conn


def _refuse_running_jobs(conn: Connection) -> None:
    now = datetime.now(UTC)
    jobs = t.jobs.c
    running = conn.execute(
        sa.select(sa.func.count(), sa.func.max(jobs.lease_expires_at)).where(
            jobs.status == JobStatus.RUNNING.value, jobs.lease_expires_at > now
        )
    ).one()
    if running[0]:
        raise Conflict(
            f"{running[0]} job(s) in the source are running, leased by a live worker until "
            f"{running[1]:%Y-%m-%d %H:%M:%S} UTC: stop `relata serve` and every `relata "
            "worker` (their leases then lapse within RELATA_JOB_LEASE_SECONDS), then run "
            "transfer again"
        )


# ---------------------------------------------------------------- copying
def _copy_table(snap: Connection, target: Side, table: sa.Table, batch_rows: int, say: Say) -> int:
    with target.db.read() as conn:
        after = last_key(conn, table)
    written = copy_table(snap, target.db, table, after=after, batch_rows=batch_rows)
    if table is t.workspaces:
        # Each workspace's full-text index pair (SQLite), before any item arrives: the
        # triggers index the rows as they are copied. Idempotent, so a resumed run that
        # stopped after the workspaces' batch creates what is missing.
        with target.db.write() as conn:
            for workspace_id in conn.execute(sa.select(t.workspaces.c.id)).scalars():
                workspace_fts.create(conn, str(workspace_id))
    continued = " (continued)" if after is not None else ""
    say(f"{table.name}: {written} rows copied{continued}")
    return written


def _advance_sequences(db: Database, schema: Sequence[sa.Table]) -> None:
    """Set each integer key's sequence (serial or identity) past the copied ids, so rows
    inserted later do not collide with them."""
    with db.write() as conn:
        for table in schema:
            for column in table.primary_key.columns:
                if not isinstance(column.type, sa.Integer):
                    continue
                sequence = conn.execute(
                    sa.text("SELECT pg_get_serial_sequence(:t, :c)"),
                    {"t": table.name, "c": column.name},
                ).scalar()
                if sequence is None:
                    continue
                top = conn.execute(sa.select(sa.func.max(column))).scalar()
                conn.execute(
                    sa.text("SELECT setval(:s, :v, :called)"),
                    {"s": sequence, "v": top or 1, "called": top is not None},
                )


def _copy_workspace_vectors(
    source: Side, target: Side, workspace_id: str, page: int, say: Say
) -> None:
    name = f"{_VECTORS}{workspace_id}"
    with target.db.read() as conn:
        position = conn.execute(sa.select(_state.c.value).where(_state.c.name == name)).scalar()
    if position == _DONE:
        return

    def record(value: str) -> None:
        with target.db.write() as conn:
            updated = conn.execute(
                sa.update(_state).where(_state.c.name == name).values(value=value)
            ).rowcount
            if not updated:
                conn.execute(sa.insert(_state).values(name=name, value=value))

    copied = copy_vectors(
        source.vectors,
        target.vectors,
        workspace_id,
        after=None if position is None else str(position),
        page=page,
        progress=lambda last, _n: record(last),
    )
    record(_DONE)
    say(f"vectors of workspace {workspace_id}: {copied} copied")
