"""A message's attachments follow its new version (docs/decisions/0048, "A new version of a
message").

When an item gets a new version (``relata.ingest.versions``) and the item is, or becomes, an
e-mail, its attachments are compared with the new message's:

1. a new part whose bytes are an attachment item's current content is **the same**: that
   item stays as it is (its row takes the part's new number and name);
2. a part left whose name is an unpaired attachment's name is **changed**: it becomes a new
   version of that item;
3. a part left is **new**: it becomes an item, as at the first ingestion;
4. an attachment item left is **removed**: it is deleted.

Changed and new parts pass the upload's checks together (``IngestService.accept_attached``:
type from content, size, an attached message refused, content already in the workspace or
twice in the message); a part that fails them is listed with the reason, and a changed one
that fails them takes its old item with it (the message no longer holds what it was).

``plan`` reads, checks and stores the new originals; ``AttachmentPlan.write`` is called in
the one transaction of the message's new version (``Pipeline.switch_versions``), with the
attachments' new versions and the new items' first jobs, so the message and its attachments
change together or not at all; ``discard`` removes the stored originals when it did not
commit. The rest of each delete (vectors, originals, the row) and the audit events follow
the commit (``VersionService``); a crash in between is finished by the recovery
(``relata.ingest.recovery``, as any interrupted delete).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from relata.domain.errors import DuplicateItem, RelataError
from relata.domain.models import SYSTEM_ACTOR, Actor, Attachment, Item, ItemVersion, SourceType
from relata.domain.ports import (
    AttachmentRepository,
    ItemRepository,
    ItemVersionRepository,
    StageTransaction,
)
from relata.ids import content_hash
from relata.ingest.originals import OriginalStore
from relata.ingest.service import MAX_ATTACHMENTS, IngestRequest, IngestService
from relata.parsing import ParseLimits
from relata.parsing.eml import EmailAttachment, attachments_of
from relata.pipeline import StagePayload

log = logging.getLogger("relata.ingest")

#: The reason a part whose content another item holds is listed with (as at ingestion).
DUPLICATE_REASON = "the same content is already an item of this workspace"


@dataclass(frozen=True, slots=True)
class Matching:
    """Which new part is which old attachment item (see the module docstring): ``same`` and
    ``changed`` map a part's number to the old item's id; ``new`` are the parts' numbers
    left; ``removed`` the old items' ids left."""

    same: dict[int, str]
    changed: dict[int, str]
    new: list[int]
    removed: list[str]


def match(old: Sequence[tuple[str, Item]], parts: Sequence[EmailAttachment]) -> Matching:
    """Pair the message's new parts with its old attachment items: ``old`` is each live
    attachment item with its name in the message (in the message's order). By content
    first, then by name; each item is paired once."""
    by_hash: dict[str, list[str]] = {}
    for _, item in old:
        by_hash.setdefault(item.content_hash, []).append(item.id)
    paired: set[str] = set()
    same: dict[int, str] = {}
    readable = [(p, p.data) for p in parts if p.data is not None]
    for p, data in readable:
        candidates = [i for i in by_hash.get(content_hash(data), []) if i not in paired]
        if candidates:
            same[p.number] = candidates[0]
            paired.add(candidates[0])
    changed: dict[int, str] = {}
    new: list[int] = []
    for p, _ in readable:
        if p.number in same:
            continue
        named = [item.id for name, item in old if name == p.name and item.id not in paired]
        if named:
            changed[p.number] = named[0]
            paired.add(named[0])
        else:
            new.append(p.number)
    removed = [item.id for _, item in old if item.id not in paired]
    return Matching(same=same, changed=changed, new=new, removed=removed)


@dataclass(slots=True)
class AttachmentPlan:
    """What a message's new version does to its attachments (see the module docstring)."""

    message_id: str
    rows: list[Attachment]
    #: New versions of changed attachments, each with the item's version list before it.
    versions: list[tuple[ItemVersion, list[ItemVersion]]] = field(default_factory=list)
    created: list[Item] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)

    @property
    def starts(self) -> list[StagePayload]:
        """The first stage's payload of each new attachment item (titled by its document)."""
        return [
            StagePayload(i.workspace_id, i.id, 1, title_from_document=True) for i in self.created
        ]

    def write(self, tx: StageTransaction) -> None:
        """The plan's rows, in the transaction of the message's new version."""
        tx.mark_deleted([i.id for i in self.removed])
        tx.create_items(self.created)
        tx.replace_attachments(self.message_id, self.rows)


