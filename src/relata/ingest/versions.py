"""New versions of an item's content: upload one, list them, download a version's original
(docs/decisions/0045-item-versions.md).

    admission slot → the item (NotFound) → size → sniff → SHA-256 → same as now? (a no-op)
    → held by another item? (DuplicateItem) → store the original → one transaction: the
    version recorded, the item's content switched, its text and chunks gone, the first
    stage's job enqueued → its vectors dropped → audit → previous originals past the
    retention removed

The new pass is a reprocess from the first stage (``Pipeline.reprocess(new_version=...)``),
so what the old content contributed (chunks, vectors, entity observations, claims and the
contradictions between them, relationship evidence) is replaced, not added to, and review
decisions are kept where the pass finds their evidence again, exactly as reprocessing keeps
them. One item holds one set of claims, so two of its versions never contradict each other;
search reads the item's chunks, which are the current version's only.

When the item is (or becomes) an e-mail, its attachments follow the new version in the same
transaction (``relata.ingest.attachment_versions``, docs/decisions/0048): the same ones stay,
changed ones get new versions, removed ones are deleted, new ones become items.

A version's original is stored under a fresh UUID (``originals/<workspace>/<uuid>.<ext>``),
never over the previous one, so an upload killed half-way leaves the item as it was and at
most a stray file the recovery removes. ``RELATA_KEEP_PREVIOUS_ORIGINALS`` previous originals
are kept (the newest); older ones are removed after the new version is committed, their rows
kept with no original.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from relata.domain.errors import (
    Busy,
    DuplicateItem,
    NotFound,
    RelataError,
    TooLarge,
    ValidationError,
)
from relata.domain.models import SYSTEM_ACTOR, Actor, Item, ItemVersion, Job
from relata.domain.ports import (
    AuditRecorder,
    Clock,
    ItemRepository,
    ItemVersionRepository,
    VectorStore,
)
from relata.domain.vocabulary import AuditAction, AuditTarget
from relata.ids import content_hash, new_id
from relata.ingest.admission import Admission
from relata.ingest.attachment_versions import AttachmentFollower, AttachmentPlan
from relata.ingest.catalog import ItemCatalog, StoredOriginal, download_name
from relata.ingest.originals import OriginalStore
from relata.ingest.validation import MEDIA_TYPES, display_filename
from relata.parsing import ParseLimits, sniff
from relata.pipeline import Pipeline, Reprocessing

log = logging.getLogger("relata.ingest")


@dataclass(frozen=True, slots=True)
class VersionUpload:
    """What an upload of a new version did: ``unchanged`` when the bytes are the current
    version's (nothing recorded, no pass started; ``job`` is None)."""

    item: Item
    version: ItemVersion
    unchanged: bool
    job: Job | None = None
    generation: int | None = None


