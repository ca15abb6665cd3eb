"""``relata mcp``: Relata's tools for an AI agent over MCP's stdio transport
(``relata.mcp.tools``).

On the local database, as the other commands use it (``--workspace``, all tools unless
``--read-only``: the person running the command already holds the data), or against a
running Relata with ``--server URL`` and an API token (``--token``, or the environment
variable ``RELATA_TOKEN`` so it stays out of process listings), through ``relata.client``:
then the server scopes every call by the token, and a viewer's token gets only the reading
tools. Standard output carries the protocol and nothing else.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from relata.cli.common import CliError, add_workspace_option

HELP = "serve Relata's tools to an AI agent over MCP (stdio)"
TOKEN_ENV = "RELATA_TOKEN"  # noqa: S105 (the name of a variable, not a secret)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help=HELP,
        description="Serve Relata's MCP tools (search, ask, items, disagreements, entities, "
        "related items; adding text, resolving and reviewing unless read-only) on standard "
        "input and output, for an agent that starts this command. By default on the local "
        "database; with --server, against a running Relata with an API token.",
    )
    add_workspace_option(p)
    p.add_argument(
        "--read-only", action="store_true", help="offer only the tools that read (local mode)"
    )
    p.add_argument(
        "--server",
        metavar="URL",
        help="a running Relata (http://host:port) instead of the local database",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"API token for --server (default: the environment variable {TOKEN_ENV})",
    )
    p.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    import anyio

    if args.server:
        if args.workspace:
            raise CliError("--workspace is for the local database; a token names its workspace")
        token = args.token or os.environ.get(TOKEN_ENV, "")
        if not token.strip():
            raise CliError(f"--server needs an API token: --token or {TOKEN_ENV}")
        anyio.run(_remote, args.server, token)
    else:
        if args.token:
            raise CliError("--token goes with --server")
        _local(args.workspace, args.read_only)
    return 0


def _local(workspace: str | None, read_only: bool) -> None:
    import anyio

    from relata.api.deps import Principal
    from relata.cli.common import open_container
    from relata.domain.vocabulary import Role
    from relata.mcp.backend import LocalBackend
    from relata.mcp.tools import build_server

    # The database and workspace are checked before the protocol starts, so a missing
    # database is the one-line error every reading command gives.
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(workspace)
        principal = Principal(
            workspace_id=ws.id,
            workspace_slug=ws.slug,
            user_id=None,
            kind="cli",
            role=Role.VIEWER if read_only else Role.OWNER,
        )
        backend = LocalBackend(c, principal)
        server = build_server(lambda _: backend, writes=not read_only)
        anyio.run(server.run_stdio_async)


async def _remote(url: str, token: str) -> None:
    from relata.client import RelataClient
    from relata.domain.errors import RelataError
    from relata.domain.vocabulary import Role
    from relata.mcp.tools import build_server

    with RelataClient(url, token) as client:
        try:
            role = Role(client.me().workspace.role)
        except RelataError as exc:
            raise CliError(f"{url}: {exc.message}") from None
        server = build_server(lambda _: client, writes=role.at_least(Role.EDITOR))
        await server.run_stdio_async()
