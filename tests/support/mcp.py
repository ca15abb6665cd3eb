"""Connecting the MCP SDK's own client to Relata in tests, over both transports.

``serving(c)`` runs the real app (``create_app`` with the ``/mcp`` endpoint, as ``relata
serve`` builds it) under uvicorn on a free loopback port in a thread, for the test's
container; ``over_http(url, token)`` and ``over_stdio(args, env)`` are the SDK's ``Client``
over streamable HTTP (with ``Authorization: Bearer``) and over a ``relata mcp`` subprocess.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.cli.serve import server_config
from relata.mcp.http import McpEndpoint

RELATA = str(Path(sys.executable).with_name("relata"))
_START_SECONDS = 30.0


@contextmanager
def serving(c: Container) -> Iterator[str]:
    """The app with ``/mcp`` served for ``c`` on 127.0.0.1; yields its base URL."""
    app = create_app(c, mcp=McpEndpoint(c))
    config = server_config(app, c.settings.replace(http_addr=("127.0.0.1", 0)))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="mcp-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_SECONDS
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise AssertionError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=_START_SECONDS)


@asynccontextmanager
async def over_http(base_url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


def cli_env(c: Container, **extra: str) -> dict[str, str]:
    """The environment of a ``relata`` subprocess on ``c``'s data dir and database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=c.settings.data_dir,
        RELATA_DATABASE_URL=c.settings.resolved_database_url,
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_VECTOR_STORE=c.settings.vector_store,
        **extra,
    )
    return env


@asynccontextmanager
async def over_stdio(args: list[str], env: dict[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=RELATA, args=["mcp", *args], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def structured(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured content (the tool's output schema), checked against
    the text content the SDK also sends."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return result.structured_content


def error_code(result: CallToolResult) -> str:
    """The REST API's error code a failed call names (``not_found``, ``forbidden``, ...): the
    tool error's text is ``Error executing tool NAME: <code>: <message>``."""
    assert result.is_error, result.structured_content
    text = str(result.content[0].text)  # type: ignore[union-attr]
    found = re.search(r"(?:^|: )([a-z_]+): ", text)
    assert found, text
    return found.group(1)
