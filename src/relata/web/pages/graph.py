"""The graph page: the workspace's knowledge drawn as a graph (docs/decisions/0043).

``GET /w/{slug}/graph`` is the workspace graph, ``?entity=ID`` or ``?item=ID`` the
neighbourhood of one (``depth`` steps out), filtered by review state, score, relationship
type, entity type and whether mentions are shown, within the page's bounds (``PAGE_NODES``,
``PAGE_EDGES``). The page is server-rendered: its nodes and edges are two tables (each node
a link to its page, and to the graph around it), which is the page without JavaScript and
for a screen reader; with it, ``graph.js`` draws the same graph with the vendored
cytoscape.js from the JSON the page carries (a data block, not a script: the CSP forbids
inline script), and a click on a node opens its page.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from relata.api.deps import container
from relata.domain.errors import ValidationError
from relata.domain.graph import MAX_DEPTH, SHOWN_BY_DEFAULT, GraphFilter, NodeKind
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType
from relata.schemas.graph import GraphOut, graph_out
from relata.web.context import Page, choice, page
from relata.web.templating import render

router = APIRouter()

#: The page's bounds: fewer than the API's most, so that a page of tables stays usable.
PAGE_NODES = 300
PAGE_EDGES = 1000
MAX_ID = 64


def _score(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        score = float(value)
    except ValueError:
        raise ValidationError("min_score must be a number from 0 to 1", field="min_score") from None
    if not 0.0 <= score <= 1.0:
        raise ValidationError("min_score must be a number from 0 to 1", field="min_score")
    return score


def _depth(value: str | None) -> int:
    if not value:
        return 1
    if not value.isdigit() or not 1 <= int(value) <= MAX_DEPTH:
        raise ValidationError(f"depth must be 1-{MAX_DEPTH}", field="depth")
    return int(value)


def _id(value: str | None, name: str) -> str | None:
    if value is not None and len(value) > MAX_ID:
        raise ValidationError(f"{name} is longer than {MAX_ID} characters", field=name)
    return value or None


@router.get("/w/{slug}/graph", name="web_graph")
def graph(
    request: Request,
    who: Annotated[Page, Depends(page)],
    entity: str | None = None,
    item: str | None = None,
    depth: str | None = None,
    review_status: Annotated[list[str] | None, Query()] = None,
    min_score: str | None = None,
    entity_type: str | None = None,
    relationship_type: str | None = None,
    mentions: str | None = None,
    filtered: str | None = None,
) -> Response:
    c = container(request)
    states = [choice(ReviewStatus, s, "review_status") for s in review_status or []]
    chosen = frozenset(s for s in states if s is not None)
    etype = choice(EntityType, entity_type, "entity_type")
    rtype = choice(RelationshipType, relationship_type, "relationship_type")
    # A submitted form says whether mentions are shown (an unticked box sends nothing).
    show_mentions = mentions == "1" if filtered else True
    f = GraphFilter(
        review_states=chosen or SHOWN_BY_DEFAULT,
        min_score=_score(min_score),
        relationship_types=frozenset({rtype}) if rtype else None,
        entity_types=frozenset({etype}) if etype else None,
        mentions=show_mentions,
    )
    found = c.graph.draw(
        who.workspace_id,
        f,
        entity=_id(entity, "entity"),
        item=_id(item, "item"),
        depth=_depth(depth),
        max_nodes=PAGE_NODES,
        max_edges=PAGE_EDGES,
    )
    out = graph_out(found)
    return render(
        request,
        "graph.html",
        page=who,
        graph=out,
        labels={n.id: n.label for n in out.nodes},
        centre=next((n for n in out.nodes if n.id == out.centre), None),
        drawing=_drawing(who, out),
        filters={
            "entity": entity or "",
            "item": item or "",
            "depth": str(found.depth) if found.centre else "",
            "review_status": sorted(s.value for s in f.review_states),
            "min_score": min_score or "",
            "entity_type": entity_type or "",
            "relationship_type": relationship_type or "",
            "mentions": show_mentions,
        },
        states=[s.value for s in ReviewStatus],
        types=[t.value for t in EntityType],
        relationship_types=[t.value for t in RelationshipType],
        max_depth=MAX_DEPTH,
    )


def node_url(who: Page, kind: NodeKind, ref: str) -> str:
    return who.url(("entities/" if kind is NodeKind.ENTITY else "items/") + ref)


def _drawing(who: Page, out: GraphOut) -> dict[str, object]:
    """What ``graph.js`` draws: cytoscape's elements, each node with the page it opens."""
    nodes = [
        {
            "data": {
                "id": n.id,
                "label": n.label[:80],
                "kind": n.kind.value,
                "type": n.type,
                "url": node_url(who, n.kind, n.ref_id),
                "centre": n.id == out.centre,
            }
        }
        for n in out.nodes
    ]
    edges = [
        {
            "data": {
                "id": e.id,
                "source": e.source,
                "target": e.target,
                "kind": e.kind.value,
                "label": e.relationship_type.value if e.relationship_type else "",
                "review": e.review_status.value if e.review_status else "",
            }
        }
        for e in out.edges
    ]
    return {"elements": nodes + edges}
