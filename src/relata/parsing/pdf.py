"""PDF parser (pypdf): text per page, paragraphs where the page has blank lines.

Bounds: the page count is checked twice before any text is extracted, first from the
catalogue's declared ``/Count`` (cheap, before the page tree is walked) and then from the
walked tree (the declared count may lie; the walk itself is capped through pypdf's
``page_tree_maximum_entries``); too many pages is an error, not a truncation. The
deadline is checked between pages and, through pypdf's operator visitor, every few thousand
content operators within a page (one page of 100,000 text operators takes pypdf ~9 s, and a
75 MB content stream minutes); the text length is checked by the document builder. pypdf's
own limits bound each decompressed stream and the parsing work of each content stream.

Every page is its own section (``page`` is 1-based), so a chunk never spans two pages and its
page number is exact. pypdf raises a wide variety of exceptions on malformed files; all of
them become one clear ``ValidationError``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from pypdf import PdfReader, apply_configuration
from pypdf.errors import LimitReachedError

from relata.domain.errors import RelataError, UnsupportedContent
from relata.domain.models import SourceType
from relata.parsing.model import (
    Deadline,
    Document,
    DocumentBuilder,
    ParseLimits,
    clean_text,
    too_big,
    unparseable,
)

_INFO_FIELDS = (
    ("author", "/Author"),
    ("subject", "/Subject"),
    ("keywords", "/Keywords"),
    ("creator", "/Creator"),
    ("producer", "/Producer"),
    ("created", "/CreationDate"),
    ("modified", "/ModDate"),
)


def _declared_page_count(reader: PdfReader) -> int | None:
    try:
        trailer: Any = reader.trailer
        return int(trailer["/Root"]["/Pages"]["/Count"])
    except Exception:  # a missing or malformed /Count is checked again after the walk
        return None


def _info(reader: PdfReader, builder: DocumentBuilder) -> None:
    try:
        info: Any = reader.metadata
        if info is None:
            return
        title = info.get("/Title")
        if title is not None and str(title).strip():
            builder.title = str(title)
        for key, name in _INFO_FIELDS:
            value = info.get(name)
            if value is not None:
                builder.set_metadata(key, value)
    except Exception:  # damaged document info never blocks the text
        builder.warnings.append("the PDF's document information could not be read")


_OPERATORS_PER_CHECK = 2000


def _deadline_visitor(deadline: Deadline) -> Callable[..., None]:
    """A pypdf ``visitor_operand_before`` that checks ``deadline`` every few operators."""
    seen = 0

    def visit(*_: Any) -> None:
        nonlocal seen
        seen += 1
        if seen % _OPERATORS_PER_CHECK == 0:
            deadline.check()

    return visit


def _check_pages(count: int, limits: ParseLimits) -> None:
    if count > limits.max_pdf_pages:
        raise too_big(
            f"the PDF has {count} pages; the limit is {limits.max_pdf_pages} "
            "(RELATA_PARSE_MAX_PDF_PAGES)"
        )


def _read(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        try:
            opened = bool(reader.decrypt(""))
        except Exception as exc:
            raise UnsupportedContent(
                "the PDF is encrypted with a method Relata cannot open", field="content"
            ) from exc
        if not opened:
            raise UnsupportedContent("the PDF is password-protected", field="content")
    declared = _declared_page_count(reader)
    if declared is not None:
        _check_pages(declared, limits)
    deadline.check()
    count = len(reader.pages)
    _check_pages(count, limits)
    builder = DocumentBuilder(SourceType.PDF, limits)
    _info(reader, builder)
    builder.set_metadata("pages", count)
    empty = 0
    visitor = _deadline_visitor(deadline)
    for number in range(count):
        deadline.check()
        page = reader.pages[number]
        text = clean_text(page.extract_text(visitor_operand_before=visitor) or "")
        if not text:
            empty += 1
            continue
        for paragraph in text.split("\n\n"):
            builder.add(paragraph.strip(), page=number + 1, clean=False)
    if count == 0:
        raise unparseable("the PDF has no pages")
    if empty:
        builder.warnings.append(
            f"pages without extractable text: {empty} of {count} (scanned images need OCR)"
        )
    return builder.build()


def parse_pdf(data: bytes, limits: ParseLimits, deadline: Deadline) -> Document:
    # pypdf's own bound on the page-tree walk, scaled to ours: a tree whose declared /Count
    # lies low cannot make the walk itself expensive. (A context variable: thread-safe.)
    tree_entries = max(1000, 4 * limits.max_pdf_pages)
    try:
        with apply_configuration(page_tree_maximum_entries=tree_entries):
            return _read(data, limits, deadline)
    except RelataError:
        raise
    except LimitReachedError as exc:
        raise too_big(f"the PDF exceeds a structural limit ({exc})") from exc
    except Exception as exc:  # pypdf's failure modes are many and undocumented
        raise unparseable(f"the PDF cannot be read ({type(exc).__name__})") from exc
