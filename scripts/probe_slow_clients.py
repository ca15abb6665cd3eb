"""Probe a running ``relata serve`` with hostile clients while another client keeps working,
and print what the other client saw (docs/reliability.md, "Request limits and slow clients").

    .venv/bin/python scripts/probe_slow_clients.py            # starts its own server
    .venv/bin/python scripts/probe_slow_clients.py --seconds 20 --idle 1000 --slow 50

Without ``--url`` it prepares a fresh data dir (an administrator and an API token, through the
CLI) and starts ``relata serve`` on a free loopback port (no workers, no embedder), so the
server's resident memory can be sampled from ``/proc``. Each scenario runs for ``--seconds``
while the *other client* sends one request at a time and records each latency; at most
``--slow`` slow and ``--idle`` idle connections are opened (every loop here is bounded by
those and the time).

The other client's requests go in turn to ``GET /healthz``, ``GET /api/v1/items`` and
``POST /api/v1/items`` (a small text; 503 when the ingestion slots are taken).

Scenarios: a baseline; 1 MB request heads sent over and over; request heads trickled a byte a
second (slowloris); sign-in bodies trickled at 4 bytes a second; authenticated uploads trickled
at 4 bytes a second (they hold ingestion slots); idle connections that send nothing; four
anonymous 200 MB JSON bodies with a declared length (the issue's probe), and four chunked ones
from a token holder, each sent as fast as the server takes it. ``--env NAME=VALUE`` passes a
setting to the server it starts (``--env RELATA_MIN_BODY_RATE=0`` to compare).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.server import Server, free_port, relata, relata_env, serve  # noqa: E402

ADMIN, PASSWORD = "probe", "probe-password-long-enough"


@dataclass
class Seen:
    """What the other client saw during one scenario, and the server's memory."""

    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    rss_mb: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, name: str) -> str:
        lat = sorted(self.latencies) or [float("nan")]
        p50 = statistics.median(lat) * 1000
        p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] * 1000
        worst = lat[-1] * 1000
        rss = f"{min(self.rss_mb):.0f}-{max(self.rss_mb):.0f}" if self.rss_mb else "-"
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items()))
        return (
            f"| {name} | {len(self.latencies)} | {p50:.1f} | {p95:.1f} | {worst:.1f} | "
            f"{self.failures} | {codes} | {rss} | {'; '.join(self.notes)} |"
        )


def rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


_uploads = 0


async def other_client(base: str, token: str, until: float, pid: int | None, seen: Seen) -> None:
    """One request at a time until ``until``, in turn ``GET /healthz``, ``GET /api/v1/items``
    and a small upload (new text each time): the latency another user sees."""
    global _uploads
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        n = 0
        while time.monotonic() < until:
            n += 1
            start = time.monotonic()
            try:
                if n % 3 == 1:
                    r = await client.get("/healthz")
                elif n % 3 == 2:
                    r = await client.get("/api/v1/items", headers=auth)
                else:
                    _uploads += 1
                    text = f"Probe note {_uploads} written at {time.time()}."
                    r = await client.post("/api/v1/items", json={"text": text}, headers=auth)
                seen.latencies.append(time.monotonic() - start)
                seen.statuses[r.status_code] = seen.statuses.get(r.status_code, 0) + 1
            except httpx.HTTPError:
                seen.failures += 1
            if (mem := rss_mb(pid)) is not None:
                seen.rss_mb.append(mem)
            await asyncio.sleep(0.05)


