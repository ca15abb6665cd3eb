"""The ``entities`` pipeline stage: an item's chunks become entity observations.

``EntityStage.run`` reads the item's chunks (their text is the item's text at their offsets),
runs the deterministic extractor (``DeterministicExtractor``: spaCy's small NER model and the
rules around it, no language model), drops any mention whose quotation does not slice the
item's text at its offsets, and proposes candidate aliases between the item's entities and
the workspace's entities that share a blocking key with them (``EntityRepository.similar``:
an index lookup, never a scan of the workspace). Its result replaces the item's observations
in the stage's transaction (``StageTransaction.replace_entities``): entities upsert on their
identity (workspace, type, normalised key), an entity left with no observation goes unless a
person decided on it, and a pair a person already decided is never proposed again.

With analysis enabled, the ``extract_entities`` task also reads the item chunk by chunk (up
to ``MAX_MODEL_CHUNKS``, each call through the shared AI-call limit). Its validated rows
(``relata.analysis.entity_task``: unknown type, degenerate name or a quotation absent from the
source are skipped and counted) merge with the deterministic mentions: a row at the same
place and type as a deterministic mention marks it ``agreed``; a row overlapping one is left
out (the deterministic extractor decides the span); any other row is added as a ``model``
mention. A malformed reply, or a model that cannot be reached, costs only the model's rows:
the counts are in the run's details and the stage still succeeds with the deterministic
mentions. It needs no embedder and no language model, so it never skips: without a model the
deterministic extractor is the whole of it (degraded, never failed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from relata.analysis.service import AnalysisService
from relata.domain.cancel import Cancel
from relata.domain.errors import NotConfigured, Permanent, Unavailable
from relata.domain.models import Chunk, ObservedMention, ProposedAlias
from relata.domain.ports import ChunkRepository, EntityRepository, StageTransaction
from relata.domain.vocabulary import EntityType, StageKind
from relata.entities.aliases import AliasCandidate, NamedEntity, blocking_keys, propose_aliases
from relata.entities.mentions import ChunkText, EntityExtractor, Extraction, Extractor, Mention
from relata.entities.normalise import clean_name, normalise_name
from relata.pipeline import Requirement, StagePayload, StageResult

#: Existing entities considered as alias candidates for one item, at most.
MAX_SIMILAR = 500
MAX_ALIASES_PER_ITEM = 200
#: Chunks of one item the model reads, at most (the AI-call limit bounds them in flight).
MAX_MODEL_CHUNKS = 40

_REASONS = {
    "acronym_defined": "the text defines {a} as {b}",
    "diacritics": "{a} and {b} differ only in accents",
    "honorific": "{a} may be {b} (an honorific and a surname)",
    "initials": "{a} may be {b} (initials for the given names)",
    "acronym": "{a} may be the initials of {b}",
    "prefix": "{a} may be short for {b}",
    "surname": "{a} may be {b} (a surname alone)",
    "spelling": "{a} and {b} are spelled almost alike",
    "same_name": "{a} and {b} have the same name",
}


def _identity(entity_type: EntityType, key: str) -> str:
    return f"{entity_type.value}:{key}"


class EntityStage:
    """``entities``: see the module docstring."""

    kind = StageKind.ENTITIES
    requires: frozenset[Requirement] = frozenset()

    def __init__(
        self,
        *,
        chunks: ChunkRepository,
        entities: EntityRepository,
        extractor: EntityExtractor,
        analysis: AnalysisService | None = None,
    ) -> None:
        self._chunks = chunks
        self._entities = entities
        self._extractor = extractor
        self._analysis = analysis

    @property
    def versions(self) -> dict[str, str]:
        versions = {"entity_extractor": f"{self._extractor.extractor}/{self._extractor.version}"}
        if self._analysis is not None and self._analysis.enabled and self._analysis.model_id:
            versions["entity_model"] = self._analysis.model_id
        return versions

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        chunks = self._chunks.list_for_item(payload.workspace_id, payload.item_id)
        extraction = self._extractor.extract(
            [ChunkText(c.id, c.text, c.start_offset) for c in chunks]
        )
        cancel.raise_if_cancelled()
        texts = {c.id: (c.start_offset, c.text) for c in chunks}
        mentions = _located(extraction.mentions, texts)
        model_details: dict[str, Any] = {}
        agreed: set[tuple[int, int]] = set()
        if self._analysis is not None and self._analysis.enabled:
            found, agreed, model_details = self._model_mentions(chunks, mentions, cancel)
            mentions = sorted([*mentions, *found], key=lambda m: (m.start, m.end))
        observed = [_observed(m, agreed=(m.start, m.end) in agreed) for m in mentions]
        aliases = self._aliases(payload.workspace_id, mentions, extraction)
        cancel.raise_if_cancelled()

        def write(tx: StageTransaction) -> None:
            tx.replace_entities(payload.item_id, observed, aliases)

        return StageResult(
            write=write,
            versions=self.versions,
            details={
                "mentions": len(observed),
                "entities": len({(m.entity_type, m.normalised_key) for m in observed}),
                "dropped_mentions": len(extraction.mentions) - len(mentions),
                "alias_candidates": len(aliases),
                **model_details,
            },
        )

    def _model_mentions(
        self, chunks: Sequence[Chunk], mentions: Sequence[Mention], cancel: Cancel
    ) -> tuple[list[Mention], set[tuple[int, int]], dict[str, Any]]:
        """The model's mentions that add to the deterministic ones, the places both found,
        and the counts for the run (see the module docstring)."""
        assert self._analysis is not None
        by_span = {(m.start, m.end): m for m in mentions}
        taken = sorted(by_span)
        added: list[Mention] = []
        agreed: set[tuple[int, int]] = set()
        skipped: Counter[str] = Counter()
        calls = rows = 0
        status = "ok"
        version = self._analysis.model_id or "model"
        for chunk in chunks[:MAX_MODEL_CHUNKS]:
            try:
                reply = self._analysis.extract_entities(chunk.text, cancel)
            except NotConfigured:
                status = "disabled"
                break
            except (Unavailable, Permanent) as exc:
                # The model's rows are lost for this pass; the deterministic ones stand.
                status = f"unavailable ({type(exc).__name__})"
                break
            calls += 1
            skipped.update(reply.skipped)
            for e in reply.entities:
                rows += 1
                start, end = chunk.start_offset + e.start, chunk.start_offset + e.end
                same = by_span.get((start, end))
                if same is not None:
                    if same.entity_type is e.entity_type:
                        agreed.add((start, end))
                    else:
                        skipped["type_disagreement"] += 1
                    continue
                if any(s < end and start < t for s, t in taken):
                    skipped["overlaps_deterministic"] += 1
                    continue
                key = normalise_name(e.name)
                if not key:
                    skipped["no_key"] += 1
                    continue
                taken.append((start, end))
                added.append(
                    Mention(
                        chunk_id=chunk.id,
                        start=start,
                        end=end,
                        quotation=e.name,
                        entity_type=e.entity_type,
                        name=clean_name(e.name),
                        normalised_key=key,
                        extractor=Extractor.MODEL,
                        extractor_version=version,
                    )
                )
        cancel.raise_if_cancelled()
        details = {
            "model": status,
            "model_calls": calls,
            "model_rows": rows,
            "model_added": len(added),
            "model_agreed": len(agreed),
            "model_skipped": dict(sorted(skipped.items())),
        }
        return added, agreed, details

    def _aliases(
        self, workspace_id: str, mentions: Sequence[Mention], extraction: Extraction
    ) -> list[ProposedAlias]:
        names: dict[str, NamedEntity] = {}
        for m in mentions:
            ident = _identity(m.entity_type, m.normalised_key)
            names.setdefault(ident, NamedEntity(ident, m.name, m.entity_type))
        if not names:
            return []
        focus = set(names)
        keys = set().union(*(blocking_keys(n.name) for n in names.values()))
        for e in self._entities.similar(workspace_id, keys, limit=MAX_SIMILAR):
            ident = _identity(e.entity_type, e.normalised_key)
            names.setdefault(ident, NamedEntity(ident, e.name, e.entity_type))
        defined = [(a.acronym, a.expansion) for a in extraction.acronyms]
        found = propose_aliases(list(names.values()), focus=focus, defined=defined)
        return [_proposed(c, names) for c in found[:MAX_ALIASES_PER_ITEM]]


def _located(mentions: Sequence[Mention], texts: dict[str, tuple[int, str]]) -> list[Mention]:
    """The mentions whose quotation is the item's text at their offsets, once each (chunks
    overlap, so the same place can be found twice)."""
    seen: set[tuple[int, int, str, str]] = set()
    out: list[Mention] = []
    for m in mentions:
        base_text = texts.get(m.chunk_id)
        if base_text is None:
            continue
        base, text = base_text
        if text[m.start - base : m.end - base] != m.quotation or not m.quotation:
            continue
        key = (m.start, m.end, m.entity_type.value, m.normalised_key)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def _observed(m: Mention, *, agreed: bool = False) -> ObservedMention:
    return ObservedMention(
        entity_type=m.entity_type,
        normalised_key=m.normalised_key,
        name=m.name,
        chunk_id=m.chunk_id,
        start=m.start,
        end=m.end,
        quotation=m.quotation,
        extractor=m.extractor.value,
        extractor_version=m.extractor_version,
        agreed=agreed,
        tokens=frozenset(blocking_keys(m.name)),
    )


def _proposed(c: AliasCandidate, names: dict[str, NamedEntity]) -> ProposedAlias:
    a, b = names[c.entity_id], names[c.alias_id]
    # The shorter name reads as the alias of the longer one.
    short, long = sorted((a, b), key=lambda n: (len(n.name), n.name, n.entity_type.value))
    template = _REASONS.get(c.reason.value, "{a} may be {b}")
    return ProposedAlias(
        first=(a.entity_type, a.id.split(":", 1)[1], a.name),
        second=(b.entity_type, b.id.split(":", 1)[1], b.name),
        score=c.score,
        reason=template.format(
            a=f"“{short.name}” ({short.entity_type.value})",
            b=f"“{long.name}” ({long.entity_type.value})",
        ),
    )
