"""The export formats, each a generator of byte chunks written as the rows are read.

- **JSON Lines** (``jsonl``): a header record, then one record per line, kinds parents first
  (``records.KINDS``); with originals, each item also carries its parsed ``text`` and its
  stored original (``original``, base64). What ``relata import`` reads back.
- **CSV** (``csv``): a zip of one CSV file per kind (``items.csv``, ``claims.csv``...), the
  columns of the JSON Lines records; JSON values as JSON text. A text cell that a
  spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return) is prefixed with ``'``: document content is data, also in a spreadsheet.
  The zip is written to a stream, never seeked (data descriptors, ZIP64).
- **GraphML** (``graphml``): items and entities as nodes; relationships, mentions (one edge
  per item and entity it names, ``weight`` the count), aliases and contradictions as
  directed edges, for Gephi or networkx. Characters XML 1.0 cannot carry become U+FFFD.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from relata.exchange.reading import WorkspaceReader
from relata.exchange.records import (
    ALIAS,
    CONTRADICTION,
    ENTITY,
    FORMAT_VERSION,
    HEADER_KIND,
    ITEM,
    KINDS,
    RECORD,
    RELATIONSHIP,
    Kind,
    record_of,
)
from relata.ingest.originals import OriginalStore

#: Chunks of at most about this many bytes are handed to the writer at a time.
FLUSH_BYTES = 256 * 1024

MEDIA_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "application/zip",
    "graphml": "application/graphml+xml",
}
EXTENSIONS = {"jsonl": "jsonl", "csv": "zip", "graphml": "graphml"}


def _dumps(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


# ---------------------------------------------------------------- JSON Lines
def jsonl(
    reader: WorkspaceReader,
    header: Mapping[str, Any],
    *,
    originals: OriginalStore | None = None,
    max_original_bytes: int = 0,
) -> Iterator[bytes]:
    """The JSON Lines export; with ``originals``, each item with its text and original."""
    yield _dumps({RECORD: HEADER_KIND, "version": FORMAT_VERSION, **header})
    for kind in KINDS:
        if kind is ITEM and originals is not None:
            for row in reader.rows(ITEM, extra=("text", "original_path")):
                record = record_of(ITEM, row)
                record["text"] = row["text"]
                path = row["original_path"]
                if path and originals.exists(path):
                    data = originals.read(path, max_bytes=max_original_bytes)
                    record["original"] = base64.b64encode(data).decode("ascii")
                yield _dumps(record)
            continue
        for batch in reader.batches(kind):
            yield b"".join(_dumps(record_of(kind, row)) for row in batch)


# ---------------------------------------------------------------- CSV in a zip
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


class _Sink:
    """A write-only stream whose bytes are taken out as they come (no ``tell``/``seek``:
    ``zipfile`` then writes data descriptors instead of going back)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        self.size = 0
        return out


def _file_name(kind: Kind) -> str:
    return kind.plural + ".csv"


def csv_zip(reader: WorkspaceReader) -> Iterator[bytes]:
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for kind in KINDS:
            with (
                zf.open(_file_name(kind), "w", force_zip64=True) as raw,
                io.TextIOWrapper(raw, encoding="utf-8", newline="") as text,
            ):
                out = csv.writer(text)
                out.writerow(kind.columns)
                for batch in reader.batches(kind):
                    for row in batch:
                        out.writerow([_cell(row[c]) for c in kind.columns])
                    text.flush()
                    if sink.size >= FLUSH_BYTES:
                        yield sink.take()
    yield sink.take()


# ---------------------------------------------------------------- GraphML
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NODE_KEYS = (
    ("kind", "string"),
    ("label", "string"),
    ("source_type", "string"),
    ("status", "string"),
    ("entity_type", "string"),
    ("mentions", "int"),
    ("created_at", "string"),
)
_EDGE_KEYS = (
    ("kind", "string"),
    ("type", "string"),
    ("score", "double"),
    ("weight", "int"),
    ("status", "string"),
    ("review_status", "string"),
    ("reviewed_by", "string"),
    ("resolution", "string"),
    ("note", "string"),
    ("reason", "string"),
    ("facet", "string"),
    ("subject", "string"),
    ("evidence", "string"),
)


