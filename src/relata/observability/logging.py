"""Structured logging on the standard library.

Records are JSON objects (or plain text) with the correlation id attached. Callers pass
structured fields through ``extra={"fields": {...}}``; never document content, prompts with
user content, secrets or tokens (the field names below are refused as a backstop).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from relata.observability.context import get_correlation_id

_FORBIDDEN_FIELDS = frozenset(
    {"text", "content", "prompt", "password", "token", "api_key", "authorization", "secret"}
)


class _CorrelationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = get_correlation_id()
        return True


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    raw = getattr(record, "fields", None)
    if not isinstance(raw, dict):
        return {}
    return {k: ("[redacted]" if k.lower() in _FORBIDDEN_FIELDS else v) for k, v in raw.items()}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        cid = getattr(record, "correlation_id", None)
        if cid:
            out["request_id"] = cid
        out.update(_fields(record))
        if record.exc_info and record.exc_info[0] is not None:
            out["error_type"] = record.exc_info[0].__name__
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S")
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        cid = getattr(record, "correlation_id", None)
        line = f"{ts} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if cid:
            line += f" request_id={cid}"
        if extra:
            line += " " + extra
        if record.exc_info and record.exc_info[0] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    """Install one handler on the root logger (idempotent)."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_relata", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_CorrelationFilter())
    handler._relata = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's access log would duplicate ours and log raw query strings.
    logging.getLogger("uvicorn.access").disabled = True
    logging.getLogger("alembic").setLevel(logging.WARNING)
