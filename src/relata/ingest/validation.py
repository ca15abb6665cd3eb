"""Validation of what a caller sends with an ingestion: title, metadata, creation date, flags,
and the display filename. Every failure is a ``ValidationError`` naming the field.

The rules (docs/decisions/0010-ingestion-pipeline.md):

- ``title``: at most 500 characters after trimming, no control characters. Absent or blank
  means "choose one": the parsed document's title, else the filename, else the first line.
- ``metadata``: a flat map of at most 32 string keys (``[A-Za-z0-9_.-]``, 1-64 characters)
  to string values (at most 1024 characters, no control characters but tab and newlines).
- ``created_at``: ISO 8601 (a date, or a date and time); without a timezone it is taken as
  UTC; not more than one day in the future.
- Every instant a caller sends (``created_at`` here; the ``from``/``to`` filters, audit
  bounds and token expiries elsewhere) goes through ``relata.domain.instants.parse_instant``:
  an out-of-range instant is a 400 naming the field, never an overflow deep inside.
- The display filename is kept as given (``../``, odd Unicode and all) except what would
  mislead or break a reader: control characters (C0, DEL, C1) and the Unicode bidirectional
  controls (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069, which can make ``evil‮fdp.exe``
  display as ``evilexe.pdf``) are removed, lone surrogates become U+FFFD, and it is cut to
  255 characters. The name is sanitised rather than refused because it is only a label: the
  upload itself is fine. It is never used to build a path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from relata.domain.errors import ValidationError
from relata.domain.instants import parse_instant
from relata.domain.models import SourceType

MAX_TITLE_CHARS = 500
MAX_METADATA_KEYS = 32
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 1024
MAX_FILENAME_CHARS = 255
MAX_FUTURE = timedelta(days=1)
UNTITLED = "Untitled"

_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# C0 controls, DEL and C1 controls; the value check allows tab, LF and CR.
_TITLE_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_VALUE_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
# What a display name loses: controls, and the bidi controls that reorder what is shown.
_MISLEADING = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

#: The safe media type served for each detected type (never the client's Content-Type).
MEDIA_TYPES: dict[SourceType, str] = {
    SourceType.TEXT: "text/plain",
    SourceType.MARKDOWN: "text/markdown",
    SourceType.JSON: "application/json",
    SourceType.PDF: "application/pdf",
    SourceType.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    # An HTML original is served as text, never as a page a browser would run (ADR 0035).
    SourceType.HTML: "text/plain",
    SourceType.CSV: "text/csv",
    SourceType.TSV: "text/tab-separated-values",
    SourceType.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    SourceType.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    SourceType.EMAIL: "message/rfc822",
}


def validate_title(raw: object) -> str | None:
    """The trimmed title, or None when absent or blank (a default is chosen later)."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValidationError("title must be a string", field="title")
    title = raw.strip()
    if not title:
        return None
    if len(title) > MAX_TITLE_CHARS:
        raise ValidationError(
            f"title must be at most {MAX_TITLE_CHARS} characters (got {len(title)})",
            field="title",
        )
    if _TITLE_CONTROL.search(title):
        raise ValidationError("title must not contain control characters", field="title")
    return title


def title_from(text: str | None) -> str | None:
    """A title made from arbitrary text (a filename, a document title, a first line): one
    line, control characters dropped, cut to the limit; None when nothing is left."""
    if not text:
        return None
    line = " ".join(_TITLE_CONTROL.sub(" ", _UNSTORABLE.sub("\ufffd", text)).split())
    if len(line) > MAX_TITLE_CHARS:
        line = line[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return line or None


def title_from_filename(filename: str | None) -> str | None:
    """The last path segment of a display filename, as a title."""
    if not filename:
        return None
    last = re.split(r"[/\\]", filename)[-1]
    return title_from(last) or title_from(filename)


def validate_metadata(raw: object) -> dict[str, str]:
    """A flat string map; a JSON object given as text (a form field) is decoded first."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ValidationError(
                "metadata must be a JSON object of string values", field="metadata"
            ) from None
    if not isinstance(raw, Mapping):
        raise ValidationError("metadata must be an object of string values", field="metadata")
    if len(raw) > MAX_METADATA_KEYS:
        raise ValidationError(
            f"metadata must have at most {MAX_METADATA_KEYS} keys (got {len(raw)})",
            field="metadata",
        )
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValidationError(
                f"metadata keys must be 1-{MAX_METADATA_KEY_CHARS} characters of "
                "letters, digits, '_', '.' or '-'",
                field="metadata",
            )
        if not isinstance(value, str):
            raise ValidationError(f"metadata value of {key!r} must be a string", field="metadata")
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise ValidationError(
                f"metadata value of {key!r} must be at most {MAX_METADATA_VALUE_CHARS} characters",
                field="metadata",
            )
        if _VALUE_CONTROL.search(value) or _UNSTORABLE.search(value):
            raise ValidationError(
                f"metadata value of {key!r} must not contain control characters",
                field="metadata",
            )
        out[key] = value
    return out


def parse_created_at(raw: object, now: datetime) -> datetime | None:
    """ISO 8601 date or date-time; naive means UTC; at most a day ahead of ``now``."""
    value = parse_instant(raw, "created_at")
    if value is not None and value > now + MAX_FUTURE:
        raise ValidationError(
            "created_at must not be more than one day in the future", field="created_at"
        )
    return value


def parse_bool(raw: object, field: str) -> bool:
    """A boolean from JSON or a form field (true/false, 1/0, yes/no, on/off)."""
    if raw is None or raw == "":
        return False
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        v = raw.strip().lower()
        if v in {"1", "true", "yes", "on"}:
            return True
        if v in {"0", "false", "no", "off"}:
            return False
    raise ValidationError(f"{field} must be true or false", field=field)


def display_filename(raw: str | None) -> str | None:
    """The filename as the user gave it, for display only (see the module docstring)."""
    if raw is None or raw == "":
        return None
    return display_safe(raw)[:MAX_FILENAME_CHARS] or None


def display_safe(text: str) -> str:
    """``text`` without control and bidi-control characters, lone surrogates as U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", _MISLEADING.sub("", text))
