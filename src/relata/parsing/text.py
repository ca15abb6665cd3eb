"""Plain-text parser: paragraphs separated by blank lines, no headings.

Plain text carries no reliable structure, so every paragraph sits in the document's single
section. A short first line standing alone (no sentence punctuation at its end) is taken as
the title, but stays in the text as an ordinary paragraph.
"""

from __future__ import annotations

from relata.domain.models import SourceType
from relata.parsing.decode import decode_text
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    check_source_chars,
    clean_text,
)

_TITLE_MAX_CHARS = 150
_CHECK_EVERY = 1000


def guess_title(paragraphs: list[str]) -> str | None:
    if len(paragraphs) < 2:
        return None
    first = paragraphs[0]
    if "\n" in first or len(first) > _TITLE_MAX_CHARS or first[-1] in ".!?,;:":
        return None
    return first


def parse_text(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    decoded = decode_text(data)
    check_source_chars(decoded.text, limits)
    builder = DocumentBuilder(SourceType.TEXT, limits)
    if decoded.warning:
        builder.warnings.append(decoded.warning)
    paragraphs = [p.strip() for p in clean_text(decoded.text).split("\n\n")]
    paragraphs = [p for p in paragraphs if p]
    builder.title = guess_title(paragraphs)
    for n, paragraph in enumerate(paragraphs):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        builder.add(paragraph, clean=False)
    return builder.build()
