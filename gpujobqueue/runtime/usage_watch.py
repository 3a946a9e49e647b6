"""The cluster's watch over its use of the allocation (:mod:`gpujobqueue.runtime.usage_meter`), sampled every
``gpujobqueue.usage.sample-interval``; at close, the summary logged and the report written beside the job logs."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Mapping

from ..jobs.usage import Charge, UsageReport, write_usage
from ..settings.intervals import job_poll_interval, usage_sample_interval
from .background import BackgroundLoop
from .jobbook import JobBook, gpus_of
from .usage_meter import UsageMeter, busy_by_job

logger = logging.getLogger("gpujobqueue.usage")


class UsageWatch(BackgroundLoop):
    """Keeps the :class:`~gpujobqueue.runtime.usage_meter.UsageMeter` of a cluster's ``book``, sampling the
    workers' metrics of the scheduler's ``identity()`` (awaited); ``batch``, ``site`` and ``charge`` go into
    the report, written at close in ``log_directory()``."""

    def __init__(
        self,
        book: JobBook,
        *,
        identity: Callable[[], Awaitable[Mapping[str, Any]]],
        batch: str,
        site: str | None,
        log_directory: Callable[[], str],
        charge: Charge | None = None,
    ):
        self.book, self.identity = book, identity
        self.batch, self.site, self.log_directory = batch, site, log_directory
        self.charge = charge
        self.interval = usage_sample_interval()
        # A pause longer than a few samples (a stalled loop) is not counted as busy or idle.
        self.meter = UsageMeter(max_gap=3 * (self.interval or 5.0))
        self.path: str | None = None  # where the report was written at close

    async def _run(self) -> None:
        while True:
            try:
                await self.sample()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the count must outlive one bad answer
                logger.debug("gpujobqueue: could not sample the workers' use: %r", error)
            await asyncio.sleep(self.interval or job_poll_interval())

    def note_jobs(self) -> None:
        """Record the jobs submitted, started and ended since the last look."""
        book = self.book
        now_running = book.connected
        seen = set()
        for name, job in book.started():
            if job.job_id is None:
                continue
            seen.add(name)
            self.meter.submitted(
                name,
                job.job_id,
                nodes=job.request.nodes,
                gpus=gpus_of(job),
                pool="cpu" if job.launch.cpu_workers else "gpu",
                when=job.submitted_at,
            )
            status = book.statuses.get(name)
            if name in now_running or (status is not None and status.nodes and not status.ended):
                self.meter.started(name)
            if (status is not None and status.ended) or job.closed_at is not None:
                self.meter.ended(name, when=job.closed_at)
        for name in self.meter.open_jobs() - seen:  # closed and forgotten by the cluster
            self.meter.ended(name)

    async def sample(self) -> None:
        """Note the jobs; where sampling is on, ask the scheduler how busy each worker is."""
        self.note_jobs()
        if self.interval is None:
            return
        identity = await self.identity()
        workers = identity.get("workers", {}).values()
        self.meter.sample(busy_by_job(workers, self.book.job_of))

    def report(self, *, cluster: str, adaptive: bool) -> UsageReport:
        """The usage so far of the cluster named ``cluster``; ``adaptive``: whether ``adapt()`` sized it."""
        self.note_jobs()
        return self.meter.report(
            cluster=cluster, batch=self.batch, site=self.site, charge=self.charge, adaptive=adaptive
        )

    def close(self, *, cluster: str, adaptive: bool) -> UsageReport:
        """At the cluster's close: every job ended, the summary logged, the report written."""
        self.meter.end_all()
        report = self.report(cluster=cluster, adaptive=adaptive)
        if not report.jobs:
            return report
        directory = self.log_directory()
        name = f"{report.cluster}-usage-{time.strftime('%Y%m%d-%H%M%S', time.localtime(report.at))}"
        try:
            self.path = write_usage(report, directory, name)
        except OSError as error:
            logger.warning("gpujobqueue: could not write the usage report %s in %s: %s", name, directory, error)
        _make_visible(logger)
        where = f" (gpujobqueue usage {self.path})" if self.path else ""
        logger.info("gpujobqueue: %s: %s%s", report.cluster, report.summary(), where)
        return report


def site_charge(site: Any, queue: str | None) -> Charge | None:
    """The site's charge factor for ``queue``, where the site file states one."""
    if site is None or queue is None or not callable(getattr(site, "charge", None)):
        return None
    return site.charge(queue)


def _make_visible(log: logging.Logger) -> None:
    """Where nobody configured logging, show this logger's INFO lines (the summary at close) on
    standard error, as distributed does for its own; a program that configured logging keeps its
    handlers and levels, and gpujobqueue's other INFO lines stay quiet."""
    if log.hasHandlers() or log.level != logging.NOTSET:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
