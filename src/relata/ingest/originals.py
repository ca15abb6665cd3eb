"""Stored originals: the uploaded bytes, kept under the data dir by the item's UUID.

A stored path never derives from user input (docs/ARCHITECTURE.md, "Security architecture"):
it is ``originals/<workspace_id>/<item_id>.<ext>`` relative to the data dir, both ids UUIDs
that Relata generated, the extension from a fixed allow-list by *detected* type. The user's
filename is display text in the database and nothing else. Every path read back from the
database is checked against that exact shape again before it is opened, and must resolve
inside the originals directory.

Writes are atomic: the bytes go to a temporary file in the same directory (created
exclusively, mode 0600), are flushed and (``sync=True``) fsynced, then renamed into place; a
reader sees the whole file or none, and a failed write leaves nothing behind. A bulk import
writes a batch without per-file fsyncs and then calls ``sync_all`` once: on Linux one
filesystem sync costs about what two or three fsyncs do, where 64 fsyncs cost 20 times more
(docs/decisions/0010-ingestion-pipeline.md).

``scan`` lists what is on disk (for the recovery after a crash, ``relata.ingest.recovery``):
complete originals, the temporary files of writes (still under way, or left by a process
that died mid-write), and anything else, which is reported and never removed.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from relata.domain.errors import NotFound, TooLarge
from relata.domain.models import SourceType

#: The only extensions a stored original can have, by detected type.
EXTENSIONS: dict[SourceType, str] = {
    SourceType.TEXT: "txt",
    SourceType.MARKDOWN: "md",
    SourceType.JSON: "json",
    SourceType.PDF: "pdf",
    SourceType.DOCX: "docx",
    SourceType.HTML: "html",
    SourceType.CSV: "csv",
    SourceType.TSV: "tsv",
    SourceType.XLSX: "xlsx",
    SourceType.PPTX: "pptx",
    SourceType.EMAIL: "eml",
}

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_RE = re.compile(rf"^{_UUID}$")
_STORED = re.compile(
    rf"^originals/({_UUID})/({_UUID})\.({'|'.join(sorted(set(EXTENSIONS.values())))})$"
)
_PARTIAL = re.compile(rf"^\.({_UUID})\.[0-9a-f]{{12}}\.tmp$")
_DIR = "originals"


class FileKind(enum.StrEnum):
    ORIGINAL = "original"  # a complete original: ``<item_id>.<ext>``, renamed into place
    PARTIAL = "partial"  # the temporary file of a write: ``.<item_id>.<hex>.tmp``
    UNKNOWN = "unknown"  # not a name Relata writes: reported, never removed


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file under ``originals/``: ``rel`` is its path relative to the data dir."""

    rel: str
    kind: FileKind
    size: int
    modified: float  # st_mtime: seconds since the epoch
    workspace_id: str | None = None


def _check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not _UUID_RE.match(value):
        raise ValueError(f"{what} must be a lowercase UUID")
    return value


class OriginalStore:
    def __init__(self, data_dir: Path) -> None:
        self._data_dir = Path(data_dir)
        self.root = self._data_dir / _DIR

    @staticmethod
    def relative_path(workspace_id: str, item_id: str, source_type: SourceType) -> str:
        """The stored path of an item's original, relative to the data dir."""
        ws = _check_id(workspace_id, "workspace id")
        item = _check_id(item_id, "item id")
        return f"{_DIR}/{ws}/{item}.{EXTENSIONS[SourceType(source_type)]}"

    def save(
        self,
        workspace_id: str,
        item_id: str,
        source_type: SourceType,
        data: bytes,
        *,
        sync: bool = True,
    ) -> str:
        """Write ``data`` atomically; return the relative path to store on the item. With
        ``sync=False`` the caller must call ``sync_all`` before relying on the file."""
        rel = self.relative_path(workspace_id, item_id, source_type)
        final = self._data_dir / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{item_id}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        if sync:
            self._fsync_dir(final.parent)
        return rel

    def sync_all(self) -> None:
        """Make every file written with ``sync=False`` (and its rename) durable."""
        sync = getattr(os, "sync", None)
        if sync is not None:
            sync()

    def path(self, rel: str) -> Path:
        """The absolute path of a stored original, after checking the stored value's shape."""
        if not isinstance(rel, str) or not _STORED.match(rel):
            raise NotFound("the item's stored original is missing")
        full = (self._data_dir / rel).resolve()
        root = self.root.resolve()
        if not full.is_relative_to(root):
            raise NotFound("the item's stored original is missing")
        return full

    def exists(self, rel: str | None) -> bool:
        """Whether the stored original at ``rel`` is there (False for a bad stored value)."""
        try:
            return self.path(rel or "").is_file()
        except NotFound:
            return False

    def read(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        path = self.path(rel)
        try:
            with path.open("rb") as f:
                data = f.read() if max_bytes is None else f.read(max_bytes + 1)
        except FileNotFoundError:
            raise NotFound("the item's stored original is missing") from None
        if max_bytes is not None and len(data) > max_bytes:
            raise TooLarge(
                f"the stored original is over the limit of {max_bytes} bytes", field="content"
            )
        return data

    def scan(self) -> Iterator[StoredFile]:
        """Every file under ``originals/`` (one level of workspace directories), lazily.
        Symbolic links and anything not a regular file are ``UNKNOWN``."""
        try:
            workspaces = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for ws in sorted(workspaces, key=lambda e: e.name):
            if not (_UUID_RE.match(ws.name) and ws.is_dir(follow_symlinks=False)):
                yield from _stored(ws, f"{_DIR}/{ws.name}", FileKind.UNKNOWN, None)
                continue
            try:
                entries = os.scandir(ws.path)
            except FileNotFoundError:
                continue
            with entries:
                for entry in entries:
                    rel = f"{_DIR}/{ws.name}/{entry.name}"
                    if not entry.is_file(follow_symlinks=False):
                        kind = FileKind.UNKNOWN
                    elif _STORED.match(rel):
                        kind = FileKind.ORIGINAL
                    elif _PARTIAL.match(entry.name):
                        kind = FileKind.PARTIAL
                    else:
                        kind = FileKind.UNKNOWN
                    yield from _stored(entry, rel, kind, ws.name)

    def remove_stray(self, found: StoredFile) -> bool:
        """Remove an original or a temporary file ``scan`` found (never an ``UNKNOWN``);
        False when it was gone already. Whether nothing refers to it is the caller's check."""
        if found.kind is FileKind.ORIGINAL:
            return self.delete(found.rel)
        if found.kind is not FileKind.PARTIAL or found.workspace_id is None:
            raise ValueError(f"{found.rel} is not a file Relata writes")
        name = found.rel.rsplit("/", 1)[-1]
        if not _PARTIAL.match(name):
            raise ValueError(f"{found.rel} is not a temporary file of a write")
        path = self.root / _check_id(found.workspace_id, "workspace id") / name
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def delete(self, rel: str | None) -> bool:
        """Remove a stored original; False when there was nothing to remove."""
        if not rel:
            return False
        try:
            path = self.path(rel)
        except NotFound:
            return False
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    @staticmethod
    def _fsync_dir(directory: Path) -> None:
        # Makes the rename itself durable; not supported everywhere (a no-op there).
        try:
            fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def _stored(
    entry: os.DirEntry[str], rel: str, kind: FileKind, ws: str | None
) -> Iterator[StoredFile]:
    try:
        st = entry.stat(follow_symlinks=False)
    except FileNotFoundError:  # removed meanwhile (a write renamed it): nothing to report
        return
    yield StoredFile(rel, kind, st.st_size, st.st_mtime, ws)
