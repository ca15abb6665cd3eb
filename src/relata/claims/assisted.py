"""The claims stage's model paths, with analysis enabled (docs/decisions/0017, "Model paths").

**Claims.** The ``extract_claims`` task reads the item chunk by chunk (the first
``MAX_MODEL_CHUNKS`` that name an entity), with the entities the chunk names as the subjects
to choose from. Its rows are validated by the task (``relata.analysis.claim_task``: unknown
nature, degenerate statement, unknown subject, unlocatable quotation skipped and counted);
here a row must also name its subject inside its quotation (an entity mention of the item
lies within it), and a row whose quotation overlaps a deterministic claim about the same
subject, or another model claim, adds nothing (the deterministic extractor decides that
place). What is kept becomes a claim with extractor ``model`` (``locate.draft_of``): its
quotation the item's own text at its offsets, facets read from it, confidence 0.5.

**Judgements.** Pairs the facet rules did not flag, of claims about the same subject in
different items whose statements share most of their content words (``similarity``, the
subject's own words aside, at least ``MIN_SIMILARITY``; identical statements are not
asked about), go to the ``judge_contradiction`` task, the most similar first, at most
``MAX_JUDGED_PAIRS`` per item. A ``contradicts`` verdict of confidence at least
``MIN_MODEL_CONFIDENCE`` adds a contradiction with detector ``model``, facet ``judgement``,
the model's reason, and a confidence scaled under ``MODEL_CONFIDENCE_CAP``: below every facet
rule's (the lowest is 0.6), so an observed conflict always ranks first. A judgement never
removes anything, and the stage never asks about a pair the facets flagged.

A malformed reply costs its rows (counted); a model that is switched off, unreachable or
failing ends the model's part of the run: the counts go to the run's details, and the
deterministic claims and contradictions stand. Nothing here fails the item.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final, TypeVar

from relata.analysis.claim_task import Judgement, ModelClaim, Verdict
from relata.analysis.service import AnalysisService
from relata.claims.contradict import ConflictFacet, Contradiction
from relata.claims.extract import ChunkSpan, ClaimDraft, Subject, SubjectMention
from relata.claims.locate import LocatedClaim, draft_of
from relata.claims.words import terms_of, tokens
from relata.domain.cancel import Cancel
from relata.domain.errors import NotConfigured, Permanent, Unavailable

#: Chunks of one item the model reads for claims, at most.
MAX_MODEL_CHUNKS: Final = 20
#: Candidate pairs of one item the model judges, at most (the most similar first).
MAX_JUDGED_PAIRS: Final = 8
#: Share of the smaller statement's content words (the subject's aside) the other must have.
MIN_SIMILARITY: Final = 0.5
MIN_SHARED: Final = 2
#: A ``contradicts`` verdict below this confidence adds nothing.
MIN_MODEL_CONFIDENCE: Final = 0.7
#: A model contradiction's confidence is the model's times this: under every facet rule's.
MODEL_CONFIDENCE_CAP: Final = 0.5
MODEL_DETECTOR: Final = "model"

T = TypeVar("T")
Pair = tuple[str, ClaimDraft, ClaimDraft]


def _subject_terms(claim: ClaimDraft) -> frozenset[str]:
    return terms_of(w for _, _, w in tokens(claim.subject.name))


def similarity(a: ClaimDraft, b: ClaimDraft) -> float:
    """How much two statements about one subject say about the same thing: the share of the
    smaller one's content words the other also has, the subject's own words aside (both
    name it). 0 for identical statements (they cannot disagree) or fewer than
    ``MIN_SHARED`` shared words."""
    if " ".join(a.statement.split()).casefold() == " ".join(b.statement.split()).casefold():
        return 0.0
    own = _subject_terms(a) | _subject_terms(b)
    ta, tb = a.facets.terms - own, b.facets.terms - own
    shared = ta & tb
    if len(shared) < MIN_SHARED:
        return 0.0
    return len(shared) / min(len(ta), len(tb))


class CandidatePairs:
    """The ``limit`` most similar pairs offered (earlier offers win ties), in bounded
    memory however many are offered."""

    def __init__(self, limit: int = MAX_JUDGED_PAIRS) -> None:
        self._limit = limit
        self._heap: list[tuple[float, int, Pair]] = []
        self.offered = 0

    def offer(self, subject: str, a: ClaimDraft, b: ClaimDraft) -> None:
        score = similarity(a, b)
        if score < MIN_SIMILARITY:
            return
        entry = (score, -self.offered, (subject, a, b))
        self.offered += 1
        if len(self._heap) < self._limit:
            heapq.heappush(self._heap, entry)
        elif entry[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)

    def best(self) -> list[Pair]:
        return [pair for *_, pair in sorted(self._heap, key=lambda e: (-e[0], -e[1]))]


class ModelPass:
    """One item's model work in the claims stage, and its counts (see the module
    docstring). After the model failed or was switched off, it is not called again."""

    def __init__(self, analysis: AnalysisService, cancel: Cancel) -> None:
        self._analysis = analysis
        self._cancel = cancel
        self._version = analysis.model_id or "model"
        self.status = "ok"
        self.calls = 0
        self._rows = 0
        self._added = 0
        self._skipped: Counter[str] = Counter()
        self._candidates = 0
        self._verdicts: Counter[str] = Counter()
        self._judge_skipped: Counter[str] = Counter()
        self._contradictions = 0

    def _call(self, call: Callable[[], T]) -> T | None:
        """The task's reply, or None once the model is off or failing (status recorded)."""
        if self.status != "ok":
            return None
        self._cancel.raise_if_cancelled()
        try:
            reply = call()
        except NotConfigured:
            self.status = "disabled"
            return None
        except (Unavailable, Permanent) as exc:
            # The model's part is lost for this run; the deterministic results stand.
            self.status = f"unavailable ({type(exc).__name__})"
            return None
        self.calls += 1
        return reply

    # ------------------------------------------------------------------ claims
    def claims(
        self,
        item_id: str,
        text: str,
        chunks: Sequence[ChunkSpan],
        mentions: Sequence[SubjectMention],
        existing: Sequence[ClaimDraft],
    ) -> list[ClaimDraft]:
        """The model's claims that add to ``existing`` (the deterministic ones)."""
        merge = _ClaimMerge(item_id, text, mentions, existing, self._version)
        ordered = sorted(mentions, key=lambda m: (m.start, m.end))
        starts = [m.start for m in ordered]
        read = 0
        for chunk in chunks:
            if read >= MAX_MODEL_CHUNKS:
                break
            lo, hi = chunk.base_offset, chunk.base_offset + len(chunk.text)
            inside = ordered[bisect_left(starts, lo) : bisect_left(starts, hi)]
            names = list(dict.fromkeys(m.name for m in inside if m.end <= hi))
            if not names:
                continue
            read += 1
            reply = self._call(
                partial(self._analysis.extract_claims, chunk.text, names, self._cancel)
            )
            if reply is None:
                break
            self._skipped.update(reply.skipped)
            for row in reply.claims:
                self._rows += 1
                outcome = merge.add(chunk, row)
                if isinstance(outcome, str):
                    self._skipped[outcome] += 1
        self._added = len(merge.added)
        return merge.added

    # ------------------------------------------------------------------ judgements
    def judge(self, pairs: CandidatePairs) -> list[tuple[str, Contradiction]]:
        """The contradictions the model adds among the candidate pairs (module docstring)."""
        self._candidates = pairs.offered
        found: list[tuple[str, Contradiction]] = []
        for subject, a, b in pairs.best():
            reply = self._call(
                partial(
                    self._analysis.judge_contradiction,
                    a.quotation,
                    b.quotation,
                    self._cancel,
                    subject=a.subject.name,
                )
            )
            if reply is None:
                break
            self._judge_skipped.update(reply.skipped)
            judgement = reply.judgement
            if judgement is None:
                continue
            self._verdicts[judgement.verdict.value] += 1
            if judgement.verdict is not Verdict.CONTRADICTS:
                continue
            if judgement.confidence < MIN_MODEL_CONFIDENCE:
                self._judge_skipped["below_confidence"] += 1
                continue
            found.append((subject, _model_contradiction(a, b, judgement, self._version)))
        self._contradictions = len(found)
        return found

    def details(self) -> dict[str, Any]:
        return {
            "model": self.status,
            "model_calls": self.calls,
            "model_rows": self._rows,
            "model_claims": self._added,
            "model_skipped": dict(sorted(self._skipped.items())),
            "model_candidates": self._candidates,
            "model_verdicts": dict(sorted(self._verdicts.items())),
            "model_judge_skipped": dict(sorted(self._judge_skipped.items())),
            "model_contradictions": self._contradictions,
        }


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


