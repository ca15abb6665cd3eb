"""Query parameters several endpoints share, declared once so their bounds and formats are
the same everywhere and appear in the OpenAPI document.

- ``Offset``: paging offsets are bounded (``MAX_OFFSET``): a client cannot ask for a row
  number the database cannot represent, and nobody pages a million rows deep.
- ``from``/``to`` instants are documented as a date or a date-time and parsed by the one
  helper every instant goes through (``relata.domain.instants.parse_instant``): naive means
  UTC, a bare date as ``to`` includes that day, and anything outside years 1-9999 in UTC is
  a 400 naming the parameter. A blank value is no bound, as if absent (an empty form field).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Query
from pydantic import WithJsonSchema

from relata.domain.instants import parse_instant

#: The deepest offset any list accepts.
MAX_OFFSET = 1_000_000

INSTANT_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "format": "date"},
        {"type": "string", "format": "date-time"},
        {
            "type": "string",
            "pattern": r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?$",
            "description": "a date-time without an offset: UTC",
        },
        {"type": "string", "maxLength": 0, "description": "blank: none given"},
    ]
}

#: An instant as sent: ISO 8601 date or date-time (RFC 3339), parsed by ``instant``.
Instant = Annotated[str, WithJsonSchema(INSTANT_SCHEMA)]

FromParam = Annotated[
    Instant | None,
    Query(alias="from", description="created at or after this date or date-time (UTC if naive)"),
]
#: ``offset``: how many results to skip, bounded by ``MAX_OFFSET``.
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description=f"results to skip (0-{MAX_OFFSET})")]

ToParam = Annotated[
    Instant | None,
    Query(description="created before this date-time; a bare date includes that day"),
]


def instant(value: str | None, name: str, *, end: bool = False) -> datetime | None:
    """A ``from``/``to`` parameter as an aware UTC datetime (see the module docstring)."""
    return parse_instant(value, name, end_of_day=end)