class AttachmentFollower:
    """Plans what a message's new version does to its attachments."""

    def __init__(
        self,
        items: ItemRepository,
        attachments: AttachmentRepository,
        versions: ItemVersionRepository,
        ingest: IngestService,
        originals: OriginalStore,
        *,
        limits: ParseLimits | None = None,
    ) -> None:
        self._items = items
        self._attachments = attachments
        self._versions = versions
        self._ingest = ingest
        self._originals = originals
        self._limits = limits

    def plan(
        self, item: Item, version: ItemVersion, data: bytes, *, actor: Actor = SYSTEM_ACTOR
    ) -> AttachmentPlan | None:
        """The plan for ``item`` taking ``version`` (whose bytes are ``data``), its new
        originals stored; None when the attachments stay as they are: neither version is a
        message, the item is itself an attachment, or the new message's parts cannot be
        walked (its parse stage will say why)."""
        ws = item.workspace_id
        if SourceType.EMAIL not in (item.source_type, version.source_type):
            return None
        if self._attachments.message_of(ws, item.id) is not None:
            return None
        listed = self._attachments.of_message(ws, item.id)
        ids = [a.item_id for a in listed if a.item_id]
        live = {i.id: i for i in self._items.get_many(ws, ids, with_text=False)} if ids else {}
        old = [(a.name, live[a.item_id]) for a in listed if a.item_id in live]
        parts: list[EmailAttachment] = []
        if version.source_type is SourceType.EMAIL:
            try:
                parts = attachments_of(data, self._limits, max_count=MAX_ATTACHMENTS)
            except RelataError:
                return None
        if not old and not parts and not listed:
            return None
        matching = match(old, parts)
        plan = AttachmentPlan(message_id=item.id, rows=[])
        try:
            self._fill(plan, item, parts, matching, {i.id: i for _, i in old}, actor)
        except BaseException:
            self.discard(plan)
            raise
        return plan

    def _fill(
        self,
        plan: AttachmentPlan,
        message: Item,
        parts: Sequence[EmailAttachment],
        matching: Matching,
        old: dict[str, Item],
        actor: Actor,
    ) -> None:
        ws = message.workspace_id
        checked = [p for p in parts if p.number in matching.changed or p.number in matching.new]
        results = self._ingest.accept_attached(
            ws,
            [
                IngestRequest(data=p.data, filename=p.name, content_type=p.content_type)
                for p in checked
            ],
        )
        outcome: dict[int, tuple[Item, bytes] | RelataError] = dict(
            zip((p.number for p in checked), results, strict=True)
        )
        removed = list(matching.removed)
        for p in parts:
            if p.number in matching.same:
                plan.rows.append(Attachment(message.id, p.number, p.name, matching.same[p.number]))
                continue
            result = outcome.get(p.number)
            if isinstance(result, tuple):
                accepted, data = result
                target = matching.changed.get(p.number)
                if target is None:
                    rel = self._originals.save(ws, accepted.id, accepted.source_type, data)
                    plan.stored.append(rel)
                    plan.created.append(accepted)
                    plan.rows.append(Attachment(message.id, p.number, p.name, accepted.id))
                else:
                    self._new_version(plan, old[target], accepted, data, actor)
                    plan.rows.append(Attachment(message.id, p.number, p.name, target))
                continue
            reason = p.reason
            if isinstance(result, DuplicateItem):
                reason = DUPLICATE_REASON
            elif isinstance(result, RelataError):
                reason = result.message
            if p.number in matching.changed:  # its item no longer holds what the part is
                removed.append(matching.changed[p.number])
            plan.rows.append(Attachment(message.id, p.number, p.name, reason=reason))
        plan.removed = [old[i] for i in removed]

    def _new_version(
        self, plan: AttachmentPlan, target: Item, accepted: Item, data: bytes, actor: Actor
    ) -> None:
        """``accepted`` (checked as an upload, never stored as an item) becomes the next
        version of ``target``, its original under the accepted item's fresh id."""
        ws = target.workspace_id
        before = self._versions.list_for_item(ws, target.id)
        rel = self._originals.save(ws, accepted.id, accepted.source_type, data)
        plan.stored.append(rel)
        version = ItemVersion(
            item_id=target.id,
            workspace_id=ws,
            number=(before[0].number if before else 1) + 1,
            sha256=accepted.content_hash,
            size_bytes=accepted.size_bytes,
            source_type=accepted.source_type,
            created_at=accepted.ingested_at,
            filename=accepted.original_filename,
            media_type=accepted.media_type,
            original_path=rel,
            created_by_kind=actor.kind.value,
            created_by=actor.user_id,
        )
        plan.versions.append((version, before))

    def discard(self, plan: AttachmentPlan) -> None:
        """Remove the plan's stored originals (it was not committed)."""
        for rel in plan.stored:
            self._originals.delete(rel)
        plan.stored.clear()
