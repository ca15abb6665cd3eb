"""``relata backup`` and ``relata restore`` for the embedded default: the SQLite file (with
its sqlite-vec vectors, in the same file) and the stored originals (docs/decisions/0034).

**Backup, consistent while serving and ingesting.** The database is copied with SQLite's
online backup API in one step: one read transaction, so the copy is the database at one
instant while writers carry on (WAL). Then the originals *that copy references* are copied
from the data dir: an original written after the instant is not referenced and not copied
(harmless: its item is not in the copy either); ingestion stores an original before its
item's row exists, so every item in the copy had its file by then. The one race left is a
deletion: an item live in the copy can be deleted (file first, then row) before its file is
copied. Such an item is now deleted or gone in the live database, so the backup is taken
again (a fresh copy, originals already copied kept), at most ``ATTEMPTS`` times. A live item
whose original the data dir lacks even now is a fault of the source, recorded in the
manifest, never hidden.

**The backup folder**: ``relata.db``; ``originals/<workspace>/<item>.<ext>``;
``originals.sha256`` (``sha256sum -c`` checks it); ``manifest.json``: the format, Relata's
version, the schema revision, the database file's size and SHA-256, each table's row count
and checksum (``transfer.rows.digest``), each workspace's vector count, the originals' count,
bytes and the list's SHA-256. It is written beside the destination and renamed into place
when complete, so a failed backup leaves nothing at the destination.

**Restore** into a data dir that holds no deployment (no ``relata.db``, ``vectors.db``,
``qdrant/`` or originals), unless ``force``: first the whole backup is verified (the
database file's and every original's SHA-256), then the originals are copied, then the
database, under a temporary name, its tables checked against the manifest (when its schema
is this version's) before it is renamed to ``relata.db``. A restore interrupted before that
leaves no database, and running it again starts over.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import relata
from relata.domain.errors import Conflict, ValidationError
from relata.storage.sql import migrate
from relata.storage.sql import tables as t
from relata.storage.sql.engine import Database
from relata.storage.vectors.sqlite_vec import SqliteVecStore
from relata.transfer.originals import MAX_LISTED, copy_file, copy_originals, file_sha256
from relata.transfer.rows import digest

FORMAT = "relata-backup/1"
DB_FILE = "relata.db"
MANIFEST = "manifest.json"
ORIGINALS_LIST = "originals.sha256"
ORIGINALS_DIR = "originals"
ATTEMPTS = 5
#: What in a data dir makes it hold a deployment (a restore refuses to overwrite it).
DEPLOYMENT_FILES = (DB_FILE, f"{DB_FILE}-wal", "vectors.db", "qdrant", ORIGINALS_DIR)
_MARKER = ".relata-restore"
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024


@dataclass
class BackupReport:
    destination: Path
    attempts: int
    manifest: dict[str, Any] = field(default_factory=dict)
    copied_originals: int = 0


@dataclass
class RestoreReport:
    data_dir: Path
    manifest: dict[str, Any]
    originals: int = 0
    tables_checked: bool = False


# ---------------------------------------------------------------- backup
def backup(
    database: Path,
    data_dir: Path,
    destination: Path,
    *,
    vector_width: int,
    after_snapshot: Callable[[], None] | None = None,
) -> BackupReport:
    """Back up the SQLite file ``database`` and the originals under ``data_dir`` into
    ``destination`` (a new folder, or an empty one). ``after_snapshot`` runs after each
    database copy (a test's way to act between the copy and the originals)."""
    destination = destination.expanduser().resolve()
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise Conflict(f"{destination} already exists and is not an empty folder")
    if destination.is_relative_to(data_dir.resolve()):
        raise ValidationError("the backup must not be inside the data dir", field="destination")
    work = destination.parent / f".{destination.name}.partial-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    try:
        report = _backup_into(database, data_dir, work, vector_width, after_snapshot)
        if destination.exists():
            destination.rmdir()
        work.rename(destination)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    report.destination = destination
    return report


def _backup_into(
    database: Path,
    data_dir: Path,
    work: Path,
    vector_width: int,
    after_snapshot: Callable[[], None] | None,
) -> BackupReport:
    copy = work / DB_FILE
    live = Database.from_url(f"sqlite:///{database}")
    try:
        for attempt in range(1, ATTEMPTS + 1):
            copy.unlink(missing_ok=True)
            _online_copy(database, copy)
            if after_snapshot is not None:
                after_snapshot()
            snapshot = Database.from_url(f"sqlite:///{copy}")
            try:
                with snapshot.read() as conn:
                    originals = copy_originals(conn, data_dir, work, keep_hashes=True)
            finally:
                snapshot.dispose()
            gone = _deleted_since(live, originals.missing)
            if not gone or attempt == ATTEMPTS:
                break
        if gone:
            raise Conflict(
                f"items kept being deleted while the backup was taken ({ATTEMPTS} attempts): "
                "try again when deletions have stopped"
            )
    finally:
        live.dispose()
    hashes = originals.hashes or {}
    _prune(work / ORIGINALS_DIR, {work / p for p in hashes})
    listing = "".join(f"{sha}  {path}\n" for path, sha in sorted(hashes.items()))
    (work / ORIGINALS_LIST).write_text(listing, encoding="utf-8")
    manifest = _manifest(copy, vector_width)
    # After the copy was last opened (opening it may rewrite its header): its bytes as kept.
    manifest["database"] = {
        "file": DB_FILE,
        "bytes": copy.stat().st_size,
        "sha256": file_sha256(copy),
    }
    manifest["originals"] = {
        "count": len(hashes),
        "bytes": sum((work / p).stat().st_size for p in hashes),
        "list_sha256": file_sha256(work / ORIGINALS_LIST),
        "missing_in_source": originals.missing,
        "missing_in_source_count": originals.missing_count,
    }
    _write_json(work / MANIFEST, manifest)
    _sync()
    return BackupReport(work, attempt, manifest, originals.copied)


def _online_copy(source: Path, destination: Path) -> None:
    """SQLite's online backup of ``source`` into a new file, in one step: one read
    transaction, a consistent copy while other connections keep writing."""
    import pysqlite3.dbapi2 as pysqlite3

    src = pysqlite3.connect(str(source), timeout=10.0)
    try:
        dst = pysqlite3.connect(str(destination))
        try:
            src.backup(dst)  # pages=-1: every page in one step
            # A file that stands alone: no WAL beside it.
            dst.execute("PRAGMA journal_mode=DELETE").fetchall()
        finally:
            dst.close()
    finally:
        src.close()


def _prune(root: Path, keep: set[Path]) -> None:
    """Remove files an earlier attempt copied that the final copy does not reference."""
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file() and path not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _deleted_since(live: Database, item_ids: list[str]) -> bool:
    """Whether any of these items (live in the copy, their original missing) has been
    deleted, or marked deleted, in the live database since the copy was taken."""
    if not item_ids:
        return False
    items = t.items.c
    with live.read() as conn:
        still = conn.execute(
            sa.select(sa.func.count()).where(items.id.in_(item_ids), items.deleted_at.is_(None))
        ).scalar_one()
    return int(still) < len(item_ids)


def _manifest(database: Path, vector_width: int) -> dict[str, Any]:
    db = Database.from_url(f"sqlite:///{database}")
    try:
        revision = migrate.current_revision(db)
        tables: dict[str, Any] = {}
        with db.read() as conn:
            if revision == migrate.head_revision():
                for table in t.metadata.sorted_tables:
                    d = digest(conn, table)
                    tables[table.name] = {"rows": d.rows, "sha256": d.sha256}
            workspaces = [str(w) for w in conn.execute(sa.select(t.workspaces.c.id)).scalars()]
        store = SqliteVecStore(db, vector_width, resident_bytes=0)
        vectors = {w: store.count(w) for w in sorted(workspaces)}
    finally:
        db.dispose()
    return {
        "format": FORMAT,
        "relata_version": relata.__version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "schema_revision": revision,
        "tables": tables,
        "vectors": {"width": vector_width, "per_workspace": vectors},
    }


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _sync() -> None:
    """Make the backup's files durable before it is renamed into place (one filesystem
    sync, as a bulk import does)."""
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()


# ---------------------------------------------------------------- restore
def read_manifest(source: Path) -> dict[str, Any]:
    path = source / MANIFEST
    if not path.is_file():
        raise ValidationError(f"{source} is not a Relata backup: it has no {MANIFEST}")
    if path.stat().st_size > _MAX_MANIFEST_BYTES:
        raise ValidationError(f"{path} is too large to be a backup manifest")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValidationError(f"{path} is not a backup of this format ({FORMAT})")
    return manifest


def holds_deployment(data_dir: Path) -> list[str]:
    """What in ``data_dir`` belongs to a deployment (empty: a restore may write there)."""
    return [name for name in DEPLOYMENT_FILES if (data_dir / name).exists()]


def restore(source: Path, data_dir: Path, *, force: bool = False) -> RestoreReport:
    """Restore the backup at ``source`` into ``data_dir`` (see the module docstring)."""
    source, data_dir = source.expanduser().resolve(), data_dir.expanduser().resolve()
    manifest = read_manifest(source)
    present = holds_deployment(data_dir)
    if (data_dir / _MARKER).is_file() and DB_FILE not in present:
        present = []  # an interrupted restore: no database yet, start again over it
    if present and not force:
        raise Conflict(
            f"the data dir {data_dir} already holds a deployment ({', '.join(present)}): "
            "restore into an empty data dir, or pass --force to replace it"
        )
    listed = _verify(source, manifest)
    if present:
        for name in (*DEPLOYMENT_FILES, f"{DB_FILE}-shm"):
            target = data_dir / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / _MARKER).write_text(str(source), encoding="utf-8")
    for sha, rel in listed:
        got = copy_file(source / rel, data_dir / rel)
        if got != sha:
            raise ValidationError(f"{rel} changed while it was restored")
    restoring = data_dir / f".{DB_FILE}.restoring"
    copy_file(source / DB_FILE, restoring)
    checked = _check_tables(restoring, manifest)
    restoring.rename(data_dir / DB_FILE)
    (data_dir / _MARKER).unlink()
    return RestoreReport(data_dir, manifest, len(listed), checked)


