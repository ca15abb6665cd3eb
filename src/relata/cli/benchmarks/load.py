"""``relata bench load``: many authenticated clients against a real ``relata serve``.

By default it prepares a fresh temporary data dir (or ``--database URL``, an empty database
such as PostgreSQL) as a user would: an administrator with an API token, the default
workspace with the demo corpus and ``--documents`` short notes made from it, all processed;
then it starts ``relata serve`` on a free loopback port (its background workers on, no
language model) and waits until it is ready. ``--server URL --token TOKEN`` drives a server
that is already running instead (on this machine only: the benchmark sends traffic to
loopback addresses and nowhere else).

``--clients`` clients then send one request at a time each for ``--seconds``: search (70%),
ask without a model (10%: ``POST /api/v1/answers`` answers with its sources), uploads (10%:
new text as JSON or a Markdown file as multipart, in turn) and item reads (10%: an item's
detail or its original). An upload refused 503 because every ingestion slot is taken is
sent again after its ``Retry-After`` (at most ``UPLOAD_ATTEMPTS`` times), as a client would.
Every loop is bounded by the time and every request by ``REQUEST_TIMEOUT``.

Reported: per operation, requests, p50/p95/max latency and statuses; server errors (5xx,
except admission control's 503 ``overloaded`` to an upload, counted on its own), other
errors (an unexpected 4xx, no answer); and, once the load stops, whether every upload
that was answered 2xx is there (``GET /api/v1/items/{id}``): lost uploads must be 0. Also the
server's CPU seconds (its process and threads, from ``/proc``) and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

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
from relata.cli.common import CliError

#: The mix: (operation, share of the requests).
MIX: tuple[tuple[str, float], ...] = (
    ("search", 0.70),
    ("ask", 0.10),
    ("upload", 0.10),
    ("read", 0.10),
)
REQUEST_TIMEOUT = 60.0
UPLOAD_ATTEMPTS = 5
START_TIMEOUT = 120.0
MAX_CLIENTS = 500
MAX_SECONDS = 3600.0
ADMIN = "load-admin"
QUERIES = (
    "tidal turbine",
    "Sabrewing Array",
    "Meridian Tidal Institute",
    "commercial operation",
    "grid connection 2021",
    "harbour council",
    "seal counts",
    "Kestrel Marine Systems",
    "Vaughan field notes",
    "maintenance",
    "rated capacity MW",
    "Port Halloran",
)
QUESTIONS = (
    "When did the Sabrewing Array enter commercial operation?",
    "Who monitors the turbines?",
    "What did the harbour council decide?",
)

DESCRIPTION = (
    "Drive a real `relata serve` with many authenticated clients on loopback for a fixed "
    "time: search 70%, ask without a model 10%, uploads 10%, item reads 10%. Report p50/p95 "
    "latency per operation, server errors (5xx) and other errors, and check that every "
    "upload answered 2xx is there afterwards (0 lost). By default it prepares a fresh "
    "temporary data dir (or --database URL, an empty database) with an administrator, an "
    "API token and the demo corpus, and starts the server itself; --server and --token "
    "drive a server already running on this machine."
)


def register(group: Any) -> None:
    p = group.add_parser(
        "load",
        help="many clients against a real server: latency, server errors, lost uploads",
        description=DESCRIPTION,
    )
    p.add_argument("--clients", type=_clients, default=10, metavar="N", help="default 10")
    p.add_argument(
        "--seconds", type=_seconds, default=30.0, metavar="S", help="load time (default 30)"
    )
    p.add_argument(
        "--documents",
        type=positive_int,
        default=50,
        metavar="N",
        help="notes added to the demo corpus before the load (default 50)",
    )
    p.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="serve this (empty) database instead of a fresh SQLite file, e.g. PostgreSQL; "
        "the run's data is left in it",
    )
    p.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="drive this running server (loopback only) instead of starting one",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("RELATA_TOKEN"),
        metavar="TOKEN",
        help="the API token for --server (default: RELATA_TOKEN)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of the mix (default 1)")
    add_json_flag(p)
    p.set_defaults(handler=_bench_load)


def _clients(value: str) -> int:
    n = positive_int(value)
    if n > MAX_CLIENTS:
        raise argparse.ArgumentTypeError(f"at most {MAX_CLIENTS}")
    return n


def _seconds(value: str) -> float:
    s = positive_float(value)
    if s > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"at most {MAX_SECONDS:g}")
    return s


# ---------------------------------------------------------------- the server
@dataclass(frozen=True, slots=True)
class Target:
    base_url: str
    token: str
    pid: int | None  # the server's process when this benchmark started it


def loopback_url(url: str) -> str:
    """``url`` without a trailing slash, when it names this machine; else a ``CliError``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        raise CliError(f"--server must be an http(s) URL, got {url!r}", exit_code=2)
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        raise CliError(
            "--server must be on this machine (localhost, 127.0.0.0/8 or ::1): the load "
            "benchmark sends traffic nowhere else",
            exit_code=2,
        )
    return url.rstrip("/")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _notes(count: int, rng: random.Random) -> list[str]:
    """``count`` short notes made of the demo corpus's sentences, each one different."""
    from relata.seed import demo_documents

    sentences = [
        s.strip() + "."
        for doc in demo_documents()
        if not doc.filename.endswith(".json")
        for s in doc.data.decode("utf-8").replace("\n", " ").split(". ")
        if len(s.split()) >= 4 and not s.lstrip().startswith("#")
    ]
    return [
        f"Field note {n + 1}. " + " ".join(rng.sample(sentences, k=min(4, len(sentences))))
        for n in range(count)
    ]


