"""Language-model analysis: the analysers, strict output validation and the model tasks.

    chat / openai_compatible / ollama   the Analyser adapters (raw content, never parsed)
    decode / schema / degenerate        the one rule for model output (ADR 0007)
    task / answer                       task declarations; generate_answer as pure functions
    service / factory                   AnalysisService (limiter, metrics), built from settings

Nothing is built at import time; ``relata.bootstrap`` calls ``factory.build_analysis``.
"""
