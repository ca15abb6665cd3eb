"""Rows of the authoritative store read, written and fingerprinted alike on both dialects.

- **Order.** Every table is read in primary-key order, strings compared byte by byte: SQLite's
  default ``BINARY`` collation, and ``COLLATE "C"`` on PostgreSQL (whose database collation,
  ``en_US.UTF-8`` say, orders punctuation and case differently). The same order on both
  sides is what lets a copy continue after the last key the target holds, and lets both
  sides compute the same checksum.
- **Values.** Rows go through the tables' own SQLAlchemy types, so each dialect's storage
  (SQLite's naive UTC text and 0/1, PostgreSQL's ``timestamptz`` and ``boolean``) comes back
  as the same Python values. A JSON column can hold SQL ``NULL`` or the JSON value ``null``,
  which read back alike: each JSON column is read with an ``IS NULL`` flag beside it and
  written back as ``sa.null()`` or ``JSON.NULL`` accordingly.
- **Checksum.** A SHA-256 over the column names, then one canonical line per row in key
  order: a JSON array of the values (datetimes as ISO 8601 UTC to the microsecond, floats
  as floats, JSON values with sorted keys and tagged, so that SQL ``NULL`` and JSON ``null``
  differ). Computed the same way on the source and the target; equal digests mean equal
  rows, value for value.
- **Bounded.** Reads stream (``yield_per``) and writes go in batches bounded by rows and by
  an estimate of their size, one transaction each; no table is ever held in memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.storage.sql.engine import Database

#: Rows per write transaction, and the estimated bytes at which a batch is written sooner.
BATCH_ROWS = 1000
BATCH_BYTES = 32 * 1024 * 1024
#: Rows fetched per round trip from a table with long text or JSON columns (items, chunks,
#: claims...): a few of those rows can be megabytes each.
WIDE_FETCH = 64
_NULL_FLAG = "relata_null__"


def _is_json(column: sa.Column[Any]) -> bool:
    return isinstance(column.type, sa.JSON)


def _is_wide(table: sa.Table) -> bool:
    return any(isinstance(c.type, (sa.Text, sa.JSON)) for c in table.columns)


def key_columns(table: sa.Table) -> list[sa.Column[Any]]:
    return list(table.primary_key.columns)


def _ordered(column: sa.ColumnElement[Any], dialect: str) -> sa.ColumnElement[Any]:
    """``column`` compared byte by byte (strings), as SQLite's default collation does."""
    if dialect == "postgresql" and isinstance(column.type, sa.String):
        return sa.collate(column, "C")
    return column


def _key_order(table: sa.Table, dialect: str) -> list[sa.ColumnElement[Any]]:
    return [_ordered(c, dialect) for c in key_columns(table)]


def _after(table: sa.Table, dialect: str, key: Sequence[Any]) -> sa.ColumnElement[bool]:
    """Rows whose primary key comes after ``key`` in the byte-wise key order."""
    order = _key_order(table, dialect)
    left = order[0] if len(order) == 1 else sa.tuple_(*order)
    right = sa.literal(key[0]) if len(order) == 1 else sa.tuple_(*[sa.literal(v) for v in key])
    after: sa.ColumnElement[bool] = left > right
    return after


def select_rows(
    table: sa.Table, dialect: str, after: Sequence[Any] | None = None
) -> sa.Select[Any]:
    """Every column of ``table`` plus an ``IS NULL`` flag per JSON column, in key order,
    starting after ``after`` (a primary key) when given."""
    flags = [c.is_(None).label(f"{_NULL_FLAG}{c.name}") for c in table.columns if _is_json(c)]
    query = sa.select(*table.columns, *flags).order_by(*_key_order(table, dialect))
    if after is not None:
        query = query.where(_after(table, dialect, after))
    return query


def last_key(conn: Connection, table: sa.Table) -> tuple[Any, ...] | None:
    """The greatest primary key ``table`` holds in the byte-wise order, or None if empty."""
    dialect = conn.dialect.name
    keys = key_columns(table)
    row = conn.execute(
        sa.select(*keys).order_by(*[o.desc() for o in _key_order(table, dialect)]).limit(1)
    ).first()
    return None if row is None else tuple(row)


