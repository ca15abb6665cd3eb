"""Finding a model's quotation in the source, white-space reflow tolerated.

AI_PROVIDER_INTERFACE: a quotation must be locatable in the source "(whitespace reflow
tolerated)": a model rewraps lines, collapses double spaces, turns a line break into a space.
``locate_quotation`` matches the quotation's words in order with any run of white space
between them (each word escaped: no character of the quotation is a pattern), so the offsets
it returns always slice the source to its exact text, which may differ from the model's string
only in white space. What a task stores is that slice, never the model's string.
"""

from __future__ import annotations

import re
from typing import Final

#: A longer quotation is not searched for (it is no quotation of one statement).
MAX_QUOTATION_CHARS: Final = 2_000


def locate_quotation(
    source: str, quotation: str, *, near: int | None = None
) -> tuple[int, int] | None:
    """(start, end) of ``quotation`` in ``source`` with white space reflow tolerated, or
    None. With several matches, the one starting nearest ``near`` (else the first)."""
    words = quotation.split()
    if not words or len(quotation) > MAX_QUOTATION_CHARS:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    if near is None:
        m = pattern.search(source)
        return (m.start(), m.end()) if m else None
    best: tuple[int, int] | None = None
    for m in pattern.finditer(source):
        if best is None or abs(m.start() - near) < abs(best[0] - near):
            best = (m.start(), m.end())
    return best
