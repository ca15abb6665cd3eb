"""``relata inspect FILE [--json]``: a dry run of sniffing, parsing and chunking one file.

Shows what ingestion would make of a file (detected type, title, metadata, warnings, the
block structure with heading paths and pages, and the chunks) without storing anything and
without a database: it reads only settings (the upload limit, parse bounds and chunk sizes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, clip_words, plural, settings_or_exit

if TYPE_CHECKING:
    from relata.chunking import ChunkDraft
    from relata.parsing import Document

_PREVIEW_CHARS = 72


def register(sub: Any) -> None:
    p = sub.add_parser(
        "inspect",
        help="show how a file would be parsed and chunked (stores nothing)",
        description="Dry run of ingestion for one file: the type detected from its content, "
        "title, metadata, warnings, the block structure (heading paths, pages) and the chunks "
        "ingestion would store. Stores nothing and needs no database.",
    )
    p.add_argument("file", type=Path, help="the file to inspect")
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(handler=_inspect)


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise CliError(f"{path} is not a regular file")
        if size > max_bytes:
            raise CliError(
                f"{path} is {size} bytes; the upload limit is {max_bytes} (RELATA_MAX_UPLOAD_BYTES)"
            )
        with path.open("rb") as f:
            return f.read(max_bytes + 1)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _preview(text: str) -> str:
    return clip_words(text, _PREVIEW_CHARS)


def _where(path: tuple[str, ...], page: int | None) -> str:
    parts = [" › ".join(path)] if path else []
    if page is not None:
        parts.append(f"p.{page}")
    return "  ".join(parts)


def report(
    name: str, size: int, doc: Document, chunks: list[ChunkDraft], target: int, overlap: int
) -> dict[str, Any]:
    """Everything ``inspect`` shows, as plain data (the ``--json`` output)."""
    from relata.chunking import CHUNKER_VERSION
    from relata.parsing import PARSER_VERSION

    return {
        "file": name,
        "size_bytes": size,
        "source_type": doc.source_type.value,
        "title": doc.title,
        "metadata": doc.metadata,
        "warnings": list(doc.warnings),
        "parser_version": PARSER_VERSION,
        "chunker_version": CHUNKER_VERSION,
        "text_chars": len(doc.text),
        "blocks": [
            {
                "kind": b.kind,
                "level": b.level,
                "heading_path": list(b.heading_path),
                "page": b.page,
                "start": b.start,
                "end": b.end,
                "text": b.text,
            }
            for b in doc.blocks
        ],
        "chunking": {"target_chars": target, "overlap_chars": overlap},
        "chunks": [
            {
                "sequence": c.sequence,
                "start": c.start,
                "end": c.end,
                "heading_path": list(c.heading_path),
                "page": c.page,
                "text": c.text,
            }
            for c in chunks
        ],
    }


def _print_human(data: dict[str, Any]) -> None:
    out = sys.stdout.write
    out(f"file:      {data['file']} ({data['size_bytes']} bytes)\n")
    out(f"type:      {data['source_type']}\n")
    out(f"title:     {data['title'] or '(none)'}\n")
    for key, value in data["metadata"].items():
        out(f"meta:      {key} = {_preview(value)}\n")
    for warning in data["warnings"]:
        out(f"warning:   {warning}\n")
    out(f"text:      {plural(data['text_chars'], 'character')}\n")
    out(f"\nstructure: {plural(len(data['blocks']), 'block')}\n")
    for b in data["blocks"]:
        kind = f"{b['kind']} h{b['level']}" if b["kind"] in ("heading", "title") else b["kind"]
        where = _where(tuple(b["heading_path"]), b["page"])
        out(f"  {b['start']:>7}-{b['end']:<7} {kind:<11} {where}\n")
        out(f"  {'':>15} {_preview(b['text'])}\n")
    cfg = data["chunking"]
    out(
        f"\nchunks:    {len(data['chunks'])} (target {cfg['target_chars']} chars, "
        f"overlap {cfg['overlap_chars']})\n"
    )
    for c in data["chunks"]:
        where = _where(tuple(c["heading_path"]), c["page"])
        n = len(c["text"])
        size = f"{n:>5} {'char' if n == 1 else 'chars'}"
        out(f"  #{c['sequence']:<4} {c['start']:>7}-{c['end']:<7} {size}  {where}\n")
        out(f"  {'':>21} {_preview(c['text'])}\n")
    out(f"\nparser {data['parser_version']}, chunker {data['chunker_version']}; nothing stored\n")


def _inspect(args: argparse.Namespace) -> int:
    from relata.chunking import chunk_document
    from relata.parsing import limits_from_settings, parse, sniff

    settings = settings_or_exit()
    path: Path = args.file
    data = _read(path, settings.max_upload_bytes)
    limits = limits_from_settings(settings)
    source_type = sniff(data, filename=path.name, limits=limits)
    doc = parse(data, source_type, limits=limits)
    target, overlap = settings.chunk_target_chars, settings.chunk_overlap_chars
    chunks = chunk_document(doc, target_chars=target, overlap_chars=overlap)
    result = report(path.name, len(data), doc, chunks, target, overlap)
    if args.json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        _print_human(result)
    return 0
