"""Strings that would run script or break out of markup if a page did not escape them: used
as titles, file names, metadata, document text and entity names in the web tests (server
side: the raw string never appears in a page; in the browser: no script runs)."""

from __future__ import annotations

import re

#: Each would execute or inject when rendered raw in text, an attribute or a URL.
XSS = (
    "<script>window.__xss=1</script>",
    '"><img src=x onerror="window.__xss=2">',
    "'><svg onload=window.__xss=3>",
    "javascript:window.__xss=4",
    "</textarea><script>window.__xss=5</script>",
    '<a href="javascript:window.__xss=6">click</a>',
    "{{ 7*7 }}{% raw %}",
)

#: One document's text holding all of them, each on its own line, with a findable word.
XSS_TEXT = "Zebrafish escaping probe.\n" + "\n".join(XSS) + "\nZebrafish end.\n"

#: A URL attribute whose value is a script URL (the only way the plain "javascript:..."
#: string does harm: as text it is just text).
_SCRIPT_URL = re.compile(r"""\b(?:href|src|action|formaction)\s*=\s*["']?\s*javascript:""", re.I)


def leaked(html: str) -> list[str]:
    """The corpus strings present unescaped in ``html`` (a correct page leaks none): every
    string with markup characters found verbatim, and a ``javascript:`` URL in a link,
    source or form target."""
    found = [s for s in XSS if any(ch in s for ch in "<>\"'") and s in html]
    if _SCRIPT_URL.search(html):
        found.append("javascript: URL in an attribute")
    return found
