"""Coverage-guided fuzzing of ``sniff`` + ``parse`` + ``chunk_document`` with atheris.

Run it directly for a long session, e.g.
``.venv/bin/python tests/fuzz/atheris_parsers.py -max_total_time=600``; the test suite runs
it briefly (``test_atheris_parsers_harness_runs_clean``). Any exception other than the documented
``UnsupportedContent``/``ValidationError``, or a broken invariant, is reported as a crash.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["relata"]):
    from relata.chunking import chunk_document
    from relata.domain.errors import UnsupportedContent, ValidationError
    from relata.domain.models import SourceType
    from relata.parsing import ParseLimits, parse, sniff

LIMITS = ParseLimits(
    max_pdf_pages=20,
    max_chars=50_000,
    max_seconds=10,
    max_zip_entries=50,
    max_uncompressed_bytes=2_000_000,
    max_json_depth=16,
    max_json_lines=1000,
    max_blocks=500,
)
_TYPES = list(SourceType)


def test_one_input(data: bytes) -> None:
    # Byte 0 picks the parser (len(_TYPES) or more: sniff decides); bytes 1-2 the chunk size.
    if len(data) < 3:
        return
    forced = data[0] % (len(_TYPES) + 1)
    target = 20 + int.from_bytes(data[1:3], "little") % 1181
    payload = data[3:]
    try:
        source_type = _TYPES[forced] if forced < len(_TYPES) else sniff(payload, limits=LIMITS)
        doc = parse(payload, source_type, limits=LIMITS)
    except (UnsupportedContent, ValidationError):
        return
    for block in doc.blocks:
        if doc.text[block.start : block.end] != block.text:
            raise AssertionError("a block is not a slice of the document text")
    for chunk in chunk_document(doc, target_chars=target, overlap_chars=target // 5):
        if doc.text[chunk.start : chunk.end] != chunk.text or len(chunk.text) > target:
            raise AssertionError("a chunk breaks its offsets or its size bound")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
