"""Embedders: turning chunk texts into vectors (the ``Embedder`` port's adapters).

* ``onnx.OnnxEmbedder``: the default (provider ``local``), all-MiniLM-L6-v2 run in-process
  with onnxruntime, offline;
* ``ollama.OllamaEmbedder`` and ``openai_compatible.OpenAICompatibleEmbedder``: HTTP
  providers, built on ``relata.providers`` (bounded retries, safe HTTP);
* ``factory.build_embedder``: picks one from settings (``None`` for provider ``none``);
* ``stage``: the ``embed_item`` pipeline stage and ``VectorWriter`` (chunks to stored vectors);
  ``reembed``: the ``reembed_workspace`` job; ``status``: the model status page's numbers
  (docs/decisions/0011-embed-stage-and-reembedding.md).

Every adapter returns exactly one vector per input, in input order, of a fixed width, or
raises ``Permanent``; see docs/decisions/0006-embedding-providers.md.
"""
