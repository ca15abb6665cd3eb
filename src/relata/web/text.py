"""Highlighting without markup: a text and spans become segments the template wraps.

``segments(text, spans)`` splits ``text`` at the spans' offsets into ``Segment``s; a template
renders each ``segment.text`` (escaped, like everything) inside ``<mark>`` when it has a
``kind``. Overlapping spans are clipped so every character appears once and in order; spans
outside the text are ignored. Bounded: at most ``MAX_SPANS`` spans are used.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_SPANS = 2_000


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str  # a CSS class suffix: "entity", "claim", "match"
    label: str = ""  # the title shown on hover (escaped like any text)


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    kind: str | None = None
    label: str = ""


def segments(text: str, spans: Iterable[Span]) -> list[Segment]:
    """``text`` cut at ``spans`` (see the module docstring)."""
    ordered = sorted(
        (s for s in list(spans)[:MAX_SPANS] if 0 <= s.start < s.end <= len(text)),
        key=lambda s: (s.start, -(s.end - s.start)),
    )
    out: list[Segment] = []
    at = 0
    for s in ordered:
        start = max(s.start, at)
        if start >= s.end:
            continue  # wholly inside an earlier span
        if start > at:
            out.append(Segment(text[at:start]))
        out.append(Segment(text[start : s.end], s.kind, s.label))
        at = s.end
    if at < len(text):
        out.append(Segment(text[at:]))
    return out
