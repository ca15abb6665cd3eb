"""Every ``RELATA_*`` environment variable, declared once with its type, default and help.

``load_settings`` reads and validates them all at start-up; a bad value raises ``ConfigError``
naming the variable and what it accepts, so start-up stops with a clear message. The README's
configuration table is generated from ``SETTINGS`` (``relata config --markdown``) and a test
checks the two agree.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from relata.domain.errors import ConfigError

Parser = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class Setting:
    env: str
    field: str
    parse: Parser
    default: str
    accepts: str
    help: str


# ---------------------------------------------------------------- parsers
def _str(value: str) -> str:
    return value


def _nonempty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def _int(lo: int, hi: int) -> Parser:
    def parse(value: str) -> int:
        n = int(value.strip())
        if not lo <= n <= hi:
            raise ValueError(f"out of range {lo}..{hi}")
        return n

    return parse


def _float(lo: float, hi: float) -> Parser:
    def parse(value: str) -> float:
        x = float(value.strip())
        if not lo <= x <= hi:
            raise ValueError(f"out of range {lo}..{hi}")
        return x

    return parse


def _meaning_floor(value: str) -> str:
    """``auto`` or a similarity in [0, 1] (kept as text: ``auto`` resolves by the model)."""
    value = value.strip().lower()
    if value == "auto":
        return value
    _float(0, 1)(value)
    return value


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in {"1", "true", "yes", "on"}:
        return True
    if v in {"0", "false", "no", "off"}:
        return False
    raise ValueError("not a boolean")


def _choice(*options: str) -> Parser:
    def parse(value: str) -> str:
        v = value.strip().lower()
        if v not in options:
            raise ValueError("unknown value")
        return v

    return parse


def parse_addr(value: str) -> tuple[str, int]:
    """Parse ``host:port`` (IPv6 as ``[::1]:8080``)."""
    v = value.strip()
    host, sep, port_s = v.rpartition(":")
    if not sep or not host or not port_s.isdigit():
        raise ValueError("not host:port")
    port = int(port_s)
    if not 0 < port < 65536:
        raise ValueError("port out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        ipaddress.IPv6Address(host)
    elif not all(c.isalnum() or c in ".-_" for c in host):
        raise ValueError("bad host")
    return host, port


def _hosts(value: str) -> tuple[str, ...]:
    """Host names, comma-separated; lowercased, brackets of IPv6 literals removed."""
    hosts = tuple(h.strip().lower().strip("[]") for h in value.split(",") if h.strip())
    if not hosts:
        raise ValueError("no host")
    for h in hosts:
        if not all(c.isalnum() or c in ".-_:*" for c in h):
            raise ValueError(f"bad host {h!r}")
    return hosts


def _globs(value: str) -> tuple[str, ...]:
    """Glob patterns, comma-separated; empty is none."""
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if len(items) > 100:
        raise ValueError("at most 100 patterns")
    for item in items:
        if len(item) > 200:
            raise ValueError("a pattern is longer than 200 characters")
    return items


def _networks(value: str) -> tuple[str, ...]:
    """IP addresses or networks, comma-separated (``10.0.0.5, 192.168.0.0/24, ::1``); empty
    is none."""
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return items


def _url(*schemes: str) -> Parser:
    def parse(value: str) -> str:
        v = value.strip()
        if not v:
            return ""
        parts = urlsplit(v)
        if parts.scheme not in schemes or not parts.netloc:
            raise ValueError("not a URL")
        return v.rstrip("/")

    return parse


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _issuer(value: str) -> str:
    """An OpenID issuer, kept exactly (a trailing ``/`` is part of it: the ID token's ``iss``
    must match it character for character); plain http only on a loopback address."""
    v = value.strip()
    if not v:
        return ""
    parts = urlsplit(v)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("not a URL")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK_NAMES:
        raise ValueError("plain http only on a loopback address")
    if parts.query or parts.fragment:
        raise ValueError("an issuer has no query or fragment")
    return v


def _provider_name(value: str) -> str:
    v = value.strip()
    ok = v.isascii() and all(c.islower() or c.isdigit() or c in "._-" for c in v)
    if not 1 <= len(v) <= 64 or not ok:
        raise ValueError("not a provider label")
    return v


def _database_url(value: str) -> str:
    v = value.strip()
    if not v:
        return ""
    scheme = v.split(":", 1)[0]
    if not (scheme.startswith("sqlite") or scheme.startswith("postgresql")):
        raise ValueError("unsupported database")
    return v


def _collection_name(value: str) -> str:
    v = value.strip()
    if not 1 <= len(v) <= 100 or not all(c.isascii() and (c.isalnum() or c in "_-") for c in v):
        raise ValueError("not a collection name")
    return v


# ---------------------------------------------------------------- declarations
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "RELATA_DATA_DIR",
        "data_dir",
        _nonempty,
        "./data",
        "a directory path",
        "Where the SQLite file, stored originals and caches live. A relative path is taken "
        "from the current directory; `relata config` shows the absolute path in use.",
    ),
    Setting(
        "RELATA_DATABASE_URL",
        "database_url",
        _database_url,
        "",
        "sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB",
        "Authoritative store. Empty means a SQLite file `relata.db` in the data dir.",
    ),
    Setting(
        "RELATA_HTTP_ADDR",
        "http_addr",
        parse_addr,
        "127.0.0.1:8080",
        "host:port",
        "Address the HTTP server listens on.",
    ),
    Setting(
        "RELATA_ALLOWED_HOSTS",
        "allowed_hosts",
        _hosts,
        "localhost,127.0.0.1,::1",
        "comma-separated host names or addresses (any port)",
        "The only `Host` names the server answers (others get 400), so a DNS-rebinding page "
        "cannot reach it; unsafe requests must also come from one of them (`Origin`).",
    ),
    Setting(
        "RELATA_ALLOW_INSECURE_HTTP",
        "allow_insecure_http",
        _bool,
        "false",
        "true, false",
        "Let `relata serve` listen on a non-loopback `RELATA_HTTP_ADDR` over plain HTTP "
        "(only behind a TLS-terminating proxy).",
    ),
    # Request limits and proxies (docs/decisions/0027-request-limits-and-origins.md).
    Setting(
        "RELATA_TRUSTED_PROXIES",
        "trusted_proxies",
        _networks,
        "",
        "comma-separated IP addresses or networks (CIDR), or empty",
        "Reverse proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed (the "
        "client address for sign-in limits, the scheme for cookies and the `Origin` check). "
        "Empty believes no one: the forwarded headers are ignored, even from loopback.",
    ),
    Setting(
        "RELATA_MAX_JSON_BYTES",
        "max_json_bytes",
        _int(4096, 1 << 28),
        "1048576",
        "bytes (4096-268435456)",
        "Largest request body of an API call other than an upload (default 1 MiB); a larger "
        "one is refused with 413 as it streams in, before it is parsed or authenticated.",
    ),
    Setting(
        "RELATA_MAX_FORM_BYTES",
        "max_form_bytes",
        _int(4096, 1 << 26),
        "262144",
        "bytes (4096-67108864)",
        "Largest body of a web form post other than an upload (default 256 KiB); a larger "
        "one is refused with 413 as it streams in.",
    ),
    Setting(
        "RELATA_MIN_BODY_RATE",
        "min_body_rate",
        _int(0, 1 << 30),
        "1024",
        "bytes per second (0-1073741824)",
        "Least average rate at which a request body must arrive once the client has kept the "
        "server waiting 10 s; a slower one is cut off with 408, so a body trickled a few bytes "
        "a second cannot hold a connection or an upload slot. 0 turns the check off.",
    ),
    Setting(
        "RELATA_COOKIE_SECURE",
        "cookie_secure",
        _choice("auto", "true", "false"),
        "auto",
        "auto, true, false",
        "Session cookie `Secure` with the `__Host-` prefix: `auto` when the request came over "
        "HTTPS, `true` always (behind a TLS proxy), `false` never.",
    ),
    Setting(
        "RELATA_SESSION_IDLE_HOURS",
        "session_idle_hours",
        _float(0.01, 720),
        "12",
        "0.01-720",
        "A session unused for this long ends (each use moves it on).",
    ),
    Setting(
        "RELATA_SESSION_MAX_DAYS",
        "session_max_days",
        _float(0.01, 365),
        "7",
        "0.01-365",
        "A session ends this long after sign-in, however much it is used.",
    ),
    Setting(
        "RELATA_LOGIN_MAX_FAILURES",
        "login_max_failures",
        _int(1, 1000),
        "5",
        "1-1000",
        "Failed sign-ins per account after which its sign-in is refused (429) until the window "
        "has passed; a client address is allowed four times as many.",
    ),
    Setting(
        "RELATA_LOGIN_WINDOW_SECONDS",
        "login_window_seconds",
        _int(1, 86400),
        "900",
        "1-86400",
        "The window over which failed sign-ins are counted.",
    ),
    Setting(
        "RELATA_PASSWORD_CONCURRENCY",
        "password_concurrency",
        _int(1, 64),
        "2",
        "1-64",
        "Password verifications run at once (each takes ~0.1 s and 64 MiB).",
    ),
    # Federated sign-in (OpenID Connect; docs/decisions/0023-federated-sign-in.md).
    Setting(
        "RELATA_OIDC_ISSUER",
        "oidc_issuer",
        _issuer,
        "",
        "an https URL (http only on a loopback address), or empty",
        "OpenID provider whose sign-in `GET /api/v1/auth/oidc/start` offers; its discovery "
        "document must name exactly this issuer. Empty turns federated sign-in off.",
    ),
    Setting(
        "RELATA_OIDC_CLIENT_ID",
        "oidc_client_id",
        _str,
        "",
        "the client id registered at the provider",
        "Relata's client id at the OpenID provider (the ID token's audience).",
    ),
    Setting(
        "RELATA_OIDC_CLIENT_SECRET",
        "oidc_client_secret",
        _str,
        "",
        "a secret, or empty",
        "Relata's client secret at the OpenID provider; never logged.",
    ),
    Setting(
        "RELATA_OIDC_REDIRECT_URL",
        "oidc_redirect_url",
        _url("http", "https"),
        "",
        "an http(s) URL, or empty",
        "The callback URL registered at the provider; empty derives it from the request "
        "(`/api/v1/auth/oidc/callback` on the host asked).",
    ),
    Setting(
        "RELATA_OIDC_PROVIDER_NAME",
        "oidc_provider_name",
        _provider_name,
        "oidc",
        "1-64 lowercase letters, digits, '.', '_' or '-'",
        "Label stored with each federated user (`users.oauth_provider`); changing it makes "
        "every federated user new.",
    ),
    Setting(
        "RELATA_LOG_LEVEL",
        "log_level",
        _choice("debug", "info", "warning", "error"),
        "info",
        "debug, info, warning, error",
        "Minimum level of log records.",
    ),
    Setting(
        "RELATA_LOG_FORMAT",
        "log_format",
        _choice("json", "text"),
        "json",
        "json, text",
        "Log record format: one JSON object per line, or human-readable text.",
    ),
    Setting(
        "RELATA_DEFAULT_WORKSPACE",
        "default_workspace",
        _nonempty,
        "default",
        "a workspace slug",
        "Slug of the workspace `relata seed` creates and the CLI uses.",
    ),
    Setting(
        "RELATA_SHUTDOWN_TIMEOUT",
        "shutdown_timeout",
        _float(0, 3600),
        "30",
        "seconds (0-3600)",
        "How long in-flight work gets to finish on SIGTERM/SIGINT.",
    ),
    Setting(
        "RELATA_RECOVERY_GRACE_SECONDS",
        "recovery_grace_seconds",
        _int(0, 7 * 24 * 3600),
        "3600",
        "seconds (0-604800)",
        "How old a stray stored original, an upload whose processing never started or an "
        "interrupted delete must be before `relata serve` (at start-up) or `relata doctor "
        "--fix` repairs it; younger ones may belong to work still under way in another "
        "process. 0 repairs at once: only when nothing else uses the data dir.",
    ),
    Setting(
        "RELATA_WORKERS",
        "workers",
        _int(0, 64),
        "2",
        "0-64",
        "Background worker threads per process (`relata serve` and `relata worker`; "
        "`relata worker --processes N` defaults to two per core across its processes); "
        "0 means `relata serve` runs no in-process workers.",
    ),
    Setting(
        "RELATA_HTTP_PROCESSES",
        "http_processes",
        _int(0, 64),
        "0",
        "0-64",
        "HTTP worker processes of `relata serve` (`--processes` overrides it); 0 means one "
        "per core. With more than one, a supervisor runs the start-up work and the "
        "background workers once and restarts an HTTP process that dies "
        "(docs/decisions/0036-http-processes.md).",
    ),
    Setting(
        "RELATA_AI_CONCURRENCY",
        "ai_concurrency",
        _int(1, 64),
        "2",
        "1-64",
        "Concurrent AI calls (embedding and language-model requests), independent of the "
        "worker count and held across processes: a model server's across every process of "
        "the deployment, the local embedding model's across this machine's "
        "(docs/decisions/0033).",
    ),
    Setting(
        "RELATA_JOB_MAX_ATTEMPTS",
        "job_max_attempts",
        _int(1, 100),
        "5",
        "1-100",
        "Attempt budget of a background job; transient failures retry until it is spent.",
    ),
    Setting(
        "RELATA_JOB_LEASE_SECONDS",
        "job_lease_seconds",
        _float(0.5, 3600),
        "60",
        "seconds (0.5-3600)",
        "How long a claimed job stays leased without a heartbeat; a dead worker's job "
        "returns to the queue this long after its last heartbeat.",
    ),
    Setting(
        "RELATA_JOB_POLL_SECONDS",
        "job_poll_seconds",
        _float(0.01, 60),
        "1",
        "seconds (0.01-60)",
        "How often an idle worker looks for due jobs.",
    ),
    Setting(
        "RELATA_JOB_BACKOFF_SECONDS",
        "job_backoff_seconds",
        _float(0.01, 3600),
        "2",
        "seconds (0.01-3600)",
        "Base delay of the exponential retry backoff (full jitter) for transient failures.",
    ),
    Setting(
        "RELATA_JOB_BACKOFF_MAX_SECONDS",
        "job_backoff_max_seconds",
        _float(0.01, 86400),
        "300",
        "seconds (0.01-86400)",
        "Upper bound of one retry delay.",
    ),
    Setting(
        "RELATA_INGEST_CONCURRENCY",
        "ingest_concurrency",
        _int(1, 256),
        "4",
        "1-256",
        "Ingestions (uploads being received, checked and stored) in progress at once per "
        "process; one more is refused with 503 and Retry-After instead of queueing in memory.",
    ),
    # Parsing and chunking (docs/decisions/0005-content-sniffing-and-chunking.md).
    Setting(
        "RELATA_MAX_UPLOAD_BYTES",
        "max_upload_bytes",
        _int(1024, 1 << 30),
        "52428800",
        "bytes (1024-1073741824)",
        "Largest accepted upload or ingested file (default 50 MiB); a larger one is refused. "
        "An upload's request body may carry this plus 64 KiB of form fields (the library's "
        "upload form: several files of it); a longer body is refused with 413 as it streams.",
    ),
    Setting(
        "RELATA_MAX_IMPORT_BYTES",
        "max_import_bytes",
        _int(1024, 1 << 40),
        "1073741824",
        "bytes (1024-1099511627776)",
        "Largest JSON Lines export accepted by POST /api/v1/import (default 1 GiB); the body "
        "is written to a temporary file in the data dir as it streams in, and a longer one is "
        "refused with 413. `relata import` reads a local file and is not bounded by it.",
    ),
    Setting(
        "RELATA_KEEP_PREVIOUS_ORIGINALS",
        "keep_previous_originals",
        _int(0, 10_000),
        "5",
        "count (0-10000)",
        "How many previous versions' originals an item keeps when a new version is uploaded "
        "(the newest ones); older originals are removed, their versions stay listed as history. "
        "0 keeps none.",
    ),
    # A watched folder (docs/decisions/0047-watched-folder.md).
    Setting(
        "RELATA_WATCH_DIR",
        "watch_dir",
        _str,
        "",
        "a directory path, or empty",
        "A folder `relata serve` keeps in step with a workspace (as `relata watch DIR` does), "
        "in its background-worker process. Empty: none.",
    ),
    Setting(
        "RELATA_WATCH_WORKSPACE",
        "watch_workspace",
        _str,
        "",
        "a workspace slug, or empty",
        "The workspace RELATA_WATCH_DIR is kept in step with (it must exist); empty means "
        "RELATA_DEFAULT_WORKSPACE.",
    ),
    Setting(
        "RELATA_WATCH_ON_DELETE",
        "watch_on_delete",
        _choice("delete", "keep"),
        "delete",
        "delete, keep",
        "What a watched folder does when a file is deleted: delete its item (once no other "
        "tracked file has the same content) or keep it in the workspace, no longer tracked.",
    ),
    Setting(
        "RELATA_WATCH_IGNORE",
        "watch_ignore",
        _globs,
        "",
        "comma-separated glob patterns",
        "Files and folders a watched folder ignores, besides hidden ones and editors' "
        "temporary files (`*~`, `#*#`, `*.swp`, `~$*`, `*.tmp`, `*.part`, ...); matched "
        "against the name and the path inside the folder. `relata watch --ignore` adds more.",
    ),
    Setting(
        "RELATA_WATCH_RESCAN_SECONDS",
        "watch_rescan_seconds",
        _float(10, 86400),
        "600",
        "seconds (10-86400)",
        "How often a watcher compares the whole folder with what it recorded, besides "
        "following file events (which a network drive or an overflowing queue can miss).",
    ),
    Setting(
        "RELATA_PARSE_MAX_PDF_PAGES",
        "parse_max_pdf_pages",
        _int(1, 100_000),
        "1000",
        "1-100000",
        "A PDF with more pages is rejected with a clear error (never silently truncated).",
    ),
    Setting(
        "RELATA_PARSE_MAX_CHARS",
        "parse_max_chars",
        _int(1000, 200_000_000),
        "10000000",
        "1000-200000000",
        "A document whose extracted text is longer than this many characters is rejected.",
    ),
    Setting(
        "RELATA_PARSE_TIMEOUT",
        "parse_timeout",
        _float(1, 3600),
        "120",
        "seconds (1-3600)",
        "Wall-clock bound of parsing one document, checked between pages and paragraphs.",
    ),
    Setting(
        "RELATA_CHUNK_TARGET_CHARS",
        "chunk_target_chars",
        _int(100, 20_000),
        "1000",
        "characters (100-20000)",
        "Largest chunk, in characters; sections longer than this are split at paragraph, "
        "then sentence boundaries into balanced chunks. Suits all-MiniLM-L6-v2 (256 tokens).",
    ),
    Setting(
        "RELATA_CHUNK_OVERLAP_CHARS",
        "chunk_overlap_chars",
        _int(0, 5000),
        "200",
        "characters (0-5000)",
        "Text repeated from the end of one chunk at the start of the next (whole sentences, "
        "at most this many characters; never across sections).",
    ),
    # AI providers (shared by the embedders and the language-model analysers).
    Setting(
        "RELATA_OLLAMA_URL",
        "ollama_url",
        _url("http", "https"),
        "http://127.0.0.1:11434",
        "an http(s) URL",
        "Base URL of the Ollama server (without /api).",
    ),
    Setting(
        "RELATA_OPENAI_BASE_URL",
        "openai_base_url",
        _url("http", "https"),
        "https://api.openai.com/v1",
        "an http(s) URL including /v1",
        "Base URL of an OpenAI-compatible API; `/embeddings` and `/chat/completions` are "
        "appended to it.",
    ),
    Setting(
        "RELATA_OPENAI_API_KEY",
        "openai_api_key",
        _str,
        "",
        "a key, or empty",
        "Bearer key for the OpenAI-compatible API; sent only when set, never logged.",
    ),
    # Embeddings.
    Setting(
        "RELATA_EMBEDDING_PROVIDER",
        "embedding_provider",
        _choice("local", "ollama", "openai", "none"),
        "local",
        "local, ollama, openai, none",
        "Who computes embeddings: `local` (in-process ONNX model, offline), `ollama`, "
        "`openai` (any OpenAI-compatible server), or `none` (no vectors; search without "
        "meaning-based matching).",
    ),
    Setting(
        "RELATA_EMBEDDING_MODEL",
        "embedding_model",
        _str,
        "",
        "a model name, or empty",
        "Embedding model. Empty means the provider's default: all-MiniLM-L6-v2 (local), "
        "nomic-embed-text (ollama), text-embedding-3-small (openai).",
    ),
    Setting(
        "RELATA_EMBEDDING_DIMENSIONS",
        "embedding_dimensions",
        _int(0, 65536),
        "0",
        "0-65536",
        "Vector width. 0 means the model's known width; required for a model "
        "Relata does not know. A provider answering with another width is refused.",
    ),
    Setting(
        "RELATA_EMBEDDING_MODEL_DIR",
        "embedding_model_dir",
        _str,
        "",
        "a directory path, or empty",
        "For `local`: a directory with `model.onnx` and `tokenizer.json` of another "
        "sentence-embedding model. Empty means the bundled all-MiniLM-L6-v2 (int8).",
    ),
    Setting(
        "RELATA_EMBEDDING_BATCH_SIZE",
        "embedding_batch_size",
        _int(1, 2048),
        "32",
        "1-2048",
        "Texts per embedding call (per ONNX run, or per HTTP request).",
    ),
    Setting(
        "RELATA_EMBEDDING_BATCH_TOKENS",
        "embedding_batch_tokens",
        _int(16, 1 << 20),
        "1024",
        "tokens (16-1048576)",
        "For `local`: padded tokens per ONNX run (texts x the longest of them), which bounds "
        "the model's memory; a batch ends at this or at RELATA_EMBEDDING_BATCH_SIZE texts, "
        "whichever comes first (docs/benchmarks.md).",
    ),
    Setting(
        "RELATA_EMBEDDING_THREADS",
        "embedding_threads",
        _int(0, 256),
        "1",
        "0-256",
        "onnxruntime intra-op threads per call for `local`; 0 lets onnxruntime choose (one "
        "per core). Concurrent calls (workers, searches) use the other cores, so 1 is fastest "
        "on small machines (docs/benchmarks.md).",
    ),
    Setting(
        "RELATA_EMBEDDING_TIMEOUT",
        "embedding_timeout",
        _float(0.1, 3600),
        "60",
        "seconds (0.1-3600)",
        "Upper bound of one embedding HTTP request (all of it).",
    ),
    Setting(
        "RELATA_REEMBED_BATCH_SIZE",
        "reembed_batch_size",
        _int(1, 10000),
        "256",
        "1-10000",
        "Chunks one re-embed job embeds before re-enqueuing itself for the rest, so no "
        "lease is held for long (`relata reembed`).",
    ),
    # Vector store (docs/decisions/0008-vector-stores.md, 0031-pgvector-store.md).
    Setting(
        "RELATA_VECTOR_STORE",
        "vector_store",
        _choice("auto", "", "sqlite-vec", "pgvector", "qdrant"),
        "auto",
        "auto (or empty), sqlite-vec, pgvector, qdrant",
        "Where vectors live. `auto` decides by the database: `pgvector` with PostgreSQL (in "
        "the same database; needs the pgvector 0.8+ extension), `sqlite-vec` with SQLite (in "
        "the same file). `sqlite-vec` beside PostgreSQL keeps them in `vectors.db` in the "
        "data dir; `qdrant` uses RELATA_QDRANT_URL.",
    ),
    Setting(
        "RELATA_VECTOR_MEMORY_MB",
        "vector_memory_mb",
        _int(0, 65536),
        "256",
        "0-65536",
        "With `sqlite-vec`: memory (MiB) a process may give to exact in-memory copies of the "
        "workspaces it searches, kept in step with the file (a search then costs a matrix "
        "product, not a scan of the file); a larger workspace is scanned by sqlite-vec. "
        "0 turns the copies off.",
    ),
    Setting(
        "RELATA_VECTOR_WARN_CHUNKS",
        "vector_warn_chunks",
        _int(0, 1_000_000_000),
        "100000",
        "0-1000000000",
        "With `sqlite-vec`: the settings page (and `GET /api/v1/settings/models`) warns when a "
        "workspace holds more chunks than this, before searches outgrow the embedded store; "
        "the way on is PostgreSQL with pgvector (`relata transfer`, docs/deploy.md). 0: never.",
    ),
    Setting(
        "RELATA_QDRANT_URL",
        "qdrant_url",
        _url("http", "https"),
        "",
        "an http(s) URL, or empty",
        "Qdrant server for `qdrant`. Empty means qdrant-client's local mode in "
        "`qdrant/` under the data dir (one process only; for development and tests).",
    ),
    Setting(
        "RELATA_QDRANT_API_KEY",
        "qdrant_api_key",
        _str,
        "",
        "a key, or empty",
        "API key of the Qdrant server; sent only when set, never logged.",
    ),
    Setting(
        "RELATA_QDRANT_COLLECTION",
        "qdrant_collection",
        _collection_name,
        "relata_chunks",
        "letters, digits, _ and - (1-100)",
        "Qdrant collection name prefix; the vector width is appended "
        "(`relata_chunks_384`), so a width change starts a fresh collection.",
    ),
    Setting(
        "RELATA_QDRANT_TIMEOUT",
        "qdrant_timeout",
        _int(1, 600),
        "10",
        "seconds (1-600)",
        "Upper bound of one Qdrant request.",
    ),
    # Language-model analysis (docs/decisions/0007-invalid-model-output.md).
    Setting(
        "RELATA_ANALYSIS_ENABLED",
        "analysis_enabled",
        _bool,
        "true",
        "true, false",
        "Model-assisted analysis and generated answers. `false`, or no `RELATA_AI_PROVIDER`, "
        "disables them: everything else keeps working and answers report `unavailable`.",
    ),
    Setting(
        "RELATA_AI_PROVIDER",
        "ai_provider",
        _choice("", "none", "ollama", "openai"),
        "",
        "ollama, openai, none (or empty)",
        "Language-model provider: `ollama` (RELATA_OLLAMA_URL) or `openai` (any "
        "OpenAI-compatible server at RELATA_OPENAI_BASE_URL). Empty or `none`: no model.",
    ),
    Setting(
        "RELATA_AI_MODEL",
        "ai_model",
        _str,
        "",
        "a model name",
        "Language model to call; required when RELATA_AI_PROVIDER is set.",
    ),
    Setting(
        "RELATA_AI_TIMEOUT",
        "ai_timeout",
        _float(0.1, 3600),
        "120",
        "seconds (0.1-3600)",
        "Upper bound of one language-model HTTP request (all of it).",
    ),
    Setting(
        "RELATA_AI_STREAM_IDLE_TIMEOUT",
        "ai_stream_idle_timeout",
        _float(0.1, 3600),
        "30",
        "seconds (0.1-3600)",
        "A streamed answer fails when the model sends nothing for this long (the whole stream "
        "is still bounded by RELATA_AI_TIMEOUT).",
    ),
    Setting(
        "RELATA_AI_MAX_TOKENS",
        "ai_max_tokens",
        _int(16, 32768),
        "1024",
        "16-32768",
        "Token ceiling of one language-model reply.",
    ),
    # Hybrid search fusion (docs/decisions/0009-full-text-and-rank-fusion.md).
    Setting(
        "RELATA_RRF_K",
        "rrf_k",
        _int(1, 1000),
        "60",
        "1-1000",
        "Reciprocal-rank fusion constant: a result at rank r of a leg scores weight/(k + r). "
        "Larger k flattens the gap between top and lower ranks; 60 is the published default.",
    ),
    Setting(
        "RELATA_SEARCH_WEIGHT_TEXT",
        "search_weight_text",
        _float(0, 10),
        "1.0",
        "0-10",
        "Fusion weight of the item full-text leg (BM25 over title and text); 0 turns it off.",
    ),
    Setting(
        "RELATA_SEARCH_WEIGHT_CHUNK_TEXT",
        "search_weight_chunk_text",
        _float(0, 10),
        "0.5",
        "0-10",
        "Fusion weight of the chunk full-text leg (passage-level; also gives the excerpts).",
    ),
    Setting(
        "RELATA_SEARCH_WEIGHT_VECTOR",
        "search_weight_vector",
        _float(0, 10),
        "1.0",
        "0-10",
        "Fusion weight of the vector (meaning) leg.",
    ),
    Setting(
        "RELATA_SEARCH_WEIGHT_ENTITY",
        "search_weight_entity",
        _float(0, 10),
        "0.1",
        "0-10",
        "Fusion weight of the entity-match leg for items only it found (an item the text or "
        "vector legs found is ranked by them; the entity leg explains it: "
        "docs/decisions/0013).",
    ),
    Setting(
        "RELATA_SEARCH_WEIGHT_RELATIONSHIP",
        "search_weight_relationship",
        _float(0, 10),
        "0.05",
        "0-10",
        "Fusion weight of relationship expansion for items only it found (items linked to "
        "other results); on a direct hit it explains the link without a vote.",
    ),
    Setting(
        "RELATA_SEARCH_MEANING_FLOOR",
        "search_meaning_floor",
        _meaning_floor,
        "auto",
        "auto, 0-1",
        "Relevance floor: a result that no word or entity of the query matched (found by "
        "meaning alone) is a weak match, withheld unless asked for, when its similarity is "
        "under this. `auto`: the value calibrated for the embedding model (0.28 for the "
        "default all-MiniLM-L6-v2; no floor for a model without a calibrated value: "
        "calibrate with scripts/calibrate_relevance_floor.py); 0 turns the floor off.",
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: str = "./data"
    database_url: str = ""
    http_addr: tuple[str, int] = ("127.0.0.1", 8080)
    allowed_hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
    allow_insecure_http: bool = False
    trusted_proxies: tuple[str, ...] = ()
    max_json_bytes: int = 1_048_576
    max_form_bytes: int = 262_144
    min_body_rate: int = 1024
    cookie_secure: str = "auto"
    session_idle_hours: float = 12.0
    session_max_days: float = 7.0
    login_max_failures: int = 5
    login_window_seconds: int = 900
    password_concurrency: int = 2
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = dataclasses.field(default="", repr=False)
    oidc_redirect_url: str = ""
    oidc_provider_name: str = "oidc"
    log_level: str = "info"
    log_format: str = "json"
    default_workspace: str = "default"
    shutdown_timeout: float = 30.0
    recovery_grace_seconds: int = 3600
    workers: int = 2
    http_processes: int = 0
    ai_concurrency: int = 2
    job_max_attempts: int = 5
    job_lease_seconds: float = 60.0
    job_poll_seconds: float = 1.0
    job_backoff_seconds: float = 2.0
    job_backoff_max_seconds: float = 300.0
    ingest_concurrency: int = 4
    max_upload_bytes: int = 52_428_800
    max_import_bytes: int = 1_073_741_824
    keep_previous_originals: int = 5
    watch_dir: str = ""
    watch_workspace: str = ""
    watch_on_delete: str = "delete"
    watch_ignore: tuple[str, ...] = ()
    watch_rescan_seconds: float = 600.0
    parse_max_pdf_pages: int = 1000
    parse_max_chars: int = 10_000_000
    parse_timeout: float = 120.0
    chunk_target_chars: int = 1000
    chunk_overlap_chars: int = 200
    ollama_url: str = "http://127.0.0.1:11434"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = dataclasses.field(default="", repr=False)
    embedding_provider: str = "local"
    embedding_model: str = ""
    embedding_dimensions: int = 0
    embedding_model_dir: str = ""
    embedding_batch_size: int = 32
    embedding_batch_tokens: int = 1024
    embedding_threads: int = 1
    embedding_timeout: float = 60.0
    reembed_batch_size: int = 256
    vector_store: str = "auto"
    vector_memory_mb: int = 256
    vector_warn_chunks: int = 100_000
    qdrant_url: str = ""
    qdrant_api_key: str = dataclasses.field(default="", repr=False)
    qdrant_collection: str = "relata_chunks"
    qdrant_timeout: int = 10
    analysis_enabled: bool = True
    ai_provider: str = ""
    ai_model: str = ""
    ai_timeout: float = 120.0
    ai_stream_idle_timeout: float = 30.0
    ai_max_tokens: int = 1024
    rrf_k: int = 60
    search_weight_text: float = 1.0
    search_weight_chunk_text: float = 0.5
    search_weight_vector: float = 1.0
    search_weight_entity: float = 0.1
    search_weight_relationship: float = 0.05
    search_meaning_floor: str = "auto"

    @property
    def data_path(self) -> Path:
        """The data dir as an absolute path (``~`` expanded, a relative one taken from the
        current directory): the one resolution every command and the server use
        (docs/decisions/0014-data-dir-resolution.md)."""
        return Path(self.data_dir).expanduser().resolve()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_path / 'relata.db').resolve()}"

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read every declared variable; raise ``ConfigError`` naming the first bad one."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for s in SETTINGS:
        raw = env.get(s.env, s.default)
        try:
            values[s.field] = s.parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{s.env}={raw!r} is invalid ({exc}); it accepts {s.accepts}",
                code="config_error",
            ) from exc
    return Settings(**values)


def markdown_table() -> str:
    """The README's configuration table, generated from the declarations."""
    rows = ["| Variable | Default | Accepts | Meaning |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default else "(empty)"
        rows.append(f"| `{s.env}` | {default} | {s.accepts} | {s.help} |")
    return "\n".join(rows) + "\n"
