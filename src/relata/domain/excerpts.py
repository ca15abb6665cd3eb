"""Short quotations a person reads on one line (related items, search notes, the CLI).

``clip_quote`` cuts a quotation to a window of about ``limit`` characters whose ends fall on
word boundaries (white space or the text's own ends) and which always holds the whole
``focus`` span (e.g. the conflicting value) when one is given, so a reader never sees
"…grid on 2…" or "has entered comme". A cut end reads "…". Pure and bounded: one pass over
the text, a word boundary looked for at most ``WORD_SLACK`` characters away.
"""

from __future__ import annotations

from typing import Final

#: How far an end of the window moves to reach a word boundary before cutting a word.
WORD_SLACK: Final = 40


def _space_back(text: str, i: int, lo: int) -> int | None:
    """The greatest ``j`` in ``[lo, i]`` with ``text[j - 1]`` white space (a word starts
    at ``j``), if any."""
    for j in range(i, max(lo, 1) - 1, -1):
        if text[j - 1].isspace():
            return j
    return None


def _space_ahead(text: str, i: int, hi: int) -> int | None:
    """The least ``j`` in ``[i, hi]`` with ``text[j]`` white space, if any."""
    for j in range(i, min(hi, len(text) - 1) + 1):
        if text[j].isspace():
            return j
    return None


def _boundary(text: str, i: int) -> bool:
    return i <= 0 or i >= len(text) or text[i - 1].isspace() or text[i].isspace()


def clip_quote(text: str, limit: int, focus: tuple[int, int] | None = None) -> str:
    """``text`` on one line (white space collapsed), cut to about ``limit`` characters at
    word boundaries with "…" at a cut end; ``focus`` (offsets into ``text``) is kept whole,
    even when it alone is longer than ``limit``."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    n = len(text)
    if focus is not None:
        lo = min(max(focus[0], 0), n)
        hi = min(max(focus[1], lo), n)
        start = max(0, min(lo - (limit - (hi - lo)) // 2, n - limit))
        start = min(start, lo)
        end = max(min(n, start + limit), hi)
    else:
        lo, hi = n, 0  # nothing to keep: the ends may move freely
        start, end = 0, min(n, limit)
    if not _boundary(text, start):
        ahead = _space_ahead(text, start, min(lo, start + WORD_SLACK))
        if ahead is not None:
            start = ahead + 1
        else:
            back = _space_back(text, start, start - WORD_SLACK)
            start = back if back is not None else start
    if not _boundary(text, end):
        back = _space_back(text, end, max(hi, start + 1, end - WORD_SLACK))
        if back is not None and back > start:
            end = back
        else:
            ahead = _space_ahead(text, end, end + WORD_SLACK)
            end = ahead if ahead is not None else end
    words = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + words + ("…" if end < n else "")
