"""Comparable facets of one sentence: dates, quantities, polarity, direction, predicate.

A contradiction Relata can *show* is one between two facets that mean the same thing in
both sources: "March 2019" against "June 2021" for the same event, "12 turbines" against
"6 turbines", "increases" against "decreases", "did not" against "did". ``extract_facets``
reads them from a sentence with regular expressions and small word tables (no model); every
facet keeps its offsets into the sentence so the ledger can point at the words.

* **Dates** (``DateFacet``): "14 March 2019", "March 14, 2019", "March 2019", "Q3 2020",
  "2019-03-14", "in 2021", "2009-2014". A date after "since", "by", "before", "after",
  "until" or in a range is a *bound*, not a point (``exact`` is False): only points are
  compared.
* **Quantities** (``Quantity``): a number (digits, "1,500", "2.5", or a number word up to
  "twenty", the tens, "hundred", "dozen"; "million" and "thousand" scale it) with a unit:
  a known unit (``UNITS``: "%", "fold", "MW", "km", "kg", ...), else the counted noun
  ("12 turbines" -> "turbine"). Each is an interval: an exact value, "about" widens it
  by 10%, "more than" / "at least" / "up to" / "less than" bound one side, "a to b" /
  "a-b" is the range.
* **Polarity** (``negations``): "not", "no", "never", "n't", "neither", "nor", "without",
  "failed to", "unable to", "lack", "absence of", ... ("not only" is not a negation).
* **Direction** (``directions``): increase or decrease words ("higher", "more",
  "elevated", "up-regulates", "promotes" / "lower", "less", "reduced", "inhibits").
* **Predicate**: an event predicate from ``EVENT_PREDICATES`` ("began operating",
  "entered commercial operation", "first connected to the grid" are all
  ``began_operating``), else the stem of the first verb after the subject, else None.

Cues (negations, directions) carry the content terms of their *scope*, the rest of their
clause, so a comparison can ask whether two cues are about the same words.
"""

from __future__ import annotations

import bisect
import enum
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from relata.claims.words import STOP_WORDS, is_content, stem, terms_of, tokens, word_set

FACETS_VERSION: Final = "1"

# ---------------------------------------------------------------------------------- dates

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


_DIGIT: Final = re.compile(r"\d")
_HAS_YEAR: Final = re.compile(r"(?<!\d)(?:1[89]|20)\d\d(?!\d)")


def _dates(sentence: str) -> list[DateFacet]:
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


# ------------------------------------------------------------------------------ quantities

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


def _quantities(sentence: str, dates: list[DateFacet]) -> list[Quantity]:
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


# ------------------------------------------------------------------ polarity and direction


class Direction(enum.IntEnum):
    DECREASE = -1
    INCREASE = 1


#: Words that negate the predicate of their clause. A negation inside a noun phrase ("lack
#: of X", "mice lacking X", "without surgery", "absence of X") names a condition, not a
#: denial, and is not one.
_NEGATORS: Final = word_set("not no never none neither nor cannot nothing nobody lack lacks")
#: Negators that need the next word: "failed to", "unable to".
_NEGATING_PAIRS: Final[dict[str, str]] = {
    "failed": "to",
    "fail": "to",
    "fails": "to",
    "unable": "to",
    "insufficient": "to",
}
_CUE_WORDS: Final = _NEGATORS | _NEGATING_PAIRS.keys()
#: "not only", "no doubt", "lack of": not a negation of what follows.
_NOT_NEGATING_AFTER: Final[dict[str, frozenset[str]]] = {
    "not": frozenset({"only", "just", "merely", "solely", "necessarily", "all"}),
    "no": frozenset({"doubt", "sooner", "less", "more", "later", "longer"}),
    "lack": frozenset({"of"}),
}
#: "but not in X", "whether or not": a contrast with another case, not a denial of the
#: claim's predicate.
_NOT_NEGATING_BEFORE: Final = word_set("but or if whether and than")

