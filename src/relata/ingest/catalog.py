"""Items after ingestion: read them, edit their title and metadata, download their originals,
delete them, reprocess them.

Editing (``edit``) validates as an upload does (``relata.ingest.validation``), writes title and
metadata in one statement, and records one ``item.edited`` event naming the fields that
changed (never their values); an edit that changes nothing records nothing. The full-text
indexes follow the title in the same transaction (docs/decisions/0048).

Deleting is two steps. ``mark_deleted`` hides the item from every read at once (and frees
its content hash), so a pipeline stage still running for it meets ``NotFound`` and fails
without retrying; then whatever lives outside the database is removed (vectors, through the
``on_delete`` hooks later features register; the stored original), and finally the row,
whose chunks, claims and processing runs go with it by ``ON DELETE CASCADE``. Deleting an
e-mail deletes the items its attachments became the same way, each audited on its own
(docs/decisions/0048); deleting an attachment leaves its message, which lists it as gone.
A hook that fails is logged and does not keep the item: retrieval re-checks every hit against the
items table, so a leftover vector can never surface a deleted item.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from relata.domain.errors import NotFound, ValidationError
from relata.domain.models import (
    SYSTEM_ACTOR,
    Actor,
    Attachment,
    Chunk,
    Item,
    ItemStatus,
    ProcessingRun,
    SourceType,
)
from relata.domain.ports import (
    AttachmentRepository,
    AuditRecorder,
    ChunkRepository,
    ItemRepository,
    ProcessingRunRepository,
)
from relata.domain.vocabulary import AuditAction, AuditTarget
from relata.ingest.originals import EXTENSIONS, OriginalStore
from relata.ingest.validation import MEDIA_TYPES, validate_metadata, validate_title
from relata.pipeline import Pipeline, Reprocessing

log = logging.getLogger("relata.ingest")

MAX_PAGE = 1000
#: The longest text the library filter (``contains``) takes.
MAX_CONTAINS = 200

#: Called with (workspace_id, item_id) when an item's derived data must go.
ItemHook = Callable[[str, str], object]


@dataclass(frozen=True, slots=True)
class ItemDetail:
    item: Item
    runs: list[ProcessingRun]


@dataclass(frozen=True, slots=True)
class StoredOriginal:
    path: Path
    media_type: str
    download_name: str
    size_bytes: int


class ItemCatalog:
    def __init__(
        self,
        items: ItemRepository,
        runs: ProcessingRunRepository,
        originals: OriginalStore,
        pipeline: Pipeline,
        *,
        audit: AuditRecorder,
        chunks: ChunkRepository,
        attachments: AttachmentRepository | None = None,
    ) -> None:
        self._items = items
        self._attachments = attachments
        self._chunks = chunks
        self._runs = runs
        self._originals = originals
        self._pipeline = pipeline
        self._audit = audit
        self._on_delete: list[ItemHook] = []
        self._lock = threading.Lock()

    def add_delete_hook(self, hook: ItemHook) -> None:
        """Run ``hook(workspace_id, item_id)`` when an item is deleted (e.g. drop vectors)."""
        with self._lock:
            self._on_delete.append(hook)

    def briefs(self, workspace_id: str, item_ids: Sequence[str]) -> builtins.list[Item]:
        """The live items of ``item_ids`` in this workspace, without their text (for titles
        and links); the others are simply absent."""
        unique = builtins.list(dict.fromkeys(item_ids))
        return self._items.get_many(workspace_id, unique, with_text=False) if unique else []

    def titles(self, workspace_id: str, item_ids: Iterable[str]) -> dict[str, str]:
        """Titles of the live items of ``item_ids`` in this workspace."""
        return {i.id: i.title for i in self.briefs(workspace_id, builtins.list(item_ids))}

    def chunks(self, workspace_id: str, item_id: str) -> builtins.list[Chunk]:
        """The item's chunks in order (NotFound for another workspace's item)."""
        self._items.get(workspace_id, item_id)
        return self._chunks.list_for_item(workspace_id, item_id)

    def text(self, workspace_id: str, item_id: str) -> str:
        """The item's extracted text, empty before it is parsed (NotFound for another
        workspace's item)."""
        return self._items.get(workspace_id, item_id).text or ""

    def chunks_by_id(self, workspace_id: str, chunk_ids: Sequence[str]) -> builtins.list[Chunk]:
        """The chunks of ``chunk_ids`` in this workspace (the others are absent)."""
        unique = builtins.list(dict.fromkeys(chunk_ids))
        return self._chunks.get_many(workspace_id, unique) if unique else []

    def get(self, workspace_id: str, item_id: str) -> ItemDetail:
        item = self._items.get(workspace_id, item_id)
        return ItemDetail(item=item, runs=self._runs.list_for_item(workspace_id, item_id))

    def list(
        self,
        workspace_id: str,
        *,
        limit: int = 50,
        offset: int = 0,
        source_type: SourceType | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        status: ItemStatus | None = None,
        contains: str | None = None,
        item_ids: Sequence[str] | None = None,
    ) -> list[Item]:
        """A page of live items, newest first, optionally of one type or status, or whose
        title or file name contains ``contains`` (any case), or among ``item_ids`` (at most
        ``MAX_PAGE``); dates bound ``created_at`` (else the ingestion time):
        ``created_from <= date < created_to``."""
        contains = (contains or "").strip() or None
        if contains is not None and len(contains) > MAX_CONTAINS:
            raise ValidationError(
                f"the text filter takes at most {MAX_CONTAINS} characters", field="q"
            )
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
        if offset < 0:
            raise ValidationError("offset must not be negative", field="offset")
        if created_from and created_to and created_from >= created_to:
            raise ValidationError("from must be before to", field="from")
        return self._items.list(
            workspace_id,
            limit=limit,
            offset=offset,
            source_type=source_type.value if source_type else None,
            created_from=created_from,
            created_to=created_to,
            status=status.value if status else None,
            contains=contains,
            item_ids=None if item_ids is None else builtins.list(item_ids)[:MAX_PAGE],
        )

    def edit(
        self,
        workspace_id: str,
        item_id: str,
        *,
        title: str | None = None,
        metadata: object = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> Item:
        """Change the item's title and/or replace its metadata (None: leave it as it is);
        see the module docstring. ``ValidationError`` names the field at fault."""
        new_title = None
        if title is not None:
            new_title = validate_title(title)
            if new_title is None:
                raise ValidationError("title must not be blank", field="title")
        new_metadata = None if metadata is None else validate_metadata(metadata)
        item = self._items.get(workspace_id, item_id)
        changed = [
            name
            for name, new, old in (
                ("title", new_title, item.title),
                ("metadata", new_metadata, item.metadata),
            )
            if new is not None and new != old
        ]
        if not changed:
            return item
        edited = self._items.set_details(
            workspace_id,
            item_id,
            title=new_title if new_title is not None else item.title,
            metadata=new_metadata if new_metadata is not None else item.metadata,
        )
        self._audit.record(
            workspace_id,
            AuditAction.ITEM_EDITED,
            actor,
            target_kind=AuditTarget.ITEM,
            target_id=item_id,
            details={name: True for name in changed},
        )
        return edited

    def original(self, workspace_id: str, item_id: str) -> StoredOriginal:
        item = self._items.get(workspace_id, item_id)
        path = self._originals.path(item.original_path or "")
        if not path.is_file():
            raise NotFound("the item's stored original is missing")
        return StoredOriginal(
            path=path,
            media_type=MEDIA_TYPES[item.source_type],
            download_name=download_name(item.original_filename, item.title, item.source_type),
            size_bytes=item.size_bytes,
        )

    def delete(self, workspace_id: str, item_id: str, *, actor: Actor = SYSTEM_ACTOR) -> None:
        """Delete the item (see the module docstring), audited as ``actor``."""
        item = self._items.mark_deleted(workspace_id, item_id)
        for attached in self.attachments(workspace_id, item_id):
            if attached.item_id is None:
                continue
            try:
                part = self._items.mark_deleted(workspace_id, attached.item_id)
            except NotFound:  # deleted meanwhile
                continue
            details: dict[str, object] = {
                "source_type": part.source_type.value,
                "with_message": True,
            }
            self._remove(part, actor, details)
        self._remove(item, actor, {"source_type": item.source_type.value})

    def attachments(self, workspace_id: str, item_id: str) -> builtins.list[Attachment]:
        """The e-mail's attachments: the item each became, or why not (empty for any other
        item)."""
        if self._attachments is None:
            return []
        return self._attachments.of_message(workspace_id, item_id)

    def attachment_of(self, workspace_id: str, item_id: str) -> str | None:
        """The id of the message the item is an attachment of, if any."""
        if self._attachments is None:
            return None
        return self._attachments.message_of(workspace_id, item_id)

    def messages_of(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, Item]:
        """For those of ``item_ids`` that are attachments of a live message: that message
        (without its text), for "attachment of ..." on lists of items."""
        if self._attachments is None or not item_ids:
            return {}
        parents = self._attachments.messages_of(workspace_id, builtins.list(item_ids))
        found = {m.id: m for m in self.briefs(workspace_id, builtins.list(parents.values()))}
        return {child: found[m] for child, m in parents.items() if m in found}

    def finish_delete(
        self,
        item: Item,
        *,
        actor: Actor = SYSTEM_ACTOR,
        details: dict[str, object] | None = None,
    ) -> None:
        """The rest of a delete after ``mark_deleted``: one interrupted (a process killed in
        between; ``relata.ingest.recovery`` finds them), or an attachment a message's new
        version no longer has (``details`` say so). The derived data, the original and the
        row go, audited as ``actor``. ``NotFound`` when the row is gone already."""
        if details is None:
            details = {"source_type": item.source_type.value, "finished": True}
        self._remove(item, actor, details)

    def _remove(self, item: Item, actor: Actor, details: dict[str, object]) -> None:
        workspace_id, item_id = item.workspace_id, item.id
        with self._lock:
            hooks = list(self._on_delete)
        for hook in hooks:
            try:
                hook(workspace_id, item_id)
            except Exception as exc:  # see the module docstring: the delete goes on
                log.warning(
                    "could not remove derived data of a deleted item",
                    extra={"fields": {"item_id": item_id, "error_type": type(exc).__name__}},
                )
        self._originals.delete(item.original_path)
        self._items.delete(workspace_id, item_id)
        log.info("item deleted", extra={"fields": {"item_id": item_id}})
        self._audit.record(
            workspace_id,
            AuditAction.ITEM_DELETED,
            actor,
            target_kind=AuditTarget.ITEM,
            target_id=item_id,
            details=details,
        )

    def reprocess(
        self,
        workspace_id: str,
        item_id: str,
        *,
        from_stage: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> Reprocessing:
        """A new pass of the pipeline over the item from ``from_stage`` (default: the stage
        it failed at, else the first). Asking again before the new pass has begun returns
        the same pending job. Audited (``item.reprocessed``) as ``actor``, every time."""
        done = self._pipeline.reprocess(workspace_id, item_id, from_stage=from_stage)
        self._record_reprocessed(workspace_id, actor, [done], scope="item")
        return done

    def reprocess_failed(
        self,
        workspace_id: str,
        *,
        stage: str | None = None,
        from_stage: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> builtins.list[Reprocessing]:
        """Reprocess the workspace's failed items (those that failed at ``stage``); one
        ``item.reprocessed`` event per item restarted, as ``actor``."""
        done = self._pipeline.reprocess_failed(workspace_id, stage=stage, from_stage=from_stage)
        self._record_reprocessed(workspace_id, actor, done, scope="failed")
        return done

    def _record_reprocessed(
        self, workspace_id: str, actor: Actor, done: builtins.list[Reprocessing], *, scope: str
    ) -> None:
        if not done:
            return
        self._audit.record_each(
            workspace_id,
            AuditAction.ITEM_REPROCESSED,
            actor,
            AuditTarget.ITEM,
            [
                (
                    r.item.id,
                    {
                        "from_stage": r.from_stage,
                        "generation": r.generation,
                        "job_id": r.job.id,
                        "scope": scope,
                    },
                )
                for r in done
            ],
        )


def download_name(filename: str | None, title: str, source_type: SourceType) -> str:
    """The filename offered for a download: the display name's last segment (the client
    sanitises further), else the title, with the stored type's extension."""
    ext = EXTENSIONS[source_type]
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name or name in {".", ".."}:
        name = title.strip() or "original"
    if not name.lower().endswith("." + ext):
        name = f"{name}.{ext}"
    return name
