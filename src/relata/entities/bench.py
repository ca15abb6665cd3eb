"""``relata bench entities``: exact-span typed precision, recall and F1, and throughput.

The dataset is JSON lines, ``{"id", "text", "entities": [[start, end, "PER"|"ORG"|"LOC"],
...]}``, offsets into ``text``. Relata's types are mapped to those three labels (person ->
PER, organisation -> ORG, location -> LOC); other types (``term``) are ignored, on both
sides. A predicted span counts only when its start, end and label all equal a gold span's.

Each document is given to the extractor as one chunk, the way the pipeline stage gives it an
item, and timed alone: wall and process CPU seconds, documents per second, milliseconds per
1,000 characters and words per second. The first document is extracted once before timing,
so loading the model is reported apart (``load_seconds``). ``run_throughput_bench`` times
the same way over a BEIR ``corpus.jsonl`` (``title`` + ``text``), which has no annotations.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from relata.domain.errors import ValidationError
from relata.domain.models import EntityType
from relata.entities.mentions import ChunkText, EntityExtractor, Extraction

LABELS: Final = ("PER", "ORG", "LOC")
TYPE_LABELS: Final[dict[EntityType, str]] = {
    EntityType.PERSON: "PER",
    EntityType.ORGANISATION: "ORG",
    EntityType.LOCATION: "LOC",
}
MAX_LINE_BYTES: Final = 4 << 20
MAX_DOCUMENTS: Final = 1_000_000

Span = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class AnnotatedDocument:
    id: str
    text: str
    entities: frozenset[Span]


def dev_set_path() -> Path:
    """The project's own annotated development file (``entities/devset/dev.jsonl``)."""
    return Path(str(resources.files("relata.entities").joinpath("devset", "dev.jsonl")))


def _lines(path: Path, limit: int) -> Iterator[tuple[int, str]]:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno > limit:
                return
            if len(raw) > MAX_LINE_BYTES:
                raise ValidationError(
                    f"{path}: line {lineno} is over {MAX_LINE_BYTES} bytes", field="dataset"
                )
            line = raw.decode("utf-8", errors="strict").strip()
            if line:
                yield lineno, line


def _bad(path: Path, lineno: int, what: str) -> ValidationError:
    return ValidationError(f"{path}: line {lineno}: {what}", field="dataset")


def _entity(path: Path, lineno: int, row: Any, text: str) -> Span:
    if not (isinstance(row, list) and len(row) == 3):
        raise _bad(path, lineno, f"an entity must be [start, end, label], not {row!r}")
    start, end, label = row
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise _bad(path, lineno, f"entity offsets {start!r}..{end!r} are not within the text")
    if label not in LABELS:
        raise _bad(path, lineno, f"entity label {label!r} is not one of {', '.join(LABELS)}")
    return (start, end, label)


