"""Running ``relata`` commands in the test's process against a test's container."""

from __future__ import annotations

import os

import pytest

from relata.bootstrap import Container


def point_cli_at(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    """Make ``relata.cli.main.main`` use ``c``'s data dir, database and vector store, and
    nothing else from the environment (no embedding provider)."""
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_VECTOR_STORE", c.settings.vector_store)
    return c
