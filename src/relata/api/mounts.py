"""The port through which an ASGI endpoint that is not part of ``/api/v1`` plugs into the
HTTP app: the MCP endpoint (``relata.mcp.http.McpEndpoint``, ``api`` never imports it).

A mounted endpoint authenticates its own callers (it is outside the ``/api/v1`` router and
its ``principal`` dependency), sits inside every middleware of the app (request id, logging,
security headers, host and origin checks, body limits: its bodies are of the JSON class,
``RELATA_MAX_JSON_BYTES``), and ``running`` is entered for as long as the app serves.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from starlette.types import Receive, Scope, Send


class Mounted(Protocol):
    #: The exact path it answers (``/mcp``); the web interface leaves it alone.
    path: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def running(self) -> AbstractAsyncContextManager[None]:
        """Entered when the app starts (its lifespan), left when it stops."""
        ...
