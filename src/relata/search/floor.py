"""The relevance floor's similarity for the configured embedding model (ADR 40).

A cosine similarity means something different for each embedding model, so the floor is
calibrated per model (scripts/calibrate_relevance_floor.py on a corpus's judged queries and
a set of queries no document is about) and looked up by the model's id. A model with no
calibrated value gets no floor (0: every result found by meaning counts) until
``RELATA_SEARCH_MEANING_FLOOR`` sets one.

Applied to a search: a result found by meaning alone, under the floor, is a weak match
(``is_weak``); the search withholds those, or lists them last when asked (``floor_notes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from relata.domain.ports import TextSearch
from relata.domain.vocabulary import SearchLeg
from relata.ranking.fusion import LEXICAL_LEGS, Explanation, LegHit
from relata.search.query import function_word, query_words

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


# ---------------------------------------------------------------- applying the floor
#: The floor's look-up of a query's content words: among this many text hits.
MAX_WORDED_LOOKUP = 1000
NOTHING_MATCHED = "nothing matched"


def is_weak(explanation: Explanation, floor: float, *, worded: bool | None = None) -> bool:
    """Under the relevance floor: nothing but meaning found it (no entity the query names,
    no relationship to a result that passed, and no word of the query other than function
    words like "how" or "do") and its similarity is under ``floor``. A floor of 0 (off, an
    uncalibrated model, no embedder) calls nothing weak.

    ``worded`` says whether the item holds a word of the query other than a function word,
    where the caller looked it up (the legs rank without marks); when ``None``, the lexical
    legs' matched terms say it."""
    if floor <= 0:
        return False
    for c in explanation.legs:
        if c.leg in LEXICAL_LEGS:
            if worded is not None:
                if worded:
                    return False
            elif not c.matched_terms or not all(function_word(t) for t in c.matched_terms):
                return False
        elif c.leg != SearchLeg.VECTOR:
            return False
    similarity = explanation.similarity
    return similarity is None or similarity < floor


def worded_lookup(
    text: TextSearch,
    workspace_id: str,
    query: str,
    hits: Mapping[str, Sequence[LegHit] | None],
    floor: float,
) -> Callable[[str], bool]:
    """Whether an item the text legs found holds a word of the query other than a function
    word, for the floor (the legs rank without marks). Without function words in the query,
    every text hit holds one. Otherwise one unranked lookup of the query's other words says
    which hold one, among the text hits the floor could still call weak: not those an entity
    names, nor those as close in meaning as the floor asks (for them the answer cannot change
    the verdict)."""
    words = query_words(query)
    if floor <= 0 or not any(function_word(w) for w in words):
        return lambda item_id: True
    settled = {h.id for h in hits.get(SearchLeg.ENTITY) or ()} | {
        h.id
        for h in hits.get(SearchLeg.VECTOR) or ()
        if h.similarity is not None and h.similarity >= floor
    }
    open_ = [
        i
        for i in dict.fromkeys(h.id for leg in LEXICAL_LEGS for h in (hits.get(leg) or ()))
        if i not in settled
    ][:MAX_WORDED_LOOKUP]
    content = " ".join(w for w in words if not function_word(w))
    holding: set[str] = set()
    if content and open_:
        holding = text.items_matching(workspace_id, content, open_)
    return lambda item_id: item_id in settled or item_id in holding


def floor_notes(matched: bool, weak: int, shown: bool, floor: float) -> list[str]:
    """What the response says about the relevance floor: "nothing matched" when no result
    passed it, and how many weak matches it withheld (or lists after the others)."""
    notes: list[str] = [] if matched else [NOTHING_MATCHED]
    if weak and shown:
        notes.append(
            f"{weak} weak match(es) listed last: found by meaning alone, under the relevance "
            f"floor (similarity {floor:g})"
        )
    elif weak:
        notes.append(
            f"{weak} weak match(es) withheld: found by meaning alone, under the relevance "
            f"floor (similarity {floor:g}); ask with weak=true (--weak in the CLI) to see them"
        )
    return notes
