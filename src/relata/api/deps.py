"""Request-scoped dependencies: the container and the principal.

Until the auth issue lands, every request runs as the local principal on the default
workspace; handlers take the principal through ``principal`` and pass its workspace id to
the services, so the auth issue only has to change how the principal is found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from relata.domain.models import Actor
from relata.domain.vocabulary import ActorKind

if TYPE_CHECKING:
    from relata.bootstrap import Container


@dataclass(frozen=True, slots=True)
class Principal:
    workspace_id: str
    workspace_slug: str
    user_id: str | None
    kind: str  # "local" until authentication exists

    @property
    def actor(self) -> Actor:
        """Who the audit log records for this request's actions (``relata.audit``)."""
        return Actor(ActorKind(self.kind), user_id=self.user_id)


def container(request: Request) -> Container:
    c: Container = request.app.state.container
    return c


def principal(request: Request) -> Principal:
    c = container(request)
    ws = c.workspaces.resolve()
    return Principal(workspace_id=ws.id, workspace_slug=ws.slug, user_id=None, kind="local")


ContainerDep = Annotated["Container", Depends(container)]
PrincipalDep = Annotated[Principal, Depends(principal)]