class _ClaimMerge:
    """The model's claims of one item as they are merged (module docstring): each row is
    kept or given the reason it adds nothing."""

    def __init__(
        self,
        item_id: str,
        text: str,
        mentions: Sequence[SubjectMention],
        existing: Sequence[ClaimDraft],
        version: str,
    ) -> None:
        self._item_id, self._text, self._version = item_id, text, version
        self._by_name: dict[str, list[SubjectMention]] = defaultdict(list)
        for m in sorted(mentions, key=lambda m: (m.start, m.end)):
            self._by_name[_name_key(m.name)].append(m)
        self._taken: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for d in existing:
            self._taken[d.subject.key].append((d.start, d.end))
        self._keys = {d.dedupe_key for d in existing}
        self.added: list[ClaimDraft] = []

    def add(self, chunk: ChunkSpan, row: ModelClaim) -> ClaimDraft | str:
        start, end = chunk.base_offset + row.start, chunk.base_offset + row.end
        quotation = self._text[start:end]
        if quotation != row.quotation:
            return "not_in_item"  # a chunk that is not the item's text at its offset
        named = self._by_name.get(_name_key(row.subject), [])
        inside = [m for m in named if start <= m.start < m.end <= end]
        if not inside:
            return "subject_not_quoted"
        m = inside[0]
        if any(s < end and start < e for s, e in self._taken[m.normalised_key]):
            return "same_place"
        located = LocatedClaim(
            Subject(m.name, m.normalised_key, m.start, m.end),
            row.statement,
            row.nature,
            quotation,
            start,
            end,
        )
        draft = draft_of(self._item_id, located, model=self._version, chunk_id=chunk.chunk_id)
        if draft.dedupe_key in self._keys:
            return "duplicate"
        self._taken[m.normalised_key].append((start, end))
        self._keys.add(draft.dedupe_key)
        self.added.append(draft)
        return draft


def _model_contradiction(
    a: ClaimDraft, b: ClaimDraft, judgement: Judgement, version: str
) -> Contradiction:
    return Contradiction(
        a,
        b,
        ConflictFacet.JUDGEMENT,
        (a.start, a.end),
        (b.start, b.end),
        judgement.reason,
        round(MODEL_CONFIDENCE_CAP * judgement.confidence, 2),
        detector=MODEL_DETECTOR,
        detector_version=version,
    )
