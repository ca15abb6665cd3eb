"""Plain-text parser: paragraphs separated by blank lines, no headings.

Plain text carries no reliable structure, so every paragraph sits in the document's single
section. A short first line standing alone (no sentence punctuation at its end) is taken as
the title, but stays in the text as an ordinary paragraph.

Its extracted text is exactly the cleaned paragraphs joined by a blank line, so its length is
known without building the document: ``check_text_chars`` refuses, at upload (``sniff``), the
plain text whose extracted text would be over ``max_chars``, with the very message the parse
stage would fail with, instead of storing it and failing it later.
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
    too_big,
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


def paragraphs_of(text: str) -> list[str]:
    """The paragraphs of plain text, cleaned, in order: the blocks ``parse_text`` makes."""
    paragraphs = [p.strip() for p in clean_text(text).split("\n\n")]
    return [p for p in paragraphs if p]


def check_text_chars(text: str, limits: ParseLimits) -> None:
    """Refuse plain text whose extracted text (its paragraphs joined by a blank line) is over
    ``max_chars``. Cleaning never lengthens text, so a text within the limit is not even
    cleaned here."""
    if len(text) <= limits.max_chars:
        return
    paragraphs = paragraphs_of(text)
    length = sum(map(len, paragraphs)) + 2 * max(0, len(paragraphs) - 1)
    if length > limits.max_chars:
        raise too_big(
            f"the extracted text exceeds the limit of {limits.max_chars} characters "
            f"(RELATA_PARSE_MAX_CHARS): the text has {length} characters"
        )


def parse_text(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    decoded = decode_text(data)
    check_source_chars(decoded.text, limits)
    builder = DocumentBuilder(SourceType.TEXT, limits)
    if decoded.warning:
        builder.warnings.append(decoded.warning)
    paragraphs = paragraphs_of(decoded.text)
    builder.title = guess_title(paragraphs)
    for n, paragraph in enumerate(paragraphs):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        builder.add(paragraph, clean=False)
    return builder.build()
