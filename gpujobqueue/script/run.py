"""Self-contained batch scripts: the scheduler, the GPU workers and the user's own script as
the client, all in one job (``gpujobqueue render SITE|BATCH --run analysis.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import ValidationError
from ..settings.validation import one_line, parse_seconds, path_text

DEFAULT_WORKERS_TIMEOUT = 300


@dataclass(frozen=True)
class ClientRun:
    """The user's Python ``script`` (an absolute path) that runs as the job's client, with its ``args``, once the
    job's GPU workers are up (past ``workers_timeout`` seconds the job fails, saying how many registered); it
    finds the scheduler through ``DASK_SCHEDULER_ADDRESS`` (``Client()`` with no address)."""

    script: str
    args: tuple[str, ...] = ()
    workers_timeout: int = DEFAULT_WORKERS_TIMEOUT

    @classmethod
    def from_command_line(
        cls, script: str, args: Sequence[str] = (), *, workers_timeout: Any = DEFAULT_WORKERS_TIMEOUT
    ) -> "ClientRun":
        """Check the script exists and every argument is one line (else a ValidationError); resolve the script's path.
        ``workers_timeout`` is a duration (seconds, ``"10m"``), rounded up to whole seconds."""
        path = Path(path_text("run", script)).expanduser()
        try:
            is_file = path.is_file()
        except OSError as error:  # a folder on the way that may not be searched
            raise ValidationError("run", f"{script!r}: {error.strerror}") from None
        if not is_file:
            raise ValidationError("run", f"{script!r} is not a file")
        seconds = parse_seconds("workers_timeout", workers_timeout)
        return cls(
            script=str(path.resolve()),
            args=tuple(one_line("run", arg) for arg in args),
            workers_timeout=seconds,
        )
