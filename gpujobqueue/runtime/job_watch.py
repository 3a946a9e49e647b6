"""The cluster's watch over its jobs, one batch system query per interval, and what ``cluster.jobs`` shows."""

from __future__ import annotations

import asyncio
import html
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..batch.base import BatchSystem
from ..jobs.job_status import JobCannotStartError, JobFailedError, JobStatus, expected_words
from ..jobs.usage import html_table, text_table
from .background import BackgroundLoop
from .handover import Tenure
from .jobbook import BookJob, JobBook, gpus_of
from .replacement import Replacement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobRow:
    """One job of a cluster, as :attr:`~gpujobqueue.cluster.GPUJobQueueCluster.jobs` lists it (None: not known yet)."""

    name: str
    job_id: str | None
    state: str | None
    reason: str | None
    expected: str | None
    nodes: str | None
    gpus: int
    workers: int

    COLUMNS = ("name", "job_id", "state", "reason", "expected", "nodes", "gpus", "workers")

    def waiting(self, unlisted: str) -> str:
        """``name STATE (reason), expected 14:32, in 11 min``; ``unlisted`` in the place of a state not yet known."""
        text = f"{self.name} {self.state or unlisted}" + (f" ({self.reason})" if self.reason else "")
        return text + (f", {self.expected}" if self.expected else "")


class JobTable(list):
    """The cluster's jobs, one :class:`JobRow` each; shown as a table below its ``notice`` (:meth:`JobWatch.notice`)."""

    notice: str | None = None

    def _cells(self) -> list[list[str]]:
        return [
            ["-" if getattr(row, column) in (None, "") else str(getattr(row, column)) for column in JobRow.COLUMNS]
            for row in self
        ]

    def __repr__(self) -> str:
        table = text_table(JobRow.COLUMNS, self._cells())
        return f"{self.notice}\n{table}" if self.notice else table

    def _repr_html_(self) -> str:
        notice = f"<p><strong>{html.escape(self.notice)}</strong></p>" if self.notice else ""
        return notice + html_table(JobRow.COLUMNS, self._cells())


