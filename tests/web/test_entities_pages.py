"""The entity and alias pages: the demo corpus's entities listed, searched, filtered and paged;
one entity with its aliases, mentions in context and claims; alias candidates confirmed or
rejected by an editor (never without the form's token, never by a viewer); another
workspace's ids are 404; names and texts from the XSS corpus render escaped.

``zebrafish(c, ws)`` (used by the review and contradiction page tests too) builds a small
corpus whose titles, file names, quotations and one entity's name hold the XSS corpus: two
items that disagree about when the Zebrafish Array began operating (a contradiction and a
relationship between them) and a third naming an entity called "Zebrafish <script>...",
proposed as an alias of the Zebrafish Array.
"""

from __future__ import annotations

import re

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import AliasStatus, ObservedMention, ProposedAlias
from relata.domain.vocabulary import EntityType, Role
from relata.entities.normalise import normalise_name
from relata.ingest.service import IngestRequest
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from relata.web.pages import entities as entities_page
from tests.support.ingest import built, drain
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, XSS_TEXT, leaked

#: The entity whose name is a script tag (``zebrafish``).
XSS_NAME = "Zebrafish " + XSS[0]
_SIDES = (
    "The Zebrafish Array entered commercial operation on 14 March 2019, said {}.",
    "The Zebrafish Array was first connected to the grid in June 2021, said {}.",
)


def zebrafish(c: Container, workspace_id: str) -> dict[str, str]:
    """The XSS corpus (module docstring) in ``workspace_id``, processed; the items' ids by
    role ("first", "second", "third")."""
    ids = {}
    for n, (role, sentence) in enumerate(zip(("first", "second"), _SIDES, strict=True)):
        text = "Zebrafish Array report.\n\n" + sentence.format(XSS[n]) + "\n\n" + XSS_TEXT
        item = c.ingest.ingest(
            workspace_id,
            IngestRequest(
                text=text, title=XSS[n], filename=f"{XSS[2]}{n}.txt", created_at=f"202{n}-01-01"
            ),
        )
        ids[role] = item.id
    text = f"Named here: {XSS_NAME} and nothing else.\n"
    third = c.ingest.ingest(workspace_id, IngestRequest(text=text, title=XSS[5]))
    ids["third"] = third.id
    drain(c)
    # No extractor keeps a tag in a name: the stage's own unit of work records one, as the
    # entity stage would, with a candidate alias whose reason is from the corpus too.
    start = text.index(XSS_NAME)
    key = normalise_name(XSS_NAME)
    mention = ObservedMention(
        EntityType.TERM, key, XSS_NAME, None, start, start + len(XSS_NAME), XSS_NAME, "test", "1"
    )
    alias = ProposedAlias(
        (EntityType.TERM, key, XSS_NAME),
        (EntityType.TERM, normalise_name("Zebrafish Array"), "Zebrafish Array"),
        0.6,
        f"may be the same as {XSS[4]}",
    )
    with SqlUnitOfWork(c.db, c.clock).begin(workspace_id) as tx:
        tx.replace_entities(third.id, [mention], [alias])
    return ids


@pytest.fixture
def demo(demo_container: Container) -> Container:
    """The demo corpus processed in the default workspace (no embedder: fast)."""
    return demo_container


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def _entity_id(c: Container, name: str) -> str:
    found = [e for e in c.entities.list(_ws(c), query=name) if e.name == name]
    assert found, name
    return found[0].id


def _candidate(c: Container, short: str) -> str:
    """The demo's candidate alias whose shorter name is ``short``."""
    for v in c.entities.aliases(_ws(c), status=AliasStatus.CANDIDATE):
        if v.entity and v.other and short in (v.entity.name, v.other.name):
            return v.alias.id
    raise AssertionError(f"no candidate alias for {short!r}")


def _status(c: Container, alias_id: str) -> AliasStatus:
    for status in AliasStatus:
        if any(v.alias.id == alias_id for v in c.entities.aliases(_ws(c), status=status)):
            return status
    raise AssertionError(alias_id)


def _names(html: str) -> list[str]:
    return re.findall(r'<a href="/w/default/entities/[^"]+">([^<]+)</a>', html)


