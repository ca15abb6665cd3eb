"""relata.client against the real app served over HTTP (the demo corpus): typed answers, the
API's errors as domain errors naming what was wrong, another workspace's ids not found, a
response over the bound refused, an unreachable server Unavailable; an export streamed to a
file and imported into an empty workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from relata.bootstrap import Container
from relata.client import RelataClient
from relata.domain.errors import (
    Conflict,
    Forbidden,
    NotFound,
    Permanent,
    Unauthenticated,
    Unavailable,
    ValidationError,
)
from relata.domain.vocabulary import Role
from tests.support.api import make_token, make_user
from tests.support.mcp import serving

MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def base_url(demo_container: Container) -> Iterator[str]:
    with serving(demo_container) as url:
        yield url


def _client(c: Container, url: str, role: Role = Role.OWNER, **kw: object) -> RelataClient:
    user = make_user(c, role=role)
    return RelataClient(url, make_token(c, user, role=role), **kw)  # type: ignore[arg-type]


def test_typed_answers_from_the_api(demo_container: Container, base_url: str) -> None:
    with _client(demo_container, base_url) as relata:
        assert relata.me().workspace.role == "owner"
        found = relata.search("tidal turbines", limit=3)
        assert 0 < len(found.results) <= 3
        item = found.results[0].item.id
        assert relata.item(item).id == item
        window = relata.item_text(item, limit=50)
        assert len(window.text) == 50 and window.next_offset == 50
        assert relata.item_chunks(item, limit=1).chunks[0].sequence == 0
        assert relata.answer("How many turbines?").status == "unavailable"
        page = relata.contradictions()
        assert relata.contradiction(page.contradictions[0].id).id == page.contradictions[0].id
        entity = relata.entities(query="kestrel").entities[0]
        assert relata.entity(entity.id).observations


def test_errors_are_domain_errors_naming_what_was_wrong(
    demo_container: Container, base_url: str
) -> None:
    c = demo_container
    other, _ = c.workspaces.ensure("other")
    with _client(c, base_url) as mine:
        item = mine.search("turbines").results[0].item.id
        with pytest.raises(ValidationError) as bad:
            mine.item_text(item, limit=0)
        assert bad.value.field == "limit"
    stranger_user = make_user(c, workspace=other)
    stranger = make_token(c, stranger_user, workspace=other)
    with RelataClient(base_url, stranger) as theirs:
        with pytest.raises(NotFound):
            theirs.item_text(item)
        with pytest.raises(NotFound):
            theirs.item_chunks(MISSING)
    with _client(c, base_url, Role.VIEWER) as viewer, pytest.raises(Forbidden):
        viewer.add_text("A viewer's note.")
    with RelataClient(base_url, "rl_not_a_token") as nobody, pytest.raises(Unauthenticated):
        nobody.search("turbines")


def test_a_response_over_the_bound_is_refused(demo_container: Container, base_url: str) -> None:
    with _client(demo_container, base_url) as relata:
        item = relata.search("turbines", limit=1).results[0].item.id
        assert relata.item_text(item).length > 600
    with _client(demo_container, base_url, max_response_bytes=512) as small:
        assert len(small.item_text(item, limit=100).text) == 100
        with pytest.raises(Permanent, match="max_response_bytes"):
            small.item_text(item)


def test_an_unreachable_server_is_unavailable() -> None:
    with RelataClient("http://127.0.0.1:9", "rl_x", timeout=2) as gone, pytest.raises(Unavailable):
        gone.search("anything")
    with pytest.raises(ValidationError):
        RelataClient("ftp://example.org", "rl_x")


def test_export_to_a_file_and_import_into_an_empty_workspace(
    demo_container: Container, base_url: str, tmp_path: Path
) -> None:
    c = demo_container
    out = tmp_path / "default.jsonl"
    with _client(c, base_url, role=Role.VIEWER) as reader:
        written = reader.export("jsonl", out)
        assert written == out.stat().st_size > 1000
        reader.export("graphml", tmp_path / "default.graphml")
        with pytest.raises(Forbidden):
            reader.import_jsonl(out)  # a viewer writes nothing
    assert nx.read_graphml(tmp_path / "default.graphml").number_of_nodes() > 5
    assert not list(tmp_path.glob("*.part"))
    copy, _ = c.workspaces.ensure("copy")
    user = make_user(c, workspace=copy, role=Role.OWNER)
    with RelataClient(base_url, make_token(c, user, workspace=copy, role=Role.OWNER)) as owner:
        report = owner.import_jsonl(out)
        assert report.workspace == "copy" and report.counts["items"] == 5
        with pytest.raises(Conflict, match="already holds"):
            owner.import_jsonl(out)
        with pytest.raises(ValidationError, match="format"):
            owner.export("xlsx", tmp_path / "x")
    assert len(c.items.list(copy.id, limit=10)) == 5
