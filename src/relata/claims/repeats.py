"""Repeated sentences: the key a sentence shares with its repeats whatever values they carry
(docs/decisions/0039-changed-facts-in-repeated-sentences.md).

A second report often repeats a sentence of an earlier one with one value changed ("began
operating in March 2019" / "in June 2021"; "employs 1,200 people" / "1,400 people"). Such a
pair may share no entity the stage found, and a changed year of a verb that names no event is
no facet the subject rules compare, so a repeated sentence is found by its **repeat key**:

* the sentence is read as words (``_TOKEN``): case, white space and punctuation do not count,
  "%" reads as "percent" (so "40%" and "40 percent" are one thing);
* its **values** are masked, each by its kind: a **year** (1000-2199, written without
  separators), a **month** name, a **day** of the month (a number of 1-31 next to a month,
  or an ordinal: "14th"), a **weekday**, or a **number** (digits, with thousands separators
  or decimals, or a number word "one" .. "twenty", "thirty" .. "ninety");
* a negator ("not", "never", "-n't", "cannot") is left out of the key and counted, so a
  negated repeat has the same key and a different **polarity**;
* a number that names something rather than counts it ("Unit 3", "Article 5", "No. 4":
  after a capitalised word inside the sentence, or after a word of ``_LABELS``) is kept in
  the key as written, so "Unit 3" and "Unit 4" are different sentences, not a changed value;
* units and every other word stay in the key: "12 MW" and "12 GW" are different facts;
* letters and digits run together with a letter before a digit ("NCT00052026", "H4", "3T3")
  are an identifier: one word of the key as written, never a value.

A sentence is **repeatable** when it has at least one value and at least ``MIN_CONTEXT``
other words (``MIN_DISTINCT`` of them different): a short sentence says too little for two
of them to be the same statement by chance. The key is a digest of the masked words and
``REPEAT_VERSION``; the values, in order, are what ``relata.claims.changed`` compares.
"""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Final

from relata.claims.words import STOP_WORDS, word_set

REPEAT_VERSION: Final = "2"
#: The subject of a claim that is only a repeatable sentence (it names no entity): the key
#: after this prefix, so such claims never meet an entity's claims in the subject index.
REPEAT_SUBJECT_PREFIX: Final = "~r:"
#: Words other than values a repeatable sentence has at least, and how many different.
MIN_CONTEXT: Final = 6
MIN_DISTINCT: Final = 5
#: Sentences longer than this are not keyed (a bound on the work per sentence).
MAX_CHARS: Final = 1_000
#: Values one sentence carries at most (a table row flattened into a sentence is no statement).
MAX_VALUES: Final = 12


class ValueKind(enum.StrEnum):
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    WEEKDAY = "weekday"
    NUMBER = "number"


@dataclass(frozen=True, slots=True)
class Value:
    """One masked value: its kind, its normalised value, and where the sentence writes it."""

    kind: ValueKind
    value: float
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Repeat:
    """A repeatable sentence's key, its values in order, how many negators it has, and its
    masked words (what the key is a digest of; shown as the subject of a disagreement)."""

    key: str
    values: tuple[Value, ...]
    negated: bool
    masked: str
    #: The sentence as written, values replaced by "…", white space collapsed.
    display: str = ""

    @property
    def subject(self) -> str:
        return REPEAT_SUBJECT_PREFIX + self.key

    def label(self, limit: int = 80) -> str:
        """The sentence as a short display name: values read "…"."""
        text = self.display or re.sub(r"<\w+>", "…", self.masked)
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_TOKEN: Final = re.compile(
    # An identifier first: letters and digits run together with a letter before a digit
    # ("NCT00052026", "H4", "G94P", "3T3", "B3-Galectin"'s "B3") names something and is a
    # word of the key as written, never a value: two trial registrations are no changed count.
    r"(?:\d+)?[^\W\d_]+\d[^\W_]*"
    r"|\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|[^\W\d_]+(?:['\u2019][^\W\d_]+)*|%",
    re.IGNORECASE,
)
_MONTHS: Final = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march",),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
#: Month names that are also common words: a month only next to a number.
_AMBIGUOUS_MONTHS: Final = frozenset({"may", "march", "jan", "sep", "dec", "jun", "jul", "oct"})
_WEEKDAYS: Final = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_ABBREVIATED_WEEKDAYS: Final = frozenset(k for k in _WEEKDAYS if not k.endswith("day"))
_UNITS: Final = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_TENS: Final = "thirty forty fifty sixty seventy eighty ninety"
_NUMBER_WORDS: Final = {w: i for i, w in enumerate(_UNITS.split())} | {
    w: 10 * (i + 3) for i, w in enumerate(_TENS.split())
}
_NEGATORS: Final = word_set("not never cannot")
#: Words after which a number names something (a label), not a quantity.
_LABELS: Final = word_set(
    """
    no number unit units phase line article section clause chapter page pages item items
    table figure fig route platform gate room block lot case level grade stage step version
    rule part annex appendix schedule paragraph para series model type class
    """
)
#: Words that may open a sentence before a value ("In 2019", "About 40"): not a label.
_LEADING: Final = STOP_WORDS | word_set(
    "nearly almost about around over under some since until from by during after before"
)
_ORDINAL: Final = re.compile(r"^(\d+)(st|nd|rd|th)$", re.IGNORECASE)


