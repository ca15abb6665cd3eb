"""The port through which the web interface plugs into the HTTP app (ARCHITECTURE.md: "the
router accepts the web handlers through the ``api.WebRoutes`` interface, so ``api`` never
imports ``web``").

``relata.web.web_routes(container)`` implements it; ``relata.api.app.create_app`` takes one
optionally (the API's own tests build the app without pages). When one is given, its router
serves ``/`` and the pages, and an error raised while serving one of its paths is rendered by
``error_page`` (an HTML page in the layout) instead of the API's JSON error shape; the body of
a request to one of its paths is bounded by its ``body_rule`` (``relata.api.limits``).
"""

from __future__ import annotations

from typing import Protocol

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import Scope

from relata.api.limits import BodyLimits, BodyRule


class WebRoutes(Protocol):
    @property
    def router(self) -> APIRouter:
        """The pages and the web's static files."""
        ...

    def handles(self, request: Request) -> bool:
        """Whether ``request`` is for one of the web's paths (its errors are pages)."""
        ...

    def error_page(self, request: Request, status: int, code: str, message: str) -> Response:
        """The page shown for an error while serving one of the web's paths."""
        ...

    def body_rule(self, scope: Scope, limits: BodyLimits) -> BodyRule:
        """The bound of a request body to one of the web's paths: sign-in, upload or form."""
        ...
