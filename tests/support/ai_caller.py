"""A process that calls the model through the limiter the composition root builds, for the
AI-call limit's cross-process tests. Settings come from the environment.

    python -m tests.support.ai_caller calls --threads T --calls K --ready-file R --go-file G
    python -m tests.support.ai_caller hold --ready-file R

``calls``: after ``--go-file`` appears, T threads each embed K texts one call at a time.
``hold``: take one AI-call slot, write ``--ready-file``, and keep it until killed. Every
mode ends by itself after ``--max-seconds`` (exit 3), so a broken test leaves nothing behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from relata.bootstrap import build
from relata.config.settings import load_settings
from relata.domain.cancel import Cancel


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["calls", "hold"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--calls", type=int, default=1)
    p.add_argument("--ready-file", type=Path, required=True)
    p.add_argument("--go-file", type=Path)
    p.add_argument("--max-seconds", type=float, default=120.0)
    args = p.parse_args(argv)
    watchdog = threading.Timer(args.max_seconds, os._exit, args=(3,))
    watchdog.daemon = True
    watchdog.start()

    c = build(load_settings())
    try:
        if args.mode == "hold":
            with c.ai_limiter.slot("test"):
                args.ready_file.touch()
                time.sleep(args.max_seconds)
            return 0
        embedder = c.embedder
        assert embedder is not None
        args.ready_file.touch()
        while args.go_file is not None and not args.go_file.exists():
            time.sleep(0.01)

        def work(t: int) -> None:
            for k in range(args.calls):
                embedder.embed([f"{os.getpid()} {t} {k}"], Cancel.never())

        threads = [threading.Thread(target=work, args=(t,)) for t in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return 0
    finally:
        c.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
