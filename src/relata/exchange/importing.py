"""``relata import``: a JSON Lines export into a new or empty workspace.

The file is content, never instruction: it is read twice, line by line.

1. **Check** every line before anything is written: at most ``max_line_bytes`` bytes, one
   JSON object, the header first (``relata-export``, a version this code reads), then
   records of the known kinds only, each field of its column's type and length and, for the
   closed vocabularies, one of their words (``records.check_record``). Every id a record
   names must be on an earlier line; no id and no workspace-unique key may repeat. An
   original must decode (base64) to at most ``RELATA_MAX_UPLOAD_BYTES`` bytes whose SHA-256
   and size are the item's ``content_hash`` and ``size_bytes``. The first bad
   line stops the import with its number and what is wrong.
2. **Write** in batches of ``BATCH_ROWS`` rows, one transaction each. Every id becomes a
   new one, ``uuid5(workspace, old id)``: the same file imported into two workspaces of one
   database gives two sets of ids, and the ids inside JSON values (evidence, positions) are
   mapped the same way. Decisions (alias and relationship reviews, resolutions, notes, who
   and when) are kept as they are; so are timestamps, counts and the keys that name no
   item. The keys derived from item ids (a claim's and a relationship's ``dedupe_key``, a
   contradiction's ``identity`` and ``content``) are derived again from the new ids, so
   that reprocessing finds these records (``_Writer._rekey``). Chunks and vectors are not
   exported: the imported items have no chunks (``relata reprocess --all`` makes them from
   the imported originals, when there are).

Checked first, a file is written in full unless the database fails mid-way; such a
workspace holds part of the file and is not empty, so a second import into it is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import sqlalchemy as sa

from relata.claims.extract import claim_dedupe_key
from relata.domain.models import SourceType
from relata.entities.aliases import blocking_keys
from relata.exchange.records import (
    BY_NAME,
    CLAIM,
    CONTRADICTION,
    ENTITY,
    FORMAT_VERSION,
    HEADER_KIND,
    ITEM,
    KINDS,
    RECORD,
    RELATIONSHIP,
    Kind,
    RecordError,
    check_record,
)
from relata.ids import content_hash, pair_key, title_key
from relata.ingest.originals import OriginalStore
from relata.relationships.evidence import relationship_key
from relata.storage.sql import tables as t
from relata.storage.sql.base import insert_for
from relata.storage.sql.engine import Database

BATCH_ROWS = 500
#: Every record but an item with its original fits in this many bytes.
RECORD_BYTES = 4 * 1024 * 1024
MAX_RECORDS = 100_000_000
_TOKEN_CHARS = 100
_TOKENS = 200
_ID_NAMESPACE = uuid.UUID("3d2b7f0e-5c1a-4e8b-9f47-0a6c2d9e8b13")


def max_line_bytes(max_upload_bytes: int) -> int:
    """The longest line an import reads: a record, plus an original in base64."""
    return RECORD_BYTES + 4 * ((max_upload_bytes + 2) // 3)


@dataclass
class ImportReport:
    workspace_id: str
    lines: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {k.name: 0 for k in KINDS})
    originals: int = 0


def _lines(stream: BinaryIO, max_line: int) -> Iterator[tuple[int, Any]]:
    for number in range(1, MAX_RECORDS + 1):
        raw = stream.readline(max_line + 1)
        if not raw:
            return
        if len(raw) > max_line:
            raise RecordError(number, f"the line is longer than {max_line} bytes")
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except (ValueError, RecursionError):
            raise RecordError(number, "not a JSON object on one line (UTF-8)") from None
    raise RecordError(MAX_RECORDS, f"more than {MAX_RECORDS} lines")


def _check_header(number: int, record: Any) -> None:
    if not isinstance(record, dict) or record.get(RECORD) != HEADER_KIND:
        raise RecordError(number, f"not a Relata export: the first record must be {HEADER_KIND!r}")
    if record.get("version") != FORMAT_VERSION:
        raise RecordError(number, f"export format version {record.get('version')!r} is not "
                          f"one this version reads ({FORMAT_VERSION})")  # fmt: skip


def _original(number: int, value: str | None, max_bytes: int) -> bytes | None:
    if value is None:
        return None
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RecordError(number, "item: original is not base64") from None
    if len(data) > max_bytes:
        raise RecordError(number, f"item: original is over the limit of {max_bytes} bytes")
    return data


def _unique_key(kind: Kind, values: dict[str, Any]) -> tuple[str, ...] | None:
    if kind is ITEM:
        if values["deliberate_duplicate"]:
            return None
        return ("item", values["content_hash"])
    if not kind.unique:
        return None
    return (kind.name, *(str(values[c]) for c in kind.unique))


def check_file(path: Path, *, max_upload_bytes: int) -> set[str]:
    """Pass 1: every line checked (see the module docstring); the ids of its records."""
    seen: dict[str, set[str]] = {k.name: set() for k in KINDS}
    keys: set[tuple[str, ...]] = set()
    with path.open("rb") as stream:
        header = True
        for number, record in _lines(stream, max_line_bytes(max_upload_bytes)):
            if header:
                _check_header(number, record)
                header = False
                continue
            kind, values = check_record(number, record, seen)
            if values["id"] in seen[kind.name]:
                raise RecordError(number, f"{kind.name} {values['id']} is on an earlier line")
            key = _unique_key(kind, values)
            if key is not None:
                if key in keys:
                    raise RecordError(number, f"{kind.name}: a second record with the same key")
                keys.add(key)
            if kind is ITEM:
                data = _original(number, values["original"], max_upload_bytes)
                if data is not None and (
                    content_hash(data) != values["content_hash"]
                    or len(data) != values["size_bytes"]
                ):
                    raise RecordError(number, "item: original does not match its content_hash")
            seen[kind.name].add(values["id"])
        if header:
            raise RecordError(1, "the file is empty: not a Relata export")
    return set().union(*seen.values())


class _Writer:
    """Pass 2: the checked records, with new ids, into the workspace, batch by batch."""

    def __init__(
        self,
        db: Database,
        originals: OriginalStore,
        workspace_id: str,
        report: ImportReport,
        ids: set[str],
    ) -> None:
        self._ids = ids
        # A claim's key (``claim_dedupe_key``) names its item: old key -> the new one.
        self._claim_keys: dict[str, str] = {}
        self._db = db
        self._originals = originals
        self._ws = workspace_id
        self._report = report
        self._kind: Kind | None = None
        self._rows: list[dict[str, Any]] = []
        self._tokens: list[dict[str, Any]] = []

    def new_id(self, old: str) -> str:
        return str(uuid.uuid5(_ID_NAMESPACE, f"{self._ws}/{old}"))

    def remap(self, value: Any) -> Any:
        """``value`` with every id of the file in it (a string, a key) mapped to its new id;
        any other string (a chunk's id, which is not exported) as it is."""
        if isinstance(value, str):
            if value in self._ids:
                return self.new_id(value)
            return self._claim_keys.get(value, value)
        if isinstance(value, list):
            return [self.remap(v) for v in value]
        if isinstance(value, dict):
            return {self.remap(k): self.remap(v) for k, v in value.items()}
        return value

    def add(self, kind: Kind, values: dict[str, Any]) -> None:
        if kind is not self._kind or len(self._rows) >= BATCH_ROWS:
            self.flush()
            self._kind = kind
        row: dict[str, Any] = {"workspace_id": self._ws}
        for name in kind.columns:
            value = values[name]
            if name == "id" or name in kind.refs:
                value = self.new_id(value)
            elif kind is not ITEM and isinstance(kind.column(name).type, sa.JSON):
                value = self.remap(value)  # evidence, positions: never an item's metadata
            row[name] = value
        if kind is ITEM:
            self._item(row, values)
        elif kind in (CLAIM, CONTRADICTION, RELATIONSHIP):
            self._rekey(kind, row, values)
        elif kind is ENTITY:
            wanted = sorted({k[:_TOKEN_CHARS] for k in blocking_keys(row["name"]) if k})
            self._tokens.extend(
                {"entity_id": row["id"], "token": k, "workspace_id": self._ws}
                for k in wanted[:_TOKENS]
            )
        self._rows.append(row)
        self._report.counts[kind.name] += 1

    def _rekey(self, kind: Kind, row: dict[str, Any], values: dict[str, Any]) -> None:
        """The keys the pipeline derives from item ids, derived again from the new ids, so
        that reprocessing the imported items finds (and keeps the decisions on) these
        records instead of adding new ones. A key that the old ids do not reproduce (made by
        another version's rule) is kept as it is."""
        if kind is CLAIM:
            old = claim_dedupe_key(values["item_id"], values["subject"], values["statement"])
            if old == values["dedupe_key"]:
                new = claim_dedupe_key(row["item_id"], row["subject"], row["statement"])
                self._claim_keys[old] = row["dedupe_key"] = new
        elif kind is RELATIONSHIP:
            if relationship_key(values["source_id"], values["target_id"]) == values["dedupe_key"]:
                row["dedupe_key"] = relationship_key(row["source_id"], row["target_id"])
        else:
            old_identity = _contradiction_identity(values)
            if old_identity is not None and old_identity == values["identity"]:
                row["identity"] = _contradiction_identity(row) or row["identity"]
            old_content = _contradiction_content(values)
            if old_content is not None and old_content == values["content"]:
                row["content"] = _contradiction_content(row) or row["content"]

    def _item(self, row: dict[str, Any], values: dict[str, Any]) -> None:
        row["title_key"] = title_key(row["title"])
        row["text"] = values["text"]
        row["chunk_count"] = 0
        data = _original(0, values["original"], 2**63)
        if data is not None:
            row["original_path"] = self._originals.save(
                self._ws, row["id"], SourceType(row["source_type"]), data, sync=False
            )
            self._report.originals += 1

    def flush(self) -> None:
        if self._kind is None or not self._rows:
            return
        if self._kind is ITEM and self._report.originals:
            self._originals.sync_all()
        with self._db.write() as conn:
            conn.execute(self._kind.table.insert(), self._rows)
            if self._tokens:
                stmt = insert_for(self._db.dialect, t.entity_tokens).on_conflict_do_nothing()
                conn.execute(stmt, self._tokens)
        self._rows, self._tokens = [], []


def write_file(
    path: Path,
    db: Database,
    originals: OriginalStore,
    workspace_id: str,
    *,
    ids: set[str],
    max_upload_bytes: int,
) -> ImportReport:
    """Pass 2 over a file ``check_file`` passed (``ids``: what it returned)."""
    report = ImportReport(workspace_id)
    writer = _Writer(db, originals, workspace_id, report, ids)
    seen: dict[str, set[str]] = {k.name: _Everything() for k in KINDS}
    with path.open("rb") as stream:
        for number, record in _lines(stream, max_line_bytes(max_upload_bytes)):
            report.lines = number
            if record.get(RECORD) == HEADER_KIND:
                continue
            kind, values = check_record(number, record, seen)
            writer.add(BY_NAME[kind.name], values)
    writer.flush()
    return report


def _sides(values: dict[str, Any]) -> list[dict[str, Any]] | None:
    sides = [values["first"], values["second"]]
    return sides if all(isinstance(x, dict) for x in sides) else None


def _contradiction_identity(values: dict[str, Any]) -> str | None:
    """``claims.stage.found_contradiction``'s identity: the pair of the claims' places."""
    sides = _sides(values)
    if sides is None:
        return None
    places = [
        f"{x.get('item_id')}:{values['subject']}:{x.get('start')}:{x.get('end')}" for x in sides
    ]
    return pair_key("contradiction", *places)


def _contradiction_content(values: dict[str, Any]) -> str | None:
    """``claims.stage.found_contradiction``'s content: the pair of the claims' keys."""
    sides = _sides(values)
    if sides is None:
        return None
    return pair_key("contradiction-content", *(str(x.get("claim_key")) for x in sides))


class _Everything(set[str]):
    """References were checked by ``check_file``: the second pass need not keep the ids."""

    def __contains__(self, item: object) -> bool:
        return True
