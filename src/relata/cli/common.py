"""Shared CLI plumbing: settings, the container, and turning errors into exit codes."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from relata.bootstrap import Container, build
from relata.config.settings import Settings, load_settings
from relata.domain.errors import ConfigError, RelataError
from relata.observability.logging import configure_logging


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


Handler = Callable[[argparse.Namespace], int]


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        raise CliError(f"configuration error: {exc.message}", exit_code=2) from exc


@contextmanager
def open_container(*, log: bool = True) -> Iterator[Container]:
    settings = settings_or_exit()
    if log:
        configure_logging(settings.log_level, settings.log_format)
    container = build(settings)
    try:
        yield container
    finally:
        container.close()


def run_command(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except RelataError as exc:
        raise CliError(exc.message, exit_code=2 if isinstance(exc, ConfigError) else 1) from exc
