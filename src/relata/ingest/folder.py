"""What a watched folder holds: its files (ignore patterns applied, symbolic links never
followed out of it), each file's size and mtime, and its bytes read within the upload limit
(docs/decisions/0047-watched-folder.md).

Paths are relative to the folder with ``/`` separators, the form the watch state keeps.
A symbolic link to a file inside the folder is read through; one that leads outside it, or
to something that is not a regular file, is reported with the reason and never opened.
Folders reached through a link are not entered (``os.walk(followlinks=False)``).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Names ignored by default: hidden files and folders, and the temporary, backup and lock
#: files editors and office suites write beside a document while it is edited.
DEFAULT_IGNORE: tuple[str, ...] = (
    ".*",
    "*~",
    "#*#",
    "*.swp",
    "*.swo",
    "*.swx",
    "~$*",
    "*.tmp",
    "*.part",
    "*.crdownload",
)
#: The most files one watch tracks: the scan stops there and says so.
MAX_FILES = 100_000
#: The most characters of an ignore pattern, and of patterns.
MAX_PATTERN_CHARS = 200
MAX_PATTERNS = 100


class IgnoreRules:
    """Glob patterns (``fnmatch``) matched against a name and against the relative path, so
    ``*.log`` ignores every log file and ``drafts/*`` a folder's contents."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        extra = [p.strip() for p in patterns if p.strip()]
        if len(extra) > MAX_PATTERNS:
            raise ValueError(f"at most {MAX_PATTERNS} ignore patterns")
        for p in extra:
            if len(p) > MAX_PATTERN_CHARS:
                raise ValueError(f"ignore pattern longer than {MAX_PATTERN_CHARS} characters")
        self.patterns: tuple[str, ...] = (*DEFAULT_IGNORE, *extra)

    def ignored(self, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        for p in self.patterns:
            if fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p):
                return True
            # A pattern that names a folder ignores what is inside it.
            if "/" in rel and any(fnmatch.fnmatchcase(part, p) for part in rel.split("/")[:-1]):
                return True
        return False


@dataclass(frozen=True, slots=True)
class Seen:
    """One entry of the folder: a readable file (``refusal`` None) or why it is not read."""

    rel: str
    size_bytes: int
    mtime_ns: int
    refusal: str | None = None


class Folder:
    def __init__(self, root: Path, ignore: IgnoreRules, *, max_bytes: int) -> None:
        self.root = root.resolve()
        self.ignore = ignore
        self.max_bytes = max_bytes

    def rel(self, path: str | Path) -> str | None:
        """``path`` relative to the folder (None when outside it)."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        try:
            rel = Path(os.path.normpath(p)).relative_to(self.root)
        except ValueError:
            return None
        text = rel.as_posix()
        return None if text in {"", "."} else text

    def scan(self, scope: str | None = None) -> Iterator[Seen]:
        """Every file under ``scope`` (a relative file or folder; None: the whole folder),
        in a stable order, at most ``MAX_FILES``; ignored names are left out."""
        if not self.root.is_dir():
            raise FolderGone(f"the watched folder {self.root} is missing")
        start = self.root / scope if scope else self.root
        count = 0
        if scope is not None:
            if self.ignore.ignored(scope) or not self._plain_parents(scope):
                return  # as a full scan: what lies behind a linked folder is not there
            try:
                st = os.lstat(start)
            except OSError:
                return
            if stat.S_ISLNK(st.st_mode) and start.is_dir():
                return  # a linked folder is not entered (nor listed, as by os.walk)
            if not stat.S_ISDIR(st.st_mode):
                yield self.look(scope, st)
                return
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            base = Path(dirpath)
            dirnames[:] = sorted(
                d for d in dirnames if not self.ignore.ignored(self._rel_of(base / d))
            )
            for name in sorted(filenames):
                rel = self._rel_of(base / name)
                if self.ignore.ignored(rel):
                    continue
                count += 1
                if count > MAX_FILES:
                    raise FolderTooBig(
                        f"the folder has more than {MAX_FILES} files; a watch tracks at most that"
                    )
                try:
                    st = os.lstat(base / name)
                except OSError:
                    continue  # gone since it was listed: the next event or scan sees it
                yield self.look(rel, st)

    def _plain_parents(self, rel: str) -> bool:
        """Whether every folder on the way to ``rel`` is a real folder of this one, not a
        symbolic link (which ``lstat`` and ``O_NOFOLLOW`` would pass through)."""
        parent = (self.root / rel).parent
        return os.path.realpath(parent) == str(parent)

    def _rel_of(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def look(self, rel: str, st: os.stat_result) -> Seen:
        """What the folder has at ``rel`` (its ``lstat`` is ``st``)."""
        mtime = int(st.st_mtime_ns)
        if stat.S_ISLNK(st.st_mode):
            target = self._link_target(rel)
            if target is None:
                return Seen(
                    rel, 0, mtime, "a symbolic link that leads outside the folder (not followed)"
                )
            try:
                st = os.stat(target)
            except OSError:
                return Seen(rel, 0, mtime, "a symbolic link to nothing")
            mtime = max(mtime, int(st.st_mtime_ns))
        if not stat.S_ISREG(st.st_mode):
            return Seen(rel, 0, mtime, "not a regular file")
        if st.st_size > self.max_bytes:
            return Seen(
                rel,
                int(st.st_size),
                mtime,
                f"the file is {st.st_size} bytes; the limit is {self.max_bytes} bytes "
                "(RELATA_MAX_UPLOAD_BYTES)",
            )
        return Seen(rel, int(st.st_size), mtime)

    def _link_target(self, rel: str) -> Path | None:
        target = (self.root / rel).resolve()
        return target if target.is_relative_to(self.root) and target != self.root else None

    def read(self, rel: str) -> bytes:
        """The file's bytes, at most ``max_bytes`` (``TooBig`` past that); a link is read
        only when it leads to a regular file inside the folder. ``OSError`` when it cannot
        be read (gone, say)."""
        path = self.root / rel
        if not self._plain_parents(rel):
            raise OSError("inside a symbolic link to a folder")
        if path.is_symlink():
            target = self._link_target(rel)
            if target is None:
                raise OSError("a symbolic link that leads outside the folder")
            path = target
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError("not a regular file")
            data = f.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise TooBig(
                f"the file is over the limit of {self.max_bytes} bytes (RELATA_MAX_UPLOAD_BYTES)"
            )
        return data


class FolderGone(OSError):
    """The watched folder itself is missing (unmounted, moved, deleted): nothing is compared,
    so its items are not taken for deleted files."""


class FolderEmptied(FolderGone):
    """A full pass found the watched folder empty while its state tracks files with items:
    more likely an unmounted drive than every file deleted, so nothing is deleted until a
    person says the folder is meant to be empty (``relata watch DIR --allow-empty``)."""


class FolderTooBig(Exception):
    """The folder holds more files than a watch tracks."""


class TooBig(Exception):
    """A file grew past the limit between its ``stat`` and its read."""
