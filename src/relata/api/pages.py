"""The two HTML pages the API serves until the web interface exists: ``/``, which says what is
running and where the API and its documentation are, and ``/docs``, the interactive API
documentation (Swagger UI).

Everything is served from Relata's own origin under the same Content-Security-Policy as
every response (``script-src 'self'; style-src 'self'``, no inline script or style, no CDN):
Swagger UI's files come from the ``swagger-ui-py`` package installed with Relata, and the
script that starts it is a file of ours (``static/docs.js``). Only the files listed in
``_ASSETS`` are served, so the package's other files (an editor, source maps) are not.
"""

from __future__ import annotations

import html
import importlib.util
from functools import cache
from pathlib import Path

from fastapi import APIRouter
from starlette.responses import FileResponse, HTMLResponse

import relata
from relata.domain.errors import NotFound

router = APIRouter(include_in_schema=False)
#: ``/`` when the web interface is not plugged in (``relata.api.webroutes``).
index_router = APIRouter(include_in_schema=False)

OPENAPI_URL = "/api/v1/openapi.json"
ASSETS_PREFIX = "/docs/assets/"
_OWN = Path(__file__).parent / "static"
_ASSET_TYPES = {
    ".css": "text/css",
    ".js": "text/javascript",
    ".png": "image/png",
}
# name served -> (where it comes from, file name there)
_ASSETS: dict[str, tuple[str, str]] = {
    "swagger-ui.css": ("swagger_ui", "swagger-ui.css"),
    "swagger-ui-bundle.js": ("swagger_ui", "swagger-ui-bundle.js"),
    "favicon-32x32.png": ("swagger_ui", "favicon-32x32.png"),
    "docs.js": ("relata", "docs.js"),
    "docs.css": ("relata", "docs.css"),
}
_CACHE = "public, max-age=3600"


@cache
def _swagger_dir() -> Path:
    """swagger-ui-py's static folder, found without importing the package (it would import
    its web-framework adapters)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or spec.origin is None:  # pragma: no cover - a declared dependency
        raise NotFound("the API documentation assets are not installed (swagger-ui-py)")
    return Path(spec.origin).parent / "static"


def asset_path(name: str) -> Path:
    """The file served as ``/docs/assets/<name>``; NotFound for anything not listed."""
    source = _ASSETS.get(name)
    if source is None:
        raise NotFound("no such asset")
    origin, filename = source
    folder = _OWN if origin == "relata" else _swagger_dir()
    return folder / filename


_INDEX = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relata</title>
<link rel="icon" type="image/png" href="{assets}favicon-32x32.png">
</head>
<body>
<main>
<h1>Relata</h1>
<p>Relata {version} is running. It stores documents (text, Markdown, JSON, PDF, DOCX, HTML,
CSV/TSV, XLSX, PPTX, e-mail), splits
them into sections, searches them by keyword and by meaning with an explanation of every
ranking, and answers questions from them citing its sources when a language model is
configured.</p>
<p>There is no web interface yet. Use the HTTP API or the <code>relata</code> command:</p>
<ul>
<li><a href="/docs">API documentation</a>, interactive</li>
<li><a href="{openapi}">the OpenAPI document</a> of the API under <code>/api/v1/</code>,
for example <a href="/api/v1/items">/api/v1/items</a></li>
<li><a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a> and
<a href="/metrics">/metrics</a> for operators</li>
<li><code>relata --help</code> on the command line</li>
</ul>
</main>
</body>
</html>
"""

_DOCS = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relata API documentation</title>
<link rel="icon" type="image/png" href="{assets}favicon-32x32.png">
<link rel="stylesheet" href="{assets}swagger-ui.css">
<link rel="stylesheet" href="{assets}docs.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi}"></div>
<script src="{assets}swagger-ui-bundle.js"></script>
<script src="{assets}docs.js"></script>
</body>
</html>
"""


@index_router.get("/")
def index() -> HTMLResponse:
    version = html.escape(relata.__version__)
    return HTMLResponse(_INDEX.format(version=version, openapi=OPENAPI_URL, assets=ASSETS_PREFIX))


@router.get("/docs")
def docs() -> HTMLResponse:
    return HTMLResponse(_DOCS.format(assets=ASSETS_PREFIX, openapi=OPENAPI_URL))


@router.get(ASSETS_PREFIX + "{name}")
def asset(name: str) -> FileResponse:
    path = asset_path(name)
    return FileResponse(
        path,
        media_type=_ASSET_TYPES[path.suffix],
        headers={"Cache-Control": _CACHE},
    )
