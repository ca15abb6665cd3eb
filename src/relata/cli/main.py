"""Entry point of the ``relata`` command: parses arguments and dispatches to a command module.

Each command module exposes ``register(subparsers)``; the order of ``_COMMANDS`` is the order
``relata --help`` lists them. Command modules import only what their parsers need; handlers
import the rest, so ``relata --help`` starts without the database, vector or model stacks.
A ``Deferred`` command's module is imported only when that command runs: until then it is
listed with its one-line help (a test checks it matches the module's). That is for modules
that load a heavy stack at import: the benchmark drivers, ``mcp`` (the MCP SDK), and ``ask``,
whose response schema brings the whole answer stack (analysis service, provider plumbing,
httpx) with it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from relata.cli import (
    accounts,
    admin,
    audit,
    backup,
    claims,
    doctor,
    entities,
    exchange,
    ingest,
    inspect,
    items,
    jobs,
    reembed,
    relationships,
    reprocess,
    search,
    serve,
    transfer,
    watch,
    workspaces,
)
from relata.cli.common import CliError, run_command


@dataclass(frozen=True, slots=True)
class Deferred:
    name: str
    module: str
    help: str


_ASK = Deferred("ask", "relata.cli.ask", "answer a question from a workspace, citing its sources")
_BENCH = Deferred(
    "bench",
    "relata.cli.bench",
    "benchmarks: ingestion, embedding, retrieval, text legs, entities, contradictions, "
    "conflicts, relationships, load, serve, scale",
)

_MCP = Deferred("mcp", "relata.cli.mcp", "serve Relata's tools to an AI agent over MCP (stdio)")

_COMMANDS: tuple[ModuleType | Deferred, ...] = (
    serve,
    jobs,
    ingest,
    watch,
    items,
    reprocess,
    inspect,
    search,
    _ASK,
    _MCP,
    entities,
    claims,
    relationships,
    reembed,
    audit,
    accounts,
    workspaces,
    doctor,
    _BENCH,
    admin,
    transfer,
    backup,
    exchange,
)


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (the top-level parser has no options taking a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relata",
        description="Relata: a self-hosted, evidence-grounded knowledge system. "
        "`relata COMMAND --help` describes a command; `relata config` shows which data dir "
        "and database the commands use.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = _command_name(argv)
    for entry in _COMMANDS:
        if not isinstance(entry, Deferred):
            entry.register(sub)
        elif entry.name == wanted:
            importlib.import_module(entry.module).register(sub)
        else:
            sub.add_parser(entry.name, help=entry.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    try:
        return run_command(args)
    except CliError as exc:
        print(f"relata: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("relata: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`relata search ... | head`): not an error worth a traceback.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
