"""``/mcp`` in ``relata serve``: the MCP streamable-HTTP transport, authenticated with API
tokens (``Authorization: Bearer``), each call scoped to the token's workspace and role exactly
as the REST API is (``relata.api.deps.token_principal``, then the REST handlers through
``relata.mcp.backend.LocalBackend``).

- No cookie is looked at: a browser cannot ride a signed-in session into ``/mcp``, so the
  CSRF rule of cookie-authenticated writes has nothing to guard here; the app's host and
  origin checks still apply (a cross-origin POST is refused before it arrives).
- A missing, malformed, unknown, expired or revoked token is 401 in the API's error shape
  with ``WWW-Authenticate: Bearer``, before the MCP layer reads the body. The body itself is
  bounded by the app's body limits (the JSON class, ``RELATA_MAX_JSON_BYTES``) and again by
  the SDK with the same number.
- Stateless, JSON responses: every POST stands alone (any process of a deployment can answer
  it; nothing is kept between calls). A viewer's token is served by a server without the
  writing tools (they are not even listed); an editor's or owner's by one with them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from relata.api.deps import Principal, token_principal
from relata.api.errors import domain_error_response
from relata.domain.errors import RelataError, Unauthenticated
from relata.domain.vocabulary import Role
from relata.mcp.backend import Backend, LocalBackend
from relata.mcp.tools import build_server

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from relata.bootstrap import Container

PATH = "/mcp"
_STATE_KEY = "relata_principal"
_NO_CREDENTIALS = "send Authorization: Bearer <API token> (relata tokens create, or Settings)"


def _manager(server: MCPServer[Any], max_body: int) -> StreamableHTTPSessionManager:
    # streamable_http_app builds the session manager; its own Starlette app is not used (we
    # route /mcp ourselves, inside the app's middleware). The SDK's host/origin checks stay
    # off: the app's HostOriginMiddleware already applied RELATA_ALLOWED_HOSTS.
    server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=max_body,
    )
    return server.session_manager


def _bearer(scope: Scope) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == b"authorization":
            header: str = value.decode("latin-1")
            scheme, _, secret = header.partition(" ")
            if scheme.lower() == "bearer" and secret.strip():
                return secret.strip()
            break
    raise Unauthenticated(_NO_CREDENTIALS)


class McpEndpoint:
    """The ASGI endpoint at ``/mcp`` (a ``relata.api.mounts.Mounted``)."""

    path = PATH

    def __init__(self, container: Container) -> None:
        self.c = container
        max_body = container.settings.max_json_bytes
        self._reader = _manager(build_server(self._backend, writes=False), max_body)
        self._writer = _manager(build_server(self._backend, writes=True), max_body)

    def _backend(self, ctx: Context) -> Backend:
        request = ctx.request_context.request
        principal = getattr(getattr(request, "state", None), _STATE_KEY, None)
        if not isinstance(principal, Principal):  # only reachable through __call__
            raise Unauthenticated(_NO_CREDENTIALS)
        return LocalBackend(self.c, principal)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self._reader.run())
            await stack.enter_async_context(self._writer.run())
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            principal = await run_in_threadpool(token_principal, self.c, _bearer(scope))
        except RelataError as exc:  # 401 carries WWW-Authenticate: Bearer (api.errors)
            await domain_error_response(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})[_STATE_KEY] = principal
        manager = self._writer if principal.role.at_least(Role.EDITOR) else self._reader
        await manager.handle_request(scope, receive, send)
