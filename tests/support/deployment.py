"""A seeded deployment for the transfer and backup tests: the demo corpus ingested and
processed (items, originals, chunks, vectors, entities, claims, a contradiction,
relationships, runs, jobs), then people's work on it: an administrator and a member, API
tokens (one revoked), a signed-in session, invitations, a resolved contradiction, reviewed
relationships, decided aliases, a deleted item (each leaves its audit event) and a watched
folder.

Vectors come from ``FakeEmbedder`` (384 wide, like the default model), so no model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from relata.bootstrap import OIDC_FLOW_KEY, Container
from relata.config.settings import Settings
from relata.domain.errors import Unauthenticated
from relata.domain.models import CLI_ACTOR, AliasStatus, ReviewStatus
from relata.domain.vocabulary import Resolution, Role
from relata.ingest.service import IngestRequest
from relata.seed import demo_documents
from relata.storage.sql import tables as t
from relata.storage.sql.deployment_keys import shared_key
from relata.storage.sql.engine import Database
from tests.fuzz.officegen import make_eml
from tests.support.api import PASSWORD, make_user
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain

WIDTH = 384
ROTA_V1 = b"Lighthouse rota. Keepers walk the lamp gallery on Tuesday and Thursday.\n"
ROTA_V2 = b"Lighthouse rota. Keepers walk the lamp gallery on Monday and Friday.\n"


@dataclass(frozen=True, slots=True)
class Seeded:
    workspace_id: str
    token: str  # a live API token's secret (owner)
    revoked_token: str
    session: str  # a signed-in session's cookie value
    admin: str  # usernames
    member: str


def embedder() -> FakeEmbedder:
    return FakeEmbedder(WIDTH)


def ingest_demo(c: Container, workspace_id: str) -> list[str]:
    items = [
        c.ingest.ingest(
            workspace_id,
            IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at),
            actor=CLI_ACTOR,
        )
        for doc in demo_documents()
    ]
    return [i.id for i in items]


NOTICE_EML = make_eml(
    subject="Berth notice",
    text="Berth four is closed for dredging.\n",
    attachments=[("berths.csv", "text/csv", b"berth,state\nfour,closed\nfive,open\n")],
)


def seed_deployment(settings: Settings) -> Seeded:
    """Seed the deployment at ``settings`` (created and migrated here)."""
    with built(settings, embedder=embedder()) as c:
        ws = c.workspaces.resolve()
        item_ids = ingest_demo(c, ws.id)
        # An item with a second version: its previous original is kept (item_versions).
        rota = c.ingest.ingest(
            ws.id, IngestRequest(data=ROTA_V1, filename="rota.txt"), actor=CLI_ACTOR
        )
        drain(c)
        with c.versions.admit():
            c.versions.upload(ws.id, rota.id, ROTA_V2, filename="rota.txt", actor=CLI_ACTOR)
        drain(c)
        # A message with an attachment that became an item (item_attachments).
        c.ingest.ingest(ws.id, IngestRequest(data=NOTICE_EML, filename="notice.eml"))
        drain(c)
        admin = c.accounts.create_user(
            "ada", PASSWORD, workspace=ws, role=Role.OWNER, is_admin=True
        )
        member = make_user(c, workspace=ws, role=Role.EDITOR, username="grace")
        token, _ = c.tokens.create(
            user_id=admin.id,
            workspace_id=ws.id,
            name="scripts",
            role=Role.OWNER,
            creator_role=Role.OWNER,
            actor=CLI_ACTOR,
        )
        revoked, revoked_token = c.tokens.create(
            user_id=member.id,
            workspace_id=ws.id,
            name="old",
            role=Role.VIEWER,
            creator_role=Role.EDITOR,
            actor=CLI_ACTOR,
        )
        c.tokens.revoke(ws.id, revoked_token.id, actor=CLI_ACTOR)
        session = c.accounts.sign_in("ada", PASSWORD, client="127.0.0.1").token
        with pytest.raises(Unauthenticated):  # a row in signin_failures
            c.accounts.sign_in("grace", "not her password", client="127.0.0.2")
        shared_key(c.db, OIDC_FLOW_KEY)  # a row in deployment_keys
        c.invitations.create(ws.id, Role.VIEWER, created_by=admin.id, actor=CLI_ACTOR)
        [contradiction] = c.claims.contradictions(ws.id)
        c.claims.resolve(
            ws.id,
            contradiction.id,
            Resolution.SECOND_CORRECT,
            by="ada",
            note="the council minutes are the record",
            actor=CLI_ACTOR,
        )
        first, second = c.relationships.queue(ws.id, limit=2)
        c.relationships.review(ws.id, first.id, ReviewStatus.CONFIRMED, by="ada", actor=CLI_ACTOR)
        c.relationships.review(
            ws.id, second.id, ReviewStatus.REJECTED, by="grace", note="no", actor=CLI_ACTOR
        )
        aliases = c.entities.aliases(ws.id, limit=2)
        c.entities.decide(ws.id, aliases[0].alias.id, AliasStatus.CONFIRMED, by="ada")
        c.entities.decide(ws.id, aliases[1].alias.id, AliasStatus.REJECTED, by="grace")
        c.items.delete(ws.id, item_ids[-1], actor=CLI_ACTOR)  # its audit event stays
        # A watched folder (watches, watched_files): a file ingested, one refused.
        folder = Path(settings.data_dir).parent / "watched"
        folder.mkdir(exist_ok=True)
        (folder / "tide-table.txt").write_text("Tide table: high water at 06:12 on Monday.")
        (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
        c.watches.watcher(ws.id, folder, actor=CLI_ACTOR).catch_up()
        drain(c)
        return Seeded(ws.id, token, revoked, session, admin.username, member.username)


def rows_of(conn: sa.Connection, table: sa.Table) -> list[dict[str, Any]]:
    """Every row of ``table`` as the SQLAlchemy types read it, sorted by primary key in
    Python (independent of either database's collation)."""
    keys = [c.name for c in table.primary_key.columns]
    rows = [dict(r._mapping) for r in conn.execute(sa.select(table))]
    return sorted(rows, key=lambda r: tuple(r[k] for k in keys))


def sql_nulls(conn: sa.Connection, table: sa.Table) -> dict[str, int]:
    """How many rows hold SQL NULL in each JSON column (JSON ``null`` is not SQL NULL)."""
    return {
        col.name: int(
            conn.execute(
                sa.select(sa.func.count()).select_from(table).where(col.is_(None))
            ).scalar_one()
        )
        for col in table.columns
        if isinstance(col.type, sa.JSON)
    }


def assert_same_rows(first_url: str, second_url: str) -> None:
    """Every table of the schema holds the same rows in both databases (SQL NULLs in JSON
    columns included)."""
    first, second = Database.from_url(first_url), Database.from_url(second_url)
    try:
        with first.read() as a, second.read() as b:
            for table in t.metadata.sorted_tables:
                assert rows_of(a, table) == rows_of(b, table), table.name
                assert sql_nulls(a, table) == sql_nulls(b, table), table.name
    finally:
        first.dispose()
        second.dispose()
