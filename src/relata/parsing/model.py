"""What a parser produces (``Document`` of ``Block``s), the bounds it works within, and helpers.

A ``Document`` is the canonical plain text of an upload plus its structure: every ``Block`` is
an exact slice ``document.text[block.start:block.end]``, so chunk offsets, citations and
highlighting all refer to one string. Parsers build documents only through
``DocumentBuilder``, which sanitises text (no NUL or other control characters, no lone
surrogates: PostgreSQL and UTF-8 storage reject them), joins blocks with a blank line, and
enforces ``ParseLimits.max_chars``. ``Deadline`` enforces ``ParseLimits.max_seconds`` at
checkpoints between pages, paragraphs and records.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from relata.domain.errors import TooLarge, ValidationError
from relata.domain.models import SourceType

MiB = 1024 * 1024

#: How refusals name what Relata reads.
SUPPORTED_TYPES = (
    "plain text, Markdown, JSON, PDF, DOCX, HTML, CSV/TSV, XLSX, PPTX and e-mail (.eml)"
)
#: Block kinds that open a section (their text is the section's heading).
HEADING_KINDS = frozenset({"heading", "title"})
#: Block kinds whose lines are the natural split points (rather than sentences).
LINE_KINDS = frozenset({"table", "code", "list", "field", "record"})

#: Longest heading text kept in a ``heading_path`` element (the block keeps the full text).
MAX_HEADING_PATH_CHARS = 200
#: Longest document title kept.
MAX_TITLE_CHARS = 500
#: Bounds of one metadata value and of the number of metadata keys.
MAX_METADATA_VALUE_CHARS = 500
MAX_METADATA_KEYS = 32

_BLOCK_SEPARATOR = "\n\n"
# C0 controls except tab and newline, DEL, and C1 controls; ESC sequences go with them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MANY_NEWLINES = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Resource bounds of one parse. A document over a bound is rejected, never truncated."""

    max_pdf_pages: int = 1000
    max_chars: int = 10_000_000
    max_seconds: float = 120.0
    max_zip_entries: int = 5000
    max_uncompressed_bytes: int = 128 * MiB
    max_compression_ratio: float = 100.0
    max_json_depth: int = 64
    max_json_lines: int = 200_000
    max_blocks: int = 200_000
    #: DOCX work is bounded by what the body holds, not only by time: the uncompressed size
    #: of ``word/document.xml`` (from the zip directory, before decompressing), every
    #: paragraph counted (empty ones cost as much to read as full ones), every XML element,
    #: and the elements of one body-level paragraph or table (all held in memory at once).
    #: markdown-it spends ~40 us on every line however short, so a Markdown file of tiny
    #: lines (a list of "- a") costs 50x what prose of the same size does: lines are bounded.
    max_markdown_lines: int = 500_000
    max_docx_xml_bytes: int = 64 * MiB
    max_docx_paragraphs: int = 500_000
    max_xml_elements: int = 2_000_000
    max_block_elements: int = 250_000
    #: Tables (CSV/TSV rows, XLSX cells, empty cells a sheet pads included), slides, one
    #: XML part of an XLSX/PPTX (from the zip directory), the MIME parts of an e-mail and
    #: how deeply they (and HTML elements) may nest.
    max_cells: int = 2_000_000
    max_slides: int = 2000
    max_xml_part_bytes: int = 64 * MiB
    max_mime_parts: int = 200
    max_nesting: int = 64

    def __post_init__(self) -> None:
        for name in (
            "max_pdf_pages",
            "max_chars",
            "max_zip_entries",
            "max_uncompressed_bytes",
            "max_json_depth",
            "max_json_lines",
            "max_blocks",
            "max_markdown_lines",
            "max_docx_xml_bytes",
            "max_docx_paragraphs",
            "max_xml_elements",
            "max_block_elements",
            "max_cells",
            "max_slides",
            "max_xml_part_bytes",
            "max_mime_parts",
            "max_nesting",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"ParseLimits.{name} must be at least 1")
        if self.max_seconds <= 0 or self.max_compression_ratio < 1:
            raise ValueError("ParseLimits.max_seconds must be > 0 and max_compression_ratio >= 1")


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit: a heading, paragraph, table, list, code block or JSON record.

    ``heading_path`` is the chain of enclosing headings (for a heading block: including
    itself); ``level`` is the heading level for heading blocks (0 for a document title) and
    0 for every other kind; ``page`` is 1-based for PDFs and None elsewhere.
    """

    text: str
    heading_path: tuple[str, ...]
    level: int
    page: int | None
    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed upload: canonical ``text``, its ``blocks`` in order, and what was noticed.

    ``title`` comes from the document itself (PDF info, DOCX core properties or Title
    style, Markdown front matter or leading H1, a JSON ``title`` key, a plain-text title
    line); ``warnings`` record anything a reader should know, such as a decoding fallback.
    """

    title: str | None
    source_type: SourceType
    text: str
    blocks: tuple[Block, ...]
    metadata: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def clean_text(text: str) -> str:
    """Normalise newlines, drop control characters and lone surrogates, trim line ends."""
    if not text:
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\f", "\n").replace("\v", "\n")
    text = _CONTROL.sub("", text)
    text = _SURROGATE.sub("\ufffd", text)
    # Line by line, not a regex: "[ \t]+\n" backtracks quadratically on long blank runs.
    text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return _MANY_NEWLINES.sub("\n\n", text).strip()


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters (with an ellipsis)."""
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def path_label(heading: str) -> str:
    """A heading as it appears in a ``heading_path``: one line, bounded length."""
    return one_line(heading, MAX_HEADING_PATH_CHARS)


def too_big(message: str) -> TooLarge:
    """Content over a parse limit: at upload (sniffing) that is a 413, like an oversized body."""
    return TooLarge(message, field="content", code="content_too_large")


def unparseable(message: str) -> ValidationError:
    return ValidationError(message, field="content", code="unparseable_content")


#: The most bytes one character takes in any encoding ``decode`` accepts (UTF-8, UTF-16
#: surrogate pairs, UTF-32), so ``len(data) / 4`` is the fewest characters ``data`` decodes to.
_MAX_BYTES_PER_CHAR = 4
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))


def check_source_chars(text: str, limits: ParseLimits) -> None:
    """Reject a text-like source so long that its extracted text cannot fit ``max_chars``.

    Markup and JSON paths change the length, but never by half: twice the bound is a cheap
    early stop before an uninterruptible library parse of an enormous input. The same rule
    refuses such a source at upload (``sniff``) and at parse, so neither accepts what the
    other refuses.
    """
    if len(text) > 2 * limits.max_chars:
        raise too_big(
            f"the content has {len(text)} characters, more than twice the limit of "
            f"{limits.max_chars} characters of text (RELATA_PARSE_MAX_CHARS)"
        )


def fewest_chars(data: bytes) -> int:
    """The fewest characters ``data`` can decode to, counted without decoding it.

    Without a UTF-16/32 byte-order mark the text is UTF-8 (one character per byte that is
    not a continuation byte) or, when not valid UTF-8, a one-byte code page (one character
    per byte, more than that count); with one, every character takes at most four bytes.
    """
    if data.isascii():
        return len(data)
    if data.startswith(_WIDE_BOMS):  # after a mark of up to four bytes
        return max(0, len(data) - _MAX_BYTES_PER_CHAR) // _MAX_BYTES_PER_CHAR
    return len(data.translate(None, _UTF8_CONTINUATION)) - data.startswith(_UTF8_BOM)


def check_source_bytes(data: bytes, limits: ParseLimits) -> None:
    """``check_source_chars`` before decoding (and before the scan for binary content), so an
    upload known to be too long costs one pass over its bytes."""
    fewest = fewest_chars(data)
    if fewest > 2 * limits.max_chars:
        raise too_big(
            f"the content is {len(data)} bytes, at least {fewest} characters of text: more "
            f"than twice the limit of {limits.max_chars} characters of text "
            "(RELATA_PARSE_MAX_CHARS)"
        )


class Deadline:
    """Wall-clock bound of one parse, checked at checkpoints (between pages/paragraphs)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._seconds = seconds
        self._clock = clock
        self._end = clock() + seconds

    def check(self) -> None:
        if self._clock() > self._end:
            raise too_big(
                f"parsing took longer than the limit of {self._seconds:g} seconds "
                "(RELATA_PARSE_TIMEOUT)"
            )


