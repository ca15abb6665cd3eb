"""The SQLite full-text legs turn query words into index tokens with FTS5's own tokenizer and
remember them per process (``text_search.sqlite._Tokenizer``). When the memory fills up it starts
over; a query whose words were partly remembered must still get every token (it raised
KeyError once the cache was full, which failed items in the relationships stage of a large
benchmark run)."""

from __future__ import annotations

import pysqlite3.dbapi2 as sqlite

from relata.storage.sql.text_search import sqlite as text_search
from relata.storage.sql.text_search.sqlite import _Tokenizer


def test_a_full_cache_starts_over_and_still_tokenizes_every_term(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(text_search, "_TOKEN_CACHE_TERMS", 4)
    tok = _Tokenizer(sqlite, "'porter unicode61'")
    assert tok.tokens(["herons", "nesting"]) == [("heron",), ("nest",)]
    assert tok.tokens(["herons", "colonies", "growing"]) == [("heron",), ("coloni",), ("grow",)]
    # Over the bound: the cache restarts, and the remembered "herons" is tokenized again.
    assert tok.tokens(["herons", "seals", "tides"]) == [("heron",), ("seal",), ("tide",)]
    assert tok.tokens(["seals"]) == [("seal",)]
