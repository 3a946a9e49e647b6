"""Waiting for a cluster's workers: a failed job's error raised, and a timeout that says why the jobs wait."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Awaitable, Callable, Mapping

from dask.utils import parse_timedelta
from distributed.core import Status

from ..errors import BatchSystemUnreachableError, GPUJobQueueError
from ..settings.limits import MAX_JOBS_PER_CLUSTER, MAX_WAIT_SECONDS
from ..settings.validation import parse_count, parse_duration
from .job_watch import JobWatch
from .progress import WaitProgress
from .replacement import Replacement

try:
    from distributed.deploy.cluster import SchedulerInfo, WorkerStartTimeoutError
except ImportError:  # older distributed keeps a plain dict and raises a TimeoutError
    SchedulerInfo = dict

    class WorkerStartTimeoutError(asyncio.TimeoutError):  # type: ignore[no-redef]
        def __init__(self, available_workers: int, expected_workers: int, timeout: Any):
            super().__init__(f"only {available_workers} of {expected_workers} workers started within {timeout}")


logger = logging.getLogger("gpujobqueue.cluster")


class WorkersNotStartedError(WorkerStartTimeoutError, GPUJobQueueError):
    """:meth:`~GPUJobQueueCluster.wait_for_workers` timed out; the message keeps why the jobs
    wait, as the batch system said: ``0/8 workers after 12 s; SLURMGPUCluster-0 PENDING (Resources)``.

    Attributes
    ----------
    waiting : list of str
        Each job without all its workers: its name, state and the batch system's reason.
    """

    def __init__(self, available_workers: int, expected_workers: int, timeout: Any, waiting: list[str]):
        self.waiting = waiting
        super().__init__(available_workers, expected_workers, timeout)
        self.available_workers, self.expected_workers, self.timeout = available_workers, expected_workers, timeout

    def __str__(self) -> str:
        seconds = parse_timedelta(self.timeout)
        return (
            f"{self.available_workers}/{self.expected_workers} workers after {seconds:g} s; "
            f"{', '.join(self.waiting) or 'no job submitted'}"
        )


# Jobs named in a wait_for_workers timeout; the rest are counted.
MAX_JOBS_NAMED = 8
# The shortest timeout: one of 0 would wait without end (distributed's reading of it).
SHORTEST_TIMEOUT_SECONDS = 0.1


def wait_arguments(n_workers: Any, timeout: Any, workers_per_job: int) -> tuple[int, float | None]:
    """``wait_for_workers``' arguments, read; ``workers_per_job``: a GPU job's and a CPU job's workers together."""
    n_workers = parse_count("n_workers", n_workers, minimum=1, maximum=MAX_JOBS_PER_CLUSTER * workers_per_job)
    return n_workers, parse_timeout(timeout)


def parse_timeout(timeout: Any) -> float | None:
    """A method's ``timeout`` (``wait_for_workers``, ``close``) in seconds, from 0.1 s to a week; None: no end."""
    return None if timeout is None else parse_duration("timeout", timeout, SHORTEST_TIMEOUT_SECONDS, MAX_WAIT_SECONDS)


async def wait_for_workers(
    replacement: Replacement,
    watch: JobWatch,
    identity: Callable[[], Awaitable[Mapping[str, Any]]],
    n_workers: int = 0,
    timeout: Any = None,
) -> None:
    """Wait for ``n_workers`` running workers, raising a failure that stops the wait rather than waiting."""
    deadline = None if not timeout else time.monotonic() + parse_timedelta(timeout)
    last_report = time.monotonic()
    progress = WaitProgress(n_workers)  # on a terminal only
    said_no_estimates = False
    try:
        while True:
            # Each failed job is logged and replaced; the one that stopped the replacing is raised.
            failure = replacement.take_stop()
            if failure is not None:
                raise failure
            workers = (await identity())["workers"].values()
            running = sum(w["status"] == Status.running.name for w in workers)
            if running >= n_workers:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise WorkersNotStartedError(running, n_workers, timeout, await why_jobs_wait(watch))
            if replacement.deferred_since is not None and watch.never_answered(replacement.limit):
                error = str(watch.unreachable_error)
                raise BatchSystemUnreachableError(watch.batch, error, watch.unanswered_in_a_row, watch.interval)
            rows = watch.rows()
            estimates = watch.estimates_note(rows)
            if progress.shown:
                progress.show(running, rows, watch.silence(), estimates)
            if estimates and watch.start_estimates is None and not said_no_estimates:
                said_no_estimates = True  # once; the progress line and the jobs table show each estimate
                logger.info("gpujobqueue: %s", estimates)
            if time.monotonic() - last_report > 60:
                last_report = time.monotonic()
                waiting = [row.waiting("submitted") for row in rows if row.workers == 0]
                logger.info(
                    "gpujobqueue: %d of %d workers running; waiting for %s",
                    running,
                    n_workers,
                    ", ".join(waiting) or watch.silence() or "jobs to be submitted",
                )
            await asyncio.sleep(0.2)
    finally:
        progress.close()


async def why_jobs_wait(job_watch: JobWatch) -> list[str]:
    """Each job short of its workers, as the batch system says now (``name STATE (reason)``), or its outage."""
    if job_watch.unreachable_since is None:  # in an outage, the notice says so without a query's wait
        with contextlib.suppress(Exception):  # the timeout is raised whatever the batch system says
            await asyncio.wait_for(job_watch.poll(), 30)
    rows = job_watch.rows()
    waiting = [row.waiting("not yet listed") for row in rows if row.workers < max(1, row.gpus)]
    if len(waiting) > MAX_JOBS_NAMED:
        waiting = waiting[:MAX_JOBS_NAMED] + [f"{len(waiting) - MAX_JOBS_NAMED} more"]
    if rows.notice:
        waiting.append(rows.notice)
    return waiting