def _prepare(settings: Any, documents: int, seed: int) -> str:
    """The administrator, its API token and the processed corpus; returns the token."""
    from relata.auth.passwords import validate_password
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role
    from relata.ingest.bulk import BulkIngest, Tally
    from relata.ingest.service import IngestRequest
    from relata.seed import demo_documents

    with opened(settings) as c:
        ws, _ = c.workspaces.ensure(c.settings.default_workspace, actor=CLI_ACTOR)
        if c.repos.items.list(ws.id, limit=1):
            raise CliError("--database must be empty: it already holds items", exit_code=2)
        password = validate_password(os.urandom(18).hex())
        user = c.accounts.create_user(ADMIN, password, workspace=ws, role=Role.OWNER)
        secret, _ = c.tokens.create(
            user_id=user.id,
            workspace_id=ws.id,
            name="bench load",
            role=Role.OWNER,
            creator_role=Role.OWNER,
            actor=CLI_ACTOR,
        )
        tally = Tally()
        bulk = BulkIngest(c.ingest, ws.id, tally, actor=CLI_ACTOR)
        for doc in demo_documents():
            bulk.add(doc.filename, IngestRequest(data=doc.data, filename=doc.filename))
        for n, text in enumerate(_notes(documents, random.Random(seed))):
            bulk.add(f"note {n}", IngestRequest(text=text, title=f"Field note {n + 1}"))
        bulk.flush()
        settled = run_pipeline(
            c, ws.id, tally.item_ids, workers=None, timeout=1800, poll_seconds=0.2
        )
        if not settled.finished:
            raise CliError("the corpus was not processed within 30 minutes")
    return secret


def _server_env(data_dir: str, port: int, database: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        RELATA_DATA_DIR=data_dir,
        RELATA_DATABASE_URL=database or "",
        RELATA_HTTP_ADDR=f"127.0.0.1:{port}",
        RELATA_AI_PROVIDER="",  # ask without a model: an answer with its sources
        RELATA_LOG_LEVEL="warning",
    )
    return env


