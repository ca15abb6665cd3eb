"""The container runs NumPy's BLAS on one thread (relata.concurrency.single_threaded_blas).

OpenBLAS's idle threads busy-wait after each matrix-vector product; with a second BLAS
thread the resident vector search cost about three times its CPU time. The limit is
process-wide, so the test raises it first and checks that building a container lowers it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from relata.bootstrap import build
from relata.config.settings import Settings


def _blas_threads() -> list[int]:
    return [int(p["num_threads"]) for p in threadpool_info() if p["user_api"] == "blas"]


def test_building_a_container_limits_blas_to_one_thread(tmp_path: Path) -> None:
    np.ones((2, 2)) @ np.ones(2)  # NumPy's BLAS is loaded
    assert _blas_threads(), "NumPy's BLAS library was not found by threadpoolctl"
    threadpool_limits(limits=2, user_api="blas")
    assert set(_blas_threads()) == {2}
    c = build(Settings(data_dir=str(tmp_path / "data"), embedding_provider="none"))
    try:
        assert set(_blas_threads()) == {1}
    finally:
        c.close()
