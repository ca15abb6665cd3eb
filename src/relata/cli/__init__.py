"""The ``relata`` command line."""
