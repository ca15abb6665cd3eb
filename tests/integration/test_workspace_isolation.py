"""Workspace enforcement: the filter helper refuses an empty workspace, and a record of another
workspace is reported exactly like a missing one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from relata.domain.errors import MissingWorkspace, NotFound
from relata.domain.models import Chunk, Item, SourceType, Workspace
from relata.ids import chunk_id, content_hash, new_id
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.base import ws_filter
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.tables import items

pytestmark = pytest.mark.both_dialects

NOW = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_workspace_filter_refuses_an_empty_workspace(bad: object) -> None:
    with pytest.raises(MissingWorkspace):
        ws_filter(items, bad)  # type: ignore[arg-type]


def _setup(db: Database) -> tuple[str, str, Item]:
    repo = SqlWorkspaceRepository(db)
    a = repo.create(Workspace(id=new_id(), slug="a", name="A", created_at=NOW))
    b = repo.create(Workspace(id=new_id(), slug="b", name="B", created_at=NOW))
    item = Item(
        id=new_id(),
        workspace_id=b.id,
        title="secret of B",
        source_type=SourceType.TEXT,
        content_hash=content_hash("b"),
        size_bytes=1,
        ingested_at=NOW,
    )
    SqlItemRepository(db).create(item)
    return a.id, b.id, item


def test_cross_workspace_read_is_indistinguishable_from_missing(db: Database) -> None:
    a, b, item = _setup(db)
    repo = SqlItemRepository(db)
    assert repo.get(b, item.id).title == "secret of B"
    with pytest.raises(NotFound) as cross:
        repo.get(a, item.id)
    with pytest.raises(NotFound) as missing:
        repo.get(a, new_id())
    assert type(cross.value) is type(missing.value)
    assert cross.value.message == missing.value.message
    assert cross.value.code == missing.value.code


def test_every_repository_read_is_scoped(db: Database) -> None:
    a, b, item = _setup(db)
    items_repo = SqlItemRepository(db)
    chunks_repo = SqlChunkRepository(db)
    c = Chunk(
        id=chunk_id(b, item.id, 0, content_hash("x")),
        workspace_id=b,
        item_id=item.id,
        sequence=0,
        text="x",
        content_hash=content_hash("x"),
        start_offset=0,
        end_offset=1,
    )
    chunks_repo.replace_for_item(b, item.id, [c])
    assert items_repo.get_many(a, [item.id]) == []
    assert items_repo.list(a, limit=10) == []
    assert items_repo.find_by_content_hash(a, item.content_hash) is None
    assert chunks_repo.list_for_item(a, item.id) == []
    assert chunks_repo.get_many(a, [c.id]) == []
    with pytest.raises(NotFound):
        items_repo.delete(a, item.id)
    with pytest.raises(NotFound):
        chunks_repo.replace_for_item(a, item.id, [])
    # B's data is untouched by A's attempts.
    assert items_repo.get(b, item.id).chunk_count == 1
    with pytest.raises(MissingWorkspace):
        items_repo.get("", item.id)


def test_replace_for_item_keeps_one_generation(db: Database) -> None:
    _, b, item = _setup(db)
    repo = SqlChunkRepository(db)

    def gen(texts: list[str]) -> list[Chunk]:
        return [
            Chunk(
                id=chunk_id(b, item.id, i, content_hash(t)),
                workspace_id=b,
                item_id=item.id,
                sequence=i,
                text=t,
                content_hash=content_hash(t),
                start_offset=0,
                end_offset=len(t),
            )
            for i, t in enumerate(texts)
        ]

    repo.replace_for_item(b, item.id, gen(["one", "two", "three"]))
    first_ids = [c.id for c in repo.list_for_item(b, item.id)]
    repo.replace_for_item(b, item.id, gen(["one", "two", "three"]))
    assert [c.id for c in repo.list_for_item(b, item.id)] == first_ids
    repo.replace_for_item(b, item.id, gen(["only"]))
    assert [c.text for c in repo.list_for_item(b, item.id)] == ["only"]
    assert repo.count(b) == 1
