"""Prometheus metrics. One ``Metrics`` object per process (built by the composition root),
on its own registry, so tests can build several apps without duplicate-metric errors."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_JOB_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.http_requests = Counter(
            "relata_http_requests_total",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.http_latency = Histogram(
            "relata_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        # Background jobs (relata.jobs). Outcomes: succeeded, failed, retried, abandoned.
        self.jobs = Counter(
            "relata_jobs_total",
            "Job attempts by kind and outcome.",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.job_duration = Histogram(
            "relata_job_run_duration_seconds",
            "Time a job's handler ran, by kind.",
            ["kind"],
            buckets=_JOB_BUCKETS,
            registry=self.registry,
        )
        self.job_queue_wait = Histogram(
            "relata_job_queue_wait_seconds",
            "Time from a job becoming due to a worker claiming it, by kind.",
            ["kind"],
            buckets=_JOB_BUCKETS,
            registry=self.registry,
        )
        self.job_retries = Counter(
            "relata_job_retries_total",
            "Transient job failures scheduled for another attempt, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.job_lease_losses = Counter(
            "relata_job_lease_losses_total",
            "Leases this process lost while running a job (taken over or expired), by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.job_lease_expiries = Counter(
            "relata_job_lease_expiries_total",
            "Expired leases reclaimed from lost workers, by kind and resulting status.",
            ["kind", "status"],
            registry=self.registry,
        )
        self.ai_call_wait = Histogram(
            "relata_ai_call_wait_seconds",
            "Time spent waiting for an AI-call slot (RELATA_AI_CONCURRENCY), by call kind.",
            ["kind"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        # Language-model analysis (relata.analysis). Labels are bounded: provider is
        # ollama|openai, task a declared TaskSpec name, reason an INVALID_OUTPUT_REASONS member.
        self.model_calls = Counter(
            "relata_model_calls_total",
            "Language-model calls by provider, task and outcome (ok, error, cancelled).",
            ["provider", "task", "outcome"],
            registry=self.registry,
        )
        self.model_latency = Histogram(
            "relata_model_call_duration_seconds",
            "Language-model call latency (all attempts) by provider and task.",
            ["provider", "task"],
            buckets=_JOB_BUCKETS,
            registry=self.registry,
        )
        self.model_queue_wait = Histogram(
            "relata_model_queue_wait_seconds",
            "Time a language-model call waited for an AI-call slot, by provider and task.",
            ["provider", "task"],
            buckets=_JOB_BUCKETS,
            registry=self.registry,
        )
        self.model_tokens = Counter(
            "relata_model_tokens_total",
            "Tokens reported by the language model, by provider, task and kind "
            "(prompt, completion).",
            ["provider", "task", "kind"],
            registry=self.registry,
        )
        self.model_invalid_output = Counter(
            "relata_model_invalid_output_total",
            "Model responses rejected by strict decoding or task validation, by task and "
            "reason; never retried.",
            ["task", "reason"],
            registry=self.registry,
        )
        self.answer_citations_dropped = Counter(
            "relata_answer_citations_dropped_total",
            "Citations in generated answers that named no supplied source (fabricated).",
            registry=self.registry,
        )
        # Answers checked sentence by sentence (relata.search.sentence_checks): verdict is
        # supported|unsupported|uncited, facet a SupportFacet member for unsupported, else none.
        self.answer_sentences = Counter(
            "relata_answer_sentences_total",
            "Sentences of generated answers by verdict against the excerpts they cite, and "
            "the facet an unsupported one lacks.",
            ["verdict", "facet"],
            registry=self.registry,
        )

        # Embedding (relata.embeddings.stage): provider is local|ollama|openai, path is
        # stage (the ingest pipeline) or reembed (the re-embed job).
        self.embedded_chunks = Counter(
            "relata_embedded_chunks_total",
            "Chunks embedded and stored in the vector store, by provider and path.",
            ["provider", "path"],
            registry=self.registry,
        )
        self.embed_duration = Histogram(
            "relata_embed_duration_seconds",
            "Time to embed and store one item's chunks (stage) or one re-embed batch, by "
            "provider and path.",
            ["provider", "path"],
            buckets=_JOB_BUCKETS,
            registry=self.registry,
        )

    def observe_ai_wait(self, kind: str, seconds: float) -> None:
        """The ``on_wait`` hook of ``AiCallLimiter``."""
        self.ai_call_wait.labels(kind=kind).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
