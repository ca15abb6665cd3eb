"""Model status and re-embedding: ``GET /api/v1/settings/models`` and
``POST /api/v1/workspaces/current/reembed``.

The status reports the embedding and analysis providers with their health (each check
bounded by a short timeout), the models the caller's workspace has seen, the vector width,
the counts of chunks and stored vectors, the latest re-embed job's progress, and warnings
with their fix. Re-embedding answers 202 with the job it queued (or the one already
pending; ``?all=true`` rebuilds every vector), 204 when there is nothing to re-embed (every
chunk has a vector of the current model and no item failed at the embed stage), and 409 when
no embedding provider is configured.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.domain.ports import ProviderHealth
from relata.embeddings.status import ModelStatus
from relata.schemas.jobs import JobOut

router = APIRouter(tags=["models"])


class ProviderHealthOut(BaseModel):
    ok: bool
    provider: str
    model: str
    detail: str
    latency_ms: float | None

    @classmethod
    def of(cls, health: ProviderHealth | None) -> ProviderHealthOut | None:
        if health is None:
            return None
        return cls(
            ok=health.ok,
            provider=health.provider,
            model=health.model,
            detail=health.detail,
            latency_ms=health.latency_ms,
        )


class EmbeddingOut(BaseModel):
    provider: str = Field(description="local, ollama, openai or none")
    available: bool = Field(description="false: meaning-based search is unavailable")
    model: str | None
    dimensions: int = Field(description="the width of the vectors stored and searched")
    configured_dimensions: int | None = Field(
        description="RELATA_EMBEDDING_DIMENSIONS; null means the model's own width"
    )
    health: ProviderHealthOut | None


class AnalysisOut(BaseModel):
    enabled: bool
    provider: str
    model: str | None
    disabled_reason: str | None
    health: ProviderHealthOut | None


class ModelSeenOut(BaseModel):
    kind: str = Field(description="embedding or analysis")
    name: str
    dimensions: int | None
    first_seen_at: datetime
    last_seen_at: datetime


class CountsOut(BaseModel):
    chunks: int
    vectors: int = Field(description="vectors of the current width stored for the workspace")
    embedded_with_current_model: int
    embedded_with_other_models: dict[str, int] = Field(description="model name -> chunks")
    not_embedded: int


class ReembedStateOut(BaseModel):
    job_id: str
    status: str
    chunks_done: int = Field(description="chunks re-embedded so far by this re-embedding")
    created_at: datetime
    finished_at: datetime | None
    last_error: str | None


class ModelStatusOut(BaseModel):
    embedding: EmbeddingOut
    analysis: AnalysisOut
    models_seen: list[ModelSeenOut]
    counts: CountsOut
    reembed: ReembedStateOut | None = Field(description="the newest re-embed job, if any")
    warnings: list[str]

    @classmethod
    def of(cls, s: ModelStatus) -> ModelStatusOut:
        e, a, c, r = s.embedding, s.analysis, s.counts, s.reembed
        return cls(
            embedding=EmbeddingOut(
                provider=e.provider,
                available=e.available,
                model=e.model,
                dimensions=e.dimensions,
                configured_dimensions=e.configured_dimensions,
                health=ProviderHealthOut.of(e.health),
            ),
            analysis=AnalysisOut(
                enabled=a.enabled,
                provider=a.provider,
                model=a.model,
                disabled_reason=a.disabled_reason,
                health=ProviderHealthOut.of(a.health),
            ),
            models_seen=[
                ModelSeenOut(
                    kind=m.kind,
                    name=m.name,
                    dimensions=m.dimensions,
                    first_seen_at=m.first_seen_at,
                    last_seen_at=m.last_seen_at,
                )
                for m in s.models_seen
            ],
            counts=CountsOut(
                chunks=c.chunks,
                vectors=c.vectors,
                embedded_with_current_model=c.embedded_current,
                embedded_with_other_models=c.embedded_other,
                not_embedded=c.not_embedded,
            ),
            reembed=None
            if r is None
            else ReembedStateOut(
                job_id=r.job_id,
                status=r.status,
                chunks_done=r.chunks_done,
                created_at=r.created_at,
                finished_at=r.finished_at,
                last_error=r.last_error,
            ),
            warnings=s.warnings,
        )


@router.get("/settings/models", response_model=ModelStatusOut)
def model_status(p: PrincipalDep, c: ContainerDep) -> ModelStatusOut:
    """Providers, their health, models seen, vector and chunk counts, and warnings."""
    return ModelStatusOut.of(c.model_status.status(p.workspace_id))


@router.post(
    "/workspaces/current/reembed",
    status_code=202,
    response_model=JobOut,
    responses={204: {"description": "nothing to re-embed; no job was queued"}, **errors(409)},
)
def reembed_workspace(
    p: PrincipalDep,
    c: ContainerDep,
    all_chunks: bool = Query(
        False,
        alias="all",
        description="Rebuild every vector (deleting the workspace's vectors first), not only "
        "those of chunks not embedded with the current model.",
    ),
) -> JobOut | Response:
    """Queue the re-embedding of every chunk not embedded with the current model."""
    job = c.reembed.start(p.workspace_id, all_chunks=all_chunks, actor=p.actor)
    return Response(status_code=204) if job is None else JobOut.of(job)
