"""Entry point of the ``relata`` command: parses arguments and dispatches to a command module.

Each command module exposes ``register(subparsers)``; the order of ``_COMMANDS`` is the order
``relata --help`` lists them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from relata.cli import admin, ask, bench, ingest, inspect, jobs, reembed, search, serve
from relata.cli.common import CliError, run_command

_COMMANDS = (serve, jobs, ingest, inspect, search, ask, reembed, bench, admin)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relata", description="Relata: a self-hosted, evidence-grounded knowledge system."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return run_command(args)
    except CliError as exc:
        print(f"relata: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (`relata search ... | head`): not an error worth a traceback.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
