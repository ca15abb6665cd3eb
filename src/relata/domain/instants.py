"""Instants a client sends: the one parser every entry point uses (API, web, CLI, services).

``parse_instant`` takes an ISO 8601 date (``2024-05-01``) or an RFC 3339 date-time whose
offset may be left out (``2024-05-01T12:00:00``, then UTC; ``t`` and ``z`` may be lower
case), or a ``datetime``/``date`` a caller already holds, and answers an aware UTC
``datetime``. Whatever has no UTC representation within years 1-9999
(``9999-12-31T23:59:59-14:00``, ``0001-01-01T00:00:00+01:00``, the day after 9999-12-31 as
an end-of-day bound) is a ``ValidationError`` naming the field here, never an
``OverflowError`` deep inside a comparison, the database adapter or a template. Only the
empty string means "none given"; whitespace around a value, week dates, the basic format
and a space for the ``T`` are errors, as in the OpenAPI formats.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from relata.domain.errors import ValidationError

# A date, or a date-time with seconds and an optional offset (RFC 3339 with the offset
# optional). Nothing else, so what is accepted is exactly what the OpenAPI document says.
_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}(?P<time>[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?)?"
)
RANGE = "0001-01-01 and 9999-12-31 in UTC"


def parse_instant(raw: object, field: str, *, end_of_day: bool = False) -> datetime | None:
    """``raw`` as an aware UTC datetime; None when absent or the empty string.

    Naive means UTC. A bare date is its midnight, or with ``end_of_day`` the next midnight,
    so that ``to=2024-05-01`` (or an expiry on that day) includes that day.
    """
    if raw is None or raw == "":
        return None
    is_date = False
    if isinstance(raw, datetime):
        value = raw
    elif isinstance(raw, date):
        value, is_date = datetime.combine(raw, time(0)), True
    elif isinstance(raw, str):
        value, is_date = _iso(raw, field)
    else:
        raise ValidationError(f"{field} must be an ISO 8601 string", field=field)
    try:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if end_of_day and is_date:
            value += timedelta(days=1)
    except OverflowError:
        raise ValidationError(
            f"{field} is out of range: it must fall between {RANGE}", field=field
        ) from None
    return value


def _iso(raw: str, field: str) -> tuple[datetime, bool]:
    """The parsed value and whether it was a bare date (see ``_INSTANT``)."""
    m = _INSTANT.fullmatch(raw)
    try:
        if m is None:
            raise ValueError(raw)
        if m.group("time") is None:
            return datetime.combine(date.fromisoformat(raw), time(0)), True
        return datetime.fromisoformat(raw.upper()), False
    except ValueError:
        raise ValidationError(
            f"{field} must be an ISO 8601 date or date-time, e.g. 2024-05-01 or "
            "2024-05-01T12:00:00Z",
            field=field,
        ) from None