class VersionService:
    def __init__(
        self,
        items: ItemRepository,
        versions: ItemVersionRepository,
        originals: OriginalStore,
        pipeline: Pipeline,
        catalog: ItemCatalog,
        clock: Clock,
        *,
        admission: Admission,
        audit: AuditRecorder,
        max_upload_bytes: int,
        keep_previous: int,
        vectors: VectorStore | None = None,
        limits: ParseLimits | None = None,
        follower: AttachmentFollower | None = None,
    ) -> None:
        if keep_previous < 0:
            raise ValueError("keep_previous must not be negative")
        self._items = items
        self._versions = versions
        self._originals = originals
        self._pipeline = pipeline
        self._clock = clock
        self._audit = audit
        self.admission = admission
        self.max_upload_bytes = max_upload_bytes
        self.keep_previous = keep_previous
        self._limits = limits
        self._vectors = vectors
        self._follower = follower
        self._catalog = catalog
        # An item's every original goes with it (the current one is the catalog's own).
        catalog.add_delete_hook(self.remove_originals)

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Hold an ingestion slot (``Overloaded`` when none is free) while the caller reads
        the upload, then call ``upload`` inside the block."""
        with self.admission.slot():
            yield

    # ------------------------------------------------------------ reading
    def list(self, workspace_id: str, item_id: str) -> builtins.list[ItemVersion]:
        """The live item's versions, newest (the current one) first."""
        self._items.get(workspace_id, item_id)
        return self._versions.list_for_item(workspace_id, item_id)

    def original(self, workspace_id: str, item_id: str, number: int) -> StoredOriginal:
        """Version ``number``'s stored original; ``NotFound`` for an unknown version or one
        whose original is no longer kept."""
        item = self._items.get(workspace_id, item_id)
        version = self._versions.get(workspace_id, item_id, number)
        if version.original_path is None:
            raise NotFound(
                f"the original of version {number} is no longer kept "
                "(RELATA_KEEP_PREVIOUS_ORIGINALS)"
            )
        path = self._originals.path(version.original_path)
        if not path.is_file():
            raise NotFound("the version's stored original is missing")
        return StoredOriginal(
            path=path,
            media_type=MEDIA_TYPES[version.source_type],
            download_name=download_name(version.filename, item.title, version.source_type),
            size_bytes=version.size_bytes,
        )

    # ------------------------------------------------------------ writing
    def upload(
        self,
        workspace_id: str,
        item_id: str,
        data: bytes,
        *,
        filename: str | None = None,
        content_type: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> VersionUpload:
        """Make ``data`` the item's new content (see the module docstring). Call it inside
        ``admit()``."""
        item = self._items.get(workspace_id, item_id)
        if len(data) > self.max_upload_bytes:
            raise TooLarge(
                f"file is {len(data)} bytes; the limit is {self.max_upload_bytes} bytes "
                "(RELATA_MAX_UPLOAD_BYTES)",
                field="file",
            )
        if not data.strip():
            raise ValidationError("file is empty", field="file")
        source_type = sniff(data, filename=filename, content_type=content_type, limits=self._limits)
        digest = content_hash(data)
        versions = self._versions.list_for_item(workspace_id, item_id)
        if digest == item.content_hash:
            current = versions[0] if versions else _implicit_first(item)
            return VersionUpload(item=item, version=current, unchanged=True)
        if not item.deliberate_duplicate:
            other = self._items.find_by_content_hash(workspace_id, digest)
            if other is not None and other.id != item_id:
                raise DuplicateItem(
                    "another item of this workspace has the same content",
                    existing_id=other.id,
                )
        number = (versions[0].number if versions else 1) + 1
        rel = self._originals.save(workspace_id, new_id(), source_type, data)
        version = ItemVersion(
            item_id=item_id,
            workspace_id=workspace_id,
            number=number,
            sha256=digest,
            size_bytes=len(data),
            source_type=source_type,
            created_at=self._clock.now(),
            filename=display_filename(filename),
            media_type=MEDIA_TYPES[source_type],
            original_path=rel,
            created_by_kind=actor.kind.value,
            created_by=actor.user_id,
        )
        plan: AttachmentPlan | None = None
        try:
            if self._follower is not None:
                plan = self._follower.plan(item, version, data, actor=actor)
            done, *followed = self._pipeline.switch_versions(
                workspace_id,
                [version, *(v for v, _ in (plan.versions if plan else []))],
                start=plan.starts if plan else (),
                write=plan.write if plan else None,
            )
        except BaseException as exc:
            self._originals.delete(rel)
            if plan is not None and self._follower is not None:
                self._follower.discard(plan)
            if plan is not None and isinstance(exc, DuplicateItem):
                raise self._which_duplicate(workspace_id, item_id, digest) from exc
            raise
        self._drop_vectors(workspace_id, item_id)
        self._audit.record(
            workspace_id,
            AuditAction.ITEM_VERSION_UPLOADED,
            actor,
            target_kind=AuditTarget.ITEM,
            target_id=item_id,
            details={
                "version": number,
                "source_type": source_type.value,
                "size_bytes": len(data),
                "job_id": done.job.id,
            },
        )
        log.info(
            "item version uploaded",
            extra={"fields": {"item_id": item_id, "version": number, "size_bytes": len(data)}},
        )
        self._prune(workspace_id, item_id, [version, *versions])
        if plan is not None:
            self._follow(plan, followed, actor)
        return VersionUpload(
            item=done.item,
            version=version,
            unchanged=False,
            job=done.job,
            generation=done.generation,
        )

    def _which_duplicate(self, workspace_id: str, item_id: str, digest: str) -> RelataError:
        """Why a message's new version with its attachments met a unique index: another
        item took the message's bytes meanwhile (``DuplicateItem`` naming it, as without
        attachments), or one of the attachments' (``Busy``: nothing was written; trying
        again lists that attachment as a duplicate)."""
        other = self._items.find_by_content_hash(workspace_id, digest)
        if other is not None and other.id != item_id:
            return DuplicateItem(
                "another item of this workspace has the same content", existing_id=other.id
            )
        return Busy("an attachment of this message was uploaded or changed meanwhile; try again")

    def _follow(
        self, plan: AttachmentPlan, followed: builtins.list[Reprocessing], actor: Actor
    ) -> None:
        """After the commit of a message's new version: its removed attachments deleted (the
        rest of each delete), the changed ones' old vectors dropped and previous originals
        pruned, and each audited on its own, marked ``with_message``."""
        for gone in plan.removed:
            try:
                self._catalog.finish_delete(
                    gone,
                    actor=actor,
                    details={"source_type": gone.source_type.value, "with_message": True},
                )
            except NotFound:  # removed meanwhile
                continue
        if plan.created:
            self._audit.record_each(
                plan.created[0].workspace_id,
                AuditAction.ITEM_UPLOADED,
                actor,
                AuditTarget.ITEM,
                [
                    (
                        i.id,
                        {
                            "source_type": i.source_type.value,
                            "size_bytes": i.size_bytes,
                            "with_message": True,
                        },
                    )
                    for i in plan.created
                ],
            )
        for (version, before), done in zip(plan.versions, followed, strict=True):
            self._drop_vectors(version.workspace_id, version.item_id)
            self._audit.record(
                version.workspace_id,
                AuditAction.ITEM_VERSION_UPLOADED,
                actor,
                target_kind=AuditTarget.ITEM,
                target_id=version.item_id,
                details={
                    "version": version.number,
                    "source_type": version.source_type.value,
                    "size_bytes": version.size_bytes,
                    "job_id": done.job.id,
                    "with_message": True,
                },
            )
            self._prune(version.workspace_id, version.item_id, [version, *before])

    def _drop_vectors(self, workspace_id: str, item_id: str) -> None:
        """The old version's vectors go at once, as its chunks did, so the vector leg cannot
        find the item by content it no longer has (the chunk stage drops them again)."""
        if self._vectors is None:
            return
        try:
            self._vectors.delete_by_item(workspace_id, item_id)
        except Exception as exc:  # search re-checks chunks; the chunk stage drops them
            log.warning(
                "could not remove the previous version's vectors",
                extra={"fields": {"item_id": item_id, "error_type": type(exc).__name__}},
            )

    def remove_originals(self, workspace_id: str, item_id: str) -> None:
        """Remove every stored original of the item's versions (an item-delete hook)."""
        for rel in self._versions.original_paths(workspace_id, item_id):
            self._originals.delete(rel)

    def _prune(self, workspace_id: str, item_id: str, versions: builtins.list[ItemVersion]) -> None:
        """Keep the newest ``keep_previous`` previous originals; the row is updated before
        the file goes, so a crash between leaves a stray file (removed by the recovery),
        never a row naming a file that is gone."""
        previous = [v for v in versions[1:] if v.original_path is not None]
        for v in previous[self.keep_previous :]:
            try:
                self._versions.forget_original(workspace_id, item_id, v.number)
                self._originals.delete(v.original_path)
            except Exception as exc:  # the upload stands; the next one prunes again
                log.warning(
                    "could not remove a previous version's original",
                    extra={"fields": {"item_id": item_id, "error_type": type(exc).__name__}},
                )


def _implicit_first(item: Item) -> ItemVersion:
    """Version 1 as the item's own columns hold it (an item whose row predates versions)."""
    return ItemVersion(
        item_id=item.id,
        workspace_id=item.workspace_id,
        number=1,
        sha256=item.content_hash,
        size_bytes=item.size_bytes,
        source_type=item.source_type,
        created_at=item.ingested_at,
        filename=item.original_filename,
        media_type=item.media_type,
        original_path=item.original_path,
    )
