"""The errors of site files (a file, key and line), and the dotted key paths they name."""

from __future__ import annotations

import os
from typing import Any, Iterable

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
        # file:line: key: message on one line, an unprintable character written as its escape
        text = f"{path}:{line}: {key or '(file)'}: {message}" if line else f"{path}: {key or '(file)'}: {message}"
        GPUJobQueueError.__init__(
            self, text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        )


class QueueRefusedError(SiteConfigError, ValidationError):
    """A job the queue cannot take: a :class:`SiteConfigError` naming the site key whose limit it breaks, and a
    :class:`~gpujobqueue.errors.ValidationError` whose ``field`` is the keyword to change."""

    def __init__(self, path: str | os.PathLike[str], key: str, line: int | None, message: str, field: str):
        super().__init__(path, key, line, message)
        self.field = field


def dotted_key(path: Iterable) -> str:
    return ".".join(str(p) for p in path)


def value_at(data: Any, key: Iterable, missing: Any = None) -> Any:
    """The value at a key path of a site's data (``("queues", "debug", "charge")``), or ``missing`` where a
    key on the way is not there."""
    for part in key:
        if not isinstance(data, dict) or part not in data:
            return missing
        data = data[part]
    return data
