"""The demo corpus processed once per session, copied into each test that reads or changes it.

Ingesting and processing the five demo documents through the whole pipeline (parse, chunk,
spaCy entities, claims, relationships) costs ~0.5 s; copying the result (one SQLite file and
the data dir's originals, under 1 MB) costs a few milliseconds. The session fixture
``demo_snapshot`` (tests/conftest.py) runs ``seed_demo`` once on ``DEMO_CHANGES`` (no
embedder, no model); ``restore(settings)`` copies it to ``settings``' SQLite database and data
dir, which must be the test's own and not yet opened, and refuses settings the snapshot was not
processed with (the corpus would not be what those settings produce).
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from relata.config.settings import Settings
from tests.support.databases import SQLITE_FILE
from tests.support.ingest import built

#: The settings the demo corpus is processed with, on top of the defaults.
DEMO_CHANGES: dict[str, object] = {"embedding_provider": "none", "vector_store": "sqlite-vec"}
_WHERE = ("data_dir", "database_url")


def _what(settings: Settings) -> dict[str, object]:
    """Every setting but where the data lives."""
    return {k: v for k, v in dataclasses.asdict(settings).items() if k not in _WHERE}


def _sqlite_path(settings: Settings) -> Path:
    url = sa.make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise ValueError("the demo snapshot is an SQLite database")
    return Path(url.database)


@dataclass(frozen=True)
class DemoSnapshot:
    """A processed demo corpus: ``folder`` holds the database and ``data/``; ``ids`` are the
    item ids by file name."""

    folder: Path
    settings: Settings
    ids: dict[str, str] = field(default_factory=dict)

    def restore(self, settings: Settings) -> Settings:
        """Copy the corpus into ``settings``' database file and data dir; ``settings`` plus
        ``DEMO_CHANGES``, to build the container with."""
        wanted = settings.replace(**DEMO_CHANGES)
        if _what(wanted) != _what(self.settings):
            raise AssertionError("the demo snapshot was processed with other settings")
        target = _sqlite_path(wanted)
        for stale in target.parent.glob(target.name + "-*"):  # -wal, -shm of a copied template
            stale.unlink()
        shutil.copyfile(self.folder / SQLITE_FILE, target)
        shutil.copytree(self.folder / "data", wanted.data_path, dirs_exist_ok=True)
        return wanted


def process_demo(folder: Path) -> DemoSnapshot:
    """Ingest and process the demo corpus into ``folder`` (``seed_demo``), then close it so
    that the database is one file."""
    from tests.support.web import seed_demo

    settings = Settings(
        data_dir=str(folder / "data"), database_url=f"sqlite:///{folder / SQLITE_FILE}"
    ).replace(**DEMO_CHANGES)
    with built(settings) as c:
        ids = seed_demo(c)
    leftovers = [p.name for p in folder.iterdir() if p.name not in (SQLITE_FILE, "data")]
    assert not leftovers, f"the demo snapshot is not one database file: {leftovers}"
    return DemoSnapshot(folder, settings, ids)
