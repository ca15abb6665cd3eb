"""Fuzz target: the chunker, ``chunk_document(doc, target_chars=..., overlap_chars=...)``.

The bytes describe a document as a parser builds one (through ``DocumentBuilder``): blocks
of every kind with heading paths, levels and pages, and the chunk size and overlap. The
chunker declares no error for valid arguments. Invariants (``tests.fuzz.invariants
.check_chunks``): chunks are numbered in order, exact slices of the text within the target
size, never across a section or page, and together they cover every non-blank character.
"""

from __future__ import annotations

import atheris

from relata.chunking import chunk_document
from relata.domain.errors import TooLarge
from relata.domain.models import SourceType
from relata.parsing.model import DocumentBuilder, path_label
from tests.fuzz.invariants import check_chunks
from tests.fuzz.targets.common import LIMITS

_KINDS = ("paragraph", "heading", "title", "table", "code", "list", "field", "record", "quote")
_PIECES = (
    "The tide rose. ",
    "Dr. Vaughan noted 3.5 m. ",
    "\n",
    "\n\n",
    " ",
    "| a | b |\n",
    "- item\n",
    "word ",
    "x" * 40,
    "¿Qué? ",
    "e.g. ",
    "…",
    "\t",
)


def _text(fdp: atheris.FuzzedDataProvider) -> str:
    """Text from the input: raw characters, or (cheaper to find) a run of common pieces."""
    if fdp.ConsumeBool():
        return str(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 600)))
    count = fdp.ConsumeIntInRange(0, 30)
    return "".join(_PIECES[fdp.ConsumeIntInRange(0, len(_PIECES) - 1)] for _ in range(count))


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    target = fdp.ConsumeIntInRange(1, 1200)
    overlap = fdp.ConsumeIntInRange(0, target)
    builder = DocumentBuilder(SourceType.MARKDOWN, LIMITS)
    path: tuple[str, ...] = ()
    page: int | None = None
    for _ in range(fdp.ConsumeIntInRange(1, 40)):
        kind = _KINDS[fdp.ConsumeIntInRange(0, len(_KINDS) - 1)]
        text = _text(fdp)
        if fdp.ConsumeIntInRange(0, 7) == 0:
            page = fdp.ConsumeIntInRange(1, 5) if fdp.ConsumeBool() else None
        if kind in ("heading", "title"):
            level = 0 if kind == "title" else fdp.ConsumeIntInRange(1, 6)
            label = path_label(text)
            if not label:
                continue
            path = (*path[: max(level - 1, 0)], label)
        else:
            level = 0
        try:
            builder.add(text, kind=kind, heading_path=path, level=level, page=page)
        except TooLarge:  # the document is full: chunk what it holds
            break
    doc = builder.build()
    if not doc.blocks:
        return
    chunks = chunk_document(doc, target_chars=target, overlap_chars=overlap)
    check_chunks(doc, chunks, target)