@contextmanager
def _started(env: dict[str, str], log_path: Path, port: int) -> Iterator[int]:
    """``relata serve`` with ``env`` until ready; yields its pid, stops it afterwards."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_ready(proc, f"http://127.0.0.1:{port}", log_path)
            yield proc.pid
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise CliError(f"relata serve exited {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise CliError(f"relata serve was not ready within {START_TIMEOUT:.0f} s")


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` and its threads, from ``/proc``."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the load
@dataclass
class OpStats:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "requests": len(lat),
            "p50_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
            "p95_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))] * 1000, 1)
            if lat
            else None,
            "max_ms": round(lat[-1] * 1000, 1) if lat else None,
            "statuses": dict(sorted(self.statuses.items())),
        }


@dataclass
class Load:
    """What the clients saw, shared by them (one event loop: no locks needed)."""

    ops: dict[str, OpStats] = field(default_factory=lambda: {op: OpStats() for op, _ in MIX})
    item_ids: list[str] = field(default_factory=list)
    uploaded: list[str] = field(default_factory=list)
    server_errors: int = 0
    other_errors: int = 0
    retried_uploads: int = 0
    refused_busy: int = 0
    error_samples: list[str] = field(default_factory=list)
    uploads_sent: int = 0

    def record(
        self, op: str, status: int | str, seconds: float, expected: bool, busy: bool = False
    ) -> None:
        stats = self.ops[op]
        stats.latencies.append(seconds)
        stats.statuses[str(status)] += 1
        if busy:
            self.refused_busy += 1
        elif isinstance(status, int) and status >= 500:
            self.server_errors += 1
        elif not expected:
            self.other_errors += 1
        if not expected and not busy and len(self.error_samples) < 10:
            self.error_samples.append(f"{op}: {status}")


def _pick(rng: random.Random) -> str:
    x = rng.random()
    for op, share in MIX:
        if x < share:
            return op
        x -= share
    return MIX[-1][0]


async def _send(
    client: httpx.AsyncClient, op: str, load: Load, request: httpx.Request
) -> httpx.Response | None:
    start = time.perf_counter()
    try:
        response = await client.send(request)
    except httpx.HTTPError as exc:
        load.record(op, type(exc).__name__, time.perf_counter() - start, expected=False)
        return None
    elapsed = time.perf_counter() - start
    busy = _admission_refusal(op, response)
    load.record(op, response.status_code, elapsed, expected=response.is_success, busy=busy)
    return response


def _admission_refusal(op: str, response: httpx.Response) -> bool:
    """Whether ``response`` is admission control turning an upload away while every
    ingestion slot is taken (503, code ``overloaded``, with ``Retry-After``): the server
    working as designed, which the client answers by sending it again, not a server error."""
    if op != "upload" or response.status_code != 503 or "retry-after" not in response.headers:
        return False
    try:
        return bool(response.json()["error"]["code"] == "overloaded")
    except (ValueError, KeyError, TypeError):
        return False


async def _upload(
    client: httpx.AsyncClient, load: Load, client_no: int, rng: random.Random
) -> None:
    load.uploads_sent += 1
    n = load.uploads_sent
    text = (
        f"Load note {n} from client {client_no}. The tide gauge at Port Halloran read "
        f"{rng.randint(100, 999) / 100} m at reading {rng.getrandbits(48):x}."
    )
    for _ in range(UPLOAD_ATTEMPTS):
        if n % 2:
            request = client.build_request(
                "POST", "/api/v1/items", json={"text": text, "title": f"Load note {n}"}
            )
        else:
            request = client.build_request(
                "POST",
                "/api/v1/items",
                files={"file": (f"load-note-{n}.md", f"# Load note {n}\n\n{text}\n")},
            )
        response = await _send(client, "upload", load, request)
        if response is None or response.status_code != 503:
            break
        load.retried_uploads += 1
        await asyncio.sleep(min(float(response.headers.get("retry-after", "1")), 5.0))
    if response is not None and response.is_success:
        item_id = str(response.json()["id"])
        load.uploaded.append(item_id)
        load.item_ids.append(item_id)


async def _client(
    client: httpx.AsyncClient, load: Load, client_no: int, until: float, seed: int
) -> None:
    rng = random.Random(seed * 1_000_003 + client_no)
    while time.monotonic() < until:
        op = _pick(rng)
        if op == "search":
            q = rng.choice(QUERIES)
            await _send(
                client, op, load, client.build_request("GET", "/api/v1/search", params={"q": q})
            )
        elif op == "ask":
            body = {"question": rng.choice(QUESTIONS)}
            await _send(
                client, op, load, client.build_request("POST", "/api/v1/answers", json=body)
            )
        elif op == "upload":
            await _upload(client, load, client_no, rng)
        else:
            item_id = rng.choice(load.item_ids)
            path = f"/api/v1/items/{item_id}" + ("/original" if rng.random() < 0.3 else "")
            await _send(client, op, load, client.build_request("GET", path))


async def _present(client: httpx.AsyncClient, ids: list[str]) -> list[str]:
    """The ids among ``ids`` the server does not answer 200 for (a few at a time)."""
    missing: list[str] = []
    gate = asyncio.Semaphore(8)

    async def one(item_id: str) -> None:
        async with gate:
            for _ in range(3):
                try:
                    r = await client.get(f"/api/v1/items/{item_id}")
                except httpx.HTTPError:
                    continue
                if r.status_code != 200:
                    missing.append(item_id)
                return
            missing.append(item_id)

    await asyncio.gather(*(one(i) for i in ids))
    return missing


async def drive(target: Target, clients: int, seconds: float, seed: int) -> dict[str, Any]:
    """The load itself against ``target``, then the check for lost uploads."""
    load = Load()
    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=clients + 8)
    headers = {"Authorization": f"Bearer {target.token}"}
    async with httpx.AsyncClient(
        base_url=target.base_url, headers=headers, timeout=REQUEST_TIMEOUT, limits=limits
    ) as client:
        r = await client.get("/api/v1/items", params={"limit": 200})
        if r.status_code != 200:
            raise CliError(f"GET /api/v1/items answered {r.status_code}: is the token valid?")
        load.item_ids = [str(i["id"]) for i in r.json()["items"]]
        if not load.item_ids:
            raise CliError("the workspace has no items to read: add some first")
        cpu0, wall0, own0 = _cpu_seconds(target.pid), time.perf_counter(), time.process_time()
        load_before = os.getloadavg()
        until = time.monotonic() + seconds
        await asyncio.gather(*(_client(client, load, n, until, seed) for n in range(clients)))
        wall = time.perf_counter() - wall0
        cpu1, own = _cpu_seconds(target.pid), time.process_time() - own0
        load_after = os.getloadavg()
        missing = await _present(client, load.uploaded)
    requests = sum(len(s.latencies) for s in load.ops.values())
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": requests,
        "requests_per_s": round(requests / wall, 1) if wall else None,
        "operations": {op: s.summary() for op, s in load.ops.items()},
        "server_errors": load.server_errors,
        "other_errors": load.other_errors,
        "error_samples": load.error_samples,
        "uploads_acknowledged": len(load.uploaded),
        "uploads_retried_after_503": load.retried_uploads,
        "uploads_refused_overloaded": load.refused_busy,
        "uploads_lost": len(missing),
        "server_cpu_seconds": round(cpu1 - cpu0, 1) if cpu0 is not None and cpu1 else None,
        "client_cpu_seconds": round(own, 1),
        "load_average": {"before": list(load_before), "after": list(load_after)},
    }


# ---------------------------------------------------------------- the command
def _bench_load(args: argparse.Namespace) -> int:
    if args.server:
        if not args.token:
            raise CliError("--server needs --token (or RELATA_TOKEN)", exit_code=2)
        if args.database:
            raise CliError("--database and --server cannot be used together", exit_code=2)
        target = Target(loopback_url(args.server), args.token, None)
        report = asyncio.run(drive(target, args.clients, args.seconds, args.seed))
        report["database"] = "(the server's)"
    else:
        report = _with_own_server(args)
    report["machine"] = machine()
    report["command"] = (
        f"relata bench load --clients {args.clients} --seconds {args.seconds:g}"
        + (f" --documents {args.documents}" if not args.server else "")
        + (" --database URL" if args.database else "")
        + (" --server URL" if args.server else "")
    )
    emit(report, _lines(report), as_json=args.json)
    return 1 if report["server_errors"] or report["uploads_lost"] else 0


def _with_own_server(args: argparse.Namespace) -> dict[str, Any]:
    base = quiet_settings()
    with tempfile.TemporaryDirectory(prefix="relata-bench-load-") as tmp:
        settings = fresh_settings(base, tmp)
        if args.database:
            settings = settings.replace(database_url=args.database)
        prepared = time.perf_counter()
        token = _prepare(settings, args.documents, args.seed)
        prepare_s = time.perf_counter() - prepared
        port = _free_port()
        env = _server_env(tmp, port, args.database)
        log_path = Path(tmp) / "serve.log"
        with _started(env, log_path, port) as pid:
            target = Target(f"http://127.0.0.1:{port}", token, pid)
            report = asyncio.run(drive(target, args.clients, args.seconds, args.seed))
        report["server_log_errors"] = [
            line[:300]
            for line in log_path.read_text(errors="replace").splitlines()
            if "Traceback" in line or '"level": "error"' in line or " ERROR " in line
        ][:10]
    report["database"] = (
        "postgresql"
        if (args.database or "").startswith("postgres")
        else ("sqlite" if not args.database else "other")
    )
    report["prepare_seconds"] = round(prepare_s, 1)
    return report


def _lines(r: dict[str, Any]) -> list[str]:
    lines = [
        f"{r['clients']} clients for {r['seconds']} s on {r['database']}: {r['requests']} "
        f"requests ({r['requests_per_s']}/s)",
    ]
    for op, s in r["operations"].items():
        codes = ", ".join(f"{k}: {v}" for k, v in s["statuses"].items())
        lines.append(
            f"  {op:<7} {s['requests']:>6} requests  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms"
            f"  max {s['max_ms']} ms  ({codes})"
        )
    lines.append(
        f"  server errors (5xx) {r['server_errors']}, other errors {r['other_errors']}"
        + (f": {'; '.join(r['error_samples'])}" if r["error_samples"] else "")
    )
    lines.append(
        f"  uploads: {r['uploads_acknowledged']} acknowledged, {r['uploads_lost']} lost; "
        f"{r['uploads_refused_overloaded']} refused 503 by admission control (every ingestion "
        "slot taken) and sent again after Retry-After"
    )
    cpu = r["server_cpu_seconds"]
    lines.append(
        f"  CPU: server {cpu if cpu is not None else '?'} s, clients {r['client_cpu_seconds']} s;"
        f" load average {r['load_average']['before'][0]:.2f} before, "
        f"{r['load_average']['after'][0]:.2f} after"
    )
    for line in r.get("server_log_errors", []):
        lines.append(f"  server log: {line}")
    lines.append(machine_line(r["machine"]))
    return lines