def test_the_list_shows_the_demo_entities_most_named_first(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    r = client.get("/w/default/entities")
    assert r.status_code == 200
    assert r.text.count("<h1>") == 1
    names = _names(r.text)
    assert names[0] == "Kestrel Marine Systems"  # named 9 times, the most
    assert {"Ines Vaughan", "Port Halloran", "Sabrewing Array"} <= set(names)
    assert 'href="/static/knowledge.css"' in r.text


def test_search_by_name_and_the_type_filter_narrow_the_list(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    found = _names(client.get("/w/default/entities?q=vaughan").text)
    assert found and all("Vaughan" in n for n in found)
    assert "Kestrel Marine Systems" not in found
    places = client.get("/w/default/entities?type=location")
    assert 'value="location" selected' in places.text
    assert "Port Halloran" in _names(places.text)
    assert "Ines Vaughan" not in _names(places.text)
    nothing = client.get("/w/default/entities?q=nobody-by-this-name")
    assert nothing.status_code == 200 and "No entity matches this search." in nothing.text


@pytest.mark.parametrize(
    ("query", "named"), [("type=planet", "type must be one of"), ("q=%21%21%21", "query")]
)
def test_a_bad_search_is_a_page_naming_what_was_wrong(
    demo: Container, query: str, named: str
) -> None:
    r = web_client(demo).get(f"/w/default/entities?{query}")
    assert r.status_code == 400
    assert named in r.text


def test_the_list_pages(demo: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities_page, "ENTITY_PAGE", 10)
    client = web_client(demo)
    first = client.get("/w/default/entities")
    assert 'href="?offset=10" rel="next"' in first.text and 'rel="prev"' not in first.text
    second = client.get("/w/default/entities?offset=10")
    assert 'rel="prev"' in second.text
    one, two = _names(first.text), _names(second.text)
    assert len(one) == 10 and len(two) == 10 and not set(one) & set(two)
    last = client.get("/w/default/entities?offset=20")
    # 27 in all: one name is one entity (ADR 50; "Sabrewing Array" was two).
    assert 'rel="next"' not in last.text and len(_names(last.text)) == 7


def test_one_entity_shows_its_aliases_mentions_in_context_and_claims(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    r = client.get(f"/w/default/entities/{_entity_id(demo, 'Kestrel Marine Systems')}")
    assert r.status_code == 200
    assert "<h1>Kestrel Marine Systems" in r.text and "organisation" in r.text
    # The candidate alias "Kestrel", with its reason and a link to the other entity.
    assert f'href="/w/default/entities/{_entity_id(demo, "Kestrel")}">Kestrel</a>' in r.text
    assert "may be short for" in r.text
    # Each mention in the words around it, under a link to its item.
    assert r.text.count('<mark class="entity">Kestrel Marine Systems</mark>') == 9
    assert 'href="/w/default/items/' in r.text
    assert "Field notes, Skerry Rock seal survey</a>" in r.text
    assert "tidal turbines" in r.text  # context beyond the name itself
    # The claims made about it, and the entities named beside it.
    assert "Kestrel Marine Systems designs, builds and operates tidal turbines." in r.text
    assert "Named in the same items" in r.text and "Meridian Tidal Institute</a>" in r.text
    assert 'name="decision"' not in r.text  # a viewer gets no form


def test_the_alias_page_lists_candidates_with_their_evidence(demo: Container) -> None:
    client = web_client(demo)
    r = client.get("/w/default/aliases")
    assert r.status_code == 200
    assert "“Kestrel” (organisation) may be short for “Kestrel Marine Systems”" in r.text
    assert "(a surname alone)" in r.text
    # Each side links to its entity and shows one place it is named.
    assert f'href="/w/default/entities/{_entity_id(demo, "Reyes")}">Reyes</a>' in r.text
    assert '<mark class="entity">Reyes</mark>' in r.text
    # Four: "the same name" across two types is no candidate once a name is one entity.
    assert r.text.count('value="confirmed"') == 4 and r.text.count('value="rejected"') == 4
    assert 'aria-current="page">To review</a>' in r.text


@pytest.mark.parametrize(
    ("word", "status"), [("confirmed", AliasStatus.CONFIRMED), ("rejected", AliasStatus.REJECTED)]
)
def test_confirm_and_reject_decide_the_alias_and_it_leaves_the_candidates(
    demo: Container, word: str, status: AliasStatus
) -> None:
    client = web_client(demo, role=Role.EDITOR)
    alias_id = _candidate(demo, "Kestrel")
    token = csrf(client, "/w/default/aliases")
    r = client.post(
        f"/w/default/aliases/{alias_id}",
        data={"csrf_token": token, "decision": word, "note": "checked the register"},
    )
    assert r.status_code == 303
    assert r.headers["location"] == f"/w/default/aliases?done={word}"
    assert _status(demo, alias_id) is status
    after = client.get(r.headers["location"])
    assert f'<p class="notice" role="status">{word.capitalize()}.</p>' in after.text
    assert f"/w/default/aliases/{alias_id}" not in after.text  # no longer to review
    decided = client.get(f"/w/default/aliases?status={word}")
    assert f"/w/default/aliases/{alias_id}" not in decided.text  # decided: no form
    assert "checked the register" in decided.text
    assert "Kestrel Marine Systems" in decided.text


def test_deciding_from_the_entity_page_goes_back_to_it(demo: Container) -> None:
    client = web_client(demo)
    alias_id = _candidate(demo, "Reyes")
    entity = _entity_id(demo, "Tomas Reyes")
    page = client.get(f"/w/default/entities/{entity}")
    assert f'action="/w/default/aliases/{alias_id}"' in page.text
    r = client.post(
        f"/w/default/aliases/{alias_id}",
        data={
            "csrf_token": csrf(client, "/w/default/entities"),
            "decision": "confirmed",
            "entity": entity,
        },
    )
    assert r.headers["location"] == f"/w/default/entities/{entity}?done=confirmed"
    assert _status(demo, alias_id) is AliasStatus.CONFIRMED
    # An entity id that is not one of the pair's is not a place to go back to.
    other = _candidate(demo, "Kestrel")
    r = client.post(
        f"/w/default/aliases/{other}",
        data={
            "csrf_token": csrf(client, "/w/default/entities"),
            "decision": "rejected",
            "entity": entity,
        },
    )
    assert r.headers["location"] == "/w/default/aliases?done=rejected"


def test_a_decision_must_be_confirmed_or_rejected(demo: Container) -> None:
    client = web_client(demo)
    alias_id = _candidate(demo, "Kestrel")
    token = csrf(client, "/w/default/aliases")
    for word in ("candidate", ""):
        r = client.post(
            f"/w/default/aliases/{alias_id}", data={"csrf_token": token, "decision": word}
        )
        assert r.status_code == 400 and "decision must be confirmed or rejected" in r.text
    assert _status(demo, alias_id) is AliasStatus.CANDIDATE


def test_a_post_without_its_token_changes_nothing(demo: Container) -> None:
    client = web_client(demo)
    alias_id = _candidate(demo, "Kestrel")
    for data in ({"decision": "confirmed"}, {"decision": "confirmed", "csrf_token": "forged"}):
        r = client.post(f"/w/default/aliases/{alias_id}", data=data)
        assert r.status_code == 403
    assert _status(demo, alias_id) is AliasStatus.CANDIDATE


def test_a_viewer_sees_no_form_and_cannot_post(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    page = client.get("/w/default/aliases")
    assert page.status_code == 200 and "may be short for" in page.text
    assert (
        'name="decision"' not in page.text
        and '<form method="post" action="/w/default/aliases' not in page.text
    )
    alias_id = _candidate(demo, "Kestrel")
    r = client.post(
        f"/w/default/aliases/{alias_id}",
        data={"csrf_token": csrf(client, "/w/default/aliases"), "decision": "confirmed"},
    )
    assert r.status_code == 403
    assert _status(demo, alias_id) is AliasStatus.CANDIDATE


def test_another_workspace_entity_and_alias_are_not_found(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        bravo, _ = c.workspaces.ensure("bravo")
        zebrafish(c, bravo.id)
        theirs = c.entities.list(bravo.id)[0].id
        their_alias = c.entities.aliases(bravo.id)[0].alias.id
        client = web_client(c)  # a member of default only
        assert client.get(f"/w/default/entities/{theirs}").status_code == 404
        r = client.post(
            f"/w/default/aliases/{their_alias}",
            data={"csrf_token": csrf(client, "/w/default/entities"), "decision": "confirmed"},
        )
        assert r.status_code == 404
        assert c.entities.aliases(bravo.id)[0].alias.status is AliasStatus.CANDIDATE
        assert client.get("/w/bravo/entities").status_code == 404


def test_names_quotations_and_titles_from_the_xss_corpus_render_escaped(
    settings: Settings,
) -> None:
    with built(settings, embedding_provider="none") as c:
        zebrafish(c, _ws(c))
        client = web_client(c)
        listed = client.get("/w/default/entities")
        assert "Zebrafish &lt;script&gt;" in listed.text and leaked(listed.text) == []
        mine = client.get(f"/w/default/entities/{_entity_id(c, XSS_NAME)}")
        assert mine.status_code == 200 and leaked(mine.text) == []
        assert "<title>Zebrafish &lt;script&gt;" in mine.text
        array = client.get(f"/w/default/entities/{_entity_id(c, 'Zebrafish Array')}")
        assert leaked(array.text) == []
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;</a>" in array.text  # a title
        aliases = client.get("/w/default/aliases")
        assert "may be the same as &lt;/textarea&gt;" in aliases.text
        assert leaked(aliases.text) == []
