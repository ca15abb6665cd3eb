"""The pipeline: stages declared once, run by one runner (docs/decisions/0014)."""

from relata.pipeline.runner import Pipeline, Reprocessing, job_kind
from relata.pipeline.stage import Requirement, Stage, StagePayload, StageResult, stage_key

__all__ = [
    "Pipeline",
    "Reprocessing",
    "Requirement",
    "Stage",
    "StagePayload",
    "StageResult",
    "job_kind",
    "stage_key",
]
