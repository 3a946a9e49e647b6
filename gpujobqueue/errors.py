"""The exceptions gpujobqueue raises at its users."""

from __future__ import annotations

import os
from typing import Any


class GPUJobQueueError(Exception):
    """Base class of every error gpujobqueue raises on purpose."""


class ValidationError(GPUJobQueueError, ValueError):
    """A value given for one field is not of the accepted form.

    Parameters
    ----------
    field : str
        The keyword (or config key) whose value was refused.
    message : str
        What is wrong and which form is accepted.
    """

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


class FileRefusedError(ValidationError):
    """A file refused before what it holds is parsed: it cannot be read, is not a regular file
    (a FIFO, a device, a directory), is larger than its bound, or is not UTF-8 text.

    Parameters
    ----------
    path : str
        The file; it is the error's ``field``.
    message : str
        Why it is refused.
    line : int, optional
        The 1-based line the problem is on, where there is one.
    """

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None):
        self.field = self.path = os.fspath(path)
        self.message, self.line = message, line
        GPUJobQueueError.__init__(self, f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")


class JobSizeMissingError(ValidationError):
    """A job off any site whose cores or memory nothing says (dask-jobqueue refuses it too).

    Parameters
    ----------
    owner : str
        The class the keywords were given to.
    missing : list of str
        ``cores``, ``memory`` or both.
    message : str
        The message, in keyword terms.
    """

    def __init__(self, owner: str, missing: list[str], message: str):
        self.owner, self.missing = owner, list(missing)
        super().__init__(missing[0], message)

    def command_line_text(self) -> str:
        """The same advice in option terms, for ``render`` and the other commands."""
        return (
            f"{' and '.join('--' + name for name in self.missing)} not given: with no --site to size its jobs, say how "
            "many cores and how much memory each job asks for, as dask-jobqueue needs them: --cores 8 --memory 64GB, "
            "or --cpus-per-gpu and --memory-per-gpu"
        )


class UnknownKeywordError(GPUJobQueueError, TypeError, ValueError):
    """A keyword that no gpujobqueue cluster accepts.

    A :class:`TypeError`, as Python's own error for an unexpected keyword argument, and a
    :class:`ValueError`, as dask-jobqueue raises it.

    Parameters
    ----------
    keyword : str
        The keyword refused.
    suggestions : list of str, optional
        Accepted keywords spelt like it.
    owner : str, optional
        The class that refused it (``SLURMGPUCluster``).
    given : dict, optional
        Every keyword given with it, named as dask-jobqueue shows its ``job_kwargs`` (the refused
        keyword with its value, shortened; the others by name only).
    """

    def __init__(
        self,
        keyword: str,
        suggestions: list[str] | None = None,
        owner: str | None = None,
        given: dict[str, Any] | None = None,
    ):
        self.field = keyword
        self.suggestions = list(suggestions or [])
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        context = ""
        if owner is not None:
            # The other keywords by name only: their values (an environment's, say) may be private.
            named = ", ".join(
                f"{name}={shown(value)}" if name == keyword else name for name, value in (given or {}).items()
            )
            context = f" (unexpected keyword argument {keyword!r} given to {owner} with job_kwargs {named})"
        super().__init__(f"{keyword}: unknown keyword.{hint}{context}")


def shown(value: Any, limit: int = 60) -> str:
    """``value`` as a message shows it: its repr, cut to ``limit`` characters; a value that has none
    (an integer past Python's 4300 digits, a list or mapping nested past the recursion limit) by its type."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SubmissionError(GPUJobQueueError, RuntimeError):
    """The batch system refused a job, or could not be reached."""


class BatchCommandNotFoundError(SubmissionError):
    """A batch command (``sbatch``, ``squeue``, ...) that is not on this machine: not an outage to
    wait out, since a command that does not exist will not start answering.

    Parameters
    ----------
    command : str
        The command not found.
    batch : str
        The batch system that runs it.
    """

    def __init__(self, command: str, batch: str):
        self.command, self.batch = command, batch
        super().__init__(
            f"{command} is not on PATH: {batch} clusters submit and watch their jobs with it. Load the module "
            f"that provides it (module load {batch}), or run on a login node of the {batch} machine: this host "
            "is not one. Nothing waits for it to appear."
        )


class BatchSystemUnreachableError(SubmissionError):
    """A batch system whose commands are here but that has answered none of a cluster's asks since it started
    (its controller down, or this host not its client): raised by ``wait_for_workers`` after
    ``gpujobqueue.replace.max-failures`` asks in a row; the cluster keeps asking, and submits when it answers.

    Parameters
    ----------
    batch : str
        The batch system.
    error : str
        Its last error, in its own words.
    asks : int
        The asks in a row it left unanswered.
    interval : float
        Seconds between two asks (``gpujobqueue.job-poll-interval``).
    """

    def __init__(self, batch: str, error: str, asks: int, interval: float):
        self.batch, self.error, self.asks = batch, error, asks
        super().__init__(
            f"{batch} does not answer: {error}\nIt answered none of the cluster's {asks} asks: its controller is "
            f"down, or this host is not a {batch} client (no configuration for its commands); `gpujobqueue check` "
            f"asks it once. Run on a login node of the {batch} machine. The cluster's jobs are submitted when it "
            f"answers (asked again every {interval:g} s)."
        )


class InterfaceNotFoundError(ValidationError):
    """The scheduler would listen on a network interface that this host does not have: a
    site's interface off that site (a laptop, another centre), or a name mistyped.

    Parameters
    ----------
    field : str
        ``interface`` or ``scheduler_options``: the setting that named it.
    interface : str
        The interface asked for.
    available : dict
        This host's interfaces that are up, name to IPv4 addresses.
    message : str
        What is wrong and what to do.
    """

    def __init__(self, field: str, interface: str, available: dict[str, list[str]], message: str):
        self.interface, self.available = interface, available
        super().__init__(field, message)