def load_dataset(path: str | Path, *, limit: int = MAX_DOCUMENTS) -> list[AnnotatedDocument]:
    """The annotated documents of a dataset file; a malformed line is an error naming it."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"no dataset file at {path}", field="dataset")
    docs: list[AnnotatedDocument] = []
    for lineno, line in _lines(path, limit):
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise _bad(path, lineno, f"not JSON ({exc.args[0]})") from exc
        if not isinstance(record, dict):
            raise _bad(path, lineno, "a line must be a JSON object")
        doc_id, text, entities = record.get("id"), record.get("text"), record.get("entities")
        if not isinstance(text, str):
            raise _bad(path, lineno, '"text" must be a string')
        if not isinstance(entities, list):
            raise _bad(path, lineno, '"entities" must be a list')
        spans = frozenset(_entity(path, lineno, row, text) for row in entities)
        docs.append(AnnotatedDocument(str(doc_id if doc_id is not None else lineno), text, spans))
    if not docs:
        raise ValidationError(f"{path} has no documents", field="dataset")
    return docs


def predicted_spans(extraction: Extraction) -> frozenset[Span]:
    return frozenset(
        (m.start, m.end, TYPE_LABELS[m.entity_type])
        for m in extraction.mentions
        if m.entity_type in TYPE_LABELS
    )


def _scores(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


@dataclass(slots=True)
class _Timer:
    wall: float = 0.0
    cpu: float = 0.0

    def extract(self, extractor: EntityExtractor, doc_id: str, text: str) -> Extraction:
        started, started_cpu = time.perf_counter(), time.process_time()
        extraction = extractor.extract([ChunkText(doc_id, text, 0)])
        self.wall += time.perf_counter() - started
        self.cpu += time.process_time() - started_cpu
        return extraction


def _warm_up(extractor: EntityExtractor, text: str) -> float:
    started = time.perf_counter()
    extractor.extract([ChunkText("warm-up", text, 0)])
    return time.perf_counter() - started


def _throughput(timer: _Timer, texts: Sequence[str], load_seconds: float) -> dict[str, float]:
    chars = sum(len(t) for t in texts)
    words = sum(len(t.split()) for t in texts)
    wall = max(timer.wall, 1e-9)
    return {
        "documents": len(texts),
        "characters": chars,
        "words": words,
        "wall_seconds": round(timer.wall, 3),
        "cpu_seconds": round(timer.cpu, 3),
        "load_seconds": round(load_seconds, 3),
        "documents_per_s": round(len(texts) / wall, 1),
        "ms_per_1000_chars": round(1000 * timer.wall / max(chars, 1) * 1000, 3),
        "words_per_s": round(words / wall, 1),
    }


def run_entities_bench(
    dataset_path: str | Path, *, extractor: EntityExtractor, max_errors: int = 0
) -> dict[str, Any]:
    """Quality and speed of ``extractor`` on an annotated dataset (see the module docstring).

    With ``max_errors`` > 0 the result lists up to that many wrong spans (``fp``: predicted,
    not in the gold; ``fn``: in the gold, missed) with their text, for tuning.
    """
    docs = load_dataset(dataset_path)
    load_seconds = _warm_up(extractor, docs[0].text)
    timer = _Timer()
    counts: Counter[tuple[str, str]] = Counter()
    errors: list[dict[str, Any]] = []
    for doc in docs:
        predicted = predicted_spans(timer.extract(extractor, doc.id, doc.text))
        for kind, spans in (
            ("tp", predicted & doc.entities),
            ("fp", predicted - doc.entities),
            ("fn", doc.entities - predicted),
        ):
            for start, end, label in sorted(spans):
                counts[(kind, label)] += 1
                if kind != "tp" and len(errors) < max_errors:
                    errors.append(
                        {
                            "id": doc.id,
                            "kind": kind,
                            "label": label,
                            "start": start,
                            "end": end,
                            "text": doc.text[start:end],
                        }
                    )
    per_type = {
        label: _scores(counts[("tp", label)], counts[("fp", label)], counts[("fn", label)])
        for label in LABELS
    }
    total = {kind: sum(counts[(kind, label)] for label in LABELS) for kind in ("tp", "fp", "fn")}
    result: dict[str, Any] = {
        "dataset": str(dataset_path),
        "extractor": str(extractor.extractor),
        "extractor_version": extractor.version,
        "overall": _scores(total["tp"], total["fp"], total["fn"]),
        "per_type": per_type,
        "throughput": _throughput(timer, [d.text for d in docs], load_seconds),
    }
    if max_errors > 0:
        result["errors"] = errors
    return result


def read_corpus_texts(path: str | Path, *, limit: int = MAX_DOCUMENTS) -> list[tuple[str, str]]:
    """(id, ``title`` + blank line + ``text``) of the documents of a BEIR ``corpus.jsonl``."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"no corpus file at {path}", field="corpus")
    out: list[tuple[str, str]] = []
    for lineno, line in _lines(path, limit):
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValidationError(f"{path}: line {lineno}: not JSON", field="corpus") from exc
        if not isinstance(record, dict) or not isinstance(record.get("text", ""), str):
            raise ValidationError(f"{path}: line {lineno}: no text", field="corpus")
        title = record.get("title") or ""
        text = f"{title}\n\n{record.get('text', '')}".strip() if title else record.get("text", "")
        out.append((str(record.get("_id", lineno)), str(text)))
    return out


def run_throughput_bench(
    corpus_path: str | Path, *, extractor: EntityExtractor, limit: int = MAX_DOCUMENTS
) -> dict[str, Any]:
    """Speed of ``extractor`` over an unannotated BEIR corpus, one document per call."""
    docs = read_corpus_texts(corpus_path, limit=limit)
    if not docs:
        raise ValidationError(f"{corpus_path} has no documents", field="corpus")
    load_seconds = _warm_up(extractor, docs[0][1])
    timer = _Timer()
    mentions: Counter[str] = Counter()
    for doc_id, text in docs:
        for mention in timer.extract(extractor, doc_id, text).mentions:
            mentions[str(mention.entity_type)] += 1
    return {
        "corpus": str(corpus_path),
        "extractor": str(extractor.extractor),
        "extractor_version": extractor.version,
        "mentions": dict(sorted(mentions.items())),
        "throughput": _throughput(timer, [t for _, t in docs], load_seconds),
    }


def format_report(result: dict[str, Any]) -> str:
    """A human-readable form of ``run_entities_bench``'s (or ``run_throughput_bench``'s)
    result."""
    lines = [f"extractor: {result['extractor']} {result['extractor_version']}"]
    if "overall" in result:
        lines.append(f"dataset:   {result['dataset']}")
        lines.append(f"{'':8}{'P':>8}{'R':>8}{'F1':>8}{'tp':>7}{'fp':>7}{'fn':>7}")
        rows = [("overall", result["overall"]), *result["per_type"].items()]
        for name, s in rows:
            lines.append(
                f"{name:8}{s['precision']:8.3f}{s['recall']:8.3f}{s['f1']:8.3f}"
                f"{s['tp']:7d}{s['fp']:7d}{s['fn']:7d}"
            )
    else:
        lines.append(f"corpus:    {result['corpus']}")
        counts = ", ".join(f"{k} {v}" for k, v in result["mentions"].items()) or "none"
        lines.append(f"mentions:  {counts}")
    t = result["throughput"]
    lines.append(
        f"speed:     {t['documents']} documents, {t['characters']} characters, "
        f"{t['words']} words in {t['wall_seconds']:.2f} s wall / {t['cpu_seconds']:.2f} s CPU "
        f"(model load {t['load_seconds']:.2f} s)"
    )
    lines.append(
        f"           {t['documents_per_s']:.1f} documents/s, "
        f"{t['ms_per_1000_chars']:.2f} ms per 1,000 characters, {t['words_per_s']:.0f} words/s"
    )
    for error in result.get("errors", []):
        lines.append(
            f"  {error['kind']} {error['label']} {error['id']} "
            f"[{error['start']}:{error['end']}] {error['text']!r}"
        )
    return "\n".join(lines)
