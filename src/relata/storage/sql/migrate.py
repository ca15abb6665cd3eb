"""Schema migrations (Alembic), applied by ``relata migrate`` and at ``relata serve`` start-up.

The Alembic configuration is built in code, so no alembic.ini has to be found at run time.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from relata.storage.sql.engine import Database

_SCRIPTS = Path(__file__).parent / "migrations"


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_SCRIPTS))
    return cfg


@cache
def head_revision() -> str:
    """The newest revision the package ships (read once: the scripts do not change while the
    process runs, and reading them costs more than a query)."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships a revision
        raise RuntimeError("no migration revisions found")
    return head


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_current(db: Database) -> bool:
    return current_revision(db) == head_revision()


def upgrade(db: Database, revision: str = "head") -> str:
    """Apply every pending migration; return the revision the database is now at."""
    if revision == "head" and current_revision(db) == head_revision():
        return head_revision()  # nothing pending: skip Alembic's set-up
    cfg = _config()
    with db.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()
    rev = current_revision(db)
    return rev or ""


def autogenerate(db: Database, message: str, rev_id: str) -> None:
    """Developer helper: write a new revision from the difference to ``tables.metadata``."""
    cfg = _config()
    with db.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True, rev_id=rev_id)