def has_rows(conn: Connection, table: sa.Table) -> bool:
    return conn.execute(sa.select(sa.literal(1)).select_from(table).limit(1)).first() is not None


def stream(conn: Connection, query: sa.Select[Any], table: sa.Table) -> Iterator[sa.Row[Any]]:
    """The query's rows, fetched a bounded number at a time."""
    fetch = WIDE_FETCH if _is_wide(table) else BATCH_ROWS
    result = conn.execute(query.execution_options(yield_per=fetch))
    for partition in result.partitions():
        yield from partition


# ---------------------------------------------------------------- values
def insert_values(table: sa.Table, row: sa.Row[Any]) -> dict[str, Any]:
    """The row as ``INSERT`` parameters, SQL NULL and JSON null kept apart."""
    values = row._mapping
    out: dict[str, Any] = {}
    for column in table.columns:
        value = values[column.name]
        if _is_json(column) and value is None:
            value = sa.null() if values[f"{_NULL_FLAG}{column.name}"] else sa.JSON.NULL
        out[column.name] = value
    return out


def _canonical(column: sa.Column[Any], value: Any, sql_null: bool) -> Any:
    if _is_json(column):
        return None if sql_null else {"json": value}
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    if isinstance(column.type, sa.Float):
        return float(value)
    if isinstance(column.type, sa.Boolean):
        return bool(value)
    if isinstance(column.type, sa.Integer):
        return int(value)
    if isinstance(value, (bytes, bytearray, memoryview)):  # LargeBinary: psycopg gives memoryview
        return {"hex": bytes(value).hex()}
    return value


def canonical_line(table: sa.Table, row: sa.Row[Any]) -> bytes:
    """One row as the checksum reads it (the same bytes on either dialect)."""
    values = row._mapping
    line = [
        _canonical(
            c,
            values[c.name],
            bool(values[f"{_NULL_FLAG}{c.name}"]) if _is_json(c) else values[c.name] is None,
        )
        for c in table.columns
    ]
    return json.dumps(line, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class TableDigest:
    table: str
    rows: int
    sha256: str


def digest(conn: Connection, table: sa.Table) -> TableDigest:
    """Row count and checksum of ``table`` as ``conn`` sees it (see the module docstring)."""
    sha = hashlib.sha256(json.dumps([c.name for c in table.columns]).encode() + b"\n")
    rows = 0
    for row in stream(conn, select_rows(table, conn.dialect.name), table):
        sha.update(canonical_line(table, row))
        sha.update(b"\n")
        rows += 1
    return TableDigest(table.name, rows, sha.hexdigest())


def _size(value: Any) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (dict, list)):
        return len(json.dumps(value))
    return 8


# ---------------------------------------------------------------- copying
def copy_table(
    source: Connection,
    target: Database,
    table: sa.Table,
    *,
    after: Sequence[Any] | None = None,
    batch_rows: int = BATCH_ROWS,
    batch_bytes: int = BATCH_BYTES,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Copy ``table``'s rows after key ``after`` from ``source`` (a transaction the caller
    holds, so every table is read from one snapshot) into ``target``, a batch per
    transaction, in key order: when interrupted, the target holds a prefix of the source's
    rows, and a new call with ``after=last_key(target)`` continues where it stopped.
    Returns the number of rows written."""
    insert = table.insert()
    written = 0
    batch: list[dict[str, Any]] = []
    size = 0

    def flush() -> None:
        nonlocal written, size
        if not batch:
            return
        with target.write() as conn:
            conn.execute(insert, batch)
        written += len(batch)
        batch.clear()
        size = 0
        if progress is not None:
            progress(written)

    for row in stream(source, select_rows(table, source.dialect.name, after), table):
        values = insert_values(table, row)
        batch.append(values)
        size += sum(_size(v) for v in values.values())
        if len(batch) >= batch_rows or size >= batch_bytes:
            flush()
    flush()
    return written
