"""Dates and periods in a sentence, at the precision the text gives them.

"14 March 2019", "March 14, 2019", "March 2019", "Q3 2020", "third quarter of 2020",
"2019-03-14", "in 2021", "(2019)", "2009-2014". Month names are matched capitalised only, so
the modal "may" is never a month; a year counts only after a preposition, in parentheses or
in a range, so "2019 participants" is no date. A date after "since", "by", "before",
"after", "until", or a range, is a *bound*, not a point (``exact`` is False): only points
are compared (``dates_conflict``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_MONTHS: Final[dict[str, int]] = {
    name: index
    for index, names in enumerate(
        (
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sept", "Sep"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ),
        start=1,
    )
    for name in names
}
# Month names are matched capitalised only, so the modal "may" is never a month.
_MONTH: Final = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR: Final = r"(?P<year>1[89]\d\d|20\d\d|2100)"
_DAY: Final = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_QUARTERS: Final[dict[str, int]] = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_BOUND_WORDS: Final = frozenset(
    {"since", "by", "before", "after", "until", "till", "from", "between", "to", "through"}
)

_DATE_PATTERNS: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<mnum>[01]\d)-(?P<day>[0-3]\d)(?!\d)"),
    re.compile(rf"\b{_DAY}\s+{_MONTH},?\s+{_YEAR}\b"),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"),
    re.compile(rf"\bQ(?P<quarter>[1-4])\s+{_YEAR}\b"),
    re.compile(
        rf"\b(?P<qword>first|second|third|fourth)\s+quarter\s+of\s+{_YEAR}\b", re.IGNORECASE
    ),
    re.compile(
        r"(?<![\d.,])(?P<year>1[89]\d\d|20\d\d)\s*(?:-|–|to|and|until)\s*"
        r"(?P<until>1[89]\d\d|20\d\d)(?!\d|[.,]\d)"
    ),
    re.compile(
        r"\b(?P<prep>in|on|since|by|from|until|till|during|before|after|around|circa|early|"
        r"late|mid|of|year)[\s-]+(?:the\s+year\s+)?" + _YEAR + r"(?![\d.,]\d)",
        re.IGNORECASE,
    ),
    re.compile(r"\((?P<year>1[89]\d\d|20\d\d)\)"),
)


@dataclass(frozen=True, slots=True)
class DateFacet:
    """A calendar date or period named in a sentence, at the precision the text gives."""

    start: int
    end: int
    text: str
    year: int
    month: int | None = None
    day: int | None = None
    quarter: int | None = None
    until_year: int | None = None
    #: A point in time ("in June 2021"), not a bound ("since 2017") or a range.
    exact: bool = True

    @property
    def months(self) -> tuple[int, int] | None:
        """The months the date may fall in, or None when only the year is known."""
        if self.month is not None:
            return (self.month, self.month)
        if self.quarter is not None:
            return (3 * self.quarter - 2, 3 * self.quarter)
        return None

    def label(self) -> str:
        if self.day is not None and self.month is not None:
            return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"
        if self.month is not None:
            return f"{self.year:04d}-{self.month:02d}"
        if self.quarter is not None:
            return f"{self.year:04d}-Q{self.quarter}"
        if self.until_year is not None:
            return f"{self.year:04d}..{self.until_year:04d}"
        return f"{self.year:04d}"


def dates_conflict(a: DateFacet, b: DateFacet) -> bool:
    """Whether two point dates cannot be the same day, at the precision both give: "2019"
    and "March 2019" agree, "March 2019" and "June 2021" do not, nor "Q1 2020" and
    "June 2020"."""
    if not (a.exact and b.exact):
        return False
    if a.year != b.year:
        return True
    ma, mb = a.months, b.months
    if ma is None or mb is None:
        return False
    if ma[1] < mb[0] or mb[1] < ma[0]:
        return True
    return a.day is not None and b.day is not None and a.month == b.month and a.day != b.day


_HAS_YEAR: Final = re.compile(r"(?<!\d)(?:1[89]|20)\d\d(?!\d)")


def find_dates(sentence: str) -> list[DateFacet]:
    found: list[DateFacet] = []
    if _HAS_YEAR.search(sentence) is None:  # every pattern names a year: skip the rest
        return found
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(sentence):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            facet = _date(sentence, m)
            if facet is not None:
                found.append(facet)
                taken.append((m.start(), m.end()))
    return sorted(found, key=lambda d: d.start)


def _date(sentence: str, m: re.Match[str]) -> DateFacet | None:
    groups = m.groupdict()
    year = int(groups["year"])
    month = _MONTHS.get(groups["month"]) if groups.get("month") else None
    if groups.get("mnum"):
        month = int(groups["mnum"])
        if not 1 <= month <= 12:
            return None
    day = int(groups["day"]) if groups.get("day") else None
    if day is not None and not 1 <= day <= 31:
        return None
    quarter = int(groups["quarter"]) if groups.get("quarter") else None
    if groups.get("qword"):
        quarter = _QUARTERS[groups["qword"].lower()]
    until = int(groups["until"]) if groups.get("until") else None
    if until is not None and until <= year:
        return None
    prep = (groups.get("prep") or "").lower()
    before = sentence[: m.start()].split()
    previous = before[-1].lower() if before else ""
    exact = until is None and prep not in _BOUND_WORDS and previous not in _BOUND_WORDS
    return DateFacet(
        start=m.start(),
        end=m.end(),
        text=m.group(),
        year=year,
        month=month,
        day=day,
        quarter=quarter,
        until_year=until,
        exact=exact,
    )
