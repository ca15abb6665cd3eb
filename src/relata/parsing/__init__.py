"""Parsing: uploaded bytes -> a typed, bounded, structured ``Document``.

``sniff`` decides the type from the content (filename and Content-Type are hints only);
``parse`` turns bytes of that type into a ``Document`` whose blocks are exact slices of its
canonical text. Both raise only ``UnsupportedContent`` or ``ValidationError``. The bounds
(``ParseLimits``) come from settings through ``limits_from_settings``. See
docs/decisions/0005-content-sniffing-and-chunking.md.
"""

from __future__ import annotations

from relata.config.settings import Settings
from relata.parsing.dispatch import PARSER_VERSION, parse
from relata.parsing.model import HEADING_KINDS, Block, Document, ParseLimits
from relata.parsing.sniff import sniff


def limits_from_settings(settings: Settings) -> ParseLimits:
    """The configurable bounds (pages, characters, time); the zip and JSON bounds are fixed."""
    return ParseLimits(
        max_pdf_pages=settings.parse_max_pdf_pages,
        max_chars=settings.parse_max_chars,
        max_seconds=settings.parse_timeout,
    )


__all__ = [
    "HEADING_KINDS",
    "PARSER_VERSION",
    "Block",
    "Document",
    "ParseLimits",
    "limits_from_settings",
    "parse",
    "sniff",
]
