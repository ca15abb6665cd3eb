"""Ingestion: how every document enters Relata.

``service.IngestService`` admits, validates, sniffs, de-duplicates and stores an upload and
enqueues the pipeline; ``stages`` holds the ``parse_item`` and ``chunk_item`` job handlers;
``pipeline`` the stage kinds, their idempotency keys and what follows chunking;
``catalog.ItemCatalog`` reads, downloads, deletes and reprocesses items; ``originals`` keeps
the uploaded bytes under the data dir; ``validation`` the rules for what callers send.
See docs/decisions/0010-ingestion-pipeline.md.
"""
