"""Numbers with units in a sentence, each as the interval of values its wording allows.

A number (digits with thousands separators and decimals, a number word up to "twenty", the
tens, "hundred", "dozen"; scaled by "thousand", "million", "billion"; currency signs) with a
unit: a known one (``UNITS``: "%", "fold", "MW", "km", "kg", ...), else the counted noun in
the singular ("12 turbines" -> "turbine", "143 grey seals" -> "seal"). An exact value is
widened by ``DEFAULT_TOLERANCE`` when compared, "about" by ``APPROXIMATE_TOLERANCE``; "more
than" / "at least" / "up to" / "less than" bound one side; "a to b" and "a-b" are ranges.
Numbers inside dates are not quantities.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from relata.claims.dates import DateFacet
from relata.claims.words import STOP_WORDS

_NUMBER_WORDS: Final[dict[str, float]] = {
    word: float(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {
    "thirty": 30.0,
    "forty": 40.0,
    "fifty": 50.0,
    "sixty": 60.0,
    "seventy": 70.0,
    "eighty": 80.0,
    "ninety": 90.0,
    "hundred": 100.0,
    "dozen": 12.0,
}
_SCALES: Final[dict[str, float]] = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "m": 1e6,
    "bn": 1e9,
}
#: Unit spellings -> one symbol. Matched case-sensitively for the short symbols.
UNITS: Final[dict[str, str]] = {
    "%": "%",
    "percent": "%",
    "per cent": "%",
    "fold": "fold",
    "-fold": "fold",
    "times": "fold",
    "MW": "MW",
    "megawatt": "MW",
    "megawatts": "MW",
    "kW": "kW",
    "kilowatt": "kW",
    "kilowatts": "kW",
    "GW": "GW",
    "gigawatt": "GW",
    "gigawatts": "GW",
    "MWh": "MWh",
    "GWh": "GWh",
    "kWh": "kWh",
    "km": "km",
    "kilometre": "km",
    "kilometres": "km",
    "kilometer": "km",
    "kilometers": "km",
    "m": "m",
    "metre": "m",
    "metres": "m",
    "meter": "m",
    "meters": "m",
    "cm": "cm",
    "mm": "mm",
    "kg": "kg",
    "g": "g",
    "mg": "mg",
    "µg": "µg",
    "ug": "µg",
    "ml": "ml",
    "mL": "ml",
    "l": "l",
    "L": "l",
    "year": "year",
    "years": "year",
    "month": "month",
    "months": "month",
    "week": "week",
    "weeks": "week",
    "day": "day",
    "days": "day",
    "hour": "hour",
    "hours": "hour",
    "h": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "second": "second",
    "seconds": "second",
    "s": "second",
    "°C": "°C",
    "mmHg": "mmHg",
    "USD": "USD",
    "EUR": "EUR",
    "GBP": "GBP",
}
_CURRENCY: Final[dict[str, str]] = {"$": "USD", "€": "EUR", "£": "GBP"}
_APPROXIMATE: Final = frozenset(
    {"about", "around", "approximately", "roughly", "nearly", "almost", "some", "circa", "~"}
)
_LOWER_BOUND: Final = ("more than", "over", "at least", "above", "greater than", "exceeding", ">")
_UPPER_BOUND: Final = ("less than", "under", "at most", "up to", "below", "fewer than", "<")
#: An exact value still differs from a rounded one by this much before it conflicts.
DEFAULT_TOLERANCE: Final = 0.01
APPROXIMATE_TOLERANCE: Final = 0.10

_NUM: Final = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_WORDNUM: Final = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_QUANTITY: Final = re.compile(
    rf"(?P<cur>[$€£])?(?<![\w.,\-])(?P<num>{_NUM}|(?i:{_WORDNUM}))"
    rf"(?:\s*(?:-|–|to)\s*(?P<hi>{_NUM}))?"
    rf"(?:\s*(?P<scale>thousand|million|billion|bn)\b)?"
    rf"(?P<unit>\s*(?:%|-fold\b|\s?per ?cent\b)|\s*[A-Za-zµ°][\w°µ/\-]*(?:\s+[a-z][\w\-]*)?)?"
)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit, as the interval of values the text allows."""

    start: int
    end: int
    text: str
    value: float
    unit: str
    low: float
    high: float

    def label(self) -> str:
        shown = f"{self.value:g}"
        return f"{shown}{self.unit}" if self.unit in ("%", "fold") else f"{shown} {self.unit}"


