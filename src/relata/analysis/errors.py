"""The analysis layer's two errors and the bounded set of rejection reasons.

``InvalidModelOutput`` is the only error ``decode_strict`` and the task validators raise. It is
a ``Permanent`` failure: a response that failed validation will not become valid by repeating
the call (ADR 0007), so the job queue never retries it. Its ``reason`` is one of
``INVALID_OUTPUT_REASONS``, which is also the label set of
``relata_model_invalid_output_total{task,reason}``; messages name a JSON path, never content.

``AnalysisDisabled`` is what every task reports when no language model is configured
(``RELATA_ANALYSIS_ENABLED=false`` or no ``RELATA_AI_PROVIDER``); the pipeline treats it as
degraded quality, not failure.
"""

from __future__ import annotations

from typing import Final

from relata.domain.errors import NotConfigured, Permanent

TOO_LARGE: Final = "too_large"
NOT_JSON: Final = "not_json"
BAD_FENCE: Final = "bad_fence"
TRAILING_CONTENT: Final = "trailing_content"
DUPLICATE_FIELD: Final = "duplicate_field"
UNKNOWN_FIELD: Final = "unknown_field"
SCHEMA_VIOLATION: Final = "schema_violation"
DEGENERATE_CONTENT: Final = "degenerate_content"
NO_VALID_CITATIONS: Final = "no_valid_citations"
UNKNOWN_ENUM: Final = "unknown_enum"
UNLOCATABLE_QUOTATION: Final = "unlocatable_quotation"
UNKNOWN_SUBJECT: Final = "unknown_subject"

INVALID_OUTPUT_REASONS: Final[frozenset[str]] = frozenset(
    {
        TOO_LARGE,
        NOT_JSON,
        BAD_FENCE,
        TRAILING_CONTENT,
        DUPLICATE_FIELD,
        UNKNOWN_FIELD,
        SCHEMA_VIOLATION,
        DEGENERATE_CONTENT,
        NO_VALID_CITATIONS,
        UNKNOWN_ENUM,
        UNLOCATABLE_QUOTATION,
        UNKNOWN_SUBJECT,
    }
)


class InvalidModelOutput(Permanent):
    """The model answered, but its content failed strict decoding or task validation."""

    code = "invalid_model_output"

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in INVALID_OUTPUT_REASONS:
            raise ValueError(f"unknown invalid-output reason {reason!r}")
        message = f"model output rejected: {reason}"
        if detail:
            message = f"{message} ({detail})"
        super().__init__(message)
        self.reason = reason


class AnalysisDisabled(NotConfigured):
    """No language model is configured, or analysis is switched off."""

    code = "analysis_disabled"

    def __init__(
        self, message: str = "analysis is disabled (no language model configured)"
    ) -> None:
        super().__init__(message)