_INCREASE_STEMS: Final = frozenset(
    stem(w)
    for w in word_set("""
    increase increases increased increasing rise rises rose risen rising raise raises raised
    elevate elevates elevated higher greater more enhance enhances enhanced enhancement
    promote promotes promoted upregulate upregulates upregulated up-regulate up-regulates
    up-regulated upregulation up-regulation boost boosts boosted augment augments augmented
    accelerate accelerates accelerated stimulate stimulates stimulated amplify amplified
    exacerbate exacerbates exacerbated worsen worsens worsened positively larger longer
    faster stronger expand expands expanded induce induces induced activate activates
    activated
    """)
)
_DECREASE_STEMS: Final = frozenset(
    stem(w)
    for w in word_set("""
    decrease decreases decreased decreasing decline declines declined declining reduce
    reduces reduced reducing reduction lower lowers lowered less fewer inhibit inhibits
    inhibited inhibition suppress suppresses suppressed suppression downregulate
    downregulates downregulated down-regulate down-regulates down-regulated downregulation
    down-regulation attenuate attenuates attenuated diminish diminishes diminished impair
    impairs impaired drop drops dropped fall falls fell fallen slow slows slowed prevent
    prevents prevented negatively smaller shorter weaker deplete depleted depletion
    abolish abolished shrink shrank alleviate alleviates alleviated deactivate deactivates
    deactivated
    """)
)
# Bare "high", "low", "loss", "growth", "positive" are left out: they describe a group or a
# thing ("a high tax rate", "weight loss") far more often than they state a change.
#: "more than 5", "less than 10%": a bound on a number (a quantity facet), not a direction.
_BOUND_OF_NUMBER: Final = re.compile(r"\s+than\s+(?:[$€£~]\s*)?(?:\d|a\s|an\s|one\b|two\b)")
_CLAUSE_BREAK: Final = re.compile(r"[;:,()]|\b(?:but|whereas|while|although|though)\b")
#: How many content words make a cue's target.
TARGET_TERMS: Final = 3


@dataclass(frozen=True, slots=True)
class Cue:
    """A negation or direction word in a sentence, with the content terms of its scope
    (what follows it, up to the end of its clause) and its target: what it negates or
    changes, at most ``TARGET_TERMS`` content words. The target is what follows the cue
    ("reduces *the risk of stroke*", "*no* association"), or, after a copula, the words
    before it ("*tau phosphorylation* was reduced"). ``negated`` marks a direction cue
    that a negation before it in its clause denies ("did not increase")."""

    start: int
    end: int
    text: str
    sign: int
    scope: frozenset[str]
    target: tuple[str, ...] = ()
    negated: bool = False


_COPULAS: Final = word_set("is are was were be been being become became remains remained")
_ADVERB_SKIP: Final = word_set("significantly markedly slightly strongly substantially also not")