async def _open(base: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = base.removeprefix("http://").split(":")
    return await asyncio.open_connection(host, int(port))


def _host(base: str) -> bytes:
    return base.removeprefix("http://").encode()


async def big_heads(base: str, until: float, seen: Seen) -> None:
    """Four clients sending 1 MB request heads, over and over."""
    answers: dict[str, int] = {}

    async def one() -> None:
        while time.monotonic() < until:
            try:
                reader, writer = await _open(base)
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: " + _host(base) + b"\r\nX-Big: ")
                writer.write(b"a" * 1_000_000 + b"\r\n\r\n")
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                line = await asyncio.wait_for(reader.readline(), 10)
                key = line.decode(errors="replace").strip()[:12] or "closed"
                writer.close()
            except (ConnectionError, TimeoutError) as exc:
                key = type(exc).__name__
            answers[key] = answers.get(key, 0) + 1

    await asyncio.gather(*(one() for _ in range(4)))
    seen.notes.append("1 MB heads answered: " + ", ".join(f"{k} x{v}" for k, v in answers.items()))


async def trickle(
    base: str,
    until: float,
    seen: Seen,
    connections: int,
    head: bytes,
    step: int,
    label: str,
) -> None:
    """``connections`` clients each sending ``head`` then ``step`` bytes of body a second,
    or, when ``step`` is 0, the head itself one byte a second; how many the server closed
    on its own is noted."""
    closed = 0

    async def one() -> None:
        nonlocal closed
        try:
            reader, writer = await _open(base)
        except OSError:
            return
        pending = head
        try:
            if step:
                writer.write(head)
                pending = b""
            while time.monotonic() < until:
                if step:
                    writer.write(b"x" * step)
                elif pending:
                    writer.write(pending[:1])
                    pending = pending[1:]
                await writer.drain()
                await asyncio.sleep(1.0)
                if reader.at_eof():
                    closed += 1
                    return
        except ConnectionError:
            closed += 1
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    seen.notes.append(f"{connections} {label}; the server closed {closed}")


async def idle(base: str, until: float, seen: Seen, connections: int) -> None:
    writers: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    refused = 0
    for _ in range(connections):
        try:
            reader, writer = await _open(base)
            readers.append(reader)
            writers.append(writer)
        except OSError:
            refused += 1
    await asyncio.sleep(max(0.0, until - time.monotonic()))
    closed = sum(1 for r in readers if r.at_eof())
    for w in writers:
        w.close()
    seen.notes.append(
        f"{len(writers)} idle connections open ({refused} refused); the server closed {closed}"
    )


async def big_bodies(base: str, until: float, seen: Seen, token: str | None) -> None:
    """Four 200 MB JSON bodies to ``POST /api/v1/tokens`` sent as fast as the server reads
    them: declared (``Content-Length``) without credentials, or chunked with ``token``."""
    results: list[str] = []
    total = 200_000_000

    async def one() -> None:
        start = time.monotonic()
        try:
            reader, writer = await _open(base)
        except OSError as exc:
            results.append(type(exc).__name__)
            return
        framing = (
            b"Authorization: Bearer " + token.encode() + b"\r\nTransfer-Encoding: chunked"
            if token
            else b"Content-Length: " + str(total).encode()
        )
        writer.write(
            b"POST /api/v1/tokens HTTP/1.1\r\nHost: " + _host(base) + b"\r\n"
            b"Content-Type: application/json\r\n" + framing + b"\r\n\r\n"
        )
        answer = asyncio.ensure_future(reader.readline())
        chunk = b"a" * 65536
        framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n" if token else chunk
        sent = 0
        with contextlib.suppress(ConnectionError):
            while sent < total and not answer.done() and time.monotonic() < until:
                writer.write(framed)
                await writer.drain()
                sent += len(chunk)
        status = b""
        with contextlib.suppress(ConnectionError, TimeoutError):
            status = await asyncio.wait_for(answer, 10)
        writer.close()
        took = time.monotonic() - start
        code = status.decode(errors="replace").strip()[9:12] or "closed"
        results.append(f"{code} after {sent / 1e6:.1f} MB sent, {took:.2f} s")

    await asyncio.gather(*(one() for _ in range(4)))
    seen.notes.append("; ".join(results))


async def run_scenario(
    name: str,
    base: str,
    token: str,
    seconds: float,
    pid: int | None,
    attack: Callable[[float, Seen], Awaitable[None]] | None,
) -> str:
    seen = Seen()
    until = time.monotonic() + seconds
    tasks = [other_client(base, token, until, pid, seen)]
    if attack is not None:
        tasks.append(attack(until, seen))
    await asyncio.gather(*tasks)
    await asyncio.sleep(1.0)  # let the server settle between scenarios
    return seen.row(name)


def upload_head(base: str, token: str) -> bytes:
    return (
        b"POST /api/v1/items HTTP/1.1\r\nHost: " + _host(base) + b"\r\n"
        b"Authorization: Bearer " + token.encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        b'{"text": "'
    )


async def main_async(args: argparse.Namespace, base: str, token: str, pid: int | None) -> None:
    s = args.seconds
    sign_in_head = (
        b"POST /api/v1/auth/sign-in HTTP/1.1\r\nHost: " + _host(base) + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: 30000\r\n\r\n"
    )
    slow_head = (
        b"GET /healthz HTTP/1.1\r\nHost: " + _host(base) + b"\r\n" + b"X-Slow: " + b"a" * 200
    )
    n = args.slow
    scenarios: list[tuple[str, Callable[[float, Seen], Awaitable[None]] | None]] = [
        ("baseline", None),
        ("1 MB request heads (4 clients, repeated)", lambda u, seen: big_heads(base, u, seen)),
        (
            f"{n} heads trickled at 1 byte/s",
            lambda u, seen: trickle(base, u, seen, n, slow_head, 0, "slow heads"),
        ),
        (
            f"{n} anonymous sign-in bodies at 4 bytes/s",
            lambda u, seen: trickle(base, u, seen, n, sign_in_head, 4, "slow sign-ins"),
        ),
        (
            "8 authenticated uploads at 4 bytes/s",
            lambda u, seen: trickle(base, u, seen, 8, upload_head(base, token), 4, "slow uploads"),
        ),
        (f"{args.idle} idle connections", lambda u, seen: idle(base, u, seen, args.idle)),
        (
            "4 anonymous 200 MB JSON bodies (declared)",
            lambda u, seen: big_bodies(base, u, seen, None),
        ),
        (
            "4 authenticated 200 MB JSON bodies (chunked)",
            lambda u, seen: big_bodies(base, u, seen, token),
        ),
    ]
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; load "
        f"average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {s:.0f} s each; "
        f"server settings: {' '.join(args.env) or 'defaults'}"
    )
    print(
        "\n| scenario | other client's requests | p50 ms | p95 ms | max ms | failed | "
        "statuses | server RSS MB | notes |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, attack in scenarios:
        if args.only and attack is not None and args.only not in name:
            continue
        print(await run_scenario(name, base, token, s, pid, attack), flush=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def start_server(tmp: Path, env_extra: dict[str, str]) -> tuple[Server, str]:
    data = tmp / "data"
    data.mkdir(parents=True)
    port = free_port()
    env = relata_env(data, port)
    env.update(RELATA_WORKERS="0", RELATA_LOG_LEVEL="error", **env_extra)
    relata(["createadmin", "--username", ADMIN, "--password-stdin"], env, stdin=PASSWORD + "\n")
    token = relata(["tokens", "create", "--user", ADMIN, "--name", "probe"], env).split()[0]
    return serve(data, env, port), token


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", help="a running server (else one is started)")
    p.add_argument("--token", help="an API token of --url")
    p.add_argument("--seconds", type=float, default=20.0, help="per scenario (default 20)")
    p.add_argument("--idle", type=int, default=1000, help="idle connections (default 1000)")
    p.add_argument("--slow", type=int, default=50, help="slow connections (default 50)")
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    p.add_argument("--only", help="run only the scenarios whose name has this (and the baseline)")
    args = p.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    if args.url:
        if not args.token:
            p.error("--url needs --token")
        asyncio.run(main_async(args, args.url.rstrip("/"), args.token, None))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        server, token = start_server(Path(tmp), extra)
        try:
            asyncio.run(main_async(args, server.base_url, token, server.proc.pid))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
