"""Shared CLI plumbing: settings, where the data lives, opening the container for reading or
writing, the options several commands share, and turning errors into one-line messages.

Nothing heavy is imported at module level, here or in any command module: ``relata --help``
builds every command's parser, so database drivers, vector clients and model runtimes are
imported by the handlers that use them (``tests/e2e/test_cli_startup.py`` keeps it so).

Which database a command uses is decided once, by ``where`` (docs/decisions/0014): the data
dir as an absolute path and the database URL derived from it. Commands that write create and
migrate the database and say so when it is new; commands that read never create one, and on
a missing or unmigrated database say in one line what they looked for and what to run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from relata.config.settings import Settings, load_settings
from relata.domain.errors import ConfigError, RelataError

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Workspace

#: What ``open_container`` does about the schema: ``migrate`` (create and upgrade it),
#: ``require`` (refuse, in one line, a missing or out-of-date database), ``any`` (no check).
Schema = Literal["migrate", "require", "any"]

_DATA_DIR_ENV = "RELATA_DATA_DIR"


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


Handler = Callable[[argparse.Namespace], int]


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        raise CliError(f"configuration error: {exc.message}", exit_code=2) from exc


# ---------------------------------------------------------------- where the data lives
@dataclass(frozen=True, slots=True)
class Where:
    """The data dir and database a command uses, as shown to the user."""

    data_dir: Path
    data_dir_source: str  # how the data dir was chosen, for messages
    database: str  # the database URL with any password redacted
    sqlite_file: Path | None  # the SQLite file, when the database is one

    def describe(self) -> str:
        return f"data dir {self.data_dir} ({self.data_dir_source}); database {self.database}"


def where(settings: Settings, environ: Mapping[str, str] | None = None) -> Where:
    env = os.environ if environ is None else environ
    if _DATA_DIR_ENV in env:
        source = f"from {_DATA_DIR_ENV}"
    else:
        source = f"the default {settings.data_dir}, relative to the current directory"
    url = settings.resolved_database_url
    return Where(
        data_dir=settings.data_path,
        data_dir_source=source,
        database=redact_url(url),
        sqlite_file=_sqlite_file(url),
    )


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def _sqlite_file(url: str) -> Path | None:
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


def _missing_database(w: Where) -> str:
    return (
        f"no database at {w.sqlite_file} ({w.data_dir_source}): run `relata seed` or "
        f"`relata ingest PATH` to create one, or set {_DATA_DIR_ENV} to an existing data dir"
    )


# ---------------------------------------------------------------- the container
@contextmanager
def open_container(*, log: bool = True, schema: Schema = "require") -> Iterator[Container]:
    """The built container on the settings in effect, closed afterwards.

    ``schema="require"`` (reading commands) never creates a database: a missing SQLite file
    or an out-of-date schema is a one-line ``CliError`` naming what to run. ``"migrate"``
    (writing commands) applies pending migrations and says on standard error when it set up
    a new database, so one opened in an unexpected folder does not go unnoticed.
    """
    from relata.bootstrap import build
    from relata.observability.logging import configure_logging

    settings = settings_or_exit()
    w = where(settings)
    if schema == "require" and w.sqlite_file is not None and not w.sqlite_file.is_file():
        raise CliError(_missing_database(w))
    if log:
        configure_logging(settings.log_level, settings.log_format)
    container = build(settings)
    try:
        if schema != "any":
            _check_schema(container, w, schema)
        yield container
    finally:
        container.close()


def _check_schema(c: Container, w: Where, schema: Schema) -> None:
    from relata.storage.sql import migrate

    current = migrate.current_revision(c.db)
    if schema == "migrate":
        migrate.upgrade(c.db)
        if current is None:
            print(f"relata: set up a new database: {w.describe()}", file=sys.stderr)
        return
    head = migrate.head_revision()
    if current is None:
        raise CliError(f"the database {w.database} has no schema yet: run `relata migrate`")
    if current != head:
        raise CliError(
            f"the database {w.database} is at schema {current}, this version needs {head}: "
            "run `relata migrate`"
        )


def existing_workspace(c: Container, slug: str | None) -> Workspace | None:
    """The named workspace (``NotFound`` when missing), or the default one, ``None`` when it
    was not created yet: listing commands then list nothing instead of failing."""
    from relata.domain.errors import NotFound

    if slug and slug != c.settings.default_workspace:
        return c.workspaces.resolve(slug)
    try:
        return c.workspaces.resolve()
    except NotFound:
        return None


# ---------------------------------------------------------------- shared options and words
def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    """The one ``--workspace`` option every workspace-scoped command takes."""
    parser.add_argument(
        "--workspace",
        metavar="SLUG",
        help="the workspace to use (default: RELATA_DEFAULT_WORKSPACE, normally 'default')",
    )


def server_url(settings: Settings) -> str:
    """Where ``relata serve`` listens (``RELATA_HTTP_ADDR``), as a URL for messages; behind a
    proxy, people use the proxy's address instead."""
    host, port = settings.http_addr
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``1 block``, ``2 blocks``; ``plural_form`` for irregular words."""
    word = singular if n == 1 else (plural_form or singular + "s")
    return f"{n} {word}"


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word boundary (with
    ``…`` when cut); a single word longer than the limit is cut inside it."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit)
    return (line[:cut] if cut > 0 else line[: limit - 1]) + " …"


# ---------------------------------------------------------------- running a handler
def run_command(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except RelataError as exc:
        raise CliError(exc.message, exit_code=2 if isinstance(exc, ConfigError) else 1) from exc
    except Exception as exc:
        message = _database_error(exc)
        if message is None:
            raise
        raise CliError(message) from exc


def _database_error(exc: Exception) -> str | None:
    """One line for a database driver error that reached the CLI (unreachable server, a
    locked or corrupt file), else ``None``. SQLAlchemy is only consulted when loaded."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None or not isinstance(exc, sa_exc.DBAPIError):
        return None
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
    return f"database error: {reason}"
