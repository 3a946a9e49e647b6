"""Waiting for a cluster's workers: a failed job's error raised rather than a wait for workers
that will never come, and a timeout that says why the jobs wait (:class:`WorkersNotStartedError`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from dask.utils import parse_timedelta
from distributed.core import Status

from .errors import GPUJobQueueError
from .limits import MAX_JOBS_PER_CLUSTER, MAX_WAIT_SECONDS
from .progress import WaitProgress
from .validation import parse_count, parse_duration

try:
    from distributed.deploy.cluster import SchedulerInfo, WorkerStartTimeoutError
except ImportError:  # older distributed keeps a plain dict and raises a TimeoutError
    # Kept: setup.cfg pins no distributed (only dask-jobqueue>=0.9, which allows releases without these names).
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


async def wait_for_workers(cluster: Any, n_workers: int = 0, timeout: Any = None) -> None:
    """Wait for ``n_workers`` running workers of ``cluster``. A job that ends before its workers
    connect is replaced (:meth:`~gpujobqueue.cluster.GPUJobQueueCluster.scale`); once
    ``gpujobqueue.replace.max-failures`` of them in a row have failed, raise the last one's
    :class:`JobFailedError` rather than wait for workers that will never come."""
    deadline = None if not timeout else time.monotonic() + parse_timedelta(timeout)
    last_report = time.monotonic()
    progress = WaitProgress(n_workers)  # on a terminal only
    try:
        while True:
            # Each failed job is logged and replaced; the one that stopped the replacing is raised.
            failure = cluster._replacement.take_stop()
            if failure is not None:
                raise failure
            cluster.scheduler_info = SchedulerInfo(await cluster.scheduler_comm.identity())
            running = sum(w["status"] == Status.running.name for w in cluster.scheduler_info["workers"].values())
            if running >= n_workers:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise WorkersNotStartedError(running, n_workers, timeout, await why_jobs_wait(cluster._job_watch))
            if progress.shown:
                progress.show(running, cluster._job_watch.rows())
            if time.monotonic() - last_report > 60:
                last_report = time.monotonic()
                waiting = [
                    f"{row.name} {row.state or 'submitted'}" + (f" ({row.reason})" if row.reason else "")
                    for row in cluster._job_watch.rows()
                    if row.workers == 0
                ]
                logger.info(
                    "gpujobqueue: %d of %d workers running; waiting for %s",
                    running,
                    n_workers,
                    ", ".join(waiting) or "jobs to be submitted",
                )
            await asyncio.sleep(0.2)
    finally:
        progress.close()


async def why_jobs_wait(job_watch: Any) -> list[str]:
    """Each job short of its workers, as the batch system says now: ``name STATE (reason)``;
    the batch system's outage, where it does not answer."""
    if job_watch.unreachable_since is None:  # in an outage, the notice says so without a query's wait
        with contextlib.suppress(Exception):  # the timeout is raised whatever the batch system says
            await asyncio.wait_for(job_watch.poll(), 30)
    rows = job_watch.rows()
    waiting = [
        f"{row.name} {row.state or 'not yet listed'}" + (f" ({row.reason})" if row.reason else "")
        for row in rows
        if row.workers < max(1, row.gpus)
    ]
    if len(waiting) > MAX_JOBS_NAMED:
        waiting = waiting[:MAX_JOBS_NAMED] + [f"{len(waiting) - MAX_JOBS_NAMED} more"]
    if rows.notice:
        waiting.append(rows.notice)
    return waiting


class WorkerWaiting:
    """:meth:`wait_for_workers` of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`: its arguments
    refused by name, a failed job raised, and a timeout that says why the jobs wait."""

    def wait_for_workers(self, n_workers: int, timeout: Any = None) -> None:
        """Wait for ``n_workers`` running workers, as distributed's does; a job that failed before
        its workers connected is raised (:class:`JobFailedError`) once replacing stops.

        Parameters
        ----------
        n_workers : int
            Workers to wait for, 1 or more.
        timeout : float or str, optional
            Seconds (or ``"10m"``) after which :class:`WorkersNotStartedError` says why the jobs
            wait; None waits without end.

        Raises
        ------
        ValidationError
            ``n_workers`` not a whole number of 1 or more (at most the workers of as many jobs as a
            cluster holds), or ``timeout`` not a duration from 0.1 s to a week.
        """
        pools = self.workers_per_job + (self.cpu_pool.processes if self.cpu_pool is not None else 0)
        n_workers = parse_count("n_workers", n_workers, minimum=1, maximum=MAX_JOBS_PER_CLUSTER * pools)
        if timeout is not None:
            timeout = parse_duration("timeout", timeout, SHORTEST_TIMEOUT_SECONDS, MAX_WAIT_SECONDS)
        return self.sync(self._wait_for_workers, n_workers, timeout=timeout)

    async def _wait_for_workers(self, n_workers: int = 0, timeout: Any = None) -> None:
        """distributed's own waits for workers whatever becomes of the jobs; this one raises a failed
        job's :class:`JobFailedError` once replacing stops, and a timeout that says why the jobs wait
        (:func:`wait_for_workers`)."""
        await wait_for_workers(self, n_workers, timeout)
