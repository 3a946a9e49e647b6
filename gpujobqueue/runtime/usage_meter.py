"""The meter of a cluster's usage: when each job was submitted, started and ended, and how busy its workers
were (:func:`worker_busy`); its :meth:`UsageMeter.report` is a :class:`~gpujobqueue.jobs.usage.UsageReport`."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Iterable, Mapping

from ..jobs.usage import BUSY_THRESHOLD, Charge, JobUsage, UsageReport
from ..settings.limits import MAX_USAGE_JOBS


class UsageMeter:
    """Counts one cluster's use of the allocation as its jobs come and go. ``max_gap``: the longest time (s)
    one sample stands for (a pause in sampling is not counted beyond it); ``clock``: seconds since the epoch."""

    def __init__(self, max_gap: float = 10.0, clock: Any = time.time):
        self.max_gap = max_gap
        self.clock = clock
        self._jobs: dict[str, JobUsage] = {}
        self._last_sample: float | None = None

    def submitted(
        self, name: str, job_id: str | None, *, nodes: int, gpus: int, pool: str = "gpu", when: float | None = None
    ) -> None:
        """A job was submitted (``when``, default now); a name seen before keeps its first record."""
        if name in self._jobs or len(self._jobs) >= MAX_USAGE_JOBS:
            return
        submitted = self.clock() if when is None else when
        self._jobs[name] = JobUsage(name=name, job_id=job_id, pool=pool, nodes=nodes, gpus=gpus, submitted=submitted)

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
        """Count how busy each running job's workers are now: ``busy`` maps a job to its GPUs busy (summed over
        its workers) and how that was measured; a running job not in it counts as idle."""
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
    """How busy (0 to 1) one worker is from its heartbeat's metrics, and how measured: ``"nvml"``, its GPU's
    utilisation where distributed's system monitor reports it, else ``"tasks"``, its threads executing tasks."""
    utilisation = metrics.get("gpu_utilization")
    if isinstance(utilisation, (int, float)) and not isinstance(utilisation, bool) and math.isfinite(utilisation):
        return min(1.0, max(0.0, utilisation / 100)), "nvml"
    counts = metrics.get("task_counts") or {}
    executing = counts.get("executing", 0) if isinstance(counts, Mapping) else 0
    if isinstance(executing, bool) or not isinstance(executing, (int, float)):
        executing = 0
    return min(1.0, max(0.0, executing / max(1, nthreads))), "tasks"


def busy_by_job(workers: Iterable[Mapping[str, Any]], job_of: Any) -> dict[str, tuple[float, str]]:
    """Sum :func:`worker_busy` over each job's workers (the scheduler's worker identities; ``job_of`` a
    worker's name gives its job's)."""
    busy: dict[str, tuple[float, str]] = {}
    for worker in workers:
        fraction, how = worker_busy(worker.get("metrics") or {}, int(worker.get("nthreads") or 1))
        job = job_of(str(worker.get("name")))
        total, earlier = busy.get(job, (0.0, how))
        busy[job] = (total + fraction, "nvml" if "nvml" in (how, earlier) else how)
    return busy
