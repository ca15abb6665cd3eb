"""The one parser of client instants (``relata.domain.instants``): what it accepts, what it
refuses, and that nothing outside years 1-9999 in UTC gets past it as an ``OverflowError``."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from relata.domain.errors import ValidationError
from relata.domain.instants import parse_instant

OUT_OF_RANGE = [
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59-00:01",
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00.000001+00:01",
]


@pytest.mark.parametrize("raw", OUT_OF_RANGE)
def test_an_instant_with_no_utc_representation_is_refused_naming_the_field(raw: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant(raw, "expires_at")
    assert caught.value.field == "expires_at"
    assert "out of range" in caught.value.message


@pytest.mark.parametrize(
    "value",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(-timedelta(hours=14))),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_a_datetime_a_caller_already_parsed_is_checked_the_same_way(value: datetime) -> None:
    # What pydantic or another parser hands over is normalised here too, not trusted.
    with pytest.raises(ValidationError, match="out of range"):
        parse_instant(value, "expires_at")


def test_the_last_day_as_an_end_of_day_bound_is_refused() -> None:
    with pytest.raises(ValidationError, match="out of range"):
        parse_instant("9999-12-31", "to", end_of_day=True)
    with pytest.raises(ValidationError, match="out of range"):
        parse_instant(date(9999, 12, 31), "to", end_of_day=True)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
        ("0001-01-01", datetime(1, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("9999-12-31T23:59:59+14:00", datetime(9999, 12, 31, 9, 59, 59, tzinfo=UTC)),
        ("2024-05-01T12:00:00", datetime(2024, 5, 1, 12, tzinfo=UTC)),  # naive: UTC
        ("2024-05-01t12:00:00z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00+02:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        (datetime(2024, 5, 1, 12), datetime(2024, 5, 1, 12, tzinfo=UTC)),
        (date(2024, 5, 1), datetime(2024, 5, 1, tzinfo=UTC)),
    ],
)
def test_accepted_instants_come_back_aware_in_utc(raw: object, expected: datetime) -> None:
    value = parse_instant(raw, "from")
    assert value == expected and value is not None and value.tzinfo is UTC


def test_a_bare_date_as_an_end_bound_includes_that_day() -> None:
    assert parse_instant("2024-05-01", "to", end_of_day=True) == datetime(2024, 5, 2, tzinfo=UTC)
    # A date-time is taken as it is.
    end = parse_instant("2024-05-01T08:00:00Z", "to", end_of_day=True)
    assert end == datetime(2024, 5, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    "raw",
    [
        "0000-01-01",
        "0000-12-31T23:59:59Z",
        "10000-01-01",
        "-0001-01-01",
        "2024-02-30",
        "2024-05-01T24:00:00Z",
        "2024-05-01T12:00:00+24:00",
        "2024-05-01 12:00:00",
        " 2024-05-01",
        "20240501",
        "soon",
    ],
)
def test_what_is_not_a_documented_instant_is_refused_naming_the_field(raw: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant(raw, "--since")
    assert caught.value.field == "--since"
    assert "ISO 8601" in caught.value.message


def test_absent_and_empty_are_no_instant_and_other_types_are_refused() -> None:
    assert parse_instant(None, "from") is None
    assert parse_instant("", "from") is None
    with pytest.raises(ValidationError, match="must be an ISO 8601 string"):
        parse_instant(20240501, "from")
