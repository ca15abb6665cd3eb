"""The relevance floor's similarity for the configured embedding model (ADR 40).

A cosine similarity means something different for each embedding model, so the floor is
calibrated per model (scripts/calibrate_relevance_floor.py on a corpus's judged queries and
a set of queries no document is about) and looked up by the model's id. A model with no
calibrated value gets no floor (0: every result found by meaning counts) until
``RELATA_SEARCH_MEANING_FLOOR`` sets one.
"""

from __future__ import annotations

from typing import Final

#: Calibrated floors by model id (the part after the last "/", case-insensitive).
CALIBRATED: Final[dict[str, float]] = {
    "all-minilm-l6-v2": 0.28,
    "all-minilm": 0.28,  # Ollama's name for the same model
}


def meaning_floor(setting: str, model_id: str | None) -> float:
    """The floor ``RELATA_SEARCH_MEANING_FLOOR`` (``auto`` or a number) gives for
    ``model_id`` (None: no embedder, so no result is found by meaning)."""
    if setting != "auto":
        return float(setting)
    if model_id is None:
        return 0.0
    name = model_id.rsplit("/", 1)[-1].split(":", 1)[0].casefold()
    return CALIBRATED.get(name, 0.0)
