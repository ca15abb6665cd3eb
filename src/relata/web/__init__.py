"""The web interface: server-rendered pages over the same services as the API.

``web_routes(container)`` returns the ``relata.api.webroutes.WebRoutes`` that
``relata.api.app.create_app`` plugs in (``relata serve`` does). ``web`` imports ``api`` (for
the principal, the session cookie and the response shapes), never the reverse, and never
``storage``.

Pages (every workspace page is under ``/w/{slug}/``; the ``slug`` path parameter names the
workspace exactly as it does for the API, so a non-member gets 404):

===============================================  ===============================================
``GET /``                                        to the library of the session's workspace
``GET|POST /sign-in``, ``POST /sign-out``        local sign-in (and the federated link), out
``GET /w/{slug}/library``                        items, ``?q=`` and filters, paging; upload form
``POST /w/{slug}/library/upload``                several files (multipart), no JavaScript needed
``POST /w/{slug}/library/selected``              reprocess or delete the ticked items (delete
                                                 asks first, on a page of its own)
``GET /w/{slug}/items/{id}``                     one item: runs, text, chunks, knowledge
``POST /w/{slug}/items/{id}/reprocess|delete``   (delete asks first: ``GET .../delete``)
``GET /w/{slug}/items/{id}/original``            the stored original, as an attachment
``GET /w/{slug}/search``                         ``?q=`` with filters and legs, explanations
``GET|POST /w/{slug}/ask``                       a cited answer, or why not and the sources
``GET /w/{slug}/entities[/{id}]``                entities and mentions
``GET /w/{slug}/aliases``, ``POST .../{id}``     alias candidates to confirm or reject
``GET /w/{slug}/review``, ``POST .../{id}``      the relationship review queue
``GET /w/{slug}/contradictions``                one card per disagreement (open, superseded,
                                                 resolved); ``POST .../disagreements/{id}/resolve``
``GET /w/{slug}/contradictions?view=pairs[/{id}]`` the pairs underneath; ``POST .../{id}/resolve``
``GET /w/{slug}/jobs``, ``POST .../{id}/retry``  jobs and their failures
``GET /w/{slug}/settings`` (and its forms)       providers, models, re-embed, tokens, members
``GET /w/{slug}/audit``                          the audit log (owners)
``GET /admin``                                   administrators: every user and workspace
``POST /admin/users|password|workspaces``        create a user, reset a password, create a
                                                 workspace with its owner
``GET /static/{name}``                           Relata's own CSS and JavaScript
===============================================  ===============================================

Rules every page keeps: templates autoescape and nothing turns a stored string into markup
(highlighting is done by splitting text into segments the template wraps, see
``relata.web.text``); no inline script or style (the CSP forbids them); every form posts with
its CSRF token and answers with a redirect (303) to a page, so everything works without
JavaScript; an error keeps the layout and says what to do next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relata.web.ui import WebUI

if TYPE_CHECKING:
    from relata.bootstrap import Container


def web_routes(container: Container) -> WebUI:
    """The web interface for ``relata.api.app.create_app(container, web=...)``."""
    return WebUI(container)


__all__ = ["WebUI", "web_routes"]
