"""The MCP server driven by the MCP SDK's own client, over both transports, on the processed
demo corpus: streamable HTTP at ``/mcp`` of the real app (API tokens), and ``relata mcp`` on
stdio (the local database, and ``--server`` against the running app through relata.client).

Listing the tools (a viewer's token sees no writing tool), calling each one, structured
results whose ids resolve to items, a viewer refused a write, another workspace's ids
answering not found exactly like missing ones, and a bad token refused before the MCP layer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
import pytest

from relata.api.deps import Principal
from relata.bootstrap import Container
from relata.domain.errors import Forbidden
from relata.domain.models import Workspace
from relata.domain.vocabulary import Role
from relata.mcp.backend import LocalBackend
from relata.mcp.tools import DATA_NOT_INSTRUCTIONS
from tests.support.api import make_token, make_user
from tests.support.mcp import cli_env, error_code, over_http, over_stdio, serving, structured

MISSING = "00000000-0000-0000-0000-000000000000"
READING = {
    "search",
    "ask",
    "get_item",
    "list_disagreements",
    "get_disagreement",
    "look_up_entity",
    "related_items",
}
WRITING = {"add_text", "resolve_disagreement", "review_relationship"}


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run ``scenario`` on an event loop in a thread of its own. Playwright's sync API (the
    browser tests' session fixture, on the same xdist worker) leaves its asyncio loop marked
    running in the worker's main thread, and ``anyio.run`` refuses to start inside it
    ("Already running asyncio in this thread", a CI failure)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, scenario).result()


@pytest.fixture
def c(demo_container: Container) -> Container:
    return demo_container


@pytest.fixture
def base_url(c: Container) -> Iterator[str]:
    with serving(c) as url:
        yield url


def _token(c: Container, role: Role, workspace: Workspace | None = None) -> str:
    user = make_user(c, role=role, workspace=workspace)
    return make_token(c, user, role=role, workspace=workspace)


@pytest.fixture
def other(c: Container) -> Workspace:
    ws, _ = c.workspaces.ensure("other")
    return ws


async def _tool_names(client: Any) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def test_tools_are_listed_with_output_schemas_and_writes_only_for_writers(
    c: Container, base_url: str
) -> None:
    async def scenario() -> None:
        async with over_http(base_url, _token(c, Role.EDITOR)) as editor:
            tools = (await editor.list_tools()).tools
            assert {t.name for t in tools} == READING | WRITING
            for tool in tools:
                assert tool.output_schema is not None, tool.name
                assert DATA_NOT_INSTRUCTIONS in (tool.description or ""), tool.name
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is (tool.name in READING)
        async with over_http(base_url, _token(c, Role.VIEWER)) as viewer:
            assert await _tool_names(viewer) == READING

    run(scenario)


def test_every_tool_answers_with_ids_that_resolve_to_items(c: Container, base_url: str) -> None:
    async def scenario() -> None:
        async with over_http(base_url, _token(c, Role.OWNER)) as mcp:
            found = structured(await mcp.call_tool("search", {"query": "tidal turbines"}))
            assert found["results"], found
            for result in found["results"]:
                assert result["explanation"]["legs"], "each result says why it was found"
            first = found["results"][0]["item"]["id"]

            view = structured(
                await mcp.call_tool(
                    "get_item",
                    {"item_id": first, "text_limit": 200, "include_chunks": True},
                )
            )
            assert view["item"]["id"] == first
            assert 0 < len(view["text"]["text"]) <= 200 and view["text"]["next_offset"] == 200
            assert view["chunks"]["chunks"][0]["sequence"] == 0

            answer = structured(await mcp.call_tool("ask", {"question": "How many turbines?"}))
            assert answer["status"] == "unavailable" and answer["reason"] == "analysis_disabled"
            assert answer["sources"]
            for source in answer["sources"]:  # citations and sources resolve to items
                item = structured(await mcp.call_tool("get_item", {"item_id": source["item_id"]}))
                assert item["item"]["id"] == source["item_id"]

            page = structured(await mcp.call_tool("list_disagreements", {}))
            assert page["contradictions"], "the demo story has disagreements"
            dispute = page["contradictions"][0]
            one = structured(
                await mcp.call_tool("get_disagreement", {"contradiction_id": dispute["id"]})
            )
            texts = {}
            for side in (one["first"], one["second"]):
                if side["item_id"] not in texts:
                    got = await mcp.call_tool(
                        "get_item", {"item_id": side["item_id"], "text_limit": 1_000_000}
                    )
                    texts[side["item_id"]] = structured(got)["text"]["text"]
                quoted = texts[side["item_id"]][side["start"] : side["end"]]
                assert quoted == side["quotation"], "both quotations point into their items"

            entity = structured(await mcp.call_tool("look_up_entity", {"name": "Kestrel"}))
            assert entity["matches"] and entity["entity"] is not None
            assert entity["entity"]["observations"], "its mentions, quoted"
            by_id = structured(
                await mcp.call_tool("look_up_entity", {"entity_id": entity["entity"]["id"]})
            )
            assert by_id["entity"]["id"] == entity["entity"]["id"]

            related = structured(await mcp.call_tool("related_items", {"item_id": first}))
            assert related["item_id"] == first
            links = [r for r in related["related"]]
            if not links:  # the best-connected item of the story
                for result in found["results"]:
                    got = await mcp.call_tool("related_items", {"item_id": result["item"]["id"]})
                    links = structured(got)["related"]
                    if links:
                        break
            assert links, "the demo story has related items"

            added = structured(
                await mcp.call_tool(
                    "add_text", {"text": "The ferry slipway reopened in May.", "title": "Memo"}
                )
            )
            assert added["status"] == "pending" and added["title"] == "Memo"
            resolved = structured(
                await mcp.call_tool(
                    "resolve_disagreement",
                    {"contradiction_id": dispute["id"], "resolution": "both_valid"},
                )
            )
            assert resolved["status"] == "resolved"
            reviewed = structured(
                await mcp.call_tool(
                    "review_relationship",
                    {"relationship_id": links[0]["id"], "decision": "confirm"},
                )
            )
            assert reviewed["review_status"] == "confirmed"

            bad = await mcp.call_tool("get_item", {"item_id": MISSING})
            assert error_code(bad) == "not_found"

    run(scenario)


def test_a_viewer_is_refused_every_write(c: Container, base_url: str) -> None:
    async def scenario() -> None:
        async with over_http(base_url, _token(c, Role.VIEWER)) as viewer:
            refused = await viewer.call_tool("add_text", {"text": "Sneaked in."})
            assert refused.is_error  # no such tool for a viewer
            found = structured(await viewer.call_tool("search", {"query": "Sneaked"}))
            assert found["results"] == []

    run(scenario)
    ws = c.workspaces.resolve()
    viewer = Principal(ws.id, ws.slug, None, "token", role=Role.VIEWER)
    backend = LocalBackend(c, viewer)  # and the backend refuses one that got through
    with pytest.raises(Forbidden):
        backend.add_text("Sneaked in.")
    with pytest.raises(Forbidden):
        backend.resolve(MISSING, "both_valid")
    with pytest.raises(Forbidden):
        backend.review(MISSING, "confirm")


def test_another_workspaces_ids_answer_not_found_like_missing_ones(
    c: Container, base_url: str, other: Workspace
) -> None:
    async def ids() -> dict[str, str]:
        async with over_http(base_url, _token(c, Role.OWNER)) as mine:
            found = structured(await mine.call_tool("search", {"query": "turbines"}))
            page = structured(await mine.call_tool("list_disagreements", {}))
            entity = structured(await mine.call_tool("look_up_entity", {"name": "Kestrel"}))
            links: list[dict[str, Any]] = []
            for result in found["results"]:
                got = await mine.call_tool("related_items", {"item_id": result["item"]["id"]})
                links = links or structured(got)["related"]
            assert links, "the demo story has related items"
            return {
                "item": found["results"][0]["item"]["id"],
                "contradiction": page["contradictions"][0]["id"],
                "entity": entity["entity"]["id"],
                "relationship": links[0]["id"],
            }

    theirs: dict[str, str] = {}

    async def collect() -> None:
        theirs.update(await ids())

    run(collect)
    calls = {
        "get_item": lambda i: {"item_id": i["item"]},
        "related_items": lambda i: {"item_id": i["item"]},
        "get_disagreement": lambda i: {"contradiction_id": i["contradiction"]},
        "look_up_entity": lambda i: {"entity_id": i["entity"]},
        "resolve_disagreement": lambda i: {
            "contradiction_id": i["contradiction"],
            "resolution": "both_valid",
        },
        "review_relationship": lambda i: {
            "relationship_id": i["relationship"],
            "decision": "reject",
        },
    }
    missing = dict.fromkeys(theirs, MISSING)

    async def scenario() -> None:
        async with over_http(base_url, _token(c, Role.OWNER, workspace=other)) as stranger:
            for name, args in calls.items():
                cross = await stranger.call_tool(name, args(theirs))
                absent = await stranger.call_tool(name, args(missing))
                assert error_code(cross) == error_code(absent) == "not_found", name
                assert cross.content == absent.content, name
            found = structured(await stranger.call_tool("search", {"query": "turbines"}))
            assert found["results"] == []
            page = structured(await stranger.call_tool("list_disagreements", {}))
            assert page["contradictions"] == []
            asked = structured(await stranger.call_tool("ask", {"question": "How many turbines?"}))
            assert asked["sources"] == [] and asked["contradictions"] == []
            assert not any(v in json.dumps(asked) for v in theirs.values())

    run(scenario)


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-a-token", "Basic dXNlcjpwYXNz", "Bearer"],
    ids=["none", "unknown-token", "basic", "empty-bearer"],
)
def test_a_bad_token_is_refused_before_the_mcp_layer(base_url: str, authorization: str) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    resp = httpx.post(f"{base_url}/mcp", json=body, headers=headers, timeout=30)
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert resp.json()["error"]["code"] == "unauthorized"


def test_a_cross_origin_post_is_refused(c: Container, base_url: str) -> None:
    headers = {
        "Authorization": f"Bearer {_token(c, Role.OWNER)}",
        "Origin": "http://evil.example",
        "Accept": "application/json, text/event-stream",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    resp = httpx.post(f"{base_url}/mcp", json=body, headers=headers, timeout=30)
    assert resp.status_code == 403


@pytest.mark.slow
def test_stdio_on_the_local_database(c: Container, other: Workspace) -> None:
    async def scenario() -> None:
        async with over_stdio([], cli_env(c)) as mcp:
            assert await _tool_names(mcp) == READING | WRITING
            found = structured(await mcp.call_tool("search", {"query": "tidal turbines"}))
            first = found["results"][0]["item"]["id"]
            view = structured(await mcp.call_tool("get_item", {"item_id": first}))
            assert view["item"]["id"] == first and view["text"]["text"]
            answer = structured(await mcp.call_tool("ask", {"question": "Who built it?"}))
            assert answer["status"] == "unavailable" and answer["sources"]
            added = structured(await mcp.call_tool("add_text", {"text": "A note from stdio."}))
            assert added["status"] == "pending"
        async with over_stdio(["--read-only"], cli_env(c)) as reader:
            assert await _tool_names(reader) == READING
        # Another workspace of the same database sees none of it.
        async with over_stdio(["--workspace", "other"], cli_env(c)) as elsewhere:
            cross = await elsewhere.call_tool("get_item", {"item_id": first})
            assert error_code(cross) == "not_found"
            found = structured(await elsewhere.call_tool("search", {"query": "tidal turbines"}))
            assert found["results"] == []

    run(scenario)
    events = c.audit.list(c.workspaces.resolve().id, limit=5)
    assert any(e.actor_kind == "cli" for e in events), "a write is audited as the CLI"


@pytest.mark.slow
def test_stdio_against_a_running_server_with_a_token(
    c: Container, base_url: str, other: Workspace
) -> None:
    viewer = _token(c, Role.VIEWER)
    stranger = _token(c, Role.OWNER, workspace=other)

    async def scenario() -> None:
        env = cli_env(c, RELATA_TOKEN=viewer)
        async with over_stdio(["--server", base_url], env) as mcp:
            assert await _tool_names(mcp) == READING
            found = structured(await mcp.call_tool("search", {"query": "tidal turbines"}))
            first = found["results"][0]["item"]["id"]
            view = structured(
                await mcp.call_tool("get_item", {"item_id": first, "include_chunks": True})
            )
            assert view["item"]["id"] == first and view["chunks"]["chunks"]
            page = structured(await mcp.call_tool("list_disagreements", {}))
            assert page["contradictions"]
        async with over_stdio(["--server", base_url, "--token", stranger], cli_env(c)) as theirs:
            cross = await theirs.call_tool("get_item", {"item_id": first})
            assert error_code(cross) == "not_found"

    run(scenario)
