"""Plain-text parser: paragraphs separated by blank lines, no headings.

Plain text carries no reliable structure, so every paragraph sits in the document's single
section. A short first line standing alone (no sentence punctuation at its end) is taken as
the title, but stays in the text as an ordinary paragraph. JSON Lines (sniffed as plain text:
the whole is not one JSON value) take their title from the first record's ``title`` field
when it has one.

Its extracted text is exactly the cleaned paragraphs joined by a blank line, so its length is
known without building the document: ``check_text_chars`` refuses, at upload (``sniff``), the
plain text whose extracted text would be over ``max_chars``, with the very message the parse
stage would fail with, instead of storing it and failing it later.
"""

from __future__ import annotations

import json

from relata.domain.models import SourceType
from relata.parsing.decode import decode_text
from relata.parsing.jsondoc import json_title
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


#: Longest first line read as a JSON Lines record for its title.
_JSON_LINE_MAX_CHARS = 65_536


def json_lines_title(text: str) -> str | None:
    """The title field of the first record when ``text`` starts like JSON Lines (its first
    line one JSON object), else None."""
    first = text.lstrip()[:_JSON_LINE_MAX_CHARS].split("\n", 1)[0].strip()
    if not first.startswith("{") or not first.endswith("}"):
        return None
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        return None
    title = json_title(record)
    return " ".join(title.split())[:_TITLE_MAX_CHARS] if title else None


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
    builder.title = json_lines_title(decoded.text) or guess_title(paragraphs)
    for n, paragraph in enumerate(paragraphs):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        builder.add(paragraph, clean=False)
    return builder.build()
