"""What the MCP tools call: one ``Backend`` protocol, two implementations.

- ``LocalBackend``: this process's services, for one principal (a token's workspace and role
  in ``relata serve``'s ``/mcp``; the local database as the CLI uses it in ``relata mcp``).
  Each method is the REST handler of the same endpoint (``relata.api.v1``), called with the
  principal, so the two surfaces cannot drift: same services, same scoping (another
  workspace's id is ``NotFound`` exactly like a missing one), same response models. A write
  also needs the editor role, as the REST API's unsafe methods do.
- ``relata.client.RelataClient`` (``relata mcp --server URL --token T``) has the same methods
  over HTTP; the server scopes each call by the token.

Every method blocks (database or network): the tools call them in a worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from relata.api.deps import Principal
from relata.api.v1 import answers as answers_api
from relata.api.v1 import claims as claims_api
from relata.api.v1 import entities as entities_api
from relata.api.v1 import items as items_api
from relata.api.v1 import relationships as relationships_api
from relata.api.v1 import search as search_api
from relata.api.v1.item_schemas import ItemDetailOut
from relata.domain.models import SourceType
from relata.domain.vocabulary import (
    ContradictionStatus,
    EntityType,
    RelationshipType,
    Resolution,
    Role,
)
from relata.ingest.service import IngestRequest
from relata.schemas.answers import AnswerOut
from relata.schemas.claims import ContradictionOut, ContradictionPage, ResolutionIn
from relata.schemas.entities import EntityDetailOut, EntityPage
from relata.schemas.items import ChunkPage, ItemOut, ItemTextOut, item_out
from relata.schemas.relationships import RelatedOut, RelationshipOut, ReviewIn
from relata.schemas.search import SearchOut
from relata.search.answers import DEFAULT_LIMIT

if TYPE_CHECKING:
    from relata.bootstrap import Container


class Backend(Protocol):
    """The REST API's operations the MCP tools use (``relata.client.RelataClient``'s)."""

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        source_type: SourceType | str | None = None,
        created_from: str | None = None,
        created_to: str | None = None,
        legs: list[str] | None = None,
    ) -> SearchOut: ...
    def answer(self, question: str, *, limit: int | None = None) -> AnswerOut: ...
    def item(self, item_id: str) -> ItemDetailOut: ...
    def item_text(self, item_id: str, *, offset: int = 0, limit: int = 100_000) -> ItemTextOut: ...
    def item_chunks(self, item_id: str, *, offset: int = 0, limit: int = 50) -> ChunkPage: ...
    def related(
        self, item_id: str, *, limit: int = 20, include_rejected: bool = False
    ) -> list[RelatedOut]: ...
    def add_text(
        self,
        text: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        created_at: str | None = None,
        allow_duplicate: bool = False,
    ) -> ItemOut: ...
    def contradictions(
        self,
        *,
        status: ContradictionStatus | str | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> ContradictionPage: ...
    def contradiction(self, contradiction_id: str) -> ContradictionOut: ...
    def resolve(
        self, contradiction_id: str, resolution: Resolution | str, *, note: str | None = None
    ) -> ContradictionOut: ...
    def entities(
        self,
        *,
        query: str | None = None,
        entity_type: EntityType | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> EntityPage: ...
    def entity(self, entity_id: str) -> EntityDetailOut: ...
    def review(
        self,
        relationship_id: str,
        decision: str,
        *,
        relationship_type: RelationshipType | str | None = None,
        note: str | None = None,
    ) -> RelationshipOut: ...


class LocalBackend:
    """The REST handlers in this process, as ``principal`` (see the module docstring)."""

    def __init__(self, container: Container, principal: Principal) -> None:
        self.c = container
        self.p = principal

    def _write(self, action: str) -> None:
        self.p.require(Role.EDITOR, action)

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        source_type: SourceType | str | None = None,
        created_from: str | None = None,
        created_to: str | None = None,
        legs: list[str] | None = None,
    ) -> SearchOut:
        return search_api.search(
            self.c,
            self.p,
            q=query,
            limit=limit,
            offset=offset,
            type=SourceType(source_type) if source_type else None,
            from_=created_from,
            to=created_to,
            legs=",".join(legs) if legs else None,
        )

    def answer(self, question: str, *, limit: int | None = None) -> AnswerOut:
        body = answers_api.AnswerRequest(question=question, limit=limit or DEFAULT_LIMIT)
        return answers_api.answers(body, self.c, self.p)

    def item(self, item_id: str) -> ItemDetailOut:
        return items_api.get_item(item_id, self.p, self.c)

    def item_text(self, item_id: str, *, offset: int = 0, limit: int = 100_000) -> ItemTextOut:
        return items_api.get_item_text(item_id, self.p, self.c, offset=offset, limit=limit)

    def item_chunks(self, item_id: str, *, offset: int = 0, limit: int = 50) -> ChunkPage:
        return items_api.get_item_chunks(item_id, self.p, self.c, limit=limit, offset=offset)

    def related(
        self, item_id: str, *, limit: int = 20, include_rejected: bool = False
    ) -> list[RelatedOut]:
        return relationships_api.item_related(
            item_id, self.p, self.c, include_rejected=include_rejected, limit=limit
        )

    def add_text(
        self,
        text: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        created_at: str | None = None,
        allow_duplicate: bool = False,
    ) -> ItemOut:
        self._write("add documents")
        request = IngestRequest(
            text=text,
            title=title,
            metadata=metadata,
            created_at=created_at,
            allow_duplicate=allow_duplicate,
        )
        # The REST upload's path: admitted (or Overloaded), then ingested as the principal.
        with self.c.ingest.admit() as slot:
            return item_out(slot.ingest(self.p.workspace_id, request, actor=self.p.actor))

    def contradictions(
        self,
        *,
        status: ContradictionStatus | str | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> ContradictionPage:
        return claims_api.list_contradictions(
            self.p,
            self.c,
            status=ContradictionStatus(status) if status else None,
            subject=subject,
            item=item_id,
            limit=limit,
            offset=offset,
        )

    def contradiction(self, contradiction_id: str) -> ContradictionOut:
        return claims_api.get_contradiction(contradiction_id, self.p, self.c)

    def resolve(
        self, contradiction_id: str, resolution: Resolution | str, *, note: str | None = None
    ) -> ContradictionOut:
        self._write("resolve contradictions")
        # Unvalidated: the service names what is wrong with a disagreement-only resolution
        # or a long note in the error the tool returns.
        body = ResolutionIn.model_construct(resolution=Resolution(resolution).value, note=note)
        return claims_api.resolve_contradiction(contradiction_id, body, self.p, self.c)

    def entities(
        self,
        *,
        query: str | None = None,
        entity_type: EntityType | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> EntityPage:
        return entities_api.list_entities(
            self.p,
            self.c,
            q=query,
            type=EntityType(entity_type) if entity_type else None,
            limit=limit,
            offset=offset,
        )

    def entity(self, entity_id: str) -> EntityDetailOut:
        return entities_api.get_entity(entity_id, self.p, self.c)

    def review(
        self,
        relationship_id: str,
        decision: str,
        *,
        relationship_type: RelationshipType | str | None = None,
        note: str | None = None,
    ) -> RelationshipOut:
        self._write("review relationships")
        body = ReviewIn.model_validate(
            {"decision": decision, "relationship_type": relationship_type, "note": note}
        )
        return relationships_api.review_relationship(relationship_id, body, self.p, self.c)
