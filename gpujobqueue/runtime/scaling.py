"""Scaling in GPU workers and whole jobs: the strategy the cluster's scale, adapt and scale-down delegate to."""

from __future__ import annotations

import logging
import math
from typing import Any, Iterable

from ..errors import BatchCommandNotFoundError, ValidationError
from ..settings.intervals import adapt_interval, adapt_wait_count
from ..settings.limits import MAX_JOBS_PER_CLUSTER, MAX_WAIT_SECONDS, MIN_LOOK_SECONDS
from ..settings.validation import parse_count, parse_duration, parse_size
from .adaptive import GPUAdaptive, adapt_bounds
from .job_watch import JobWatch
from .jobbook import JobBook
from .replacement import Replacement

logger = logging.getLogger("gpujobqueue.cluster")


class Scaling:
    """How a cluster's ``scale()``, ``adapt()`` and ``scale_down()`` change its ``book``, in GPU workers and jobs."""

    def __init__(
        self,
        book: JobBook,
        replacement: Replacement,
        watch: JobWatch,
        *,
        workers_per_job: int,
        memory_per_worker: int | None,
        nthreads: int,
        cpu_workers_per_job: int | None,
        gpus_per_worker: int = 1,
    ):
        self.book, self.replacement, self.watch = book, replacement, watch
        self.gpus_per_worker = gpus_per_worker
        self.workers_per_job = workers_per_job
        self.memory_per_worker, self.nthreads = memory_per_worker, nthreads
        self.cpu_workers_per_job = cpu_workers_per_job

    def jobs_to_scale(
        self,
        n: int | None,
        jobs: int,
        memory: str | None,
        cores: int | None,
        *,
        gpus: int | None,
        cpu_workers: int | None,
    ) -> tuple[int | None, int | None]:
        """The GPU and CPU jobs ``scale()``'s targets ask for (None: a pool not named); raises for a bad one."""
        gpu_pool_named = cpu_workers is None or any(v is not None for v in (n, gpus, memory, cores)) or jobs
        jobs, counted = parse_count("jobs", jobs, text=False), "jobs"  # counted: the target that sets the jobs
        if n is not None:
            n, counted = parse_count("n", n, text=False), "n"
        if gpus is not None:
            gpus = parse_count("gpus", gpus, text=False)
            by_gpus = math.ceil(gpus / self.gpus_per_worker)
            if n is not None and n != by_gpus:
                raise ValidationError(
                    "gpus", f"scale(n={n}, gpus={gpus}): a worker holds {self.gpus_per_worker} GPU(s), give one of them"
                )
            n, counted = by_gpus, "gpus"
        if memory is not None:
            size = parse_size("memory", memory)
            if self.memory_per_worker is None:
                raise ValidationError("memory", "scale(memory=...) needs memory or memory_per_gpu to be set")
            by_memory = math.ceil(size / self.memory_per_worker)
            if n is None or by_memory > n:
                n, counted = by_memory, "memory"
        if cores is not None:
            by_cores = math.ceil(parse_count("cores", cores, text=False) / self.nthreads)
            if n is None or by_cores > n:
                n, counted = by_cores, "cores"
        if n is not None:
            jobs = math.ceil(n / self.workers_per_job)
            if jobs * self.workers_per_job != n:
                logger.info(
                    "%d GPU workers asked; jobs have %d each, so %d jobs give %d",
                    n,
                    self.workers_per_job,
                    jobs,
                    jobs * self.workers_per_job,
                )
        cpu_jobs = None
        if cpu_workers is not None:
            if self.cpu_workers_per_job is None:
                raise ValidationError(
                    "cpu_workers",
                    "this cluster has no CPU pool; give cpu_pool={'processes': ..., 'cores': ..., 'memory': ...} "
                    "when making it",
                )
            cpu_jobs = math.ceil(parse_count("cpu_workers", cpu_workers, text=False) / self.cpu_workers_per_job)
        gpu_jobs = jobs if gpu_pool_named else None
        for field, count in ((counted, gpu_jobs), ("cpu_workers", cpu_jobs)):
            if count is not None and count > MAX_JOBS_PER_CLUSTER:
                raise ValidationError(
                    field,
                    f"{count!r} jobs: a cluster holds 0 to {MAX_JOBS_PER_CLUSTER} jobs (gpujobqueue.settings.limits)",
                )
        return gpu_jobs, cpu_jobs

    async def scale_jobs(self, jobs: int | None, cpu_jobs: int | None = None) -> None:
        """Keep ``jobs`` GPU and ``cpu_jobs`` CPU jobs (None: leave that pool); surplus queued ones go first."""
        self.replacement.scaling_now += 1
        try:
            await self._scale_jobs(jobs, cpu_jobs)
        finally:
            self.replacement.scaling_now -= 1

    async def _scale_jobs(self, jobs: int | None, cpu_jobs: int | None) -> None:
        book, kept = self.book, self.replacement
        closing = book.closing
        pinned = set() if closing else book.pinned
        targets = {"gpu": 0, "cpu": 0} if closing else {}
        if not closing and jobs is not None:
            targets["gpu"] = max(jobs, len(pinned))  # the scheduler's job stays until the cluster closes
        if not closing and cpu_jobs is not None:
            targets["cpu"] = cpu_jobs
        connected = set(book.connected_workers())
        for pool, target in targets.items():
            kept.set_target(pool, target)
            entries = book.names(pool)
            surplus = len(entries) - target
            if surplus > 0:
                removable = [job for job in entries if str(job) not in pinned]
                leaving = book.leaving()
                queued_first = sorted(removable, key=lambda job: (job in connected, job not in leaving))
                for job in queued_first[:surplus]:
                    book.drop(job)
            # Past a per-user limit of the queue the rest are held (the job watch submits them as jobs end).
            book.add(pool, kept.to_submit(pool) if not closing else 0)
        if closing:
            book.hold.clear()
        try:
            await kept.submit(targets, self.watch.reachable, closing=closing)
        except BatchCommandNotFoundError as error:
            # No outage: a missing command will not start answering; wait_for_workers raises it too.
            kept.submission_refused(error)
            raise

    def adapt_options(self, **kwargs: Any) -> dict[str, Any]:
        """The keywords of distributed's ``Cluster.adapt`` for an ``adapt()``'s; raises for a bad one."""
        if self.cpu_workers_per_job is not None:
            raise ValidationError(
                "cpu_pool",
                "adapt() counts one kind of worker; with a CPU pool, size each pool with scale(gpus=..., "
                "cpu_workers=...)",
            )
        minimum, maximum = adapt_bounds(self.workers_per_job, kwargs)
        kwargs.setdefault("worker_key", self.book.worker_key)  # retire whole jobs, never half of one
        kwargs.setdefault("Adaptive", GPUAdaptive)
        if isinstance(kwargs["Adaptive"], type) and issubclass(kwargs["Adaptive"], GPUAdaptive):
            kwargs["scaling"] = self
        kwargs["interval"] = adapt_interval(kwargs.get("interval"))
        kwargs["wait_count"] = adapt_wait_count(kwargs.get("wait_count"))
        if kwargs.get("target_duration") is not None:
            kwargs["target_duration"] = parse_duration(
                "target_duration", kwargs["target_duration"], MIN_LOOK_SECONDS, MAX_WAIT_SECONDS
            )
        if self.book.pinned:
            # The scheduler's job keeps its workers while the cluster lives: never aim below them.
            minimum = max(minimum, self.workers_per_job)
        return dict(kwargs, minimum=minimum, maximum=maximum)

    def adapting(self, adaptive: Any) -> None:
        """``adapt()`` started ``adaptive``: while it runs, it sizes the cluster and replaces its jobs."""
        self.replacement.adaptive = adaptive

    def removable(self, workers: Iterable[Any]) -> list[Any]:
        """Of the workers a scale-down names, those it may remove: never a pinned job's while the cluster lives."""
        pinned = self.book.pinned
        if not pinned or self.book.closing:
            return list(workers)
        return [worker for worker in workers if self.book.job_of(str(worker)) not in pinned]
