"""Every ``RELATA_*`` environment variable, declared once with its type, default and help.

``load_settings`` reads and validates them all at start-up; a bad value raises ``ConfigError``
naming the variable and what it accepts, so start-up stops with a clear message. The README's
configuration table is generated from ``SETTINGS`` (``relata config --markdown``) and a test
checks the two agree.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from relata.domain.errors import ConfigError

Parser = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class Setting:
    env: str
    field: str
    parse: Parser
    default: str
    accepts: str
    help: str


# ---------------------------------------------------------------- parsers
def _str(value: str) -> str:
    return value


def _nonempty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def _int(lo: int, hi: int) -> Parser:
    def parse(value: str) -> int:
        n = int(value.strip())
        if not lo <= n <= hi:
            raise ValueError(f"out of range {lo}..{hi}")
        return n

    return parse


def _float(lo: float, hi: float) -> Parser:
    def parse(value: str) -> float:
        x = float(value.strip())
        if not lo <= x <= hi:
            raise ValueError(f"out of range {lo}..{hi}")
        return x

    return parse


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in {"1", "true", "yes", "on"}:
        return True
    if v in {"0", "false", "no", "off"}:
        return False
    raise ValueError("not a boolean")


def _choice(*options: str) -> Parser:
    def parse(value: str) -> str:
        v = value.strip().lower()
        if v not in options:
            raise ValueError("unknown value")
        return v

    return parse


def parse_addr(value: str) -> tuple[str, int]:
    """Parse ``host:port`` (IPv6 as ``[::1]:8080``)."""
    v = value.strip()
    host, sep, port_s = v.rpartition(":")
    if not sep or not host or not port_s.isdigit():
        raise ValueError("not host:port")
    port = int(port_s)
    if not 0 < port < 65536:
        raise ValueError("port out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        ipaddress.IPv6Address(host)
    elif not all(c.isalnum() or c in ".-_" for c in host):
        raise ValueError("bad host")
    return host, port


def _url(*schemes: str) -> Parser:
    def parse(value: str) -> str:
        v = value.strip()
        if not v:
            return ""
        parts = urlsplit(v)
        if parts.scheme not in schemes or not parts.netloc:
            raise ValueError("not a URL")
        return v.rstrip("/")

    return parse


def _database_url(value: str) -> str:
    v = value.strip()
    if not v:
        return ""
    scheme = v.split(":", 1)[0]
    if not (scheme.startswith("sqlite") or scheme.startswith("postgresql")):
        raise ValueError("unsupported database")
    return v


# ---------------------------------------------------------------- declarations
SETTINGS: tuple[Setting, ...] = (
    Setting("RELATA_DATA_DIR", "data_dir", _nonempty, "./data", "a directory path",
            "Where the SQLite file, stored originals and caches live."),
    Setting("RELATA_DATABASE_URL", "database_url", _database_url, "",
            "sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB",
            "Authoritative store. Empty means a SQLite file `relata.db` in the data dir."),
    Setting("RELATA_HTTP_ADDR", "http_addr", parse_addr, "127.0.0.1:8080", "host:port",
            "Address the HTTP server listens on."),
    Setting("RELATA_LOG_LEVEL", "log_level", _choice("debug", "info", "warning", "error"),
            "info", "debug, info, warning, error", "Minimum level of log records."),
    Setting("RELATA_LOG_FORMAT", "log_format", _choice("json", "text"), "json", "json, text",
            "Log record format: one JSON object per line, or human-readable text."),
    Setting("RELATA_DEFAULT_WORKSPACE", "default_workspace", _nonempty, "default",
            "a workspace slug", "Slug of the workspace `relata seed` creates and the CLI uses."),
    Setting("RELATA_SHUTDOWN_TIMEOUT", "shutdown_timeout", _float(0, 3600), "30",
            "seconds (0-3600)", "How long in-flight work gets to finish on SIGTERM/SIGINT."),
)


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: str = "./data"
    database_url: str = ""
    http_addr: tuple[str, int] = ("127.0.0.1", 8080)
    log_level: str = "info"
    log_format: str = "json"
    default_workspace: str = "default"
    shutdown_timeout: float = 30.0

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_path / 'relata.db').resolve()}"

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read every declared variable; raise ``ConfigError`` naming the first bad one."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for s in SETTINGS:
        raw = env.get(s.env, s.default)
        try:
            values[s.field] = s.parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{s.env}={raw!r} is invalid ({exc}); it accepts {s.accepts}",
                code="config_error",
            ) from exc
    return Settings(**values)


def markdown_table() -> str:
    """The README's configuration table, generated from the declarations."""
    rows = ["| Variable | Default | Accepts | Meaning |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default else "(empty)"
        rows.append(f"| `{s.env}` | {default} | {s.accepts} | {s.help} |")
    return "\n".join(rows) + "\n"
