"""Strings that would run script or break out of markup if a page did not escape them: used
as titles, file names, metadata, document text and entity names in the web tests (server
side: the raw string never appears in a page; in the browser: no script runs)."""

from __future__ import annotations

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


def leaked(html: str) -> list[str]:
    """The corpus strings present unescaped in ``html`` (a correct page leaks none)."""
    return [s for s in XSS[:-1] if s in html]
