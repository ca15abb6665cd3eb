"""``/`` says what is running and links the API and its documentation; ``/docs`` is Swagger UI
served entirely from Relata's own origin, under the same strict CSP as every response."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from relata.api.middleware import CSP
from relata.config.settings import Settings
from tests.support.api import api_client
from tests.support.ingest import built


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with built(settings) as c, api_client(c) as tc:
        yield tc


class _Refs(HTMLParser):
    """Every URL a page loads or links, and whether it has inline script or style."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []
        self.inline: list[str] = []
        self._tag: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._tag = tag
        if "style" in a or any(k.startswith("on") for k in a):
            self.inline.append(f"{tag} attribute")
        if tag == "script" and a.get("src"):
            self.loads.append(str(a["src"]))
        elif tag == "link" and a.get("href"):
            self.loads.append(str(a["href"]))
        elif tag in {"img", "iframe"} and a.get("src"):
            self.loads.append(str(a["src"]))
        elif tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        if tag == "style":
            self.inline.append("style element")

    def handle_data(self, data: str) -> None:
        if self._tag == "script" and data.strip():
            self.inline.append("script body")

    def handle_endtag(self, tag: str) -> None:
        self._tag = None


def _parse(html: str) -> _Refs:
    refs = _Refs()
    refs.feed(html)
    return refs


def test_the_root_page_says_what_relata_is_and_links_the_api_and_its_docs(
    client: TestClient,
) -> None:
    resp = client.get("/")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/html")
    assert resp.headers["content-security-policy"] == CSP
    refs = _parse(resp.text)
    assert {"/docs", "/api/v1/openapi.json"} <= set(refs.links)
    assert "Relata" in resp.text and refs.inline == []
    assert all(url.startswith("/docs/assets/") for url in refs.loads), refs.loads
    for href in refs.links:
        assert client.get(href).status_code == 200, href


def test_docs_load_only_same_origin_assets_and_each_is_served(client: TestClient) -> None:
    resp = client.get("/docs")
    assert resp.status_code == 200
    assert resp.headers["content-security-policy"] == CSP
    # Nothing the CSP would allow beyond 'self' (and data: images, which the CSS uses).
    assert re.search(r"script-src 'self';", CSP) and "unsafe" not in CSP
    refs = _parse(resp.text)
    assert refs.inline == []
    assert len(refs.loads) >= 3
    for url in refs.loads:
        assert url.startswith("/docs/assets/"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["x-content-type-options"] == "nosniff"
        if url.endswith(".js"):
            assert asset.headers["content-type"].startswith("text/javascript")
        if url.endswith(".css"):
            assert asset.headers["content-type"].startswith("text/css")
    bundle = client.get("/docs/assets/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in bundle
    assert 'data-openapi-url="/api/v1/openapi.json"' in resp.text
    starter = client.get("/docs/assets/docs.js").text
    assert "data-openapi-url" in starter and "SwaggerUIBundle(" in starter


@pytest.mark.parametrize(
    "name", ["swagger-editor-bundle.js", "../pages.py", "swagger-ui-bundle.js.map", "x"]
)
def test_only_the_listed_assets_are_served(client: TestClient, name: str) -> None:
    resp = client.get(f"/docs/assets/{name}")
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "not_found"
