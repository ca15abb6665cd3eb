"""The ingestion use case: an upload or inline text becomes a pending item and a
``parse_item`` job (docs/ARCHITECTURE.md, "An ingestion").

    admission slot → validate → size → sniff (type from content) → SHA-256 → duplicate
    check → store the original → items.create → enqueue parse_item

Nothing is left half-written: originals are stored (and made durable) before any row
exists, and removed again when their rows cannot be created (a concurrent duplicate, say);
if enqueuing fails, the rows and files not yet started are removed too. The duplicate check
before writing is only a courtesy that saves writing a file: the partial unique index on
``(workspace_id, content_hash)`` is what makes concurrent uploads of the same bytes
converge on one item.

An e-mail's attachments become items of their own once the message's item is started
(``_split``, docs/decisions/0048): each through these same steps and bounds (at most
``MAX_ATTACHMENTS``, each within ``RELATA_MAX_UPLOAD_BYTES``, an attached message refused),
each audited as an upload, and the message's ``item_attachments`` rows say which item each
became or why it did not. A new version of the message brings them along
(``relata.ingest.attachment_versions``, which checks the parts with ``accept_attached``).

Bulk imports use ``ingest_many``: the same steps for a batch, with one duplicate query, one
filesystem sync and one insert transaction for the whole batch instead of one per item. A
single upload fsyncs its own file instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from relata.domain.errors import (
    DuplicateItem,
    RelataError,
    TooLarge,
    UnsupportedContent,
    ValidationError,
)
from relata.domain.models import SYSTEM_ACTOR, Actor, Attachment, Item, ItemStatus, SourceType
from relata.domain.ports import AttachmentRepository, AuditRecorder, Clock, ItemRepository
from relata.domain.vocabulary import AuditAction, AuditTarget
from relata.ids import content_hash, new_id
from relata.ingest.admission import Admission
from relata.ingest.originals import OriginalStore
from relata.ingest.validation import (
    MEDIA_TYPES,
    UNTITLED,
    display_filename,
    parse_created_at,
    title_from,
    title_from_filename,
    validate_metadata,
    validate_title,
)
from relata.parsing import ParseLimits, sniff
from relata.parsing.eml import attachments_of
from relata.pipeline import Pipeline, StagePayload

log = logging.getLogger("relata.ingest")

#: The most requests one ``ingest_many`` call takes (bounds memory and one transaction).
MAX_BATCH = 256
#: The most attachments of one message that become items: as many files as one upload of
#: the library's form takes (``relata.web.context.MAX_FORM_FILES``).
MAX_ATTACHMENTS = 20


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """One thing to ingest: ``data`` (an upload's bytes) or ``text`` (inline), not both.

    ``filename`` and ``content_type`` are hints for sniffing and ``filename`` is kept for
    display; neither decides the type or any path. ``metadata`` and ``created_at`` are
    validated here, so the API, the CLI and the seed share one set of rules.
    """

    data: bytes | None = None
    text: str | None = None
    filename: str | None = None
    content_type: str | None = None
    title: str | None = None
    metadata: Mapping[str, object] | str | None = None
    created_at: str | datetime | None = None
    allow_duplicate: bool = False


@dataclass(frozen=True, slots=True)
class _Accepted:
    """A request that passed every check, and the item it becomes."""

    index: int
    item: Item
    data: bytes
    title_given: bool


class IngestService:
    def __init__(
        self,
        items: ItemRepository,
        originals: OriginalStore,
        pipeline: Pipeline,
        clock: Clock,
        *,
        max_upload_bytes: int,
        admission: Admission,
        audit: AuditRecorder,
        limits: ParseLimits | None = None,
        attachments: AttachmentRepository | None = None,
    ) -> None:
        self._items = items
        self._attachments = attachments
        self._audit = audit
        self._originals = originals
        self._pipeline = pipeline
        self._clock = clock
        self.max_upload_bytes = max_upload_bytes
        self.admission = admission
        self._limits = limits

    @contextmanager
    def admit(self) -> Iterator[IngestSlot]:
        """Hold an ingestion slot (``Overloaded`` when none is free) while the caller reads
        its input, then ingest through the slot."""
        with self.admission.slot():
            yield IngestSlot(self)

    def ingest(
        self, workspace_id: str, request: IngestRequest, *, actor: Actor = SYSTEM_ACTOR
    ) -> Item:
        with self.admit() as slot:
            return slot.ingest(workspace_id, request, actor=actor)

    def ingest_many(
        self,
        workspace_id: str,
        requests: Sequence[IngestRequest],
        *,
        actor: Actor = SYSTEM_ACTOR,
    ) -> list[Item | RelataError]:
        """Ingest a batch (bulk imports) under one admission slot: per request its item, or
        the error that request alone met (validation, type, size, duplicate). Each new item
        is audited (``item.uploaded``) as ``actor``; duplicates and refusals are not."""
        with self.admit() as slot:
            return slot.ingest_many(workspace_id, requests, actor=actor)

    def accept_attached(
        self, workspace_id: str, requests: Sequence[IngestRequest]
    ) -> list[tuple[Item, bytes] | RelataError]:
        """A message's attachments checked as ``_split`` checks them (type, size, an attached
        message refused, content live already or earlier in ``requests``), nothing written:
        per request the pending item it would become and its bytes, or the error it met
        (``relata.ingest.attachment_versions``; called inside the message's admission)."""
        if len(requests) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} requests per batch")
        now = self._clock.now()
        results: list[Item | RelataError | None] = [None] * len(requests)
        accepted: list[_Accepted] = []
        for i, request in enumerate(requests):
            try:
                accepted.append(self._accept(workspace_id, i, request, now, attached=True))
            except ValidationError as exc:  # includes UnsupportedContent and TooLarge
                results[i] = exc
        kept = {a.index: a for a in self._drop_duplicates(workspace_id, accepted, results)}
        out: list[tuple[Item, bytes] | RelataError] = []
        for i, r in enumerate(results):
            if i in kept:
                out.append((kept[i].item, kept[i].data))
            elif isinstance(r, RelataError):
                out.append(r)
            else:  # pragma: no cover - every request is kept or refused
                raise RuntimeError("an attachment was left without an outcome")
        return out

    # ------------------------------------------------------------ the steps
    def _run(
        self,
        workspace_id: str,
        requests: Sequence[IngestRequest],
        actor: Actor,
        *,
        attached: bool = False,
    ) -> list[Item | RelataError]:
        if len(requests) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} requests per batch")
        now = self._clock.now()
        results: list[Item | RelataError | None] = [None] * len(requests)
        accepted: list[_Accepted] = []
        for i, request in enumerate(requests):
            try:
                accepted.append(self._accept(workspace_id, i, request, now, attached=attached))
            except ValidationError as exc:  # includes UnsupportedContent and TooLarge
                results[i] = exc
        accepted = self._drop_duplicates(workspace_id, accepted, results)
        self._store_originals(accepted)
        created = self._create_rows(accepted, results)
        try:
            self._start_pipeline(created, results)
        finally:  # the items started stay, even when a later one could not be
            started = [a.item for a in created if results[a.index] is a.item]
            # A durable commit, after the jobs': on SQLite it makes them durable with it
            # (the WAL is written in order; docs/decisions/0029-sqlite-durability.md).
            self._record_uploads(workspace_id, actor, started)
        if not attached:
            self._split(workspace_id, [a for a in created if results[a.index] is a.item], actor)
        out: list[Item | RelataError] = []
        for r in results:
            if r is None:  # pragma: no cover - every request ends with an item or an error
                raise RuntimeError("an ingestion request was left without an outcome")
            out.append(r)
        return out

    def _accept(
        self,
        workspace_id: str,
        index: int,
        request: IngestRequest,
        now: datetime,
        *,
        attached: bool = False,
    ) -> _Accepted:
        title = validate_title(request.title)
        metadata = validate_metadata(request.metadata)
        created_at = parse_created_at(request.created_at, now)
        data = self._content(request)
        source_type: SourceType = sniff(
            data, filename=request.filename, content_type=request.content_type, limits=self._limits
        )
        if attached and source_type is SourceType.EMAIL:
            raise UnsupportedContent("an attached message is not read", field="file")
        filename = display_filename(request.filename)
        item_id = new_id()
        item = Item(
            id=item_id,
            workspace_id=workspace_id,
            title=title or _default_title(filename, request.text),
            source_type=source_type,
            content_hash=content_hash(data),
            size_bytes=len(data),
            ingested_at=now,
            created_at=created_at,
            status=ItemStatus.PENDING,
            deliberate_duplicate=request.allow_duplicate,
            original_path=OriginalStore.relative_path(workspace_id, item_id, source_type),
            original_filename=filename,
            media_type=MEDIA_TYPES[source_type],
            metadata=metadata,
            updated_at=now,
        )
        return _Accepted(index, item, data, title_given=title is not None)

    def _content(self, request: IngestRequest) -> bytes:
        if (request.data is None) == (request.text is None):
            raise ValidationError("give either a file or text, not both", field="file")
        if request.text is not None:
            field = "text"
            if not isinstance(request.text, str):
                raise ValidationError("text must be a string", field=field)
            # A lone surrogate cannot be encoded; it becomes '?' rather than an error.
            data = request.text.encode("utf-8", "replace")
        else:
            field = "file"
            data = request.data or b""
        if len(data) > self.max_upload_bytes:
            raise TooLarge(
                f"{field} is {len(data)} bytes; the limit is {self.max_upload_bytes} bytes "
                "(RELATA_MAX_UPLOAD_BYTES)",
                field=field,
            )
        if not data.strip():
            raise ValidationError(f"{field} is empty", field=field)
        return data

    def _drop_duplicates(
        self,
        workspace_id: str,
        accepted: list[_Accepted],
        results: list[Item | RelataError | None],
    ) -> list[_Accepted]:
        """Answer requests whose bytes are already live (or earlier in the batch)."""
        checked = [a.item.content_hash for a in accepted if not a.item.deliberate_duplicate]
        known = self._items.find_by_content_hashes(workspace_id, checked) if checked else {}
        kept: list[_Accepted] = []
        for a in accepted:
            if not a.item.deliberate_duplicate:
                existing = known.get(a.item.content_hash)
                if existing is not None:
                    results[a.index] = _duplicate(existing)
                    continue
                known[a.item.content_hash] = a.item.id
            kept.append(a)
        return kept

    def _store_originals(self, accepted: list[_Accepted]) -> None:
        """Write every original, then make them durable, before any row exists: one file
        is fsynced; a batch is written first and flushed with one filesystem sync."""
        single = len(accepted) == 1
        stored: list[str] = []
        try:
            for a in accepted:
                item = a.item
                stored.append(
                    self._originals.save(
                        item.workspace_id, item.id, item.source_type, a.data, sync=single
                    )
                )
            if stored and not single:
                self._originals.sync_all()
        except BaseException:
            for rel in stored:
                self._originals.delete(rel)
            raise

    def _create_rows(
        self, accepted: list[_Accepted], results: list[Item | RelataError | None]
    ) -> list[_Accepted]:
        """Insert the rows in one transaction; if a concurrent upload won a race for some
        content, insert them one by one so only the losers get ``DuplicateItem``."""
        if len(accepted) > 1:
            try:
                self._items.create_many([a.item for a in accepted])
                return accepted
            except DuplicateItem:
                pass  # nothing was inserted: the transaction rolled back
            except BaseException:
                self._remove_files(accepted)
                raise
        created: list[_Accepted] = []
        for n, a in enumerate(accepted):
            try:
                self._items.create(a.item)
            except DuplicateItem as exc:  # lost the race: the other upload's item stands
                self._originals.delete(a.item.original_path)
                results[a.index] = _duplicate(exc.existing_id)
                continue
            except BaseException:
                self._remove_files(accepted[n:])
                self._remove_rows(created)
                raise
            created.append(a)
        return created

    def _start_pipeline(
        self, created: list[_Accepted], results: list[Item | RelataError | None]
    ) -> None:
        """Enqueue each new item's first stage; if that fails, remove what is not started."""
        for n, a in enumerate(created):
            item = a.item
            payload = StagePayload(
                item.workspace_id, item.id, 1, title_from_document=not a.title_given
            )
            try:
                # Made durable by the audit record of the uploads, committed after it
                # (``_record_uploads``): one fsync for a batch instead of one per item.
                self._pipeline.start(payload, durable=False)
            except BaseException:
                self._remove_rows(created[n:])
                self._remove_files(created[n:])
                raise
            results[a.index] = item
            log.info(
                "item ingested",
                extra={
                    "fields": {
                        "item_id": item.id,
                        "source_type": item.source_type.value,
                        "size_bytes": item.size_bytes,
                    }
                },
            )

    def _record_uploads(self, workspace_id: str, actor: Actor, items: list[Item]) -> None:
        if not items:
            return
        self._audit.record_each(
            workspace_id,
            AuditAction.ITEM_UPLOADED,
            actor,
            AuditTarget.ITEM,
            [
                (
                    item.id,
                    {"source_type": item.source_type.value, "size_bytes": item.size_bytes},
                )
                for item in items
            ],
        )

    def _split(self, workspace_id: str, started: list[_Accepted], actor: Actor) -> None:
        """Each started message's attachments become items (see the module docstring). A
        message whose parts cannot be walked is left to its parse stage, which says why."""
        if self._attachments is None:
            return
        for a in started:
            if a.item.source_type is not SourceType.EMAIL:
                continue
            try:
                parts = attachments_of(a.data, self._limits, max_count=MAX_ATTACHMENTS)
            except RelataError:
                continue
            handed = [p for p in parts if p.data is not None]
            requests = [
                IngestRequest(data=p.data, filename=p.name, content_type=p.content_type)
                for p in handed
            ]
            outcome = dict(
                zip(
                    (p.number for p in handed),
                    self._run(workspace_id, requests, actor, attached=True) if requests else [],
                    strict=True,
                )
            )
            rows = []
            for p in parts:
                result = outcome.get(p.number)
                if isinstance(result, Item):
                    rows.append(Attachment(a.item.id, p.number, p.name, item_id=result.id))
                    continue
                reason = p.reason
                if isinstance(result, DuplicateItem):
                    reason = "the same content is already an item of this workspace"
                elif isinstance(result, RelataError):
                    reason = result.message
                rows.append(Attachment(a.item.id, p.number, p.name, reason=reason))
            try:
                self._attachments.add(workspace_id, rows)
            except Exception as exc:  # the items stand; only the links are missing
                log.warning(
                    "could not record a message's attachments",
                    extra={"fields": {"item_id": a.item.id, "error_type": type(exc).__name__}},
                )

    def _remove_rows(self, accepted: list[_Accepted]) -> None:
        for a in accepted:
            with contextlib.suppress(Exception):
                self._items.delete(a.item.workspace_id, a.item.id)

    def _remove_files(self, accepted: list[_Accepted]) -> None:
        for a in accepted:
            self._originals.delete(a.item.original_path)


