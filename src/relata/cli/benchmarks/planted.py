"""Planted changed facts for ``relata bench conflicts``: second reports that repeat a sentence
of a document with one value changed, and controls that repeat it unchanged.

Pure, and independent of the detector (``relata.claims.repeats``): it finds values with its
own patterns, so the benchmark does not grade the detector by its own reading. The texts are
``relata/benchdata/conflicts.json``: documents in several genres written for this benchmark,
one sentence a line, and frames (an opening and a closing sentence) a second report wraps the
repeated sentence in.

For each sentence with a value, one **plant** changes one value, the kind chosen in turn
among those the sentence has (``KINDS``), so every kind is planted about equally; one
**control** repeats the sentence unchanged. Both are written the way a second report copies
a sentence: every fourth one as is, the others with white space doubled, commas dropped, or
the sentence broken across two lines (``_NOISE``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

KINDS: Final = ("quantity", "percentage", "year", "day", "weekday", "month")
_MONTHS: Final = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WEEKDAYS: Final = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMBER_WORDS: Final = [
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
_MONTH_RE: Final = "|".join(_MONTHS)
_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("percentage", re.compile(r"\b\d+(?:\.\d+)?(?=%| per ?cent\b)")),
    (
        "day",
        re.compile(rf"\b(?P<v>\d{{1,2}}) (?:{_MONTH_RE})\b|\b(?:{_MONTH_RE}) (?P<w>\d{{1,2}})\b"),
    ),
    ("weekday", re.compile(r"\b(?:" + "|".join(_WEEKDAYS) + r")\b")),
    ("month", re.compile(rf"\b(?:{_MONTH_RE})\b")),
    ("year", re.compile(r"\b(?:1[89]\d\d|20\d\d)\b(?![.,]\d)")),
    (
        "quantity",
        re.compile(
            r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|(?<![\d.,])\d+(?:\.\d+)?\b"
            r"|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b",
            re.IGNORECASE,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Planted:
    """A second report: the document it repeats a sentence of, the sentence as it stands
    there, the text of the report, and for a plant the kind and both values."""

    document: int
    sentence: str
    text: str
    kind: str | None = None
    old: str = ""
    new: str = ""


def load() -> dict[str, Any]:
    """The benchmark's texts (``relata/benchdata/conflicts.json``)."""
    data = resources.files("relata").joinpath("benchdata/conflicts.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(data)
    return loaded


def values(sentence: str) -> list[tuple[str, int, int]]:
    """The values of a sentence as (kind, start, end), each span read by the first pattern
    that claims it."""
    taken: list[tuple[str, int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(sentence):
            group = next((g for g in ("v", "w") if m.groupdict().get(g)), 0)
            start, end = m.span(group)
            if not any(start < e and s < end for _, s, e in taken):
                taken.append((kind, start, end))
    return sorted(taken, key=lambda t: t[1])


def _number(old: str, change: Callable[[float], float]) -> str:
    decimals = len(old.split(".")[1]) if "." in old else 0
    value = float(old.replace(",", ""))
    new = change(value)
    if round(new, decimals) == value:
        new = value + 1
    text = f"{new:,.{decimals}f}" if "," in old else f"{new:.{decimals}f}"
    return text


def changed(kind: str, old: str) -> str:
    """Another value of the same kind, written as ``old`` is."""
    if kind == "percentage":
        return _number(old, lambda v: v + 7 if v < 90 else v - 9)
    if kind == "year":
        y = int(old)
        return str(y + 2 if y + 2 <= 2030 else y - 3)
    if kind == "day":
        d = int(old)
        return str(d + 7 if d <= 21 else d - 7)
    if kind == "weekday":
        return _WEEKDAYS[(_WEEKDAYS.index(old) + 2) % 7]
    if kind == "month":
        return _MONTHS[(_MONTHS.index(old) + 3) % 12]
    if old.lower() in _NUMBER_WORDS:
        i = _NUMBER_WORDS.index(old.lower())
        word = _NUMBER_WORDS[i + 1 if i + 1 < len(_NUMBER_WORDS) else i - 1]
        return word.capitalize() if old[0].isupper() else word
    return _number(old, lambda v: round(v * 1.25, 2) if v >= 4 else v + 1)


def _noise(sentence: str, n: int) -> str:
    """How the second report copies the sentence (see the module docstring)."""
    if n % 4 == 1:
        return sentence.replace(" ", "  ", 3)
    if n % 4 == 2:
        return sentence.replace(", ", " ")
    if n % 4 == 3:
        words = sentence.split(" ")
        half = len(words) // 2
        return " ".join(words[:half]) + "\n" + " ".join(words[half:])
    return sentence


def _report(frame: dict[str, str], sentence: str) -> str:
    return f"{frame['opening']}\n\n{sentence}\n\n{frame['closing']}\n"


def planted(data: dict[str, Any]) -> tuple[list[Planted], list[Planted]]:
    """The plants and the controls (see the module docstring)."""
    plants: list[Planted] = []
    controls: list[Planted] = []
    frames = data["frames"]
    turn = 0
    for index, sentence in _sentences(data):
        found = values(sentence)
        if not found:
            continue
        frame = frames[len(controls) % len(frames)]
        controls.append(Planted(index, sentence, _report(frame, _noise(sentence, len(controls)))))
        kinds = {k for k, _, _ in found}
        order = KINDS[turn % len(KINDS) :] + KINDS[: turn % len(KINDS)]
        kind = next(k for k in order if k in kinds)
        turn = KINDS.index(kind) + 1
        _, start, end = next(v for v in found if v[0] == kind)
        old = sentence[start:end]
        new = changed(kind, old)
        text = sentence[:start] + new + sentence[end:]
        frame = frames[(len(plants) + 3) % len(frames)]
        plants.append(
            Planted(index, sentence, _report(frame, _noise(text, len(plants))), kind, old, new)
        )
    return plants, controls


def _sentences(data: dict[str, Any]) -> Iterator[tuple[int, str]]:
    for index, doc in enumerate(data["documents"]):
        for line in str(doc["text"]).splitlines():
            if line.strip():
                yield index, line.strip()
