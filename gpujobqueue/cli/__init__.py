"""The command line, ``gpujobqueue`` (and ``dask gpujobqueue``): the click group and its commands."""

from .main import main

__all__ = ["main"]