class IngestSlot:
    """An admitted ingestion: the caller holds the slot while this object is used."""

    def __init__(self, service: IngestService) -> None:
        self._service = service

    def ingest(
        self, workspace_id: str, request: IngestRequest, *, actor: Actor = SYSTEM_ACTOR
    ) -> Item:
        result = self._service._run(workspace_id, [request], actor)[0]
        if isinstance(result, RelataError):
            raise result
        return result

    def ingest_many(
        self,
        workspace_id: str,
        requests: Sequence[IngestRequest],
        *,
        actor: Actor = SYSTEM_ACTOR,
    ) -> list[Item | RelataError]:
        return self._service._run(workspace_id, requests, actor)


def _duplicate(existing_id: str | None) -> DuplicateItem:
    return DuplicateItem(
        "an item with the same content already exists in this workspace "
        "(send allow_duplicate=true to keep a deliberate copy)",
        existing_id=existing_id,
    )


def _default_title(filename: str | None, text: str | None) -> str:
    """Until the parse stage finds the document's own title: the filename, else the first
    line of inline text."""
    from_name = title_from_filename(filename)
    if from_name:
        return from_name
    if text:
        for line in text[:10_000].splitlines():
            candidate = title_from(line.lstrip("#").strip()[:200])
            if candidate:
                return candidate
    return UNTITLED
