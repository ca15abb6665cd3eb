"""What a search is asked and what it answers: the query with its limits, the results with
their explanations and excerpts, the response with the legs' states and notes, and the item
reader the search re-reads its candidates through."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from relata.claims.words import STOP_WORDS
from relata.domain.errors import ValidationError
from relata.domain.models import Item, SourceType
from relata.ranking.fusion import LEGS, Explanation
from relata.search.excerpts import Excerpt

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_OFFSET = 1000
#: The query words that the entity leg and the relevance floor look at: the first this many.
MAX_QUERY_WORDS = 24
_WORD = re.compile(r"[\w][\w'’.&-]*")


def query_words(text: str) -> list[str]:
    """The query's first ``MAX_QUERY_WORDS`` words, as written."""
    return _WORD.findall(text)[:MAX_QUERY_WORDS]


def function_word(word: str) -> bool:
    """A word that names nothing as the query writes it: an English function word ("of",
    "is", "no"), unless written in capitals ("NO", nitric oxide; "ARE", an AU-rich element)."""
    return word.casefold() in STOP_WORDS and not (len(word) > 1 and word.isupper())


class ItemReader(Protocol):
    def get_many(
        self, workspace_id: str, item_ids: Sequence[str], *, with_text: bool = True
    ) -> list[Item]: ...
    def filter_live(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> set[str]: ...


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    limit: int = 10
    offset: int = 0
    source_type: SourceType | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    legs: frozenset[str] | None = None  # None: every available leg
    #: Also return the weak matches the relevance floor withholds (marked as such).
    weak: bool = False

    @property
    def source(self) -> str | None:
        """The source-type filter as stored, or None."""
        return self.source_type.value if self.source_type else None

    def validated(self) -> SearchQuery:
        q = self.text.strip()
        if not q:
            raise ValidationError("q must not be empty", field="q")
        if len(q) > MAX_QUERY_CHARS:
            raise ValidationError(f"q must be at most {MAX_QUERY_CHARS} characters", field="q")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValidationError(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        if not 0 <= self.offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be between 0 and {MAX_OFFSET}", field="offset")
        if self.created_from and self.created_to and self.created_from >= self.created_to:
            raise ValidationError("from must be before to", field="from")
        if self.legs is not None:
            unknown = self.legs - set(LEGS)
            if unknown or not self.legs:
                raise ValidationError(
                    f"legs must be a non-empty subset of {', '.join(LEGS)}", field="legs"
                )
        return SearchQuery(
            q,
            self.limit,
            self.offset,
            self.source_type,
            self.created_from,
            self.created_to,
            self.legs,
            self.weak,
        )


@dataclass(frozen=True, slots=True)
class SearchResult:
    item: Item
    rank: int
    score: float
    explanation: Explanation
    excerpts: tuple[Excerpt, ...]
    #: Open contradictions (the ledger) involving this item.
    open_contradictions: int = 0
    #: Under the relevance floor: found by meaning alone, and not close enough to count as a
    #: match (returned only when the query asks for weak matches).
    weak: bool = False


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    total: int
    limit: int
    offset: int
    results: tuple[SearchResult, ...]
    legs: dict[str, str]  # leg -> "ran" | "absent" | "not requested"
    notes: tuple[str, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: Results the relevance floor withheld (``weak=False``) or marked weak (``weak=True``).
    weak_matches: int = 0
    #: No result passed the relevance floor: no word or name of the query matched and
    #: nothing was close enough in meaning (weak matches may still be listed on request).
    nothing_matched: bool = False
