"""Exporting a workspace's knowledge and importing it into another (docs/decisions/0041).

``ExchangeService.export`` checks its arguments, records ``workspace.exported`` (when the
export starts: a download cut short still read what it read) and returns the export as a
generator of byte chunks, written from bounded batches of rows as they are read
(``exchange.reading``, ``exchange.formats``). ``import_jsonl`` checks a whole JSON Lines
file, creates the workspace if needed (refusing one that holds anything), writes it and
records ``workspace.imported`` with what it counted (``exchange.importing``); ``import_into``
does the same into an existing empty workspace (the API's ``POST /api/v1/import``, which
spools the request body to a file first).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from relata.domain.errors import Conflict, ValidationError
from relata.domain.models import Actor, Workspace
from relata.domain.ports import AuditRecorder, Clock
from relata.domain.vocabulary import AuditAction, AuditTarget, ExportFormat
from relata.exchange import formats
from relata.exchange.importing import ImportReport, check_file, write_file
from relata.exchange.reading import WorkspaceReader
from relata.exchange.records import BY_NAME
from relata.ingest.originals import OriginalStore
from relata.storage.sql.engine import Database
from relata.workspaces import WorkspaceService


class ExchangeService:
    def __init__(
        self,
        db: Database,
        workspaces: WorkspaceService,
        originals: OriginalStore,
        clock: Clock,
        *,
        audit: AuditRecorder,
        max_upload_bytes: int,
    ) -> None:
        self._db = db
        self._workspaces = workspaces
        self._originals = originals
        self._clock = clock
        self._audit = audit
        self._max_upload = max_upload_bytes

    @staticmethod
    def media_type(fmt: ExportFormat) -> str:
        return formats.MEDIA_TYPES[fmt.value]

    @staticmethod
    def file_name(workspace: Workspace, fmt: ExportFormat) -> str:
        return f"relata-{workspace.slug}.{formats.EXTENSIONS[fmt.value]}"

    def export(
        self,
        workspace: Workspace,
        fmt: ExportFormat | str,
        *,
        actor: Actor,
        with_originals: bool = False,
    ) -> Iterator[bytes]:
        try:
            chosen = ExportFormat(fmt)
        except ValueError:
            allowed = ", ".join(f.value for f in ExportFormat)
            raise ValidationError(f"format must be one of: {allowed}", field="format") from None
        if with_originals and chosen is not ExportFormat.JSONL:
            raise ValidationError(
                "originals are exported with the jsonl format only", field="with_originals"
            )
        reader = WorkspaceReader(self._db, workspace.id)
        self._audit.record(
            workspace.id,
            AuditAction.WORKSPACE_EXPORTED,
            actor,
            target_kind=AuditTarget.WORKSPACE,
            target_id=workspace.id,
            details={"format": chosen.value, "with_originals": with_originals},
        )
        if chosen is ExportFormat.JSONL:
            header = {
                "workspace": {"slug": workspace.slug, "name": workspace.name},
                "exported_at": self._clock.now().isoformat(),
                "with_originals": with_originals,
            }
            return formats.jsonl(
                reader,
                header,
                originals=self._originals if with_originals else None,
                max_original_bytes=self._max_upload,
            )
        if chosen is ExportFormat.CSV:
            return formats.csv_zip(reader)
        return formats.graphml(reader, workspace.slug)

    def import_jsonl(self, path: Path, slug: str, *, actor: Actor) -> ImportReport:
        """``path`` (a JSON Lines export) into the workspace ``slug``, created if missing
        (``relata import``); ``Conflict`` when it holds items or entities, ``RecordError``
        naming a bad line."""
        ids = check_file(path, max_upload_bytes=self._max_upload)
        workspace, created = self._workspaces.ensure(slug, actor=actor)
        if not created:
            self.check_empty(workspace)
        return self._write(path, workspace, ids, actor)

    def import_into(self, path: Path, workspace: Workspace, *, actor: Actor) -> ImportReport:
        """``path`` into an existing, empty ``workspace`` (``POST /api/v1/import``): the same
        checks and writes as ``import_jsonl``."""
        self.check_empty(workspace)
        ids = check_file(path, max_upload_bytes=self._max_upload)
        return self._write(path, workspace, ids, actor)

    def check_empty(self, workspace: Workspace) -> None:
        """``Conflict`` unless ``workspace`` holds no item and no entity."""
        if not WorkspaceReader(self._db, workspace.id).is_empty():
            raise Conflict(
                f"workspace {workspace.slug!r} already holds items or entities: import into a "
                "new or empty workspace"
            )

    def _write(self, path: Path, workspace: Workspace, ids: set[str], actor: Actor) -> ImportReport:
        report = write_file(
            path,
            self._db,
            self._originals,
            workspace.id,
            ids=ids,
            max_upload_bytes=self._max_upload,
        )
        details: dict[str, object] = {BY_NAME[k].plural: n for k, n in report.counts.items()}
        details["originals"] = report.originals
        self._audit.record(
            workspace.id,
            AuditAction.WORKSPACE_IMPORTED,
            actor,
            target_kind=AuditTarget.WORKSPACE,
            target_id=workspace.id,
            details=details,
        )
        return report
