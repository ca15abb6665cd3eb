"""What the parser targets share: small bounds (so the fuzzer reaches them) and the check
that a document keeps its promises (``tests.fuzz.invariants``)."""

from __future__ import annotations

from relata.domain.errors import UnsupportedContent, ValidationError
from relata.domain.models import SourceType
from relata.parsing import ParseLimits, parse
from tests.fuzz.invariants import check_document

#: Small enough that inputs of a few KiB reach every bound; generous on time (a parse is
#: cut off at ``max_seconds``; a slower one is a hang, reported by ``-timeout``).
LIMITS = ParseLimits(
    max_pdf_pages=20,
    max_chars=20_000,
    max_seconds=10,
    max_zip_entries=50,
    max_uncompressed_bytes=2_000_000,
    max_json_depth=16,
    max_json_lines=500,
    max_blocks=400,
    max_markdown_lines=2_000,
    max_docx_xml_bytes=1_000_000,
    max_docx_paragraphs=2_000,
    max_xml_elements=50_000,
    max_block_elements=20_000,
)

#: What ``sniff`` and ``parse`` declare (``TooLarge`` is a ``ValidationError``).
DECLARED = (UnsupportedContent, ValidationError)


def parse_checked(data: bytes, source_type: SourceType) -> None:
    """``parse`` as ``source_type``: a declared error, or a document that keeps its promises."""
    try:
        doc = parse(data, source_type, limits=LIMITS)
    except DECLARED:
        return
    assert doc.source_type is source_type
    check_document(doc, LIMITS)
