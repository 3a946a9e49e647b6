"""The cluster's watch over its jobs: it asks the batch system how they are at a modest rate
(one query per batch system per interval), reports a job that ends before its workers
connect, retires jobs one at a time before their walltime (:mod:`gpujobqueue.handover`),
forgets jobs that have ended and has them replaced (:mod:`gpujobqueue.replacement`),
notices when the batch system cannot be reached, and keeps what ``cluster.jobs`` shows."""

from __future__ import annotations

import asyncio
import html
import logging
import time
from dataclasses import dataclass
from typing import Any

from . import replacement
from .background import BackgroundLoop
from .handover import Handover, Tenure
from .intervals import job_poll_interval
from .job_status import JobCannotStartError, JobFailedError, JobStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobRow:
    """One job of a cluster, as :attr:`~gpujobqueue.cluster.GPUJobQueueCluster.jobs` lists it.

    Parameters
    ----------
    name : str
        The job's name in the cluster (its workers are ``<name>-<i>``).
    job_id : str or None
        The batch system's id; None until submitted.
    state : str or None
        The batch system's word for it, None before its first answer.
    reason : str or None
        Why it waits (``Priority``), as the batch system says.
    nodes : str or None
        Where it runs.
    gpus : int
        GPUs it asked for.
    workers : int
        Its workers connected to the scheduler now.
    """

    name: str
    job_id: str | None
    state: str | None
    reason: str | None
    nodes: str | None
    gpus: int
    workers: int

    COLUMNS = ("name", "job_id", "state", "reason", "nodes", "gpus", "workers")


