"""Entities: the people, organisations, places and terms items mention.

The pure core, with no database (docs/decisions/0015-entities.md):

* ``normalise``: a name -> its key; identity is (workspace, type, key);
* ``deterministic``: the extractor without a language model (spaCy's small NER, loaded on
  first use, with the ``rules``, ``candidates`` and ``consistency`` rules around it);
* ``aliases``: candidate aliases between names, with a score and a reason, never merges;
* ``bench``: ``relata bench entities`` (typed exact-span P/R/F1 and throughput).

Importing this package does not import spaCy.
"""

from __future__ import annotations

from relata.entities.mentions import (
    AcronymDefinition,
    ChunkText,
    EntityExtractor,
    Extraction,
    Extractor,
    Mention,
)
from relata.entities.normalise import clean_name, normalise_name

__all__ = [
    "AcronymDefinition",
    "ChunkText",
    "EntityExtractor",
    "Extraction",
    "Extractor",
    "Mention",
    "clean_name",
    "normalise_name",
]
