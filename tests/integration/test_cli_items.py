"""Listing items by status, on real SQLite and PostgreSQL (what ``relata items --status`` reads)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, SourceType
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id

# Sniffed as JSON, but nested beyond the parser's depth bound: its parse fails.
TOO_DEEP = ("[" * 100 + '"x"' + "]" * 100).encode()


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


def test_the_list_filters_by_status_and_combines_with_type(c: Container) -> None:
    ws = workspace_id(c)
    bad = c.ingest.ingest(ws, IngestRequest(data=TOO_DEEP, filename="deep.json"))
    drain(c)
    good = c.ingest.ingest(ws, IngestRequest(text="A note that parses."))
    failed = c.items.list(ws, status=ItemStatus.FAILED)
    assert [i.id for i in failed] == [bad.id]
    pending = c.items.list(ws, status=ItemStatus.PENDING)
    assert [i.id for i in pending] == [good.id]
    assert c.items.list(ws, status=ItemStatus.FAILED, source_type=SourceType.TEXT) == []
    assert {i.id for i in c.items.list(ws)} == {bad.id, good.id}
