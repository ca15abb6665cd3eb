"""audit_events: append-only by triggers, the actor's kind and token, no workspace foreign key

- Triggers refuse every change to a recorded event, so append-only is the database's rule and
  not a convention any code path (raw SQL included) could skip. SQLite: ``BEFORE UPDATE`` and
  ``BEFORE DELETE`` triggers that ``RAISE(ABORT)``, and a ``BEFORE INSERT`` one refusing an id
  that is already there (``INSERT OR REPLACE`` deletes the old row without firing delete
  triggers unless ``recursive_triggers`` is on). PostgreSQL: one plpgsql function raising
  ``restrict_violation``, fired ``BEFORE UPDATE OR DELETE OR TRUNCATE ... FOR EACH
  STATEMENT`` (so an ``INSERT ... ON CONFLICT DO UPDATE`` is refused too). Both report
  "audit_events is append-only"; both drivers raise it as an integrity error. Whoever owns the
  schema can still drop or disable the triggers: they bind the application, not the DBA.
- ``actor_kind`` (``ActorKind``: local, cli, user, token, system; existing rows: system) and
  ``actor_token_id`` join ``actor_user_id``, so an API token's actions are told apart from
  its owner's.
- ``workspace_id`` loses its foreign key. With ``ON DELETE CASCADE`` deleting a workspace
  would delete its events, which the triggers refuse: the workspace could never be deleted.
  The events keep the id of a workspace that is gone (there is no workspace deletion yet;
  when there is, its own event records who deleted it). Reads stay workspace-scoped.

On SQLite the foreign key rebuilds ``audit_events`` (batch "move and copy"), before the
triggers are created (a rebuild would drop them). The downgrade drops the triggers, deletes
the events of workspaces that no longer exist (the restored foreign key would refuse them)
and restores 0001's shape.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_MESSAGE = "audit_events is append-only"
_FK = "fk_audit_events_workspace_id_workspaces"

_SQLITE_UP = [
    f"""CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events BEGIN
        SELECT RAISE(ABORT, '{_MESSAGE}');
    END""",
    f"""CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events BEGIN
        SELECT RAISE(ABORT, '{_MESSAGE}');
    END""",
    f"""CREATE TRIGGER audit_events_no_replace BEFORE INSERT ON audit_events
    WHEN EXISTS (SELECT 1 FROM audit_events WHERE id = new.id) BEGIN
        SELECT RAISE(ABORT, '{_MESSAGE}');
    END""",  # noqa: S608 - a constant message, no input
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS audit_events_no_replace",
    "DROP TRIGGER IF EXISTS audit_events_no_delete",
    "DROP TRIGGER IF EXISTS audit_events_no_update",
]

_PG_UP = [
    f"""CREATE FUNCTION audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{_MESSAGE}' USING ERRCODE = 'restrict_violation';
    END
    $$""",
    """CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()""",
]
_PG_DOWN = [
    "DROP TRIGGER IF EXISTS audit_events_append_only ON audit_events",
    "DROP FUNCTION IF EXISTS audit_events_append_only()",
]


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_constraint(_FK, type_="foreignkey")
        batch_op.add_column(
            sa.Column("actor_kind", sa.String(length=16), nullable=False, server_default="system")
        )
        batch_op.add_column(sa.Column("actor_token_id", sa.String(length=36), nullable=True))
    for statement in _PG_UP if _postgres() else _SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    """Back to 0001's shape: the triggers go, the actor's kind and token are lost, and the
    events of deleted workspaces are deleted (the foreign key comes back)."""
    for statement in _PG_DOWN if _postgres() else _SQLITE_DOWN:
        op.execute(statement)
    op.execute("DELETE FROM audit_events WHERE workspace_id NOT IN (SELECT id FROM workspaces)")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_column("actor_token_id")
        batch_op.drop_column("actor_kind")
        batch_op.create_foreign_key(_FK, "workspaces", ["workspace_id"], ["id"], ondelete="CASCADE")
