"""Moving a deployment: ``relata transfer`` to another database (``run``), and ``relata
backup``/``restore`` of the embedded default (``backup``); rows, vectors and originals are
copied and checked by ``rows``, ``vectors`` and ``originals`` (docs/decisions/0034)."""
