"""Configuration: every ``RELATA_*`` variable, declared once in ``settings``."""

from relata.config.settings import SETTINGS, Settings, load_settings

__all__ = ["SETTINGS", "Settings", "load_settings"]
