"""Reading the SciFact files of ../shared/bench/scifact (see its README) for the benchmarks
that run the real pipeline over them: bounded lines, a clear error naming the file and line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from relata.cli.common import CliError

SPLITS = ("train", "dev", "test")
MAX_LINE_BYTES = 4 << 20


def jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise CliError(f"{path}: line {lineno} is over {MAX_LINE_BYTES} bytes")
            if raw.strip():
                try:
                    rows.append(json.loads(raw))
                except ValueError:
                    raise CliError(f"{path}: line {lineno} is not JSON") from None
    return rows


def claim_pairs(folder: Path, split: str, limit: int) -> list[dict[str, str]]:
    path = folder / f"claims_{split}.jsonl"
    if not path.is_file():
        raise CliError(f"no {path.name} in {folder}")
    pairs = []
    for row in jsonl(path)[:limit]:
        if not all(isinstance(row.get(k), str) for k in ("claim_id", "claim", "doc_id", "label")):
            raise CliError(f"{path}: a pair without claim_id, claim, doc_id and label")
        pairs.append({k: str(row[k]) for k in ("claim_id", "claim", "doc_id", "label")})
    return pairs


def abstracts_of(folder: Path, wanted: set[str] | None) -> dict[str, tuple[str, str]]:
    """``doc_id -> (title, text)`` of the corpus's abstracts (those in ``wanted``, or all)."""
    path = folder / "corpus.jsonl"
    if not path.is_file():
        raise CliError(f"no corpus.jsonl in {folder}")
    found = {}
    for row in jsonl(path):
        doc_id = str(row.get("_id", ""))
        if wanted is None or doc_id in wanted:
            found[doc_id] = (str(row.get("title") or doc_id), str(row.get("text") or ""))
    return found


def stage_times(c: Any, ws: str, item_ids: list[str]) -> dict[str, dict[str, float]]:
    """Per stage: its runs, the handlers' wall time and their worker threads' CPU time (the
    latter absent for runs recorded before it was)."""
    busy: dict[str, float] = {}
    cpu: dict[str, float] = {}
    runs: Counter[str] = Counter()
    for item_id in item_ids:
        for r in c.repos.runs.list_for_item(ws, item_id):
            ms = r.details.get("duration_ms")
            if isinstance(ms, int | float):
                busy[r.stage] = busy.get(r.stage, 0.0) + float(ms) / 1000
            cpu_ms = r.details.get("cpu_ms")
            if isinstance(cpu_ms, int | float):
                cpu[r.stage] = cpu.get(r.stage, 0.0) + float(cpu_ms) / 1000
            runs[r.stage] += 1
    return {
        s: {
            "runs": runs[s],
            "handler_s": round(busy.get(s, 0.0), 2),
            **({"handler_cpu_s": round(cpu[s], 2)} if s in cpu else {}),
        }
        for s in runs
    }


def ingest_abstracts(c: Any, ws: str, abstracts: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Each abstract as an item (its title and text, external id the doc id); doc id -> item."""
    from relata.ingest.service import IngestRequest

    items: dict[str, str] = {}
    for doc_id, (title, text) in abstracts.items():
        request = IngestRequest(
            text=text, title=title, metadata={"external_id": doc_id}, allow_duplicate=True
        )
        items[doc_id] = c.ingest.ingest(ws, request).id
    return items


def ingest_claims(c: Any, ws: str, pairs: list[dict[str, str]]) -> dict[str, str]:
    """Each distinct claim of ``pairs`` as its own short item; claim id -> item."""
    from relata.ingest.service import IngestRequest

    items: dict[str, str] = {}
    for p in pairs:
        if p["claim_id"] not in items:
            request = IngestRequest(
                text=p["claim"],
                title=f"claim {p['claim_id']}",
                metadata={"external_id": f"claim:{p['claim_id']}"},
                allow_duplicate=True,
            )
            items[p["claim_id"]] = c.ingest.ingest(ws, request).id
    return items


def stage_line(stage: str, t: dict[str, float], width: int) -> str:
    """One stage's line of a report: runs, handler wall time and, when recorded, CPU time."""
    cpu = f", CPU {t['handler_cpu_s']:.1f} s" if "handler_cpu_s" in t else ""
    return f"  stage {stage:<{width}} {t['runs']} runs, handler time {t['handler_s']:.1f} s{cpu}"
