"""Relata for AI agents over the Model Context Protocol (ADR 37): the tools (``tools``), what
they call (``backend``: the REST handlers in-process, or ``relata.client`` against a running
Relata), and ``/mcp`` in ``relata serve`` (``http``). ``relata mcp`` is the stdio command
(``relata.cli.mcp``)."""
