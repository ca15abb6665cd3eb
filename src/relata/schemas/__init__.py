"""The wire shapes of Relata's responses (pydantic), shared by the HTTP API and the CLI's
``--json`` output, so both print the same document for the same result.

Each module builds its response models from the domain dataclasses and the feature services'
result types (``to_out``-style functions). This package imports only ``relata.domain``, the
feature services' result types (search, ingest), and pydantic: never FastAPI, Starlette or
storage, so the CLI can import it without the web stack and the API without the CLI.
"""
