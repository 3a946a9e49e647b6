"""The version of gpujobqueue (setup.cfg reads it from here; the package re-exports it)."""

__version__ = "0.1.0"
