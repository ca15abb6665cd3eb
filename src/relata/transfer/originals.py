"""Stored originals copied from one data dir to another, and checked, for ``relata transfer``,
``backup`` and ``restore``.

Which files to copy comes from a database snapshot: each item's ``original_path``
(``originals/<workspace>/<item>.<ext>``) and each previous version's kept original
(``item_versions.original_path``, ``originals/<workspace>/<uuid>.<ext>``), checked against
that exact shape by ``OriginalStore.path`` on both sides. A file is copied atomically (a
temporary file in the destination folder, created exclusively with mode 0600, fsynced,
renamed into place), and
one already at the destination with the same SHA-256 is left as it is, so running a copy
again after an interruption only copies what is missing. A live item whose original is not
in the source is reported, never invented.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import NotFound
from relata.ingest.originals import OriginalStore
from relata.storage.sql import tables as t

_CHUNK = 1024 * 1024


def file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            sha.update(block)
    return sha.hexdigest()


def copy_file(source: Path, destination: Path) -> str:
    """Copy ``source`` to ``destination`` atomically; return the SHA-256 of what was copied."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = destination.parent / f".{destination.name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    sha = hashlib.sha256()
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            while block := src.read(_CHUNK):
                sha.update(block)
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return sha.hexdigest()


@dataclass(frozen=True, slots=True)
class StoredOriginal:
    item_id: str
    path: str  # relative to the data dir
    live: bool  # the item is not being deleted


def referenced(conn: Connection) -> Iterator[StoredOriginal]:
    """Every item's stored original as ``conn``'s snapshot records it, in item-id order,
    then every previous version's kept original, read a bounded number of rows at a time."""
    query = (
        sa.select(t.items.c.id, t.items.c.original_path, t.items.c.deleted_at)
        .where(t.items.c.original_path.is_not(None))
        .order_by(t.items.c.id)
        .execution_options(yield_per=1000)
    )
    for partition in conn.execute(query).partitions():
        for row in partition:
            yield StoredOriginal(str(row.id), str(row.original_path), row.deleted_at is None)
    # Then the previous versions' originals an item keeps as history (its current one is
    # the item's own, above).
    v = t.item_versions
    previous = (
        sa.select(v.c.item_id, v.c.original_path, t.items.c.deleted_at)
        .join(t.items, t.items.c.id == v.c.item_id)
        .where(v.c.original_path.is_not(None), v.c.original_path != t.items.c.original_path)
        .order_by(v.c.item_id, v.c.number)
        .execution_options(yield_per=1000)
    )
    for partition in conn.execute(previous).partitions():
        for row in partition:
            yield StoredOriginal(str(row.item_id), str(row.original_path), row.deleted_at is None)


@dataclass
class OriginalsReport:
    """What a copy of originals did: files copied, files already in place (same SHA-256),
    and the live items whose original the source lacks (or whose path has a bad shape)."""

    copied: int = 0
    present: int = 0
    bytes_copied: int = 0
    missing: list[str] = field(default_factory=list)  # item ids, at most MAX_LISTED
    missing_count: int = 0
    #: path -> SHA-256 of every file at the destination (for a backup's manifest), when asked.
    hashes: dict[str, str] | None = None


MAX_LISTED = 20


def copy_originals(
    conn: Connection, source_dir: Path, target_dir: Path, *, keep_hashes: bool = False
) -> OriginalsReport:
    """Copy the originals ``conn``'s snapshot references from ``source_dir`` to
    ``target_dir`` (data dirs), skipping those already there with the same SHA-256. With the
    same directory on both sides, only checks that each file is there. An original missing
    for an item that is being deleted (``deleted_at`` set) is expected and skipped."""
    source, target = OriginalStore(source_dir), OriginalStore(target_dir)
    same = source_dir.resolve() == target_dir.resolve()
    report = OriginalsReport(hashes={} if keep_hashes else None)
    for original in referenced(conn):
        src: Path | None
        try:
            src, dst = source.path(original.path), target.path(original.path)
        except NotFound:
            src = dst = None
        if src is None or dst is None or not src.is_file():
            if original.live:
                report.missing_count += 1
                if len(report.missing) < MAX_LISTED:
                    report.missing.append(original.item_id)
            continue
        if same:
            report.present += 1
            continue
        want = file_sha256(src)
        if dst.is_file() and file_sha256(dst) == want:
            report.present += 1
        else:
            got = copy_file(src, dst)
            report.copied += 1
            report.bytes_copied += dst.stat().st_size
            want = got
        if report.hashes is not None:
            report.hashes[original.path] = want
    return report


def compare_originals(conn: Connection, source_dir: Path, target_dir: Path) -> list[str]:
    """Item ids (at most ``MAX_LISTED``) whose original differs between the two data dirs
    or is missing from the target while the source has it: a fresh read of both sides."""
    source, target = OriginalStore(source_dir), OriginalStore(target_dir)
    wrong: list[str] = []
    for original in referenced(conn):
        try:
            src, dst = source.path(original.path), target.path(original.path)
        except NotFound:
            continue
        if not src.is_file():
            continue
        if not dst.is_file() or file_sha256(src) != file_sha256(dst):
            wrong.append(original.item_id)
            if len(wrong) >= MAX_LISTED:
                break
    return wrong