class _Words:
    """A sentence's words and clause breaks, read once and shared by the cue readers."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        self.words = list(tokens(sentence))
        self.lowered = [w.lower() for _, _, w in self.words]
        self.lower = frozenset(self.lowered)
        self.breaks = [m.start() for m in _CLAUSE_BREAK.finditer(sentence)]

    def clause(self, at: int) -> tuple[int, int]:
        """The clause around offset ``at``: between the clause breaks either side."""
        i = bisect.bisect_right(self.breaks, at)
        start = self.breaks[i - 1] if i else 0
        end = self.breaks[i] if i < len(self.breaks) else len(self.sentence)
        return start, end

    def cue(self, index: int, end: int, sign: int, negated: bool = False) -> Cue:
        """A cue over the words from ``index`` to offset ``end``, with its scope and target."""
        start = self.words[index][0]
        clause_start, clause_end = self.clause(start)
        after = [
            stem(w)
            for s, e, w in self.words[index:]
            if end <= s and e <= clause_end and is_content(w)
        ]
        target = tuple(dict.fromkeys(after))[:TARGET_TERMS]
        previous = self._previous(index)
        # An adverb cue ("positively associated with") grades what follows it.
        if previous in _COPULAS and not self.lowered[index].endswith("ly"):
            # "was reduced", "were more frequent": the cue is the predicate of a copula and
            # changes its subject (with the adjective it grades, if any).
            following = self.words[index + 1][2] if index + 1 < len(self.words) else ""
            graded = (stem(following),) if following and is_content(following) else ()
            before = [
                stem(w)
                for s, _, w in self.words[:index]
                if s >= clause_start and is_content(w) and w.lower() not in _ADVERB_SKIP
            ]
            target = tuple(dict.fromkeys((*graded, *reversed(before))))[:TARGET_TERMS]
        return Cue(start, end, self.sentence[start:end], sign, frozenset(after), target, negated)

    def _previous(self, index: int) -> str:
        """The word before ``index``, skipping adverbs ("was significantly reduced")."""
        i = index - 1
        while i >= 0 and (self.lowered[i] in _ADVERB_SKIP or self.lowered[i].endswith("ly")):
            i -= 1
        return self.lowered[i] if i >= 0 else ""


def _negations(words: _Words) -> list[Cue]:
    cues: list[Cue] = []
    ws, lowered = words.words, words.lowered
    if not (words.lower & _CUE_WORDS) and "n't" not in words.sentence:
        return cues
    for index, (_, end, _) in enumerate(ws):
        lower = lowered[index]
        following = lowered[index + 1] if index + 1 < len(ws) else ""
        previous = lowered[index - 1] if index else ""
        if lower in _NEGATORS or lower.endswith("n't"):
            if following in _NOT_NEGATING_AFTER.get(lower, frozenset()):
                continue
            if previous in _NOT_NEGATING_BEFORE and lower in ("not", "no"):
                continue
        elif _NEGATING_PAIRS.get(lower) == following and following:
            end = ws[index + 1][1]
        else:
            continue
        cues.append(words.cue(index, end, -1))
    return cues


def _directions(words: _Words, negations: list[Cue]) -> list[Cue]:
    cues: list[Cue] = []
    for index, (start, end, word) in enumerate(words.words):
        s = stem(word)
        sign = 1 if s in _INCREASE_STEMS else -1 if s in _DECREASE_STEMS else 0
        if sign and not _BOUND_OF_NUMBER.match(words.sentence, end):
            clause_start, _ = words.clause(start)
            negated = any(clause_start <= n.start and n.end <= start for n in negations)
            cues.append(words.cue(index, end, sign, negated))
    return cues


# ------------------------------------------------------------------------------ predicates

#: Event predicates: the words a source may use for one kind of event, as one key.
EVENT_PREDICATES: Final[dict[str, re.Pattern[str]]] = {
    "began_operating": re.compile(
        r"\b(?:(?:began|begun|begins|begin|started|starts|start|commenced|commences)\s+"
        r"(?:commercial\s+)?(?:operating|operations?|generating|production|service)"
        r"|(?:entered|enters|entering|enter|came|comes|went|go|goes|put|brought)\s+"
        r"(?:into\s+)?(?:full\s+)?(?:commercial\s+)?(?:operation|service)"
        r"|(?:first\s+)?connected\s+to\s+the\s+(?:\w+\s+)?grid|grid\s+connection"
        r"|commissioned|came\s+on-?\s?line|went\s+(?:live|on-?\s?line)"
        r"|first\s+(?:power|electricity)|start\s+of\s+(?:commercial\s+)?operations?)\b",
        re.IGNORECASE,
    ),
    "founded": re.compile(
        r"\b(?:founded|established|incorporated|set\s+up|formed)\b", re.IGNORECASE
    ),
    "closed": re.compile(
        r"\b(?:closed|shut\s+down|decommissioned|ceased\s+(?:operations?|operating|trading)"
        r"|went\s+bankrupt|dissolved)\b",
        re.IGNORECASE,
    ),
    "acquired": re.compile(r"\b(?:acquired|bought|took\s+over|purchased)\b", re.IGNORECASE),
    "launched": re.compile(r"\b(?:launched|unveiled)\b", re.IGNORECASE),
    "opened": re.compile(r"\b(?:opened|inaugurated)\b", re.IGNORECASE),
    "completed": re.compile(r"\b(?:completed|finished)\b", re.IGNORECASE),
    "appointed": re.compile(r"\b(?:appointed|elected|named\s+as)\b", re.IGNORECASE),
    "born": re.compile(r"\bborn\b", re.IGNORECASE),
    "died": re.compile(r"\b(?:died|passed\s+away)\b", re.IGNORECASE),
}
_AUXILIARIES: Final = word_set(
    """
    is are was were be been being am has have had will would shall should can could may
    might must do does did not also first still now never already recently then just only
    further significantly reportedly currently later originally formally officially often
    usually n't
    """
)


@dataclass(frozen=True, slots=True)
class Predicate:
    """What a statement is about: an event key (``event`` True) or a verb's stem."""

    key: str
    start: int
    end: int
    event: bool