def _verify(source: Path, manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """Check the backup's files against its manifest; the originals' (sha, path) list."""
    database = manifest.get("database") or {}
    if file_sha256(source / DB_FILE) != database.get("sha256"):
        raise ValidationError(f"{source / DB_FILE} does not match the manifest (damaged?)")
    listing = source / ORIGINALS_LIST
    if file_sha256(listing) != (manifest.get("originals") or {}).get("list_sha256"):
        raise ValidationError(f"{listing} does not match the manifest (damaged?)")
    listed: list[tuple[str, str]] = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        sha, _, rel = line.partition("  ")
        path = (source / rel).resolve()
        if not rel.startswith(f"{ORIGINALS_DIR}/") or not path.is_relative_to(source):
            raise ValidationError(f"{listing} names a file outside the backup: {rel!r}")
        if not path.is_file() or file_sha256(path) != sha:
            raise ValidationError(f"the original {rel} is missing from the backup or damaged")
        listed.append((sha, rel))
    return listed


def _check_tables(database: Path, manifest: dict[str, Any]) -> bool:
    """Each table's count and checksum against the manifest, when the backup's schema is
    this version's (an older backup is checked by its file's SHA-256 alone, and migrated by
    `relata migrate` after the restore). Returns whether the tables were checked."""
    db = Database.from_url(f"sqlite:///{database}")
    try:
        if manifest.get("schema_revision") != migrate.head_revision():
            return False
        wrong: list[str] = []
        with db.read() as conn:
            for table in t.metadata.sorted_tables:
                d = digest(conn, table)
                want = (manifest.get("tables") or {}).get(table.name) or {}
                if (d.rows, d.sha256) != (want.get("rows"), want.get("sha256")):
                    wrong.append(table.name)
        if wrong:
            raise ValidationError(
                "the restored database differs from the manifest in "
                + ", ".join(wrong[:MAX_LISTED])
            )
        return True
    finally:
        db.dispose()
