"""entity evidence: each observation keeps the type and name it was found with; item counts

- ``entity_observations.observed_type`` / ``observed_name``: what the mention's own evidence
  said; an entity's type is the majority of its mentions' types and its display name the form
  they use most (docs/decisions/0050-entity-types-and-names.md). Existing rows take their
  entity's type and name.
- ``entities.item_count``: how many live items name the entity, kept beside
  ``observation_count``; filled here from the observations.

Entities that share a normalised key under several types are not merged here: the entity
stage merges them into the majority type the next time an item naming them is processed
(``relata reprocess --all`` does it for a whole workspace).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entity_observations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("observed_type", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("observed_name", sa.String(length=300), nullable=True))
    with op.batch_alter_table("entities", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("item_count", sa.Integer(), server_default="0", nullable=False)
        )
    op.execute(
        "UPDATE entity_observations SET "
        "observed_type = (SELECT e.entity_type FROM entities e "
        "WHERE e.id = entity_observations.entity_id), "
        "observed_name = (SELECT e.name FROM entities e "
        "WHERE e.id = entity_observations.entity_id)"
    )
    op.execute(
        "UPDATE entities SET item_count = (SELECT count(DISTINCT o.item_id) "
        "FROM entity_observations o JOIN items i ON i.id = o.item_id "
        "WHERE o.entity_id = entities.id AND i.deleted_at IS NULL)"
    )


def downgrade() -> None:
    with op.batch_alter_table("entities", schema=None) as batch_op:
        batch_op.drop_column("item_count")
    with op.batch_alter_table("entity_observations", schema=None) as batch_op:
        batch_op.drop_column("observed_name")
        batch_op.drop_column("observed_type")
