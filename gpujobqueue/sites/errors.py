"""The errors of site files: :class:`SiteConfigError` (a file, key and line) and
:class:`QueueRefusedError` (a job a site's queue cannot take), and the dotted key paths they name."""

from __future__ import annotations

import os
from typing import Iterable

from ..errors import GPUJobQueueError, ValidationError


class SiteConfigError(GPUJobQueueError):
    """A site file that is not valid: names the file, the key path and the line.

    Parameters
    ----------
    path : str
        The file.
    key : str
        The key path, dotted (``queues.debug.max_walltime``), or empty for the whole file.
    line : int or None
        1-based line of the key in the file.
    message : str
        What is wrong.
    """

    def __init__(self, path: str | os.PathLike[str], key: str, line: int | None, message: str):
        self.path, self.key, self.line, self.message = str(path), key, line, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {key or '(file)'}: {message}")


class QueueRefusedError(SiteConfigError, ValidationError):
    """A job the queue cannot take (too many or too few nodes, too long, no GPUs): a
    :class:`SiteConfigError` naming the site key whose limit it breaks, and a
    :class:`~gpujobqueue.errors.ValidationError` whose ``field`` is the keyword to change
    (``queue`` when the user named a queue and another one takes the job).

    Parameters
    ----------
    path, key, line, message
        As :class:`SiteConfigError`.
    field : str
        The keyword to change.
    """

    def __init__(self, path: str | os.PathLike[str], key: str, line: int | None, message: str, field: str):
        self.path, self.key, self.line, self.message, self.field = str(path), key, line, message, field
        where = f"{self.path}:{line}" if line else self.path
        Exception.__init__(self, f"{where}: {key or '(file)'}: {message}")


def dotted_key(path: Iterable) -> str:
    return ".".join(str(p) for p in path)
