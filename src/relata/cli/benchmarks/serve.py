"""``relata bench serve``: searches per second against the real ``relata serve`` over HTTP,
for each number of HTTP processes and of clients (docs/decisions/0036-http-processes.md).

For each ``--processes`` value it starts ``relata serve --processes N`` on the data dir and
database in effect (no background workers, a free loopback port), signs in as a benchmark
user it creates, warms every process up, then for each ``--clients`` value runs that many
client threads (one keep-alive connection each) asking ``GET /api/v1/search`` for
``--seconds``. It reports searches/s, p50/p95 latency, the server's CPU seconds (the
supervisor's and its HTTP processes', from ``/proc``) and the load average. The queries are
the ``text`` of a BEIR ``queries.jsonl`` (or the lines of a text file), cycled.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from relata.cli.benchmarks.common import (
    add_json_flag,
    emit,
    existing_file,
    machine,
    machine_line,
    positive_int,
)
from relata.cli.common import CliError, open_container
from relata.domain.errors import NotFound
from relata.domain.vocabulary import Role

_START_SECONDS = 300.0
_USER = "bench-serve"


def register(group: Any) -> None:
    p = group.add_parser(
        "serve",
        help="searches/s and p50/p95 against relata serve with N HTTP processes and K clients",
        description=__doc__,
    )
    p.add_argument(
        "--queries",
        required=True,
        type=existing_file,
        metavar="FILE",
        help="BEIR queries.jsonl (its 'text') or a text file, one query a line",
    )
    p.add_argument(
        "--processes", default="1,2", metavar="N,M", help="HTTP processes to try (default 1,2)"
    )
    p.add_argument("--clients", default="1,8", metavar="K,L", help="clients (default 1,8)")
    p.add_argument(
        "--seconds", type=positive_int, default=20, metavar="S", help="per run (default 20)"
    )
    add_json_flag(p)
    p.set_defaults(handler=_bench_serve)


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 or v > 64 for v in values):
        raise CliError(f"--{what} takes comma-separated numbers from 1 to 64, got {text!r}")
    return values


def read_queries(path: Path, limit: int = 10_000) -> list[str]:
    out: list[str] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            text = json.loads(line).get("text", "") if line.startswith("{") else line
            if text:
                out.append(str(text)[:500])
            if len(out) >= limit:
                break
    if not out:
        raise CliError(f"no queries in {path}")
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its children now, from ``/proc``."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def _bench_serve(args: argparse.Namespace) -> int:
    import httpx

    processes = _ints(args.processes, "processes")
    clients = _ints(args.clients, "clients")
    queries = read_queries(args.queries)
    password = secrets.token_urlsafe(18)
    with open_container(log=False) as c:
        settings = c.settings
        ws = c.workspaces.resolve()
        try:  # from an earlier run: a new password (this run's only)
            c.accounts.change_password(c.accounts.get_by_username(_USER).id, password)
        except NotFound:
            c.accounts.create_user(_USER, password, workspace=ws, role=Role.VIEWER)
    runs: list[dict[str, Any]] = []
    lines = [machine_line(m := machine())]
    for n in processes:
        port = _free_port()
        env = {
            **os.environ,
            "RELATA_DATA_DIR": str(settings.data_path),
            "RELATA_DATABASE_URL": settings.resolved_database_url,
            "RELATA_HTTP_ADDR": f"127.0.0.1:{port}",
            "RELATA_WORKERS": "0",
            "RELATA_LOG_LEVEL": "error",
        }
        argv = [sys.executable, "-m", "relata.cli.main", "serve", "--processes", str(n)]
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)  # noqa: S603
        base = f"http://127.0.0.1:{port}"
        try:
            cookies = _ready(httpx, base, password, proc)
            _warm(httpx, base, cookies, queries, n)
            for k in clients:
                run = _measure(httpx, base, cookies, queries, k, args.seconds, proc.pid)
                run.update(processes=n, clients=k)
                runs.append(run)
                lines.append(
                    f"processes {n}, clients {k}: {run['searches_per_s']} searches/s, "
                    f"p50 {run['p50_ms']} ms, p95 {run['p95_ms']} ms, errors {run['errors']}, "
                    f"server CPU {run['server_cpu_s']} s in {run['wall_s']} s, "
                    f"load {run['load_before']} -> {run['load_after']}"
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    emit({"machine": m, "runs": runs}, lines, as_json=args.json)
    return 0


def _ready(httpx: Any, base: str, password: str, proc: subprocess.Popen[bytes]) -> Any:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CliError(f"relata serve exited with {proc.returncode}")
        try:
            r = httpx.post(
                base + "/api/v1/auth/sign-in",
                json={"username": _USER, "password": password},
                timeout=30,
            )
            if r.status_code == 200:
                return r.cookies
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise CliError(f"relata serve did not answer within {_START_SECONDS:.0f} s")


def _warm(httpx: Any, base: str, cookies: Any, queries: list[str], n: int) -> None:
    """A few searches on fresh connections, so every process has loaded its model and
    partitions before the timing starts (and the children have all started)."""
    for q in queries[: 4 * n + 4]:
        httpx.get(
            base + "/api/v1/search",
            params={"q": q},
            cookies=cookies,
            headers={"Connection": "close"},
            timeout=120,
        )


def _measure(
    httpx: Any, base: str, cookies: Any, queries: list[str], k: int, seconds: int, pid: int
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        mine: list[float] = []
        bad = 0
        i = offset
        with httpx.Client(base_url=base, cookies=cookies, timeout=60) as http:
            while time.monotonic() < stop:
                q = queries[i % len(queries)]
                i += k
                t0 = time.perf_counter()
                try:
                    ok = http.get("/api/v1/search", params={"q": q}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    mine.append(time.perf_counter() - t0)
                else:
                    bad += 1
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    load_before = round(os.getloadavg()[0], 2)
    cpu0, t0 = _tree_cpu(pid), time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    cpu = _tree_cpu(pid) - cpu0
    ms = sorted(x * 1000 for x in latencies)
    return {
        "searches": len(ms),
        "searches_per_s": round(len(ms) / wall, 1) if wall > 0 else None,
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1) if ms else None,
        "errors": errors[0],
        "wall_s": round(wall, 1),
        "server_cpu_s": round(cpu, 1),
        "cpu_ms_per_search": round(1000 * cpu / len(ms), 1) if ms else None,
        "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 2),
    }
