"""Content sniffing: which parser an upload needs, decided from its bytes.

The filename and the declared Content-Type are hints only. They never make a PDF out of a
text file or a DOCX out of an arbitrary zip; they only choose between Markdown and plain text,
which are both text and differ only in how structure is read. The order of checks:

1. empty -> rejected;
2. ``%PDF-`` at the start of a line in the first KiB (where readers accept it) -> PDF;
3. a zip archive -> DOCX, XLSX or PPTX if it really contains that type's main part
   (``word/document.xml``, ``xl/workbook.xml``, ``ppt/presentation.xml``) and passes the
   zip-bomb bounds and that type's package checks, otherwise rejected naming what it is
   (EPUB, OpenDocument, ...);
4. a known binary signature (images, archives, executables, legacy Office) -> rejected;
5. undecodable or binary bytes -> rejected (see ``decode``);
6. text that parses as a JSON object or array -> JSON;
7. text that begins with a block of RFC 5322 header lines naming a sender and at least two of
   recipients, date, subject, message id, MIME version -> e-mail;
8. text that begins (after comments) with ``<!DOCTYPE html``, ``<html``, ``<head`` or
   ``<body`` -> HTML; so does any text starting with a tag when named ``.html``/``.htm`` or
   sent as ``text/html``;
9. the filename/Content-Type hint for Markdown, plain text, CSV or TSV if there is one; else
   consistently delimited lines (``delimited.delimiter_of``) -> CSV or TSV; else Markdown vs
   plain text by the content's Markdown signals (ATX headings, fences, links, tables, lists).

Sniffing runs in the upload request, so its own work is bounded: JSON is validated whole only
up to ``JSON_SNIFF_CHARS``; a longer text is JSON when that prefix is a valid beginning of a
JSON document and the text ends like one (the parse stage then validates all of it). And what
is already known to be over a parse limit is refused here with ``TooLarge`` (413), naming the
limit, rather than stored and failed later: text that cannot fit ``max_chars``
(``RELATA_PARSE_MAX_CHARS``; the same rule ``parse`` applies), plain text whose extracted
text is over it (known exactly without parsing: ``check_text_chars``), JSON with more values than
``max_json_lines``, Markdown of more than ``max_markdown_lines``, a DOCX over the zip bounds
or whose body is over ``max_docx_xml_bytes``.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from relata.domain.errors import UnsupportedContent
from relata.domain.models import SourceType
from relata.parsing.archive import describe_zip, is_zip, office_type, open_zip
from relata.parsing.decode import decode_text
from relata.parsing.delimited import delimiter_of
from relata.parsing.docx import check_docx
from relata.parsing.jsondoc import check_json_lines
from relata.parsing.markdown import check_markdown_lines
from relata.parsing.model import (
    SUPPORTED_TYPES,
    ParseLimits,
    check_source_bytes,
    check_source_chars,
)
from relata.parsing.sheets import check_xlsx
from relata.parsing.slides import check_pptx
from relata.parsing.text import check_text_chars

_PDF_HEADER = re.compile(rb"(?:^|[\r\n])%PDF-\d")
_PDF_WINDOW = 1024

# Signatures of common non-text formats, to say what an upload is when rejecting it. Each is
# specific enough (fixed binary bytes) that no real text document starts with it.
_SIGNATURES: tuple[tuple[re.Pattern[bytes], str], ...] = tuple(
    (re.compile(pattern, re.S), what)
    for pattern, what in (
        (rb"\x89PNG\r\n\x1a\n", "a PNG image"),
        (rb"\xff\xd8\xff", "a JPEG image"),
        (rb"GIF8[79]a", "a GIF image"),
        (rb"RIFF.{4}WEBP", "a WebP image"),
        (rb"II\*\x00|MM\x00\*", "a TIFF image"),
        (rb"\x1f\x8b\x08", "a gzip archive"),
        (rb"BZh[1-9]1AY&SY", "a bzip2 archive"),
        (rb"\xfd7zXZ\x00", "an xz archive"),
        (rb"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (rb"Rar!\x1a\x07", "a RAR archive"),
        (rb"\x7fELF", "an executable (ELF)"),
        (rb"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Microsoft Office file (.doc/.xls/.ppt)"),
        (rb"\{\\rtf1", "an RTF document"),
        (rb"SQLite format 3\x00", "a SQLite database"),
        (rb"%!PS-Adobe", "a PostScript document"),
        (rb"\x00asm", "a WebAssembly module"),
        (rb"ID3[\x02-\x04]\x00", "an MP3 audio file"),
        (rb"OggS\x00", "an Ogg media file"),
        (rb"\x00.{3}ftyp", "an MP4/QuickTime media file"),
    )
)

_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdx"})
_TEXT_SUFFIXES = frozenset({".txt", ".text", ".log"})
_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
_TEXT_TYPES = frozenset({"text/plain"})
_SUFFIX_HINTS = {
    **dict.fromkeys(_MARKDOWN_SUFFIXES, SourceType.MARKDOWN),
    **dict.fromkeys(_TEXT_SUFFIXES, SourceType.TEXT),
    ".csv": SourceType.CSV,
    ".tsv": SourceType.TSV,
    ".tab": SourceType.TSV,
    ".html": SourceType.HTML,
    ".htm": SourceType.HTML,
    ".xhtml": SourceType.HTML,
}
_TYPE_HINTS = {
    **dict.fromkeys(_MARKDOWN_TYPES, SourceType.MARKDOWN),
    **dict.fromkeys(_TEXT_TYPES, SourceType.TEXT),
    "text/csv": SourceType.CSV,
    "text/tab-separated-values": SourceType.TSV,
    "text/html": SourceType.HTML,
    "application/xhtml+xml": SourceType.HTML,
}
_OFFICE_CHECKS = {
    SourceType.DOCX: check_docx,
    SourceType.XLSX: check_xlsx,
    SourceType.PPTX: check_pptx,
}
_HTML_START = re.compile(
    r"\A\ufeff?\s*(?:<\?xml[^>]{0,200}>\s*)?(?:<!--.{0,4000}?-->\s*)*"
    r"<(?:!doctype\s+html|html|head|body)[\s>]",
    re.I | re.S,
)
_TAG_START = re.compile(r"\A\ufeff?\s*<[!A-Za-z]")
_EMAIL_HEADER = re.compile(r"([!-9;-~]{1,76}):")
_EMAIL_SIGNS = frozenset({"to", "date", "subject", "message-id", "mime-version", "cc"})
_EMAIL_SAMPLE_CHARS = 65_536
_EMAIL_MAX_HEADER_LINES = 500

# (pattern, weight): an ATX heading alone is enough; weaker signals must add up.
_MARKDOWN_SIGNALS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"^#{1,6}[ \t]+\S", re.M), 3),
    (re.compile(r"^(?:```|~~~)", re.M), 3),
    (re.compile(r"!?\[[^\]\n]{1,200}\]\([^)\s]{1,500}\)"), 2),
    (re.compile(r"^\|?[ \t]*:?-{3,}:?[ \t]*\|", re.M), 2),
    (re.compile(r"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S", re.M), 1),
    (re.compile(r"\*\*[^*\n]{1,200}\*\*|__[^_\n]{1,200}__"), 1),
    (re.compile(r"^>[ \t]?\S", re.M), 1),
    (re.compile(r"^\S[^\n]*\n(?:={3,}|-{3,})[ \t]*$", re.M), 2),
)
_MARKDOWN_THRESHOLD = 3
_MARKDOWN_SAMPLE_CHARS = 65_536
#: Longest text validated as JSON in full while sniffing (longer: a prefix, see above).
JSON_SNIFF_CHARS = 1 << 20
_JSON_SPACE = " \t\n\r"
_JSON_LEADING_SPACE = re.compile(r"[ \t\n\r]*")
# A truncated literal or number fails within a few characters of the cut.
_JSON_CUT_SLACK = 16


def _unsupported(what: str) -> UnsupportedContent:
    return UnsupportedContent(
        f"the content is {what}; supported types are {SUPPORTED_TYPES}", field="content"
    )


def _hint(filename: str | None, content_type: str | None) -> SourceType | None:
    if filename:
        suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
        if suffix in _SUFFIX_HINTS:
            return _SUFFIX_HINTS[suffix]
    if content_type:
        media = content_type.split(";", 1)[0].strip().lower()
        return _TYPE_HINTS.get(media)
    return None


def looks_like_email(text: str) -> bool:
    """Whether ``text`` opens with a header block of an Internet message (RFC 5322)."""
    names: set[str] = set()
    lines = text[:_EMAIL_SAMPLE_CHARS].splitlines()
    if lines and lines[0].startswith("From "):  # an mbox separator line
        lines = lines[1:]
    for n, line in enumerate(lines):
        if not line.strip():
            break
        if n >= _EMAIL_MAX_HEADER_LINES:
            return False
        if line[0] in " \t" and n > 0:
            continue  # a folded continuation of the previous header
        match = _EMAIL_HEADER.match(line)
        if match is None:
            return False
        names.add(match.group(1).lower())
    else:
        return False  # no blank line ends the header block within the sample
    return "from" in names and len(names & _EMAIL_SIGNS) >= 2


def markdown_score(text: str) -> int:
    sample = text[:_MARKDOWN_SAMPLE_CHARS]
    score = 0
    for pattern, weight in _MARKDOWN_SIGNALS:
        hits = sum(1 for _ in zip(range(3), pattern.finditer(sample), strict=False))
        score += weight * hits
        if score >= _MARKDOWN_THRESHOLD:
            break
    return score


def _is_json(text: str) -> bool:
    start = _match_end(_JSON_LEADING_SPACE, text)
    if text[start : start + 1] not in ("{", "["):
        return False
    if len(text) - start <= JSON_SNIFF_CHARS:
        try:
            json.loads(text)
        except RecursionError:
            return True  # structurally JSON; the parser rejects the depth with a clear message
        except ValueError:
            return False
        return True
    return _json_beginning(text[start : start + JSON_SNIFF_CHARS]) and _ends_like_json(text)


def _ends_like_json(text: str) -> bool:
    tail = text[-4096:].rstrip(_JSON_SPACE) or text.rstrip(_JSON_SPACE)  # no copy, usually
    return tail.endswith(("}", "]"))


def _match_end(pattern: re.Pattern[str], text: str) -> int:
    match = pattern.match(text)
    return match.end() if match else 0


def _json_beginning(prefix: str) -> bool:
    """Whether ``prefix``, a cut of a longer text, is how a JSON document may begin: parsing
    it fails only because it ends (inside a string, or within a few characters of the cut)."""
    try:
        json.loads(prefix)
    except RecursionError:
        return True
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string"):
            return True  # the cut fell inside a string whose beginning is valid
        return exc.pos >= len(prefix) - _JSON_CUT_SLACK
    return False  # a whole value ends inside the prefix, yet non-space text follows it


def sniff(
    data: bytes,
    *,
    filename: str | None = None,
    content_type: str | None = None,
    limits: ParseLimits | None = None,
) -> SourceType:
    """The type of ``data``; raises ``UnsupportedContent`` naming what was detected instead.

    A DOCX, XLSX or PPTX over the zip or package bounds raises ``ValidationError`` (the type
    is right, the size not).
    """
    if not data:
        raise UnsupportedContent("the content is empty", field="content")
    if _PDF_HEADER.search(data[:_PDF_WINDOW]):
        return SourceType.PDF
    limits = limits or ParseLimits()
    if is_zip(data):
        with open_zip(data, limits) as archive:
            names = set(archive.namelist())
            office = office_type(names)
            if office is not None:
                _OFFICE_CHECKS[office](archive, limits)
        if office is None:
            raise _unsupported(describe_zip(names))
        return office
    for signature, what in _SIGNATURES:
        if signature.match(data):
            raise _unsupported(what)
    check_source_bytes(data, limits)
    text = decode_text(data).text
    if not text or text.isspace():  # not strip(): no copy of a large upload
        raise UnsupportedContent("the content is only whitespace", field="content")
    check_source_chars(text, limits)
    if _is_json(text):
        check_json_lines(text, limits)
        return SourceType.JSON
    if looks_like_email(text):
        return SourceType.EMAIL
    hint = _hint(filename, content_type)
    if _HTML_START.match(text[:8192]) or (hint is SourceType.HTML and _TAG_START.match(text)):
        return SourceType.HTML
    found: SourceType | None = hint if hint is not SourceType.HTML else None
    if found is None:
        found = delimiter_of(text)
    if found is None:
        found = (
            SourceType.MARKDOWN if markdown_score(text) >= _MARKDOWN_THRESHOLD else SourceType.TEXT
        )
    if found in (SourceType.CSV, SourceType.TSV):
        return found
    if found is SourceType.MARKDOWN:
        check_markdown_lines(text, limits)
    else:
        check_text_chars(text, limits)
    return found
