"""disagreements: one record per disagreement, the pair-level contradictions underneath

A disagreement is a subject, what is disputed (an event's date, a quantity's unit; a
polarity, direction or judged conflict stays one per pair) and two or more positions, each a
value with every source holding it. ``contradictions.disagreement_key`` ties each pair to its
disagreement. The existing ledger is grouped here with the same rules the claims stage uses
(``relata.domain.disagreements``); a group whose pairs a person all resolved the same way
(both_valid or not_a_contradiction) keeps that resolution, any other starts open (a pair
resolved as first_correct or second_correct names no position of the group). Sources are not
dated here (the stage dates them when it next records one of the pairs), so no supersession
is inferred by the migration. docs/decisions/0038-disagreements-and-supersession.md says why.

Revision ID: 0013
Revises: 0010
Create Date: 2027-02-02 06:00:00
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from relata.domain import disagreements as rules
from relata.ids import new_id

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_BATCH = 1000


def upgrade() -> None:
    op.create_table(
        "disagreements",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=400), nullable=False),
        sa.Column("subject_name", sa.String(length=300), nullable=False),
        sa.Column("topic", sa.String(length=200), nullable=False),
        sa.Column("facet", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("positions", sa.JSON(), nullable=False),
        sa.Column("members", sa.JSON(), nullable=False),
        sa.Column("current", sa.Integer(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("resolution", sa.String(length=32), nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("note", sa.String(length=1000), nullable=True),
        sa.Column("resolved_by", sa.String(length=100), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("history", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_disagreements_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disagreements")),
        sa.UniqueConstraint("workspace_id", "key", name=op.f("uq_disagreements_workspace_id_key")),
    )
    with op.batch_alter_table("disagreements", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_disagreements_workspace_id_status_confidence"),
            ["workspace_id", "status", "confidence"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_disagreements_workspace_id_subject"),
            ["workspace_id", "subject"],
            unique=False,
        )
    with op.batch_alter_table("contradictions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("disagreement_key", sa.String(length=64), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_contradictions_workspace_id_disagreement_key"),
            ["workspace_id", "disagreement_key"],
            unique=False,
        )
    _group_existing(op.get_bind())


def _group_existing(conn: Any) -> None:
    """Key every pair and write one disagreement per group (see the module docstring)."""
    pairs = sa.table(
        "contradictions",
        sa.column("id"),
        sa.column("workspace_id"),
        sa.column("identity"),
        sa.column("subject"),
        sa.column("subject_name"),
        sa.column("first", sa.JSON),
        sa.column("second", sa.JSON),
        sa.column("facet"),
        sa.column("reason"),
        sa.column("confidence"),
        sa.column("status"),
        sa.column("resolution"),
        sa.column("disagreement_key"),
    )
    table = sa.table(
        "disagreements",
        *(
            sa.column(c)
            for c in [
                "id",
                "workspace_id",
                "key",
                "subject",
                "subject_name",
                "topic",
                "facet",
                "kind",
                "status",
                "current",
                "confidence",
                "resolution",
                "resolved_by",
                "created_at",
                "updated_at",
            ]
        ),
        sa.column("positions", sa.JSON),
        sa.column("members", sa.JSON),
        sa.column("history", sa.JSON),
        sa.column("resolved_at", sa.DateTime(timezone=True)),
    )
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    last = ""
    while True:
        rows = list(
            conn.execute(
                sa.select(pairs).where(pairs.c.id > last).order_by(pairs.c.id).limit(_BATCH)
            )
        )
        if not rows:
            break
        last = rows[-1].id
        for r in rows:
            key = rules.disagreement_key(r.subject, rules.topic_of(r.facet, r.reason, r.identity))
            conn.execute(pairs.update().where(pairs.c.id == r.id).values(disagreement_key=key))
            groups[(r.workspace_id, key)].append(r)
    now = datetime.now(UTC)
    for (ws, key), rows in groups.items():
        found = rules.positions(
            rules.Pair(rules.Source.from_record(r.first), rules.Source.from_record(r.second))
            for r in rows
        )
        if len(found) < 2:
            continue
        head = max(rows, key=lambda r: r.confidence)
        decided = {r.resolution for r in rows if r.status == "resolved"}
        keep = (
            len(decided) == 1
            and all(r.status == "resolved" for r in rows)
            and next(iter(decided)) in ("both_valid", "not_a_contradiction")
        )
        members: dict[str, Any] = {}
        for index, p in enumerate(found):
            for s in p.sources:
                entry = members.setdefault(s.item_id, [index, []])
                entry[1] = sorted({*entry[1], s.statement})
        conn.execute(
            table.insert().values(
                id=new_id(),
                workspace_id=ws,
                key=key,
                subject=head.subject,
                subject_name=head.subject_name,
                topic=rules.topic_of(head.facet, head.reason, head.identity)[:200],
                facet=head.facet,
                kind="contradiction",
                status="resolved" if keep else "open",
                positions=[
                    {"value": p.value, "sources": [s.record() for s in p.sources], "dates": {}}
                    for p in found
                ],
                members=members,
                current=None,
                confidence=head.confidence,
                resolution=next(iter(decided)) if keep else None,
                resolved_by="migration" if keep else None,
                resolved_at=now if keep else None,
                history=[{"at": now.isoformat(), "event": "grouped from pair records"}],
                created_at=now,
                updated_at=now,
            )
        )


def downgrade() -> None:
    """Back to 0010's shape: the disagreements go; the pairs stay as they were."""
    with op.batch_alter_table("contradictions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_contradictions_workspace_id_disagreement_key"))
        batch_op.drop_column("disagreement_key")
    op.drop_table("disagreements")
