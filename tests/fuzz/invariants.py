"""Invariants every parsed document and every chunking must satisfy (shared by the tests)."""

from __future__ import annotations

from relata.chunking import ChunkDraft
from relata.parsing import HEADING_KINDS, Document, ParseLimits


def check_document(doc: Document, limits: ParseLimits) -> None:
    """Blocks are ordered, exact slices of the text; the text is storable and within bounds."""
    assert doc.blocks, "parse returns at least one block or raises"
    assert len(doc.text) <= limits.max_chars
    assert len(doc.blocks) <= limits.max_blocks
    doc.text.encode("utf-8")  # no lone surrogates
    assert "\x00" not in doc.text
    previous_end = -1
    for block in doc.blocks:
        assert block.start > previous_end
        assert doc.text[block.start : block.end] == block.text
        assert block.text and block.text == block.text.strip()
        previous_end = block.end


def check_chunks(doc: Document, chunks: list[ChunkDraft], target: int) -> None:
    """Exact slices within the target, no section crossed, every character covered."""
    assert [c.sequence for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert 0 < len(chunk.text) <= target
        for block in doc.blocks:
            if block.end <= chunk.start or block.start >= chunk.end:
                continue
            if block.kind in HEADING_KINDS:
                assert chunk.heading_path[: len(block.heading_path)] == block.heading_path
            else:
                assert block.heading_path == chunk.heading_path, "a chunk crosses a section"
                assert block.page == chunk.page, "a chunk crosses a page"
    # What no chunk covers (between blocks, or between a chunk and the next) is white space.
    reach = 0
    for start, end in sorted((c.start, c.end) for c in chunks):
        assert not doc.text[reach:start].strip(), "text left out of every chunk"
        reach = max(reach, end)
    assert not doc.text[reach:].strip(), "text left out of every chunk"
