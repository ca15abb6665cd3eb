"""The relationships stage's model path, with analysis enabled (docs/decisions/0020).

After the first scoring pass, the ``classify_relationship`` task is asked about the item's
best pairs, at most ``MAX_MODEL_PAIRS``: those storable already, and those short of storage
by no more than the model's weight (its opinion can add at most that much, so asking about
any other pair could change nothing). A pair a person decided (confirmed, edited or
rejected) is not asked about: its decision stands, and an opinion is not evidence that could
reopen a rejection. Each side of a pair is shown as its title and an excerpt: the side's
quotations in the pair's evidence, or, without any, the start of its text, at most
``MAX_EXCERPT_CHARS`` either way.

An opinion becomes the pair's ``PairFeatures.model`` and the pair is scored again; the scoring
model caps what it can do (ADR 19: at most its weight to the score, the type only at
``model_type_confidence`` or above, ``updates`` only for items dated apart, and never over an
observed contradiction or agreement). A rejected reply costs that pair's opinion (its reason
counted); a model that is switched off, unreachable or failing ends the model's part of the
run at the first failure, counted in the run's details: the deterministic scores stand and
the item never fails because of the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from relata.analysis.service import AnalysisService
from relata.domain.cancel import Cancel
from relata.domain.errors import NotConfigured, Permanent, Unavailable
from relata.relationships.evidence import Evidence
from relata.relationships.scoring import (
    DEFAULT_MODEL,
    MICROS,
    Feature,
    ModelOpinion,
    PairScore,
    ScoringModel,
)

#: Pairs of one item the model is asked about, at most (the best-scored first).
MAX_MODEL_PAIRS: Final = 5
#: Each side's excerpt, at most, in characters.
MAX_EXCERPT_CHARS: Final = 1500
_GAP: Final = "\n...\n"


@dataclass(frozen=True, slots=True)
class PairSide:
    """One item as the model sees it."""

    title: str
    excerpt: str


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """A pair to classify: ``other`` is the item paired with the stage's, ``first`` and
    ``second`` the pair's sides in the scoring model's order (A and B of the prompt)."""

    other: str
    first: PairSide
    second: PairSide


def excerpt(item_id: str, records: Iterable[Evidence], text: str) -> str:
    """What the model reads of one side of a pair: the side's quotations in ``records`` in
    the order of the text, each once (one inside another counts once), up to
    ``MAX_EXCERPT_CHARS``; or, without any, the start of ``text``."""
    spans = sorted(
        {(s.start, s.end, s.quotation) for r in records for s in r.spans() if s.item_id == item_id},
        key=lambda s: (s[0], -s[1]),
    )
    shown, reached = "", -1
    for _, end, quotation in spans:
        if end <= reached:
            continue  # inside a quotation already shown
        piece = " ".join(quotation.split())
        shown = (f"{shown}{_GAP}{piece}" if shown else piece)[:MAX_EXCERPT_CHARS]
        reached = end
        if len(shown) >= MAX_EXCERPT_CHARS:
            break
    return shown or text[: 2 * MAX_EXCERPT_CHARS].strip()[:MAX_EXCERPT_CHARS].rstrip()


class RelationshipModelPass:
    """One item's model work in the relationships stage, and its counts (see the module
    docstring). After the model failed or was switched off, it is not called again."""

    def __init__(
        self, analysis: AnalysisService, cancel: Cancel, scoring: ScoringModel = DEFAULT_MODEL
    ) -> None:
        self._analysis = analysis
        self._cancel = cancel
        self._scoring = scoring
        self.status = "ok"
        self.calls = 0
        self._failures = 0
        self._candidates = 0
        self._opinions: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()

    def reachable(self, scored: PairScore) -> bool:
        """Whether the pair is storable, or an opinion could make it so (its score is short
        of storage by no more than the model's weight)."""
        score = round(scored.score * MICROS)
        margin = self._scoring.weight_micros[Feature.MODEL]
        return scored.storable or score + margin >= round(self._scoring.storage_threshold * MICROS)

    def choose(
        self, scores: Mapping[str, PairScore], *, decided: Collection[str] = ()
    ) -> list[str]:
        """The other items of the pairs to ask about: reachable, not decided by a person,
        the best-scored first (ties by id), at most ``MAX_MODEL_PAIRS``."""
        eligible = [o for o, s in scores.items() if o not in decided and self.reachable(s)]
        self._candidates = len(eligible)
        ranked = sorted(eligible, key=lambda o: (-scores[o].score, o))
        return ranked[:MAX_MODEL_PAIRS]

    def classify(self, requests: Sequence[ModelRequest]) -> dict[str, ModelOpinion]:
        """The model's opinion of each pair it gave a valid one for, by the other item."""
        found: dict[str, ModelOpinion] = {}
        for request in requests[:MAX_MODEL_PAIRS]:
            if self.status != "ok":
                break
            self._cancel.raise_if_cancelled()
            try:
                reply = self._analysis.classify_relationship(
                    request.first.excerpt,
                    request.second.excerpt,
                    self._cancel,
                    first_title=request.first.title,
                    second_title=request.second.title,
                )
            except NotConfigured:
                self.status = "disabled"
                break
            except (Unavailable, Permanent) as exc:
                # The model's part is lost for this run; the deterministic scores stand.
                self.status = f"unavailable ({type(exc).__name__})"
                self._failures += 1
                break
            self.calls += 1
            self._skipped.update(reply.skipped)
            opinion = reply.opinion
            if opinion is None:
                continue
            self._opinions[opinion.relationship_type.value] += 1
            found[request.other] = ModelOpinion(opinion.relationship_type, opinion.confidence)
        return found

    def details(self) -> dict[str, Any]:
        return {
            "model": self.status,
            "model_calls": self.calls,
            "model_failures": self._failures,
            "model_candidates": self._candidates,
            "model_opinions": dict(sorted(self._opinions.items())),
            "model_skipped": dict(sorted(self._skipped.items())),
        }