def quantities_conflict(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities of one unit cannot both hold: their intervals, each widened
    by the default tolerance, do not meet."""
    if a.unit != b.unit:
        return False

    def widen(q: Quantity) -> tuple[float, float]:
        return (q.low - abs(q.low) * DEFAULT_TOLERANCE, q.high + abs(q.high) * DEFAULT_TOLERANCE)

    (alo, ahi), (blo, bhi) = widen(a), widen(b)
    return ahi < blo or bhi < alo


def _number(text: str) -> float | None:
    word = text.lower()
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    try:
        return float(text.replace(",", ""))
    except ValueError:  # pragma: no cover - the pattern only matches numbers
        return None


def _unit(raw: str) -> tuple[str, int] | None:
    """(normalised unit, characters used) of the text after a number, or None."""
    stripped = raw.lstrip()
    lead = len(raw) - len(stripped)
    if not stripped:
        return None
    if stripped.startswith("%"):
        return "%", lead + 1
    for spelling in ("-fold", "per cent", "percent"):
        if stripped.lower().startswith(spelling):
            return UNITS[spelling], lead + len(spelling)
    words = stripped.split()
    first = words[0].rstrip(".,;:)")
    if first in UNITS:
        return UNITS[first], lead + len(first)
    if first.lower() in UNITS and len(first) > 2:
        return UNITS[first.lower()], lead + len(first)
    if not first.isalpha() or first.lower() in STOP_WORDS or first[0].isupper():
        return None
    # A counted noun: "12 turbines"; "143 grey seals" counts the plural after an adjective.
    if len(words) > 1:
        second = words[1].rstrip(".,;:)")
        if (
            second.isalpha()
            and second.islower()
            and second.endswith("s")
            and not first.endswith("s")
            and second not in STOP_WORDS
        ):
            return singular(second), lead + raw.lstrip().find(second) + len(second)
    return singular(first), lead + len(first)


def singular(noun: str) -> str:
    """A counted noun's singular, lower case ("turbines" -> "turbine")."""
    w = noun.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        return w[:-1]
    return w


def find_quantities(sentence: str, dates: list[DateFacet]) -> list[Quantity]:
    found: list[Quantity] = []
    for m in _QUANTITY.finditer(sentence):
        if any(m.start("num") < d.end and d.start < m.end("num") for d in dates):
            continue
        value = _number(m.group("num"))
        if value is None:
            continue
        scale = _SCALES.get((m.group("scale") or "").lower(), 1.0)
        unit = (_CURRENCY[m.group("cur")], 0) if m.group("cur") else _unit(m.group("unit") or "")
        if unit is None:
            continue
        if m.group("num").isalpha() and unit[0] in ("%", "fold") and m.group("num") == "one":
            continue
        end = m.end("scale") if m.group("scale") else m.end("hi") if m.group("hi") else m.end("num")
        if not m.group("cur") and m.group("unit"):
            end = m.start("unit") + unit[1]
        start = m.start("cur") if m.group("cur") else m.start("num")
        v = value * scale
        low = high = v
        if m.group("hi"):
            high = float(m.group("hi").replace(",", "")) * scale
            if high < low:
                continue
        low, high = _bounded(sentence[:start], low, high)
        found.append(Quantity(start, end, sentence[start:end], v, unit[0], low, high))
    return found


def _bounded(before: str, low: float, high: float) -> tuple[float, float]:
    lead = before.lower().rstrip()
    last = lead.split()[-1] if lead.split() else ""
    if last in _APPROXIMATE or lead.endswith("~"):
        return low - abs(low) * APPROXIMATE_TOLERANCE, high + abs(high) * APPROXIMATE_TOLERANCE
    if lead.endswith(_LOWER_BOUND):
        return low, math.inf
    if lead.endswith(_UPPER_BOUND):
        return -math.inf, high
    return low, high


_DIGIT: Final = re.compile(r"\d")


def may_have_numbers(sentence: str, lower_words: frozenset[str]) -> bool:
    """Whether the sentence has a digit or a number word: if not, it has no quantity."""
    return _DIGIT.search(sentence) is not None or bool(lower_words & _NUMBER_WORDS.keys())
