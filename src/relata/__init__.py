"""Relata: a self-hosted, evidence-grounded knowledge system."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("relata")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"