def _xml(value: Any) -> str:
    if isinstance(value, datetime):
        value = value.astimezone(UTC).isoformat()
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _NOT_XML.sub("\ufffd", text)
    return escape(text, {'"': "&quot;"})


def _data(prefix: str, values: Mapping[str, Any]) -> str:
    return "".join(
        f'<data key="{prefix}_{k}">{_xml(v)}</data>' for k, v in values.items() if v is not None
    )


def _node(node_id: str, values: Mapping[str, Any]) -> str:
    return f'<node id="{_xml(node_id)}">{_data("n", values)}</node>\n'


def _edge(source: str, target: str, values: Mapping[str, Any], edge_id: str | None = None) -> str:
    ident = f' id="{_xml(edge_id)}"' if edge_id else ""
    return (
        f'<edge{ident} source="{_xml(source)}" target="{_xml(target)}">'
        f"{_data('e', values)}</edge>\n"
    )


def _chunks(lines: Iterator[str]) -> Iterator[bytes]:
    parts: list[str] = []
    size = 0
    for line in lines:
        parts.append(line)
        size += len(line)
        if size >= FLUSH_BYTES:
            yield "".join(parts).encode()
            parts, size = [], 0
    if parts:
        yield "".join(parts).encode()


def _graph_lines(reader: WorkspaceReader, name: str) -> Iterator[str]:
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
    for prefix, scope, keys in (("n", "node", _NODE_KEYS), ("e", "edge", _EDGE_KEYS)):
        for key, kind in keys:
            yield f'<key id="{prefix}_{key}" for="{scope}" attr.name="{key}" attr.type="{kind}"/>\n'
    yield f'<graph id="{_xml(name)}" edgedefault="directed">\n'
    for row in reader.rows(ITEM):
        yield _node(
            row["id"],
            {
                "kind": "item",
                "label": row["title"],
                "source_type": row["source_type"],
                "status": row["status"],
                "created_at": row["created_at"] or row["ingested_at"],
            },
        )
    for row in reader.rows(ENTITY):
        yield _node(
            row["id"],
            {
                "kind": "entity",
                "label": row["name"],
                "entity_type": row["entity_type"],
                "mentions": row["observation_count"],
                "created_at": row["created_at"],
            },
        )
    for row in reader.rows(RELATIONSHIP):
        values = {
            "kind": "relationship",
            "type": row["relationship_type"],
            "score": float(row["score"]),
            "review_status": row["review_status"],
            "reviewed_by": row["reviewed_by"],
            "note": row["review_note"],
            "evidence": row["evidence"],
        }
        yield _edge(row["source_id"], row["target_id"], values, row["id"])
    for row in reader.mention_pairs():
        values = {"kind": "mentions", "weight": int(row["mentions"])}
        yield _edge(row["item_id"], row["entity_id"], values)
    for row in reader.rows(ALIAS):
        values = {
            "kind": "alias",
            "status": row["status"],
            "score": float(row["score"]),
            "reason": row["reason"],
            "note": row["note"],
        }
        yield _edge(row["entity_id"], row["other_id"], values, row["id"])
    for row in reader.rows(CONTRADICTION):
        values = {
            "kind": "contradicts",
            "status": row["status"],
            "resolution": row["resolution"],
            "note": row["note"],
            "facet": row["facet"],
            "subject": row["subject_name"],
            "reason": row["reason"],
        }
        yield _edge(row["first_item_id"], row["second_item_id"], values, row["id"])
    yield "</graph>\n</graphml>\n"


def graphml(reader: WorkspaceReader, name: str) -> Iterator[bytes]:
    return _chunks(_graph_lines(reader, name))
