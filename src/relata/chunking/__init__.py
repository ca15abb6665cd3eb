"""Chunking: a parsed ``Document`` -> retrievable ``ChunkDraft``s (structure-aware).

``chunk_document`` never merges sections, splits long sections at paragraph and sentence
boundaries into balanced chunks, keeps each chunk's heading path, page and exact offsets into
the document text, and is deterministic. See ``chunker`` for the rules and
docs/decisions/0005-content-sniffing-and-chunking.md for the reasoning behind the defaults.
"""

from __future__ import annotations

from relata.chunking.chunker import CHUNKER_VERSION, ChunkDraft, chunk_document

__all__ = ["CHUNKER_VERSION", "ChunkDraft", "chunk_document"]