def _number(raw: str) -> float | None:
    """Digits with thousands separators or a decimal point as a number ("1,200" is 1200,
    "3.5" is 3.5, "1,5" is 1.5)."""
    text = raw
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", text):
        text = text.replace(",", "")
    elif re.fullmatch(r"\d+,\d{1,2}", text):
        text = text.replace(",", ".")
    elif "," in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _is_month(lowered: list[str], found: list[tuple[int, int, str]], i: int) -> bool:
    """A month name; one that is also a common word ("may", "march") only next to a
    number or capitalised inside the sentence."""
    low = lowered[i]
    if low not in _MONTHS:
        return False
    if low not in _AMBIGUOUS_MONTHS:
        return True
    if i > 0 and found[i][2][:1].isupper() and not found[i][2].isupper():
        return True
    return any(0 <= j < len(found) and found[j][2][0].isdigit() for j in (i - 1, i + 1))


def _is_label(found: list[tuple[int, int, str]], i: int) -> bool:
    """A number that names something: after a word of ``_LABELS``, or after a capitalised
    word inside the sentence that is no month, weekday or all-capitals code ("EUR")."""
    if i == 0:
        return False
    previous = found[i - 1][2]
    low = previous.lower()
    if low in _LABELS:
        return True
    return (
        (i > 1 or low not in _LEADING)
        and previous[:1].isupper()
        and not previous.isupper()
        and low not in _MONTHS
        and low not in _WEEKDAYS
    )


def _digits(word: str, i: int, start: int, end: int, months: set[int]) -> Value | None:
    """The value a word of digits writes, or None when it is no number."""
    ordinal = _ORDINAL.match(word)
    if ordinal is not None:
        n = float(ordinal.group(1))
        return Value(ValueKind.DAY if n <= 31 else ValueKind.NUMBER, n, start, end, word)
    number = _number(word)
    if number is None:
        return None
    if re.fullmatch(r"\d{4}", word) and 1000 <= number <= 2199:
        kind = ValueKind.YEAR
    elif (
        re.fullmatch(r"\d{1,2}", word)
        and 1 <= number <= 31
        and any(j in months for j in (i - 2, i - 1, i + 1, i + 2))
    ):
        kind = ValueKind.DAY
    else:
        kind = ValueKind.NUMBER
    return Value(kind, number, start, end, word)


def repeat_of(sentence: str) -> Repeat | None:
    """The sentence's repeat key and values, or None when it is not repeatable (see the
    module docstring)."""
    if len(sentence) > MAX_CHARS:
        return None
    found = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(sentence)]
    lowered = [w.lower() for _, _, w in found]
    months = {i for i in range(len(found)) if _is_month(lowered, found, i)}
    slots: list[str] = []
    values: list[Value] = []
    negators = 0
    context: list[str] = []
    for i, (start, end, word) in enumerate(found):
        low = lowered[i]
        value: Value | None = None
        if word[0].isdigit():
            if not _is_label(found, i) or _ORDINAL.match(word):
                value = _digits(word, i, start, end, months)
        elif i in months:
            value = Value(ValueKind.MONTH, float(_MONTHS[low]), start, end, word)
        elif low in _WEEKDAYS and (low not in _ABBREVIATED_WEEKDAYS or word[0].isupper()):
            value = Value(ValueKind.WEEKDAY, float(_WEEKDAYS[low]), start, end, word)
        elif low in _NUMBER_WORDS:
            value = Value(ValueKind.NUMBER, float(_NUMBER_WORDS[low]), start, end, word)
        elif low in _NEGATORS or low.endswith(("n't", "n\u2019t")):
            negators += 1
            base = "can" if low == "cannot" else low[:-3] if low not in _NEGATORS else ""
            if base:
                slots.append(base)
                context.append(base)
            continue
        if value is not None:
            values.append(value)
            # A year and a number share a slot: "900" and "1,125" (or "2,000" and "1500")
            # are one quantity changed, whichever looks like a year.
            slots.append("<number>" if value.kind is ValueKind.YEAR else f"<{value.kind}>")
            continue
        if low in {"%", "percentage"} or (low == "cent" and slots[-1:] == ["per"]):
            if low == "cent":
                slots.pop()
                context.pop()
            low = "percent"
        slots.append(low)
        context.append(low)
    if not values or len(values) > MAX_VALUES:
        return None
    if len(context) < MIN_CONTEXT or len(set(context)) < MIN_DISTINCT:
        return None
    masked = " ".join(slots)
    key = hashlib.sha256(f"repeat-{REPEAT_VERSION}\x00{masked}".encode()).hexdigest()[:40]
    parts, at = [], 0
    for v in values:
        parts += [sentence[at : v.start], "…"]
        at = v.end
    display = " ".join("".join([*parts, sentence[at:]]).split())
    return Repeat(
        key=key, values=tuple(values), negated=negators % 2 == 1, masked=masked, display=display
    )
