"""Provider plumbing shared by every AI adapter: bounded retries and safe outbound HTTP.

``retry`` holds the provider-agnostic retry helpers (``do``, ``RetryPolicy``, ``permanent``,
``is_retryable`` and the provider error types); ``http`` holds the one way Relata talks to an
AI provider over HTTP (no redirects, bounded responses, a timeout on every call, cancellation
honoured, secrets redacted from every error). The embedders and the language-model analysers
both build on these; nothing here knows which provider it talks to.
"""