_ANY_EVENT: Final = re.compile(
    "|".join(f"(?P<{key}>{p.pattern})" for key, p in EVENT_PREDICATES.items()), re.IGNORECASE
)
#: One of these words is in every event predicate: a sentence with none is not searched.
_EVENT_WORDS: Final = word_set(
    """
    operating operation operations generating production service grid connection connected
    commissioned online on-line line live power electricity founded established incorporated
    set formed closed shut decommissioned ceased bankrupt dissolved acquired bought took
    purchased launched unveiled opened inaugurated completed finished appointed elected
    named born died passed
    """
)


def event_predicate(sentence: str, lower_words: frozenset[str] | None = None) -> Predicate | None:
    """The first event predicate the sentence names, or None."""
    if lower_words is not None and not (lower_words & _EVENT_WORDS):
        return None
    m = _ANY_EVENT.search(sentence)
    if m is None or m.lastgroup is None:
        return None
    return Predicate(m.lastgroup, m.start(), m.end(), True)


def _head_verb(sentence: str, after: int) -> Predicate | None:
    rest = sentence[after:]
    stop = re.search(r"[,;:.()\[\]\"\u201c\u201d]", rest)
    for start, end, word in tokens(rest[: stop.start()] if stop else rest):
        lower = word.lower()
        if lower in _AUXILIARIES or lower.endswith("ly"):
            continue
        if lower in STOP_WORDS or not word.isalpha() or word[0].isupper():
            return None
        return Predicate(stem(word), after + start, after + end, False)
    return None


# ----------------------------------------------------------------------------- assertion

#: Section labels of structured abstracts and reports whose sentences describe an aim or a
#: method; a finding, conclusion or background sentence is an assertion.
_NON_ASSERTIVE_LABELS: Final = (
    "OBJECTIVE",
    "OBJECTIVES",
    "AIM",
    "AIMS",
    "PURPOSE",
    "METHODS",
    "METHOD",
    "DESIGN",
    "SETTING",
    "PARTICIPANTS",
    "PATIENTS",
    "INTERVENTION",
    "INTERVENTIONS",
    "MEASUREMENTS",
    "MAIN OUTCOME MEASURES",
    "MAIN OUTCOMES AND MEASURES",
    "STUDY DESIGN",
    "DESIGN, SETTING, AND PARTICIPANTS",
)
_LABEL: Final = re.compile(r"^\s*(?P<label>[A-Z][A-Z ,&/]{2,40}[A-Z])(?:\s*[:.-])?\s+(?=[A-Z])")
_AIM: Final = re.compile(
    r"^(?:to\s+(?:determine|evaluate|assess|examine|investigate|compare|test|measure|"
    r"identify|explore|estimate|describe|analy[sz]e|study|characteri[sz]e|establish|review|"
    r"quantify|clarify|address)\b"
    r"|(?:we|this\s+study|this\s+trial|this\s+review|the\s+study|the\s+present\s+study)\s+"
    r"(?:\w+\s+)?(?:examined|investigated|evaluated|assessed|aimed|sought|studied|compared|"
    r"analy[sz]ed|tested|hypothesi[sz]ed|asked|explored|measured|reviewed|conducted|performed|"
    r"designed|used|describe|report|present)\b"
    r"|the\s+(?:aim|objective|purpose|goal)s?\s+of\b|here,?\s+we\s+(?:ask|test|examine)\b)",
    re.IGNORECASE,
)


