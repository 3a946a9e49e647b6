"""The cluster's use of the allocation: the meter of each job's times and busy GPUs, and its watch."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from typing import Any, Awaitable, Callable, Iterable, Mapping

from ..jobs.usage import BUSY_THRESHOLD, Charge, JobUsage, UsageReport, write_usage
from ..settings.intervals import job_poll_interval, usage_sample_interval
from ..settings.limits import MAX_USAGE_JOBS
from .background import BackgroundLoop
from .jobbook import JobBook, gpus_of

logger = logging.getLogger("gpujobqueue.usage")


class UsageMeter:
    """Counts one cluster's use of the allocation; ``max_gap``: the longest time (s) one sample stands for."""

    def __init__(self, max_gap: float = 10.0, clock: Any = time.time):
        self.max_gap = max_gap
        self.clock = clock
        self._jobs: dict[str, JobUsage] = {}
        self._last_sample: float | None = None

    def submitted(
        self,
        name: str,
        job_id: str | None,
        *,
        nodes: int,
        gpus: int,
        cores: int = 0,
        pool: str = "gpu",
        when: float | None = None,
    ) -> None:
        """A job was submitted (``when``, default now); a name seen before keeps its first record."""
        if name in self._jobs or len(self._jobs) >= MAX_USAGE_JOBS:
            return
        submitted = self.clock() if when is None else when
        self._jobs[name] = JobUsage(
            name=name, job_id=job_id, pool=pool, nodes=nodes, gpus=gpus, cores=cores, submitted=submitted
        )

    def started(self, name: str) -> None:
        """The job runs (the first notice counts)."""
        job = self._jobs.get(name)
        if job is not None and job.started is None and job.ended is None:
            self._jobs[name] = dataclasses.replace(job, started=self.clock())

    def ended(self, name: str, when: float | None = None) -> None:
        """The job ended or was cancelled (``when``, default now; the first notice counts)."""
        job = self._jobs.get(name)
        if job is not None and job.ended is None:
            self._jobs[name] = dataclasses.replace(job, ended=self.clock() if when is None else when)

    def open_jobs(self) -> set[str]:
        return {name for name, job in self._jobs.items() if job.ended is None}

    def end_all(self) -> None:
        """Every job has ended now (the cluster closed and cancelled them)."""
        for name in self.open_jobs():
            self.ended(name)

    def sample(self, busy: Mapping[str, tuple[float, str]]) -> None:
        """Count how busy each running job's workers are now (``busy``: job -> GPUs busy, how measured; else idle)."""
        now = self.clock()
        last, self._last_sample = self._last_sample, now
        for name, job in self._jobs.items():
            if job.started is None or job.ended is not None:
                continue
            # The time this sample stands for: since the last one, or since the job started.
            since = job.started if last is None else max(last, job.started)
            elapsed = min(self.max_gap, max(0.0, now - since))
            gpus_busy, how = busy.get(name, (0.0, job.measured_by))
            gpus_busy = min(float(job.gpus), max(0.0, gpus_busy))
            self._jobs[name] = dataclasses.replace(
                job,
                busy_gpu_seconds=job.busy_gpu_seconds + gpus_busy * elapsed,
                last_busy=now if gpus_busy >= BUSY_THRESHOLD else job.last_busy,
                measured_by=how or job.measured_by,
            )

    def report(
        self, *, cluster: str, batch: str, site: str | None = None, charge: Charge | None = None, adaptive: bool = False
    ) -> UsageReport:
        return UsageReport(
            cluster=cluster,
            batch=batch,
            site=site,
            jobs=tuple(self._jobs.values()),
            at=self.clock(),
            charge=charge,
            adaptive=adaptive,
        )


def worker_busy(metrics: Mapping[str, Any], nthreads: int) -> tuple[float, str]:
    """How busy (0 to 1) one worker is, and how measured: ``nvml`` GPU utilisation, else ``tasks``."""
    utilisation = metrics.get("gpu_utilization")
    if isinstance(utilisation, (int, float)) and not isinstance(utilisation, bool) and math.isfinite(utilisation):
        return min(1.0, max(0.0, utilisation / 100)), "nvml"
    counts = metrics.get("task_counts") or {}
    executing = counts.get("executing", 0) if isinstance(counts, Mapping) else 0
    if isinstance(executing, bool) or not isinstance(executing, (int, float)):
        executing = 0
    return min(1.0, max(0.0, executing / max(1, nthreads))), "tasks"


def busy_by_job(workers: Iterable[Mapping[str, Any]], job_of: Any) -> dict[str, tuple[float, str]]:
    """Sum :func:`worker_busy` over each job's workers (``job_of`` a worker's name gives its job's)."""
    busy: dict[str, tuple[float, str]] = {}
    for worker in workers:
        fraction, how = worker_busy(worker.get("metrics") or {}, int(worker.get("nthreads") or 1))
        job = job_of(str(worker.get("name")))
        total, earlier = busy.get(job, (0.0, how))
        busy[job] = (total + fraction, "nvml" if "nvml" in (how, earlier) else how)
    return busy


class UsageWatch(BackgroundLoop):
    """Keeps the :class:`UsageMeter` of a cluster's ``book``; writes the report in ``log_directory()``."""

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
                cores=job.request.cpus_per_node * job.request.nodes,
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
    """Where nobody configured logging, show this logger's INFO lines on standard error, as distributed does."""
    if log.hasHandlers() or log.level != logging.NOTSET:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