class JobWatch(BackgroundLoop):
    """Watches the jobs of one cluster's ``book`` every ``interval`` seconds, telling the ``replacement``."""

    def __init__(
        self,
        book: JobBook,
        replacement: Replacement,
        *,
        probe: Callable[[], Awaitable[str | None]],
        retire_workers: Callable[[list[str]], Awaitable[Any]],
        interval: float,
        batch: str,
        start_estimates: str | None = None,
        no_start_estimates: str = "",
    ):
        self.book, self.replacement, self.batch = book, replacement, batch
        self.start_estimates, self.no_start_estimates = start_estimates, no_start_estimates
        self.probe, self.retire_workers = probe, retire_workers
        self.interval = interval
        self.failures: list[JobFailedError] = []  # every job that ended before its workers connected
        self._polling = asyncio.Lock()  # the periodic look and cluster.jobs must not act on one ending twice
        self.unreachable_since: float | None = None  # time.time() of the first failed query of this outage
        self.unreachable_error: str | None = None  # the batch system's last error then
        self.answered_once = False  # since the cluster started
        self.unanswered_in_a_row = 0

    def note_worker(self, worker_name: str) -> None:
        """A worker connected: its job has started workers."""
        if self.book.note_worker(worker_name):
            self.replacement.worker_connected()

    @property
    def unreachable(self) -> str | None:
        """``"batch system unreachable since HH:MM:SS: <its error>"`` during an outage, else None."""
        if self.unreachable_since is None:
            return None
        since = time.strftime("%H:%M:%S", time.localtime(self.unreachable_since))
        return f"batch system unreachable since {since}: {self.unreachable_error}"

    def silence(self) -> str | None:
        """``"slurm does not answer: <its error>; asking again every 5 s"`` during an outage, else None."""
        if self.unreachable_since is None:
            return None
        return f"{self.batch} does not answer: {self.unreachable_error}; asking again every {self.interval:g} s"

    def never_answered(self, asks: int) -> bool:
        """Whether the batch system has answered none of the cluster's asks, and left the last ``asks`` unanswered."""
        return not self.answered_once and self.unanswered_in_a_row >= asks

    def _answered(self, error: str | None) -> None:
        """Record whether the batch system answered (error None) or not."""
        self.answered_once = self.answered_once or error is None
        self.unanswered_in_a_row = 0 if error is None else self.unanswered_in_a_row + 1
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
        error = await self.probe()
        self._answered(error)
        return error is None

    async def stop(self) -> None:
        await super().stop()
        await self.book.handover.stop()

    async def _run(self) -> None:
        while True:
            try:
                await self.poll()
            except Exception:  # the watch must outlive one bad answer
                logger.exception("gpujobqueue: could not ask the batch system about the cluster's jobs")
            await asyncio.sleep(self.interval)

    async def poll(self) -> None:
        """Ask the batch system about every watched job once; act on those that ended."""
        async with self._polling:
            await self._poll()

    async def _poll(self) -> None:
        book = self.book
        by_system: dict[type[BatchSystem], list[tuple[str, BookJob]]] = {}
        for name, job in book.submitted().items():  # those being retired are left out
            by_system.setdefault(job.batch_system, []).append((name, job))
        for system, group in by_system.items():  # one query per batch system
            statuses, error = await system.query_answer([job for _, job in group])
            self._answered(None if statuses is not None else error)
            if statuses is None:
                continue
            for name, job in group:
                status = statuses.get(job.job_id)
                if status is None:
                    continue
                previous = book.statuses.get(name)
                book.statuses[name] = status
                if previous is None or previous.describe() != status.describe():
                    logger.info("gpujobqueue: job %s (%s job %s): %s", name, job.batch, job.job_id, status.describe())
                if status.ended and book.wants(name) and (previous is None or not previous.ended):
                    await self._ended(name, job, status)
                elif not status.ended and book.wants(name) and self._hopeless(job, status):
                    await self._cannot_start(name, job, status)
        book.forget_gone()
        if self.replacement.deferred_since is not None and not by_system:
            await self.reachable()  # no job to ask about: ask whether the batch system answers
        self.hand_over()
        if self.unreachable_since is None:
            await self.replacement.top_up(self.reachable)

    def tenures(self) -> list[Tenure]:
        """The jobs whose workers retire before a walltime (not the scheduler's), while any is connected or retiring."""
        book = self.book
        tenures, present = [], set(book.connected_workers()) | book.handover.retiring
        for name, job in book.submitted().items():
            connected, lifetime = book.first_connected.get(name), job.request.worker_lifetime
            if connected is None or not lifetime or name in book.pinned or name not in present:
                continue
            tenures.append(Tenure(name, book.pool_of(name), connected, lifetime, job.request.lifetime_stagger))
        return tenures

    def hand_over(self) -> None:
        """Plan the retirements again, and start those that are due."""
        handover = self.book.handover
        handover.replan(self.tenures())
        for name in handover.due():
            workers = self.book.connected_workers().get(name, [])
            if not workers:
                continue
            logger.info(
                "gpujobqueue: job %s retires its %d worker(s) now, one job at a time, before their walltime",
                name,
                len(workers),
            )
            handover.retire(name, self.retire_workers(workers))

    async def _ended(self, name: str, job: BookJob, status: JobStatus) -> None:
        said = f"job {name} ({job.batch} job {job.job_id})"
        if name in self.book.pinned:
            logger.error("gpujobqueue: the scheduler's %s has ended: %s", said, status.describe())
            return
        failure = None
        if name in self.book.handover.retiring:
            logger.info("gpujobqueue: %s retired: %s", said, status.describe())
        elif name in self.book.connected:
            logger.warning("gpujobqueue: %s has ended: %s", said, status.describe())
        else:
            failure = await job.failure(status)
            logger.error("gpujobqueue: %s", failure)
        # Forgotten, scale() and adapt() count it gone; the poll then submits its replacement.
        await self._forget(name, failure)

    async def _forget(self, name: str, failure: JobFailedError | None) -> None:
        """No longer want the job (cancelled if still queued), and count its failure."""
        self.book.drop(name)
        await self.book.apply()
        if failure is not None:  # recorded once the job is gone: wait_for_workers may raise it at once
            self.failures.append(failure)
            self.replacement.job_failed(failure)  # a job that cannot start stops the replacing

    @staticmethod
    def _hopeless(job: BookJob, status: JobStatus) -> bool:
        """The batch system keeps the job pending for a reason waiting does not clear."""
        reason = (status.reason or "").split(",")[0].strip()
        return reason in job.batch_system.hopeless_reasons

    async def _cannot_start(self, name: str, job: BookJob, status: JobStatus) -> None:
        """Cancel a job that can never start, and raise its reason from wait_for_workers."""
        if name in self.book.pinned or name in self.book.connected:
            return
        failure = JobCannotStartError(str(name), job.batch, status)
        logger.error("gpujobqueue: %s", failure)
        await self._forget(name, failure)

    def rows(self) -> JobTable:
        """The table of :attr:`GPUJobQueueCluster.jobs`, from the last answers."""
        connected = {job: len(workers) for job, workers in self.book.connected_workers().items()}
        table = JobTable()
        outage = self.unreachable
        for name, job in self.book.started():
            status = self.book.statuses.get(name)
            state = status.state if status else None
            reason = status.reason if status and status.reason not in ("None", "-") else None
            expected = expected_words(status.expected_start) if status and status.expected_start else None
            if outage:  # the last answer is stale: say so rather than show it as now
                state, reason, expected = "unknown", f"last seen {state}" if state else None, None
            table.append(
                JobRow(
                    name=name,
                    job_id=job.job_id,
                    state=state,
                    reason=reason,
                    expected=expected,
                    nodes=status.nodes if status else None,
                    gpus=gpus_of(job),
                    workers=connected.get(name, 0),
                )
            )
        table.notice = self.notice()
        return table

    def estimates_note(self, rows: list[JobRow]) -> str | None:
        """Where the waiting jobs' start estimates come from, or that there are none; None while no job waits."""
        queued = [row for row in rows if row.workers == 0 and row.state and row.state != "unknown"]
        if not queued:
            return None
        if self.start_estimates is None:
            return self.no_start_estimates
        return self.start_estimates if any(row.expected for row in queued) else f"no {self.start_estimates} yet"

    def notice(self) -> str | None:
        """:attr:`JobTable.notice`: the batch system unreachable, jobs to submit or held, replacing stopped."""
        kept = self.replacement
        parts = [self.unreachable] if self.unreachable else []
        waiting = sum(kept.missing(pool) for pool in kept.targets) if kept.may_replace else 0
        if kept.deferred_since is not None and waiting:
            parts.append(f"{waiting} job(s) to submit when it answers")
        held = self.book.hold.notice()
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