#: A title names a topic and asserts nothing: "Effect of X on Y", "X vs Y: a randomised
#: trial".
_TITLE: Final = re.compile(
    r"^(?:(?:the\s+)?(?:effects?|role|impact|association|influence|use|evaluation|"
    r"comparison|analysis)\s+of\b)"
    r"|:\s*(?:a|an|the)?\s*(?:[\w-]+\s+){0,4}(?:trial|study|review|meta-analysis|analysis|"
    r"survey|report|cohort)\.?$",
    re.IGNORECASE,
)


def is_assertive(sentence: str) -> bool:
    """Whether a sentence asserts something (not a question, an aim, a method or a
    title)."""
    text = sentence.strip()
    if text.endswith("?") or _TITLE.search(text):
        return False
    label = _LABEL.match(text)
    if label is not None:
        if label.group("label").strip(" ,") in _NON_ASSERTIVE_LABELS:
            return False
        text = text[label.end() :]
    return _AIM.match(text) is None


# ---------------------------------------------------------------------------------- facets


class Polarity(enum.StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"


@dataclass(frozen=True, slots=True)
class Facets:
    """Everything comparable in one sentence; offsets are into that sentence."""

    dates: tuple[DateFacet, ...]
    quantities: tuple[Quantity, ...]
    negations: tuple[Cue, ...]
    directions: tuple[Cue, ...]
    predicate: Predicate | None
    terms: frozenset[str]
    #: The sentence's words, lower case.
    words: frozenset[str] = frozenset()
    #: False for a question, an aim or a method ("To determine whether ...", "We examined
    #: ...", "OBJECTIVE ..."): such a sentence asserts nothing to contradict.
    assertive: bool = True

    @property
    def polarity(self) -> Polarity:
        """Negated when the sentence has an odd number of negation cues."""
        return Polarity.NEGATED if len(self.negations) % 2 else Polarity.AFFIRMED

    @property
    def direction(self) -> Direction | None:
        """The direction every direction cue agrees on, or None (none, or mixed)."""
        signs = {c.sign for c in self.directions}
        return Direction(signs.pop()) if len(signs) == 1 else None

    @property
    def event_dates(self) -> tuple[DateFacet, ...]:
        return tuple(d for d in self.dates if d.exact)


def extract_facets(sentence: str, *, subject_end: int | None = None) -> Facets:
    """The facets of ``sentence``; ``subject_end`` (an offset into it) is where the claim's
    subject ends, after which the head verb is read when no event predicate is named."""
    words = _Words(sentence)
    dates = _dates(sentence)
    predicate = event_predicate(sentence, words.lower)
    if predicate is None and subject_end is not None:
        predicate = _head_verb(sentence, subject_end)
    negations = _negations(words)
    numeric = _DIGIT.search(sentence) is not None or bool(words.lower & _NUMBER_WORDS.keys())
    return Facets(
        dates=tuple(dates),
        quantities=tuple(_quantities(sentence, dates)) if numeric else (),
        negations=tuple(negations),
        directions=tuple(_directions(words, negations)),
        predicate=predicate,
        terms=terms_of(w for _, _, w in words.words),
        words=words.lower,
        assertive=is_assertive(sentence),
    )


def describe(facets: Facets) -> Iterator[str]:
    """Short labels of the facets, for logs of counts and for the ledger's notes."""
    for d in facets.dates:
        yield f"date:{d.label()}"
    for q in facets.quantities:
        yield f"quantity:{q.label()}"
    if facets.negations:
        yield f"polarity:{facets.polarity.value}"
    if facets.direction is not None:
        yield f"direction:{facets.direction.name.lower()}"
    if facets.predicate is not None:
        yield f"predicate:{facets.predicate.key}"
