"""Fuzz target: content sniffing, ``sniff(data, filename=..., content_type=...)``.

Byte 0 picks the hints the client sent (none, a Markdown or text filename, a Content-Type,
or a misleading one); the rest is the upload. Declared errors: ``UnsupportedContent`` and
``ValidationError`` (with ``TooLarge``). Invariants: the answer is a ``SourceType``; a hint
never turns bytes into PDF, DOCX, XLSX or PPTX (the answer without hints is the same binary
type), and a text type's bytes decode as text.
"""

from __future__ import annotations

from relata.domain.models import SourceType
from relata.parsing import sniff
from relata.parsing.decode import decode_text
from tests.fuzz.targets.common import DECLARED, LIMITS

_HINTS: tuple[tuple[str | None, str | None], ...] = (
    (None, None),
    ("notes.md", None),
    ("notes.txt", None),
    (None, "text/markdown; charset=utf-8"),
    (None, "text/plain"),
    ("report.pdf", "application/pdf"),
    ("letter.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("data.json", "application/json"),
    ("page.html", "text/html"),
    ("table.csv", "text/csv"),
)
_BINARY = frozenset({SourceType.PDF, SourceType.DOCX, SourceType.XLSX, SourceType.PPTX})


def one_input(data: bytes) -> None:
    if not data:
        return
    filename, content_type = _HINTS[data[0] % len(_HINTS)]
    payload = data[1:]
    try:
        found = sniff(payload, filename=filename, content_type=content_type, limits=LIMITS)
    except DECLARED:
        return
    assert isinstance(found, SourceType)
    if found in _BINARY:
        assert sniff(payload, limits=LIMITS) is found, "a hint changed a binary type"
    else:
        decode_text(payload)  # sniffed as text, so it is text
