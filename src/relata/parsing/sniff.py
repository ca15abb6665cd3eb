"""Content sniffing: which parser an upload needs, decided from its bytes.

The filename and the declared Content-Type are hints only. They never make a PDF out of a
text file or a DOCX out of an arbitrary zip; they only choose between Markdown and plain text,
which are both text and differ only in how structure is read. The order of checks:

1. empty -> rejected;
2. ``%PDF-`` at the start of a line in the first KiB (where readers accept it) -> PDF;
3. a zip archive -> DOCX if it really contains ``word/document.xml`` (and passes the zip-bomb
   bounds), otherwise rejected naming what it is (xlsx, pptx, EPUB, ...);
4. a known binary signature (images, archives, executables, legacy Office) -> rejected;
5. undecodable or binary bytes -> rejected (see ``decode``);
6. text that parses as a JSON object or array -> JSON;
7. Markdown vs plain text: the filename/Content-Type hint if there is one, else the content's
   Markdown signals (ATX headings, fences, links, tables, lists).

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
from relata.parsing.archive import describe_zip, is_zip, open_zip
from relata.parsing.decode import decode_text
from relata.parsing.docx import check_docx
from relata.parsing.jsondoc import check_json_lines
from relata.parsing.markdown import check_markdown_lines
from relata.parsing.model import ParseLimits, check_source_bytes, check_source_chars
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
        f"the content is {what}; supported types are plain text, Markdown, JSON, PDF and DOCX",
        field="content",
    )


def _hint(filename: str | None, content_type: str | None) -> SourceType | None:
    if filename:
        suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
        if suffix in _MARKDOWN_SUFFIXES:
            return SourceType.MARKDOWN
        if suffix in _TEXT_SUFFIXES:
            return SourceType.TEXT
    if content_type:
        media = content_type.split(";", 1)[0].strip().lower()
        if media in _MARKDOWN_TYPES:
            return SourceType.MARKDOWN
        if media in _TEXT_TYPES:
            return SourceType.TEXT
    return None


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

    A DOCX over the zip bounds raises ``ValidationError`` (the type is right, the size not).
    """
    if not data:
        raise UnsupportedContent("the content is empty", field="content")
    if _PDF_HEADER.search(data[:_PDF_WINDOW]):
        return SourceType.PDF
    limits = limits or ParseLimits()
    if is_zip(data):
        with open_zip(data, limits) as archive:
            what = describe_zip(set(archive.namelist()))
            if what is None:
                check_docx(archive, limits)
        if what is not None:
            raise _unsupported(what)
        return SourceType.DOCX
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
    found = _hint(filename, content_type)
    if found is None:
        found = (
            SourceType.MARKDOWN if markdown_score(text) >= _MARKDOWN_THRESHOLD else SourceType.TEXT
        )
    if found is SourceType.MARKDOWN:
        check_markdown_lines(text, limits)
    else:
        check_text_chars(text, limits)
    return found
