"""What a batch system says of a job (state, reason, nodes, exit code), and the report of a
job that ended before its workers connected."""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass
from typing import Mapping

from ..errors import GPUJobQueueError
from ..settings.intervals import query_timeout
from .job_commands import run_for_at_most

LOG_TAIL_LINES = 20
# The job script's last words (templates/job.sh.j2): the exit status, for batch systems that
# forget a job as soon as it ends.
_SCRIPT_EXIT = re.compile(r"^gpujobqueue: job script exits with status (\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class JobStatus:
    """One job as its batch system shows it.

    Parameters
    ----------
    job_id : str
        The batch system's id.
    state : str or None
        The state in the batch system's words (``"PENDING"``, ``"R"``, ``"qw"``, ``"RUN"``);
        None once the batch system no longer lists the job.
    ended : bool
        The job is over: finished, failed, cancelled, or no longer listed.
    reason : str, optional
        Why it waits or why it ended, as the batch system words it (``"Priority"``).
    nodes : str, optional
        Where it runs.
    exit_code : int, optional
        The job script's exit status, once known; a job killed by a signal has 128 + the signal.
    expected_start : float, optional
        When the batch system expects a waiting job to start (seconds since the epoch), where it estimates one.
    """

    job_id: str
    state: str | None
    ended: bool = False
    reason: str | None = None
    nodes: str | None = None
    exit_code: int | None = None
    expected_start: float | None = None

    def describe(self) -> str:
        """``"PENDING (Priority)"``, ``"FAILED, exit code 3"``, ``"no longer listed"``."""
        text = self.state or "no longer listed by the batch system"
        if self.reason and self.reason not in ("None", "-"):
            text += f" ({self.reason})"
        if self.exit_code is not None:
            text += f", exit code {self.exit_code}"
        return text


def expected_words(expected_start: float, now: float | None = None) -> str:
    """``"expected 14:32, in 11 min"``; another day's time with its weekday, a time past as ``"expected now"``."""
    now = time.time() if now is None else now
    if expected_start <= now + 30:
        return "expected now"
    when = datetime.datetime.fromtimestamp(expected_start)
    clock = when.strftime("%H:%M") if when.date() == datetime.date.fromtimestamp(now) else when.strftime("%a %H:%M")
    minutes = round((expected_start - now) / 60)
    wait = f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60} min" if minutes < 48 * 60 else ""
    return f"expected {clock}, in {wait or f'{minutes // 1440} days'}"


def local_epoch(text: str, layout: str) -> float | None:
    """A batch system's local time (``2026-12-06T14:32:00`` for ``%Y-%m-%dT%H:%M:%S``) as seconds since the epoch;
    None where it is no such time (``N/A``, ``Unknown``, ``UNKNOWN``, ``-``) or lies more than a year away."""
    try:
        epoch = datetime.datetime.strptime(text.strip()[:40], layout).timestamp()
    except (ValueError, OverflowError):
        return None
    return epoch if abs(epoch - time.time()) < 366 * 86400 else None


def unlisted(job_id: str) -> JobStatus:
    """The status of a job its batch system no longer lists: it has ended."""
    return JobStatus(job_id, None, ended=True)


async def run_query(
    command: list[str], *, required: bool = False, environment: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    """Run a batch system's query (with ``environment``'s variables): its exit status, output and error output.
    A query's failure is an answer; a command that is not there answers 127, unless ``required`` (then
    :class:`FileNotFoundError`)."""
    timeout = query_timeout()
    try:
        done = await run_for_at_most(command, timeout, environment)
    except OSError as error:
        if required and isinstance(error, FileNotFoundError):
            raise
        return 127, "", str(error)
    if done is None:
        return QUERY_TIMED_OUT, "", f"{os.path.basename(command[0])} did not answer within {timeout:g} s: stopped"
    return done


# What the job script writes of a prologue line that failed (templates/job.sh.j2).
PROLOGUE_FAILED = "gpujobqueue: prologue command failed"
# The exit status a stopped query answers with (timeout(1)'s).
QUERY_TIMED_OUT = 124


def read_log_tail(paths: list[str], lines: int = LOG_TAIL_LINES) -> tuple[str | None, str]:
    """The first of ``paths`` that exists (None where none does yet: PBS copies a job's output back after it),
    and its last ``lines`` lines, and those of the others that exist, each headed by its path."""
    found = [path for path in paths if os.path.isfile(path)]
    if not found:
        return None, ""
    parts = []
    for path in found:
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        read = text.splitlines()
        # A prologue line that failed (the job went on, as in dask-jobqueue) is kept above the tail: it is often why.
        earlier = [line for line in read[:-lines] if line.startswith(PROLOGUE_FAILED)][-5:]
        tail = "\n".join(([*earlier, "..."] if earlier else []) + read[-lines:])
        parts.append(tail if len(found) == 1 else f"==> {path} <==\n{tail}")
    return found[0], "\n".join(parts)


def script_exit_code(log_tail: str) -> int | None:
    """The exit status the job script wrote as its last words, if the tail holds them."""
    found = _SCRIPT_EXIT.findall(log_tail)
    return int(found[-1]) if found else None


class JobFailedError(GPUJobQueueError, RuntimeError):
    """A job ended before its workers connected to the scheduler (or before its scheduler started).

    Parameters
    ----------
    name : str
        The job's name in the cluster.
    batch : str
        Its batch system.
    status : JobStatus
        The batch system's last word on it.
    log_path : str, optional
        Its output file.
    log_tail : str
        The end of that file.
    before : str
        What it ended before.
    """

    def __init__(
        self,
        name: str,
        batch: str,
        status: JobStatus,
        log_path: str | None,
        log_tail: str,
        before: str = "its workers connected",
    ):
        self.name = name
        self.batch = batch
        self.status = status
        self.job_id = status.job_id
        self.exit_code = status.exit_code
        self.log_path = log_path
        self.log_tail = log_tail
        message = f"job {name} ({batch} job {status.job_id}) ended before {before}: {status.describe()}"
        if log_path:
            message += f"\nThe end of its log {log_path}:\n" + "\n".join(
                "    " + line for line in log_tail.splitlines()
            )
        else:
            message += "\nIts log was not found (the batch system may copy it back later)."
        super().__init__(message)


class JobCannotStartError(JobFailedError):
    """The batch system keeps a job pending for a reason that waiting does not clear (SLURM's
    ``PartitionTimeLimit``, ``PartitionConfig``...); the cluster cancelled it. Its parameters are the first three of
    :class:`JobFailedError` (``status`` with the reason); it has no log.
    """

    def __init__(self, name: str, batch: str, status: JobStatus):
        super().__init__(name, batch, status, None, "")
        self.reason = status.reason
        self.args = (
            f"job {name} ({batch} job {status.job_id}) can never start: {batch} keeps it {status.describe()}, "
            "a reason that waiting does not clear (the job asks for more than its partition, QoS or account allows); "
            "it was cancelled",
        )

    def __str__(self) -> str:
        return self.args[0]
