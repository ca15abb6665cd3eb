"""Choose the analyser from settings: the only place that knows which providers exist.

``RELATA_ANALYSIS_ENABLED=false`` or an empty ``RELATA_AI_PROVIDER`` gives a disabled service
(every task reports ``AnalysisDisabled``); a provider without a model is a ``ConfigError``
naming ``RELATA_AI_MODEL``. Nothing here contacts the provider: start-up never depends on a
model server being up.
"""

from __future__ import annotations

from relata.analysis.ollama import OllamaAnalyser
from relata.analysis.openai_compatible import OpenAICompatibleAnalyser
from relata.analysis.service import AnalysisService
from relata.concurrency import AiCallLimiter
from relata.config.settings import Settings
from relata.domain.ports import Analyser
from relata.observability.metrics import Metrics


def build_analysis(
    settings: Settings, *, limiter: AiCallLimiter, metrics: Metrics | None = None
) -> AnalysisService:
    if not settings.analysis_enabled:
        return AnalysisService.disabled(
            "analysis is disabled (RELATA_ANALYSIS_ENABLED=false)", limiter=limiter
        )
    provider = settings.ai_provider
    analyser: Analyser
    if provider == "openai":
        analyser = OpenAICompatibleAnalyser(
            base_url=settings.openai_base_url,
            model=settings.ai_model,
            api_key=settings.openai_api_key,
            timeout=settings.ai_timeout,
            stream_idle_timeout=settings.ai_stream_idle_timeout,
        )
    elif provider == "ollama":
        analyser = OllamaAnalyser(
            base_url=settings.ollama_url,
            model=settings.ai_model,
            timeout=settings.ai_timeout,
            stream_idle_timeout=settings.ai_stream_idle_timeout,
        )
    else:
        return AnalysisService.disabled(
            "analysis is disabled (no language model configured: set RELATA_AI_PROVIDER "
            "and RELATA_AI_MODEL)",
            limiter=limiter,
        )
    return AnalysisService(
        analyser,
        limiter=limiter,
        metrics=metrics,
        provider=provider,
        max_tokens=settings.ai_max_tokens,
    )
