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

It needs no embedder and no language model, so it never skips: without a model the
deterministic extractor is the whole of it (degraded, never failed).
"""

from __future__ import annotations

from collections.abc import Sequence

from relata.domain.cancel import Cancel
from relata.domain.models import ObservedMention, ProposedAlias
from relata.domain.ports import ChunkRepository, EntityRepository, StageTransaction
from relata.domain.vocabulary import EntityType, StageKind
from relata.entities.aliases import AliasCandidate, NamedEntity, blocking_keys, propose_aliases
from relata.entities.mentions import ChunkText, EntityExtractor, Extraction, Mention
from relata.pipeline import Requirement, StagePayload, StageResult

#: Existing entities considered as alias candidates for one item, at most.
MAX_SIMILAR = 500
MAX_ALIASES_PER_ITEM = 200

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
    ) -> None:
        self._chunks = chunks
        self._entities = entities
        self._extractor = extractor

    @property
    def versions(self) -> dict[str, str]:
        return {"entity_extractor": f"{self._extractor.extractor}/{self._extractor.version}"}

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        chunks = self._chunks.list_for_item(payload.workspace_id, payload.item_id)
        extraction = self._extractor.extract(
            [ChunkText(c.id, c.text, c.start_offset) for c in chunks]
        )
        cancel.raise_if_cancelled()
        texts = {c.id: (c.start_offset, c.text) for c in chunks}
        mentions = _located(extraction.mentions, texts)
        observed = [_observed(m) for m in mentions]
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
            },
        )

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


def _observed(m: Mention) -> ObservedMention:
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
