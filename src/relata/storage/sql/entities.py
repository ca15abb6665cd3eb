"""Entities, their observations, their name tokens and alias candidates (ADR 15).

Identity is the unique key ``(workspace_id, entity_type, normalised_key)``: the entity stage
upserts on it (``INSERT ... ON CONFLICT DO UPDATE``), so concurrent workers and worker
processes converge on one row. ``replace_item_entities`` is what the stage commits in its unit
of work: the item's observations become exactly the new ones, the entities' counts follow,
an entity left with no observation goes unless a person acted on it (``decided_at``), and the
proposed aliases are added unless their pair was already decided. The token index
(``entity_tokens``: the blocking keys the entity feature computes for a name: words,
initials, one-letter deletions) is how alias candidates are found without scanning the
workspace.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.clock import SystemClock
from relata.domain.entity_evidence import decide_type, display_name
from relata.domain.errors import NotFound, ValidationError
from relata.domain.models import (
    AliasStatus,
    Entity,
    EntityAlias,
    EntityObservation,
    ObservedMention,
    ProposedAlias,
)
from relata.domain.ports import Clock
from relata.domain.vocabulary import EntityType
from relata.ids import new_id, pair_key
from relata.storage.sql.base import insert_for, require_workspace, ws_check_param, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import (
    entities,
    entity_aliases,
    entity_observations,
    entity_tokens,
    items,
)

_MAX_PAGE = 1000
_ID_BATCH = 500
_MAX_TOKEN = 100
_MAX_TOKENS = 200  # per entity: a name's blocking keys are a few dozen


def alias_pair_key(first: tuple[str, str], second: tuple[str, str]) -> str:
    """The unordered pair of two identities (type, normalised key)."""
    return pair_key("alias", f"{first[0]}:{first[1]}", f"{second[0]}:{second[1]}")


def _entity(row: Any) -> Entity:
    return Entity(
        id=row.id,
        workspace_id=row.workspace_id,
        name=row.name,
        entity_type=EntityType(row.entity_type),
        normalised_key=row.normalised_key,
        created_at=row.created_at,
        observation_count=row.observation_count,
        last_seen_at=row.last_seen_at,
        decided_at=row.decided_at,
        item_count=row.item_count,
    )


def _observation(row: Any) -> EntityObservation:
    return EntityObservation(
        id=row.id,
        workspace_id=row.workspace_id,
        entity_id=row.entity_id,
        item_id=row.item_id,
        chunk_id=row.chunk_id,
        start=row.start_offset,
        end=row.end_offset,
        quotation=row.quotation,
        extractor=row.extractor,
        extractor_version=row.extractor_version,
        created_at=row.created_at,
        agreed=bool(row.agreed),
        observed_type=EntityType(row.observed_type) if row.observed_type else None,
        observed_name=row.observed_name,
    )


def _alias(row: Any) -> EntityAlias:
    return EntityAlias(
        id=row.id,
        workspace_id=row.workspace_id,
        entity_id=row.entity_id,
        other_id=row.other_id,
        score=row.score,
        reason=row.reason,
        proposer=row.proposer,
        created_at=row.created_at,
        status=AliasStatus(row.status),
        note=row.note,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
    )


# ---------------------------------------------------------------- statements on a connection
def upsert_entity(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    entity_type: str,
    key: str,
    name: str,
    now: datetime,
    tokens: Iterable[str] = (),
) -> str:
    """The id of the entity with this identity, inserting it if new; ``tokens`` (its name's
    blocking keys) are added to the index."""
    ins = insert_for(dialect, entities).values(
        id=new_id(),
        workspace_id=workspace_id,
        name=name[:300],
        entity_type=str(entity_type),
        normalised_key=key,
        observation_count=0,
        created_at=now,
        last_seen_at=now,
    )
    ins = ins.on_conflict_do_update(
        index_elements=[entities.c.workspace_id, entities.c.entity_type, entities.c.normalised_key],
        set_={"last_seen_at": now},
    ).returning(entities.c.id)
    entity_id = str(conn.execute(ins).scalar_one())
    wanted = sorted({t[:_MAX_TOKEN] for t in tokens if t})[:_MAX_TOKENS]
    if wanted:
        link = insert_for(dialect, entity_tokens).values(
            [{"entity_id": entity_id, "token": t, "workspace_id": workspace_id} for t in wanted]
        )
        conn.execute(link.on_conflict_do_nothing())
    return entity_id


# Every type, so a lookup by name alone uses the unique index (workspace, type, key).
_ALL_TYPES = [t.value for t in EntityType]
_LIVE_ITEM = sa.and_(items.c.id == entity_observations.c.item_id, items.c.deleted_at.is_(None))


def _recount(conn: Connection, workspace_id: str, entity_ids: Iterable[str]) -> None:
    """Counts follow the observations; an entity with none left goes, unless decided."""
    ids = sorted(set(entity_ids))
    count = (
        sa.select(sa.func.count())
        .select_from(entity_observations)
        .where(entity_observations.c.entity_id == entities.c.id)
        .scalar_subquery()
    )
    in_items = (
        sa.select(sa.func.count(sa.distinct(entity_observations.c.item_id)))
        .select_from(entity_observations.join(items, _LIVE_ITEM))
        .where(entity_observations.c.entity_id == entities.c.id)
        .scalar_subquery()
    )
    for i in range(0, len(ids), _ID_BATCH):
        part = ids[i : i + _ID_BATCH]
        conn.execute(
            entities.update()
            .where(ws_filter(entities, workspace_id), entities.c.id.in_(part))
            .values(observation_count=count, item_count=in_items)
        )
        conn.execute(
            entities.delete().where(
                ws_filter(entities, workspace_id),
                entities.c.id.in_(part),
                entities.c.observation_count == 0,
                entities.c.decided_at.is_(None),
            )
        )


def forget_item(conn: Connection, dialect: str, workspace_id: str, item_id: str) -> None:
    """Remove the item's observations; recount (and prune) the entities it named, and
    decide their type and name again from the mentions left."""
    before = [
        r.entity_id
        for r in conn.execute(
            sa.select(entity_observations.c.entity_id)
            .where(
                ws_filter(entity_observations, workspace_id),
                entity_observations.c.item_id == item_id,
            )
            .distinct()
        )
    ]
    conn.execute(
        entity_observations.delete().where(
            ws_filter(entity_observations, workspace_id),
            entity_observations.c.item_id == item_id,
        )
    )
    keys = _keys_of(conn, workspace_id, before)
    _recount(conn, workspace_id, before)
    settle(conn, dialect, workspace_id, keys)


def replace_item_entities(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    item_id: str,
    mentions: Sequence[ObservedMention],
    aliases: Sequence[ProposedAlias],
    now: datetime,
) -> int:
    """The item's observations become exactly ``mentions`` (see the module docstring);
    returns how many alias candidates were added or refreshed."""
    live = conn.execute(
        sa.select(items.c.id).where(
            ws_filter(items, workspace_id), items.c.id == item_id, items.c.deleted_at.is_(None)
        )
    ).first()
    if live is None:
        raise NotFound("item not found")
    before = {
        r.entity_id
        for r in conn.execute(
            sa.select(entity_observations.c.entity_id).where(
                ws_filter(entity_observations, workspace_id),
                entity_observations.c.item_id == item_id,
            )
        )
    }
    before_keys = _keys_of(conn, workspace_id, before)
    conn.execute(
        entity_observations.delete().where(
            ws_filter(entity_observations, workspace_id),
            entity_observations.c.item_id == item_id,
        )
    )
    first: dict[tuple[str, str], ObservedMention] = {}
    keys: dict[tuple[str, str], set[str]] = {}
    for m in mentions:
        identity = (str(m.entity_type), m.normalised_key)
        first.setdefault(identity, m)
        keys.setdefault(identity, set()).update(m.tokens)
    # Each identity's blocking keys (of every spelling the item uses) go into the index, so a
    # later item's names find this entity as an alias candidate.
    ids = {
        identity: upsert_entity(
            conn, dialect, workspace_id, *identity, m.name, now, tokens=keys[identity]
        )
        for identity, m in first.items()
    }
    if mentions:
        conn.execute(
            entity_observations.insert(),
            [
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "entity_id": ids[(str(m.entity_type), m.normalised_key)],
                    "item_id": item_id,
                    "chunk_id": m.chunk_id,
                    "start_offset": m.start,
                    "end_offset": m.end,
                    "quotation": m.quotation[:300],
                    "extractor": m.extractor,
                    "extractor_version": m.extractor_version,
                    "agreed": m.agreed,
                    "observed_type": str(m.entity_type),
                    "observed_name": m.name[:300],
                    "created_at": now,
                }
                for m in mentions
            ],
        )
    _recount(conn, workspace_id, before | set(ids.values()))
    settle(conn, dialect, workspace_id, before_keys | {key for _, key in first}, now)
    return sum(_propose(conn, dialect, workspace_id, a, now) for a in aliases)


def _keys_of(conn: Connection, workspace_id: str, entity_ids: Iterable[str]) -> set[str]:
    ids = sorted(set(entity_ids))
    out: set[str] = set()
    for i in range(0, len(ids), _ID_BATCH):
        out.update(
            r.normalised_key
            for r in conn.execute(
                sa.select(entities.c.normalised_key).where(
                    ws_filter(entities, workspace_id), entities.c.id.in_(ids[i : i + _ID_BATCH])
                )
            )
        )
    return out


def settle(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    keys: Iterable[str],
    now: datetime | None = None,
) -> None:
    """One entity per normalised name, of the type most of its mentions give, named in the
    form they use most (``domain.entity_evidence``; ADR 50).

    For each key: the mentions in live items under every type are counted; the entity of the
    winning type gets them all (and the others' name tokens), the others are recounted and go
    unless a person decided on them; the winner's name is the mentions' most used form. A pure
    function of the mentions, so the result does not depend on the order items came in."""
    for key in sorted(set(keys)):
        # The key's entities by the unique index, then their observations by theirs.
        named = {
            r.id: r
            for r in conn.execute(
                sa.select(entities.c.id, entities.c.entity_type, entities.c.name).where(
                    ws_filter(entities, workspace_id),
                    entities.c.entity_type.in_(_ALL_TYPES),
                    entities.c.normalised_key == key,
                )
            )
        }
        if not named:
            continue
        rows = conn.execute(
            sa.select(
                entity_observations.c.entity_id,
                entity_observations.c.item_id,
                entity_observations.c.observed_type,
                entity_observations.c.observed_name,
            )
            .select_from(entity_observations.join(items, _LIVE_ITEM))
            .where(
                ws_filter(entity_observations, workspace_id),
                entity_observations.c.entity_id.in_(sorted(named)),
            )
        ).all()
        if not rows:
            continue
        evidence = [
            (EntityType(r.observed_type or named[r.entity_id].entity_type), r.item_id) for r in rows
        ]
        winner = decide_type(evidence)
        if winner is None:
            continue
        fallback = named[rows[0].entity_id].name
        name = display_name(r.observed_name or named[r.entity_id].name for r in rows) or fallback
        when = now or SystemClock().now()
        target = upsert_entity(conn, dialect, workspace_id, winner.value, key, name, when)
        moved = sorted(set(named) - {target})
        if moved:
            conn.execute(
                entity_observations.update()
                .where(
                    ws_filter(entity_observations, workspace_id),
                    entity_observations.c.entity_id.in_(moved),
                )
                .values(entity_id=target)
            )
            tokens = sa.select(
                sa.literal(target), entity_tokens.c.token, entity_tokens.c.workspace_id
            ).where(ws_filter(entity_tokens, workspace_id), entity_tokens.c.entity_id.in_(moved))
            conn.execute(
                insert_for(dialect, entity_tokens)
                .from_select(["entity_id", "token", "workspace_id"], tokens)
                .on_conflict_do_nothing()
            )
        conn.execute(
            entities.update()
            .where(ws_filter(entities, workspace_id), entities.c.id == target)
            .values(name=name[:300])
        )
        _recount(conn, workspace_id, [target, *moved])


def _settled_type(conn: Connection, workspace_id: str, key: str) -> str | None:
    """The type of the entity holding this name's mentions, if any."""
    row = conn.execute(
        sa.select(entities.c.entity_type)
        .where(
            ws_filter(entities, workspace_id),
            entities.c.entity_type.in_(_ALL_TYPES),
            entities.c.normalised_key == key,
            entities.c.observation_count > 0,
        )
        .order_by(entities.c.observation_count.desc(), entities.c.entity_type)
        .limit(1)
    ).first()
    return None if row is None else str(row.entity_type)


def _propose(
    conn: Connection, dialect: str, workspace_id: str, alias: ProposedAlias, now: datetime
) -> int:
    """Add a candidate alias, or refresh an undecided one whose score is no higher; a decided
    pair is left alone."""
    # A name is one entity of its settled type (``settle``): the candidate joins those.
    first = (
        _settled_type(conn, workspace_id, alias.first[1]) or str(alias.first[0]),
        alias.first[1],
    )
    second = (
        _settled_type(conn, workspace_id, alias.second[1]) or str(alias.second[0]),
        alias.second[1],
    )
    if first == second or first[1] == second[1]:
        return 0
    a = upsert_entity(conn, dialect, workspace_id, *first, alias.first[2], now)
    b = upsert_entity(conn, dialect, workspace_id, *second, alias.second[2], now)
    # An entity created only to carry the candidate has no observation: it must stay while
    # the candidate does, so it is not pruned here; a rejection or the item's reprocessing
    # recounts it.
    ins = insert_for(dialect, entity_aliases).values(
        id=new_id(),
        workspace_id=workspace_id,
        entity_id=a,
        other_id=b,
        pair_key=alias_pair_key(first, second),
        status=AliasStatus.CANDIDATE.value,
        score=alias.score,
        reason=alias.reason[:300],
        proposer=alias.proposer,
        created_at=now,
        updated_at=now,
    )
    ins = ins.on_conflict_do_update(
        index_elements=[entity_aliases.c.workspace_id, entity_aliases.c.pair_key],
        set_={"score": alias.score, "reason": alias.reason[:300], "updated_at": now},
        # The strongest evidence keeps its reason whichever item is processed last: a later
        # item's weaker "may be the initials of" does not overwrite an earlier "defines".
        where=sa.and_(
            entity_aliases.c.status == AliasStatus.CANDIDATE.value,
            entity_aliases.c.score <= alias.score,
        ),
    )
    return int(conn.execute(ins).rowcount or 0)


# ---------------------------------------------------------------- the repository
# The reads the claims and relationships stages make for every item, built once (see
# items.py): constructing a statement cost as much CPU as running it. ``ws`` is checked with
# ``require_workspace`` before each runs; ``ids`` and the like are expanding lists.
_obs = entity_observations
_OBSERVATIONS_OF_ITEM = (
    sa.select(_obs)
    .where(_obs.c.workspace_id == sa.bindparam("ws"), _obs.c.item_id == sa.bindparam("item_id"))
    .order_by(_obs.c.start_offset, _obs.c.id)
)
_LIVE_OBSERVED = sa.and_(items.c.id == _obs.c.item_id, items.c.deleted_at.is_(None))
_NAMING_COUNTS = (
    sa.select(_obs.c.entity_id, sa.func.count(sa.distinct(_obs.c.item_id)).label("df"))
    .join(items, _LIVE_OBSERVED)
    .where(
        _obs.c.workspace_id == sa.bindparam("ws"),
        _obs.c.entity_id.in_(sa.bindparam("ids", expanding=True)),
    )
    .group_by(_obs.c.entity_id)
)
_NAMING_PAIRS = (
    sa.select(_obs.c.entity_id, _obs.c.item_id)
    .join(items, _LIVE_OBSERVED)
    .where(
        _obs.c.workspace_id == sa.bindparam("ws"),
        _obs.c.entity_id.in_(sa.bindparam("ids", expanding=True)),
        _obs.c.item_id != sa.bindparam("exclude"),
    )
    .group_by(_obs.c.entity_id, _obs.c.item_id)
    .order_by(_obs.c.entity_id, _obs.c.item_id)
)
_FIRST_OBSERVATIONS = (
    sa.select(_obs)
    .where(
        _obs.c.workspace_id == sa.bindparam("ws"),
        _obs.c.entity_id.in_(sa.bindparam("entity_ids", expanding=True)),
        _obs.c.item_id.in_(sa.bindparam("item_ids", expanding=True)),
    )
    .order_by(_obs.c.start_offset)
)
_CONFIRMED_ALIASES = sa.select(entity_aliases.c.entity_id, entity_aliases.c.other_id).where(
    entity_aliases.c.workspace_id == sa.bindparam("ws"),
    entity_aliases.c.status == AliasStatus.CONFIRMED.value,
    sa.or_(
        entity_aliases.c.entity_id.in_(sa.bindparam("ids", expanding=True)),
        entity_aliases.c.other_id.in_(sa.bindparam("ids", expanding=True)),
    ),
)


#: ``find_by_keys`` names every type (``_ALL_TYPES``) so that SQLite probes the unique
#: ``(workspace, type, key)`` index for each type and key. Given the workspace and the keys
#: alone it walked the workspace's entities (the index's first column), a cost that grew with
#: the workspace on every search (issue 30).
_BY_KEYS = sa.select(entities).where(
    entities.c.workspace_id == sa.bindparam("ws"),
    entities.c.entity_type.in_(sa.bindparam("types", expanding=True)),
    entities.c.normalised_key.in_(sa.bindparam("keys", expanding=True)),
)
_MENTION_COUNT = sa.func.count().label("n")
#: ``mentions_by_item``'s statement, built once (building it cost about as much as running it).
_MENTIONS = (
    sa.select(entity_observations.c.item_id, entity_observations.c.entity_id, _MENTION_COUNT)
    .join(items, items.c.id == entity_observations.c.item_id)
    .where(
        entity_observations.c.workspace_id == sa.bindparam("ws"),
        entity_observations.c.entity_id.in_(sa.bindparam("ids", expanding=True)),
        items.c.deleted_at.is_(None),
    )
    .group_by(entity_observations.c.item_id, entity_observations.c.entity_id)
    .order_by(_MENTION_COUNT.desc(), entity_observations.c.item_id)
    .limit(sa.bindparam("limit"))
)


class SqlEntityRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()
        # By primary key; the workspace checked on each row found (base.ws_check_param).
        self._by_ids = sa.select(entities).where(
            ws_check_param(entities, db.dialect),
            entities.c.id.in_(sa.bindparam("ids", expanding=True)),
        )

    def get(self, workspace_id: str, entity_id: str) -> Entity:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(entities).where(
                    ws_filter(entities, workspace_id), entities.c.id == entity_id
                )
            ).first()
        if row is None:
            raise NotFound("entity not found")
        return _entity(row)

    def get_many(self, workspace_id: str, entity_ids: Sequence[str]) -> builtins.list[Entity]:
        ids = list(dict.fromkeys(entity_ids))
        found: dict[str, Entity] = {}
        ws = require_workspace(entities, workspace_id)
        if not ids:
            return []
        with self._db.read() as conn:
            for i in range(0, len(ids), _ID_BATCH):
                for row in conn.execute(self._by_ids, {"ws": ws, "ids": ids[i : i + _ID_BATCH]}):
                    found[row.id] = _entity(row)
        return [found[i] for i in ids if i in found]

    def list(
        self,
        workspace_id: str,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Entity]:
        """Entities by how often they are observed; ``name``: normalised keys containing it."""
        q = sa.select(entities).where(ws_filter(entities, workspace_id))
        if entity_type:
            q = q.where(entities.c.entity_type == entity_type)
        if name:
            q = q.where(entities.c.normalised_key.contains(name, autoescape=True))
        q = q.order_by(
            entities.c.observation_count.desc(), entities.c.normalised_key, entities.c.id
        )
        q = q.limit(max(1, min(limit, _MAX_PAGE))).offset(max(0, offset))
        with self._db.read() as conn:
            return [_entity(r) for r in conn.execute(q)]

    def find_by_keys(self, workspace_id: str, keys: Sequence[str]) -> builtins.list[Entity]:
        """Entities of any type whose normalised key is one of ``keys``: one probe of the
        ``(workspace, type, key)`` index per type and key (``_BY_KEYS``)."""
        wanted = sorted(set(keys))
        ws = require_workspace(entities, workspace_id)
        out: builtins.list[Entity] = []
        with self._db.read() as conn:
            for i in range(0, len(wanted), _ID_BATCH):
                params = {"ws": ws, "types": _ALL_TYPES, "keys": wanted[i : i + _ID_BATCH]}
                out += [_entity(r) for r in conn.execute(_BY_KEYS, params)]
        return out

    def similar(
        self, workspace_id: str, tokens: Iterable[str], *, limit: int = 50
    ) -> builtins.list[Entity]:
        """Entities sharing a blocking key with ``tokens`` (alias candidates), most observed
        first."""
        wanted = sorted({t[:_MAX_TOKEN] for t in tokens if t})[:_MAX_TOKENS]
        if not wanted:
            ws_filter(entities, workspace_id)
            return []
        q = (
            sa.select(entities)
            .where(
                ws_filter(entities, workspace_id),
                entities.c.id.in_(
                    sa.select(entity_tokens.c.entity_id).where(
                        ws_filter(entity_tokens, workspace_id), entity_tokens.c.token.in_(wanted)
                    )
                ),
            )
            .order_by(entities.c.observation_count.desc(), entities.c.id)
            .limit(max(1, min(limit, _MAX_PAGE)))
        )
        with self._db.read() as conn:
            return [_entity(r) for r in conn.execute(q)]

    def observations(
        self, workspace_id: str, entity_id: str, *, limit: int = 100
    ) -> builtins.list[EntityObservation]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(entity_observations)
                .where(
                    ws_filter(entity_observations, workspace_id),
                    entity_observations.c.entity_id == entity_id,
                )
                .order_by(
                    entity_observations.c.item_id,
                    entity_observations.c.start_offset,
                    entity_observations.c.id,
                )
                .limit(max(1, min(limit, _MAX_PAGE)))
            ).all()
        return [_observation(r) for r in rows]

    def observations_for_item(
        self, workspace_id: str, item_id: str
    ) -> builtins.list[EntityObservation]:
        ws = require_workspace(entity_observations, workspace_id)
        with self._db.read() as conn:
            rows = conn.execute(_OBSERVATIONS_OF_ITEM, {"ws": ws, "item_id": item_id}).all()
        return [_observation(r) for r in rows]

    def mentions_by_item(
        self, workspace_id: str, entity_ids: Sequence[str], *, limit: int
    ) -> builtins.list[tuple[str, str, int]]:
        """``(item_id, entity_id, mentions)`` of live items naming the entities, most mentions
        first (the entity search leg)."""
        ids = sorted(set(entity_ids))
        ws = require_workspace(entity_observations, workspace_id)
        if not ids:
            return []
        params = {"ws": ws, "ids": ids[:_ID_BATCH], "limit": max(1, min(limit, 10 * _MAX_PAGE))}
        with self._db.read() as conn:
            return [(r.item_id, r.entity_id, int(r.n)) for r in conn.execute(_MENTIONS, params)]

    def items_naming(
        self,
        workspace_id: str,
        entity_ids: Sequence[str],
        *,
        exclude_item: str | None = None,
        per_entity: int = 50,
        max_items_with: int = 200,
    ) -> dict[str, tuple[int, builtins.list[str]]]:
        """For each entity: how many live items name it, and (when that is at most
        ``max_items_with``) up to ``per_entity`` of them other than ``exclude_item``, oldest
        id first. Two indexed queries; an entity every item names costs a count, no list."""
        ids = sorted(set(entity_ids))[:_ID_BATCH]
        ws = require_workspace(entity_observations, workspace_id)
        if not ids:
            return {}
        with self._db.read() as conn:
            found = {
                r.entity_id: int(r.df) for r in conn.execute(_NAMING_COUNTS, {"ws": ws, "ids": ids})
            }
            listed = [e for e, n in found.items() if n <= max_items_with]
            out: dict[str, tuple[int, builtins.list[str]]] = {e: (n, []) for e, n in found.items()}
            if listed:
                # No item id is empty: "" excludes nothing.
                params = {"ws": ws, "ids": listed, "exclude": exclude_item or ""}
                for row in conn.execute(_NAMING_PAIRS, params):
                    kept = out[row.entity_id][1]
                    if len(kept) < per_entity:
                        kept.append(row.item_id)
        return out

    def first_observations(
        self, workspace_id: str, entity_ids: Sequence[str], item_ids: Sequence[str]
    ) -> dict[tuple[str, str], EntityObservation]:
        """The first observation (lowest offset) of each entity in each item, by
        ``(entity_id, item_id)``: a quotation of each side for relationship evidence."""
        ents, its = sorted(set(entity_ids))[:_ID_BATCH], sorted(set(item_ids))[:_ID_BATCH]
        ws = require_workspace(entity_observations, workspace_id)
        if not ents or not its:
            return {}
        out: dict[tuple[str, str], EntityObservation] = {}
        params = {"ws": ws, "entity_ids": ents, "item_ids": its}
        with self._db.read() as conn:
            for row in conn.execute(_FIRST_OBSERVATIONS, params):
                o = _observation(row)
                out.setdefault((o.entity_id, o.item_id), o)
        return out

    def type_votes(self, workspace_id: str, entity_id: str) -> builtins.list[tuple[str, int]]:
        """How many of the entity's mentions gave each type, most first (its type is the
        first; the others are the alternatives a person reviews)."""
        n = sa.func.count().label("n")
        typed = sa.func.coalesce(entity_observations.c.observed_type, entities.c.entity_type)
        q = (
            sa.select(typed.label("kind"), n)
            .select_from(
                entity_observations.join(entities, entities.c.id == entity_observations.c.entity_id)
            )
            .where(
                ws_filter(entity_observations, workspace_id),
                entity_observations.c.entity_id == entity_id,
            )
            .group_by(typed)
            .order_by(n.desc(), typed)
        )
        with self._db.read() as conn:
            return [(str(r.kind), int(r.n)) for r in conn.execute(q)]

    def co_mentioned(
        self, workspace_id: str, entity_id: str, *, limit: int = 20
    ) -> builtins.list[tuple[Entity, int]]:
        """Entities named in the same items as ``entity_id``, with the number of such items."""
        mine = sa.select(entity_observations.c.item_id).where(
            ws_filter(entity_observations, workspace_id),
            entity_observations.c.entity_id == entity_id,
        )
        shared = sa.func.count(sa.distinct(entity_observations.c.item_id)).label("shared")
        q = (
            sa.select(entities, shared)
            .join(entity_observations, entity_observations.c.entity_id == entities.c.id)
            .where(
                ws_filter(entities, workspace_id),
                entity_observations.c.item_id.in_(mine),
                entities.c.id != entity_id,
            )
            .group_by(*entities.c)
            .order_by(shared.desc(), entities.c.normalised_key)
            .limit(max(1, min(limit, _MAX_PAGE)))
        )
        with self._db.read() as conn:
            return [(_entity(r), int(r.shared)) for r in conn.execute(q)]

    # ------------------------------------------------------------ aliases
    def aliases(
        self,
        workspace_id: str,
        *,
        status: AliasStatus | None = None,
        entity_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[EntityAlias]:
        q = sa.select(entity_aliases).where(ws_filter(entity_aliases, workspace_id))
        if status is not None:
            q = q.where(entity_aliases.c.status == status.value)
        if entity_id is not None:
            q = q.where(
                sa.or_(
                    entity_aliases.c.entity_id == entity_id,
                    entity_aliases.c.other_id == entity_id,
                )
            )
        q = q.order_by(entity_aliases.c.score.desc(), entity_aliases.c.id)
        q = q.limit(max(1, min(limit, _MAX_PAGE))).offset(max(0, offset))
        with self._db.read() as conn:
            return [_alias(r) for r in conn.execute(q)]

    def confirmed_alias_ids(
        self, workspace_id: str, entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """For each of ``entity_ids``, the entities a person confirmed as its aliases."""
        ids = sorted(set(entity_ids))[:_ID_BATCH]
        out: dict[str, set[str]] = {}
        ws = require_workspace(entity_aliases, workspace_id)
        if not ids:
            return out
        with self._db.read() as conn:
            rows = conn.execute(_CONFIRMED_ALIASES, {"ws": ws, "ids": ids}).all()
        for a, b in rows:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
        return out

    def decide_alias(
        self,
        workspace_id: str,
        alias_id: str,
        status: AliasStatus,
        *,
        by: str,
        note: str | None = None,
    ) -> EntityAlias:
        """A person's decision: both entities are marked as decided, so they stay even when
        their items go; a rejected pair is never proposed again."""
        if status is AliasStatus.CANDIDATE:
            raise ValidationError("a decision confirms or rejects", field="status")
        now = self._clock.now()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(entity_aliases).where(
                    ws_filter(entity_aliases, workspace_id), entity_aliases.c.id == alias_id
                )
            ).first()
            if row is None:
                raise NotFound("alias not found")
            conn.execute(
                entity_aliases.update()
                .where(entity_aliases.c.id == alias_id)
                .values(
                    status=status.value,
                    note=note[:1000] if note else None,
                    decided_by=by[:100],
                    decided_at=now,
                    updated_at=now,
                )
            )
            conn.execute(
                entities.update()
                .where(
                    ws_filter(entities, workspace_id),
                    entities.c.id.in_([row.entity_id, row.other_id]),
                )
                .values(decided_at=now)
            )
            updated = conn.execute(
                sa.select(entity_aliases).where(entity_aliases.c.id == alias_id)
            ).one()
        return _alias(updated)

    def forget_item(self, workspace_id: str, item_id: str) -> None:
        """Before an item's row goes: its observations, and entities left with none."""
        with self._db.write() as conn:
            forget_item(conn, self._db.dialect, workspace_id, item_id)