class JobTable(list):
    """The cluster's jobs, one :class:`JobRow` each; shown as a table.

    Attributes
    ----------
    notice : str or None
        What the table cannot show as rows: that the batch system cannot be reached (its
        states are then unknown), jobs waiting to be submitted, jobs held by a per-user limit of
        the queue, replacing stopped.
    """

    notice: str | None = None

    def _cells(self) -> list[list[str]]:
        return [
            ["-" if getattr(row, column) in (None, "") else str(getattr(row, column)) for column in JobRow.COLUMNS]
            for row in self
        ]

    def __repr__(self) -> str:
        rows = [list(JobRow.COLUMNS)] + self._cells()
        widths = [max(len(row[i]) for row in rows) for i in range(len(JobRow.COLUMNS))]
        table = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
        return f"{self.notice}\n{table}" if self.notice else table

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{column}</th>" for column in JobRow.COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>" for cells in self._cells()
        )
        notice = f"<p><strong>{html.escape(self.notice)}</strong></p>" if self.notice else ""
        return f"{notice}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class JobWatch(BackgroundLoop):
    """Watches the jobs of one cluster.

    Parameters
    ----------
    cluster : GPUJobQueueCluster
        The cluster whose ``workers`` (its jobs) are watched.
    interval : float, optional
        Seconds between two looks (default ``gpujobqueue.job-poll-interval``).
    """

    def __init__(self, cluster: Any, interval: float | None = None):
        self.cluster = cluster
        self.interval = job_poll_interval() if interval is None else interval
        self.statuses: dict[str, JobStatus] = {}
        self.failures: list[JobFailedError] = []  # every job that ended before its workers connected
        self._raised = 0  # failures[:_raised] have been raised
        self.first_connected: dict[str, float] = {}  # job -> when its first worker connected (monotonic clock)
        self._polling = asyncio.Lock()  # the periodic look and cluster.jobs must not act on one ending twice
        self.unreachable_since: float | None = None  # time.time() of the first failed query of this outage
        self.unreachable_error: str | None = None  # the batch system's last error then
        self.handover = Handover(self.interval)

    @property
    def connected(self) -> set[str]:
        """Jobs of which a worker has connected at some point."""
        return set(self.first_connected)

    def note_worker(self, worker_name: str) -> None:
        """A worker connected: its job has started workers."""
        job = self.cluster._worker_to_job.job_of(worker_name)
        if job not in self.first_connected:
            self.first_connected[job] = time.monotonic()
            self.cluster._replacement.worker_connected()
            entry = self.cluster.workers.get(job)
            self.handover.job_started(getattr(getattr(entry, "job", entry), "submitted_at", None))

    @property
    def unreachable(self) -> str | None:
        """``"batch system unreachable since HH:MM:SS: <its error>"`` during an outage, else None."""
        if self.unreachable_since is None:
            return None
        since = time.strftime("%H:%M:%S", time.localtime(self.unreachable_since))
        return f"batch system unreachable since {since}: {self.unreachable_error}"

    def _answered(self, error: str | None) -> None:
        """Record whether the batch system answered (error None) or not."""
        if error is None:
            if self.unreachable_since is not None:
                logger.warning(
                    "gpujobqueue: the batch system answers again after %.0f s", time.time() - self.unreachable_since
                )
            self.unreachable_since = self.unreachable_error = None
            return
        if self.unreachable_since is None:
            self.unreachable_since = time.time()
            logger.warning("gpujobqueue: the batch system cannot be reached: %s", error)
        self.unreachable_error = error

    async def reachable(self) -> bool:
        """Ask the batch system about a job it never gave; record and return whether it answered."""
        error = await self.cluster.job_cls.probe()
        self._answered(error)
        return error is None

    def take_failure(self) -> JobFailedError | None:
        """The oldest failure not raised yet (each is raised once)."""
        if self._raised == len(self.failures):
            return None
        self._raised += 1
        return self.failures[self._raised - 1]

    async def stop(self) -> None:
        await super().stop()
        await self.handover.stop()

    async def _run(self) -> None:
        while True:
            try:
                await self.poll()
            except Exception:  # the watch must outlive one bad answer
                logger.exception("gpujobqueue: could not ask the batch system about the cluster's jobs")
            await asyncio.sleep(self.interval)

    def watched_jobs(self) -> dict[str, Any]:
        """The cluster's submitted jobs that it still wants (those being retired are left out)."""
        jobs = {}
        for name, entry in list(self.cluster.workers.items()):
            job = getattr(entry, "job", entry)  # the scheduler job's entry holds the job
            if getattr(job, "job_id", None) and name in self.cluster.worker_spec:
                jobs[str(name)] = job
        return jobs

    async def poll(self) -> None:
        """Ask the batch system about every watched job once; act on those that ended."""
        async with self._polling:
            await self._poll()

    async def _poll(self) -> None:
        jobs = self.watched_jobs()
        by_class: dict[type, list[tuple[str, Any]]] = {}
        for name, job in jobs.items():
            by_class.setdefault(type(job), []).append((name, job))
        for job_cls, group in by_class.items():
            statuses, error = await job_cls.query_answer([job for _, job in group])
            self._answered(None if statuses is not None else error)
            if statuses is None:
                continue
            for name, job in group:
                status = statuses.get(job.job_id)
                if status is None:
                    continue
                previous = self.statuses.get(name)
                self.statuses[name] = status
                if previous is None or previous.describe() != status.describe():
                    logger.info("gpujobqueue: job %s (%s job %s): %s", name, job.batch, job.job_id, status.describe())
                if status.ended and name in self.cluster.worker_spec and (previous is None or not previous.ended):
                    await self._ended(name, job, status)
                elif not status.ended and name in self.cluster.worker_spec and self._hopeless(job, status):
                    await self._cannot_start(name, job, status)
        for name in list(self.statuses):
            if name not in self.cluster.workers:
                del self.statuses[name]
        for name in list(self.first_connected):
            if name not in self.cluster.workers and name not in self.cluster.worker_spec:
                del self.first_connected[name]
        if self.cluster._replacement.deferred_since is not None and not by_class:
            await self.reachable()  # no job to ask about: ask whether the batch system answers
        self.hand_over()
        if self.unreachable_since is None:
            await replacement.top_up(self.cluster)

    def tenures(self) -> list[Tenure]:
        """The connected jobs whose workers retire before a walltime (the scheduler's job aside)."""
        pinned = self.cluster.pinned_jobs
        tenures = []
        for name, job in self.watched_jobs().items():
            connected, lifetime = self.first_connected.get(name), job.request.worker_lifetime
            if connected is None or not lifetime or name in pinned:
                continue
            pool = self.cluster.worker_spec[name].get("pool", "gpu")
            tenures.append(Tenure(name, pool, connected, lifetime, job.request.lifetime_stagger))
        return tenures

    def hand_over(self) -> None:
        """Plan the retirements again, and start those that are due."""
        self.handover.replan(self.tenures())
        for name in self.handover.due():
            workers = [
                str(worker.get("name"))
                for worker in self.cluster.scheduler_info.get("workers", {}).values()
                if self.cluster._worker_to_job.job_of(str(worker.get("name"))) == name
            ]
            if not workers:
                continue
            logger.info(
                "gpujobqueue: job %s retires its %d worker(s) now, one at a time with the cluster's other jobs "
                "before their walltime",
                name,
                len(workers),
            )
            self.handover.retire(
                name, self.cluster.scheduler_comm.retire_workers(names=workers, remove=True, close_workers=True)
            )

    async def _ended(self, name: str, job: Any, status: JobStatus) -> None:
        if name in self.cluster.pinned_jobs:
            logger.error(
                "gpujobqueue: the scheduler's job %s (%s job %s) has ended: %s",
                name,
                job.batch,
                job.job_id,
                status.describe(),
            )
            return
        failure = None
        if name in self.handover.retiring:
            logger.info("gpujobqueue: job %s (%s job %s) retired: %s", name, job.batch, job.job_id, status.describe())
        elif name in self.connected:
            logger.warning(
                "gpujobqueue: job %s (%s job %s) has ended: %s", name, job.batch, job.job_id, status.describe()
            )
        else:
            failure = await job.failure(status)
            logger.error("gpujobqueue: %s", failure)
        # The batch system is done with it: forget it, so that scale() and adapt() count it
        # gone (and a job stuck in an error state is deleted from the queue); the poll then
        # submits its replacement (replacement.top_up), unless failures in a row stopped that.
        self.cluster.worker_spec.pop(name, None)
        await self.cluster._correct_state()
        if failure is not None:  # recorded once the job is gone: wait_for_workers may raise it at once
            self.failures.append(failure)
            self.cluster._replacement.job_failed(failure)

    @staticmethod
    def _hopeless(job: Any, status: JobStatus) -> bool:
        """The batch system keeps the job pending for a reason waiting does not clear."""
        reason = (status.reason or "").split(",")[0].strip()
        return reason in job.batch_system.hopeless_reasons

    async def _cannot_start(self, name: str, job: Any, status: JobStatus) -> None:
        """Cancel a job that can never start, and raise its reason from wait_for_workers."""
        if name in self.cluster.pinned_jobs or name in self.connected:
            return
        failure = JobCannotStartError(str(name), job.batch, status)
        logger.error("gpujobqueue: %s", failure)
        self.cluster.worker_spec.pop(name, None)
        await self.cluster._correct_state()  # cancels it
        self.failures.append(failure)
        self.cluster._replacement.job_failed(failure)  # stops the replacing: the same request would wait for ever too

    def rows(self) -> JobTable:
        """The table of :attr:`GPUJobQueueCluster.jobs`, from the last answers."""
        connected: dict[str, int] = {}
        for worker in self.cluster.scheduler_info.get("workers", {}).values():
            job_name = self.cluster._worker_to_job.job_of(str(worker.get("name")))
            connected[job_name] = connected.get(job_name, 0) + 1
        table = JobTable()
        outage = self.unreachable
        for name, entry in list(self.cluster.workers.items()):
            job = getattr(entry, "job", entry)
            status = self.statuses.get(str(name))
            launch = getattr(job, "launch", None)
            state = status.state if status else None
            reason = status.reason if status and status.reason not in ("None", "-") else None
            if outage:  # the last answer is stale: say so rather than show it as now
                state, reason = "unknown", f"last seen {state}" if state else None
            table.append(
                JobRow(
                    name=str(name),
                    job_id=getattr(job, "job_id", None),
                    state=state,
                    reason=reason,
                    nodes=status.nodes if status else None,
                    gpus=launch.gpus * job.request.nodes if launch is not None and not launch.cpu_workers else 0,
                    workers=connected.get(str(name), 0),
                )
            )
        table.notice = self.notice()
        return table

    def notice(self) -> str | None:
        """The outage, the jobs waiting for it to end, jobs held past a per-user limit, and a stop
        of the replacing, in words."""
        kept = self.cluster._replacement
        parts = [self.unreachable] if self.unreachable else []
        waiting = sum(kept.missing(self.cluster, pool) for pool in kept.targets) if kept.may_replace else 0
        if kept.deferred_since is not None and waiting:
            parts.append(f"{waiting} job(s) to submit when it answers")
        held = kept.hold.notice()
        if held:
            parts.append(held)
        if kept.stopped is not None:
            if isinstance(kept.stopped, JobFailedError):
                why = f"{kept.failures_in_a_row} job(s) in a row failed"
            else:
                why = "a submission was refused"
            first_line = str(kept.stopped).splitlines()[0]
            parts.append(f"replacing stopped after {why} (scale() again to resume): {first_line}")
        return "; ".join(parts) or None
