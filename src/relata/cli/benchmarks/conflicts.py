"""``relata bench conflicts``: planted changed facts against the ledger, through the real
pipeline.

The texts are Relata's own (``relata/benchdata/conflicts.json``: news, reports, technical
notes and minutes written for this benchmark). For every sentence with a value, a second
report repeats it with one value changed (a quantity, a percentage, a year, a day of the
month, a weekday or a month: ``relata.cli.benchmarks.planted``), and a control report repeats
it unchanged. In a fresh data dir the documents and the plants go into one workspace, the
documents and the controls into another; the pipeline runs as in production (parse, chunk,
entities, claims), with no model and no embedder. Reported: recall per kind (a plant is caught
when the ledger records a contradiction between it and its document whose conflicting words
in the plant are the changed value), precision (of the contradictions touching plants, those
that are a caught plant's), false alarms (controls with any contradiction), disagreement
records per caught plant (1.0 is the goal), and each stage's time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    fresh_settings,
    machine,
    machine_line,
    opened,
    positive_float,
    positive_int,
    quiet_settings,
    run_pipeline,
)
from relata.cli.benchmarks.planted import KINDS, Planted, load, planted
from relata.cli.benchmarks.scifact import stage_line, stage_times


def register(group: Any) -> None:
    p = group.add_parser(
        "conflicts",
        help="planted changed facts in repeated sentences against the contradiction ledger",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workers", type=positive_int, default=2, metavar="N", help="workers")
    p.add_argument(
        "--timeout", type=positive_float, default=1800.0, metavar="S", help="for the pipeline"
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench)


def _ingest(c: Any, ws: str, title: str, text: str) -> str:
    from relata.ingest.service import IngestRequest

    request = IngestRequest(text=text, title=title, allow_duplicate=True)
    return str(c.ingest.ingest(ws, request).id)


def _bench(args: argparse.Namespace) -> int:
    base = quiet_settings()
    data = load()
    plants, controls = planted(data)
    changes = {"embedding_provider": "none", "ai_provider": ""}
    with tempfile.TemporaryDirectory(prefix="relata-bench-conflicts-") as tmp:
        settings = fresh_settings(base, Path(tmp) / "data").replace(**changes)
        with opened(settings) as c:
            t0, cpu0 = time.perf_counter(), time.process_time()
            report: dict[str, Any] = {}
            items: list[str] = []
            settled_all = True
            for slug, seconds in (("plants", plants), ("controls", controls)):
                ws = c.workspaces.ensure(f"bench-{slug}")[0].id
                docs = [_ingest(c, ws, d["title"], d["text"]) for d in data["documents"]]
                second = [_ingest(c, ws, f"report {i}", p.text) for i, p in enumerate(seconds)]
                settled = run_pipeline(
                    c,
                    ws,
                    [*docs, *second],
                    workers=args.workers,
                    timeout=args.timeout,
                    poll_seconds=0.2,
                )
                settled_all = settled_all and settled.finished
                report[slug] = _evaluate(c, ws, docs, second, seconds)
                report.setdefault("stages", stage_times(c, ws, [*docs, *second]))
                items += [*docs, *second]
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    report |= {
        "documents": len(data["documents"]),
        "genres": sorted({d["genre"] for d in data["documents"]}),
        "settled": settled_all,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "machine": machine(),
    }
    report |= _summary(report["plants"], report["controls"], plants)
    emit(report, _lines(report), as_json=args.json)
    return 0 if settled_all else 1


def _evaluate(
    c: Any, ws: str, docs: list[str], second: list[str], seconds: list[Planted]
) -> dict[str, Any]:
    """Per second report: its contradictions, whether one is the planted change, and the
    disagreement records it is a source of."""
    records: Counter[str] = Counter()
    offset = 0
    while True:
        page = c.claims.disagreements(ws, limit=1000, offset=offset)
        for d in page:
            for item in {s.item_id for p in d.positions for s in p.sources}:
                records[item] += 1
        if len(page) < 1000:
            break
        offset += 1000
    rows = []
    for item, p in zip(second, seconds, strict=True):
        pairs = c.claims.contradictions(ws, item_id=item, limit=1000)
        caught = 0
        for x in pairs:
            mine = x.first if x.first.item_id == item else x.second
            other = x.second if mine is x.first else x.first
            text = c.repos.items.get(ws, item).text or ""
            said = text[mine.conflict_start : mine.conflict_end]
            if other.item_id == docs[p.document] and p.kind is not None and p.new in said:
                caught += 1
        rows.append(
            {"kind": p.kind, "pairs": len(pairs), "caught": caught, "records": records[item]}
        )
    background = sum(records[d] for d in docs)
    return {"rows": rows, "background_records": background}


def _summary(
    plants_: dict[str, Any], controls_: dict[str, Any], plants: list[Planted]
) -> dict[str, Any]:
    rows = plants_["rows"]
    per_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        caught = sum(1 for r in mine if r["caught"])
        per_kind[kind] = {
            "planted": len(mine),
            "caught": caught,
            "recall": round(caught / len(mine), 3) if mine else None,
        }
    caught_rows = [r for r in rows if r["caught"]]
    pairs = sum(r["pairs"] for r in rows)
    true = sum(min(r["caught"], 1) for r in rows)
    alarms = [r for r in controls_["rows"] if r["pairs"]]
    return {
        "planted": len(plants),
        "caught": len(caught_rows),
        "recall": round(len(caught_rows) / max(len(rows), 1), 3),
        "per_kind": per_kind,
        "precision": round(true / pairs, 3) if pairs else None,
        "pairs_on_plants": pairs,
        "false_alarms": len(alarms),
        "controls": len(controls_["rows"]),
        "records_per_caught": (
            round(sum(r["records"] for r in caught_rows) / len(caught_rows), 3)
            if caught_rows
            else None
        ),
    }


def _lines(r: dict[str, Any]) -> list[str]:
    lines = [
        f"conflicts: {r['documents']} documents ({', '.join(r['genres'])}), "
        f"{r['planted']} plants, {r['controls']} controls; no model",
        f"  recall {r['recall']:.3f} ({r['caught']} of {r['planted']}); precision "
        f"{r['precision'] if r['precision'] is not None else '-'} "
        f"({r['pairs_on_plants']} contradictions on plants)",
        "  per kind: "
        + ", ".join(
            f"{k} {v['caught']}/{v['planted']}" for k, v in r["per_kind"].items() if v["planted"]
        ),
        f"  false alarms {r['false_alarms']} of {r['controls']} controls; "
        f"records per caught change {r['records_per_caught']}",
        f"  total {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU",
    ]
    for stage, t in r["stages"].items():
        lines.append(stage_line(stage, t, 9))
    if not r["settled"]:
        lines.append("  NOT SETTLED within --timeout")
    lines.append(machine_line(r["machine"]))
    return lines
