"""The local embedder's peak memory follows the token budget, not the number of texts.

Measured in a fresh process (``VmHWM``, the peak resident set): 32 full-length passages in
one ONNX run grow the process by ~600 MB over the loaded model; within the default budget of
1,024 padded tokens (runs of four) by ~95 MB (docs/benchmarks.md has the whole-upload figures).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

_PROBE = textwrap.dedent(
    """
    import json, sys
    from relata.domain.cancel import Cancel
    from relata.embeddings.onnx import OnnxEmbedder

    def peak_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) // 1024

    words = "the tidal array ran at full rated power for six hours while seals".split()
    texts = [" ".join(words[(n + k) % len(words)] for k in range(400)) for n in range(32)]
    embedder = OnnxEmbedder(batch_size=32, batch_tokens=int(sys.argv[1]), threads=1)
    embedder.embed_array(["warm up"], Cancel.never())
    loaded = peak_mb()
    embedder.embed_array(texts, Cancel.never())
    print(json.dumps({"loaded": loaded, "peak": peak_mb()}))
    """
)


def _growth_mb(batch_tokens: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(batch_tokens)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    peaks = json.loads(out.stdout.strip().splitlines()[-1])
    return int(peaks["peak"]) - int(peaks["loaded"])


@pytest.mark.slow
def test_peak_memory_of_full_length_passages_stays_within_the_token_budget() -> None:
    by_texts = _growth_mb(1 << 20)  # one run of 32 x 256 tokens, as batching by texts did
    by_tokens = _growth_mb(1024)  # eight runs of 4 x 256
    assert by_tokens < 300, by_tokens
    assert by_tokens * 3 < by_texts, (by_tokens, by_texts)