class DocumentBuilder:
    """Accumulates blocks into one canonical text, keeping every offset exact."""

    def __init__(self, source_type: SourceType, limits: ParseLimits) -> None:
        self._source_type = source_type
        self._max_chars = limits.max_chars
        self._max_blocks = limits.max_blocks
        self._parts: list[str] = []
        self._blocks: list[Block] = []
        self._length = 0
        self.title: str | None = None
        self.metadata: dict[str, str] = {}
        self.warnings: list[str] = []

    @property
    def length(self) -> int:
        return self._length

    @property
    def block_count(self) -> int:
        return len(self._blocks)

    def add(
        self,
        text: str,
        *,
        kind: str = "paragraph",
        heading_path: tuple[str, ...] = (),
        level: int = 0,
        page: int | None = None,
        clean: bool = True,
    ) -> Block | None:
        """Append one block; empty text is skipped. Raises when ``max_chars`` is exceeded."""
        if clean:
            text = clean_text(text)
        if not text:
            return None
        start = self._length + (len(_BLOCK_SEPARATOR) if self._parts else 0)
        end = start + len(text)
        if end > self._max_chars:
            raise too_big(
                f"the extracted text exceeds the limit of {self._max_chars} characters "
                "(RELATA_PARSE_MAX_CHARS)"
            )
        if len(self._blocks) >= self._max_blocks:
            raise too_big(f"the document has more than {self._max_blocks} blocks")
        if self._parts:
            self._parts.append(_BLOCK_SEPARATOR)
        self._parts.append(text)
        self._length = end
        block = Block(text, heading_path, level, page, kind, start, end)
        self._blocks.append(block)
        return block

    def set_metadata(self, key: str, value: object) -> None:
        if value is None or len(self.metadata) >= MAX_METADATA_KEYS:
            return
        text = one_line(clean_text(str(value)), MAX_METADATA_VALUE_CHARS)
        if text:
            self.metadata[key] = text

    def build(self) -> Document:
        title = one_line(clean_text(self.title), MAX_TITLE_CHARS) if self.title else None
        return Document(
            title=title or None,
            source_type=self._source_type,
            text="".join(self._parts),
            blocks=tuple(self._blocks),
            metadata=dict(self.metadata),
            warnings=tuple(self.warnings),
        )
