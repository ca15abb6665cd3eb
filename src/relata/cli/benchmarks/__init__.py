"""The benchmark drivers behind ``relata bench``: one module per benchmark.

``ingest`` (a JSONL corpus through the ingest service and the pipeline), ``embed`` (the embed
stage against raw onnxruntime) and ``retrieval`` (a BEIR dataset through the search service)
each expose ``register(group)``; ``common`` holds what they share (settings, fresh containers,
bulk ingestion and the pipeline run, the machine record, statement counting, output). They sit
at the CLI's layer: they build containers with ``relata.bootstrap`` and reach data only
through the services and repositories on it. No driver imports another. Figures and exact
commands are recorded in docs/benchmarks.md.
"""
