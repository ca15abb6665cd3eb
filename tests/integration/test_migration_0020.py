"""Revision 0020 (ADR 50) on a database of revision 0019: each observation takes its entity's
type and name as its own evidence, each entity its count of live items; the downgrade drops
the columns again."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from relata.storage.sql import migrate
from relata.storage.sql.engine import Database

NOW = "2026-12-06 04:00:00"


def test_0020_backfills_observed_types_names_and_item_counts(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        migrate.upgrade(db, "0019")
        with db.write() as conn:
            run = conn.exec_driver_sql
            run(
                "INSERT INTO workspaces (id, slug, name, created_at) VALUES ('w', 'w', 'W', ?)",
                (NOW,),
            )
            for item, deleted in (("i1", None), ("i2", None), ("i3", NOW)):
                run(
                    "INSERT INTO items (id, workspace_id, title, source_type, status, content_hash,"
                    " size_bytes, metadata, ingested_at, deleted_at)"
                    " VALUES (?, 'w', ?, 'text', 'ready', ?, 1, '{}', ?, ?)",
                    (item, item, item, NOW, deleted),
                )
            run(
                "INSERT INTO entities (id, workspace_id, name, entity_type, normalised_key,"
                " created_at) VALUES ('e', 'w', 'Port Halloran', 'location', 'port halloran', ?)",
                (NOW,),
            )
            for n, item in enumerate(("i1", "i1", "i2", "i3")):
                run(
                    "INSERT INTO entity_observations (id, workspace_id, entity_id, item_id,"
                    " start_offset, end_offset, quotation, extractor, extractor_version,"
                    " created_at) VALUES (?, 'w', 'e', ?, 0, 13, 'Port Halloran', 'd', 'v', ?)",
                    (f"o{n}", item, NOW),
                )
        migrate.upgrade(db)
        with db.read() as conn:
            rows = conn.exec_driver_sql(
                "SELECT DISTINCT observed_type, observed_name FROM entity_observations"
            ).all()
            count = conn.exec_driver_sql("SELECT item_count FROM entities").scalar_one()
        assert [tuple(r) for r in rows] == [("location", "Port Halloran")]
        assert count == 2  # the deleted item does not count
        cfg = migrate._config()
        with db.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0019")
            conn.commit()
        columns = {c["name"] for c in sa.inspect(db.engine).get_columns("entity_observations")}
        assert not {"observed_type", "observed_name"} & columns
        assert "item_count" not in {
            c["name"] for c in sa.inspect(db.engine).get_columns("entities")
        }
    finally:
        db.dispose()
