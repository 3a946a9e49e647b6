"""Scaling in GPU workers: how many jobs a ``scale()`` asks for (:func:`jobs_to_scale`, pure
arithmetic), and the cluster's scale, adapt and scale-down in whole jobs (:class:`GPUScaling`)."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from distributed.core import Status

from .adaptive import GPUAdaptive, adapt_bounds
from .errors import SubmissionError, ValidationError
from .intervals import adapt_interval, adapt_wait_count
from .limits import MAX_JOBS_PER_CLUSTER, MAX_WAIT_SECONDS, MIN_LOOK_SECONDS
from .replacement import forget_unsubmitted, held_for_user_limit, pool_jobs
from .request import parse_count, parse_size
from .validation import parse_duration

logger = logging.getLogger("gpujobqueue.cluster")


def _required(memory_per_worker: int | None) -> int:
    if memory_per_worker is None:
        raise ValidationError("memory", "scale(memory=...) needs memory or memory_per_gpu to be set")
    return memory_per_worker


def jobs_to_scale(
    n: int | None,
    jobs: int,
    memory: str | None,
    cores: int | None,
    *,
    gpus: int | None,
    cpu_workers: int | None,
    workers_per_job: int,
    memory_per_worker: int | None,
    threads_per_worker: int,
    cpu_workers_per_job: int | None,
) -> tuple[int | None, int | None]:
    """The GPU jobs and CPU jobs that ``scale()``'s targets ask for; None for a pool not named.

    GPU workers, GPUs, memory and cores round up to whole jobs (the most of them wins); CPU
    workers to whole CPU jobs of ``cpu_workers_per_job`` (None: the cluster has no CPU pool).

    Raises
    ------
    ValidationError
        Naming the target: a count that is not one, or more jobs than a cluster holds.
    """
    gpu_pool_named = cpu_workers is None or any(v is not None for v in (n, gpus, memory, cores)) or jobs
    jobs, counted = parse_count("jobs", jobs), "jobs"  # counted: the target that sets the jobs
    if n is not None:
        n, counted = parse_count("n", n), "n"
    if gpus is not None:
        gpus = parse_count("gpus", gpus)
        if n is not None and n != gpus:
            raise ValidationError("gpus", f"scale(n={n}, gpus={gpus}): one worker runs per GPU, give one of them")
        n, counted = gpus, "gpus"
    if memory is not None:
        by_memory = math.ceil(parse_size("memory", memory) / _required(memory_per_worker))
        if n is None or by_memory > n:
            n, counted = by_memory, "memory"
    if cores is not None:
        by_cores = math.ceil(parse_count("cores", cores) / threads_per_worker)
        if n is None or by_cores > n:
            n, counted = by_cores, "cores"
    if n is not None:
        jobs = math.ceil(n / workers_per_job)
        if jobs * workers_per_job != n:
            logger.info(
                "%d GPU workers asked; jobs have %d each, so %d jobs give %d",
                n,
                workers_per_job,
                jobs,
                jobs * workers_per_job,
            )
    cpu_jobs = None
    if cpu_workers is not None:
        if cpu_workers_per_job is None:
            raise ValidationError(
                "cpu_workers",
                "this cluster has no CPU pool; give cpu_pool={'processes': ..., 'cores': ..., 'memory': ...} "
                "when making it",
            )
        cpu_jobs = math.ceil(parse_count("cpu_workers", cpu_workers) / cpu_workers_per_job)
    gpu_jobs = jobs if gpu_pool_named else None
    for field, count in ((counted, gpu_jobs), ("cpu_workers", cpu_jobs)):
        if count is not None and count > MAX_JOBS_PER_CLUSTER:
            raise ValidationError(
                field, f"{count!r} jobs: a cluster holds 0 to {MAX_JOBS_PER_CLUSTER} jobs (gpujobqueue.limits)"
            )
    return gpu_jobs, cpu_jobs


class GPUScaling:
    """:meth:`scale`, :meth:`adapt` and scale-down of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`,
    in whole jobs of GPU workers (and of CPU workers)."""

    def retiring_jobs(self) -> set[str]:
        """Jobs that are leaving: retiring, or due to retire within their replacement's lead time
        (:mod:`gpujobqueue.handover`); ``scale()`` and :meth:`adapt` replace them before they go."""
        return self._job_watch.handover.leaving() & set(self.worker_spec)

    @property
    def workers_per_job(self) -> int:
        """GPU workers in one job."""
        return self.request.gpus_per_job

    def scale(
        self,
        n: int | None = None,
        jobs: int = 0,
        memory: str | None = None,
        cores: int | None = None,
        *,
        gpus: int | None = None,
        cpu_workers: int | None = None,
    ):
        """Scale to a number of GPU workers, GPUs, jobs, memory or cores, and CPU workers.

        Rounds up to whole jobs; submits (or cancels) and returns once the batch system
        has answered, raising :class:`SubmissionError` with its message if it refused.
        Jobs still queued are cancelled before running ones when scaling down.

        The cluster then keeps that many jobs until it closes: a job that ends early
        (cancelled from outside, a failed node, its walltime) is replaced within one
        job poll (``gpujobqueue.job-poll-interval``). A job that ends before its workers
        connect counts as a failure; after ``gpujobqueue.replace.max-failures`` (default 3)
        of them in a row no more jobs are submitted and :meth:`wait_for_workers` raises the
        last :class:`JobFailedError`; calling ``scale()`` again resumes. A submission refused
        while the batch system cannot be reached (its status query fails too) is not
        raised: it is logged, shown by :attr:`jobs` and the repr, and submitted again once
        the batch system answers. Past a queue's limit on one user's jobs (its site's
        ``max_jobs_per_user``, ``gpujobqueue.<batch>.max-jobs-per-user``, or the batch system's
        refusal for such a limit) the jobs are held, not submitted: logged, shown by :attr:`jobs`
        and the repr, and submitted as the cluster's own jobs end. The GPU
        pool and the CPU pool are scaled separately: ``scale(cpu_workers=8)`` leaves the
        GPU workers as they are, ``scale(gpus=4)`` the CPU workers.

        Parameters
        ----------
        n : int
            Target number of GPU workers.
        jobs : int
            Target number of GPU jobs.
        memory : str
            Target host memory over all GPU workers.
        cores : int
            Target number of GPU worker threads.
        gpus : int
            Target number of GPUs, i.e. of GPU workers.
        cpu_workers : int
            Target number of CPU workers (needs ``cpu_pool``).
        """
        gpu_jobs, cpu_jobs = jobs_to_scale(
            n,
            jobs,
            memory,
            cores,
            gpus=gpus,
            cpu_workers=cpu_workers,
            workers_per_job=self.workers_per_job,
            memory_per_worker=self.launch.memory_limit,
            threads_per_worker=self.launch.nthreads,
            cpu_workers_per_job=self.cpu_pool.processes if self.cpu_pool is not None else None,
        )
        self._replacement.resume()
        if self.asynchronous:
            return asyncio.ensure_future(self._scale_jobs(gpu_jobs, cpu_jobs))
        return self.sync(self._scale_jobs, gpu_jobs, cpu_jobs)

    def scale_up(self, n: int = 0, memory: str | None = None, cores: int | None = None):
        """distributed's older name of :meth:`scale`, which counts GPU workers here too (distributed's
        ``SpecCluster.scale_up`` is its own ``scale``, which counts neither jobs nor limits)."""
        return self.scale(n, memory=memory, cores=cores)

    async def _scale_jobs(self, jobs: int | None, cpu_jobs: int | None = None) -> None:
        closing = self.status in (Status.closing, Status.closed)
        pinned = set() if closing else self.pinned_jobs
        targets = {"gpu": 0, "cpu": 0} if closing else {}
        if not closing and jobs is not None:
            targets["gpu"] = max(jobs, len(pinned))  # the scheduler's job stays until the cluster closes
        if not closing and cpu_jobs is not None:
            targets["cpu"] = cpu_jobs
        connected = {self._worker_to_job.job_of(w["name"]) for w in self.scheduler_info["workers"].values()}
        for pool, target in targets.items():
            self._replacement.set_target(pool, target)
            entries = [job for job, spec in self.worker_spec.items() if spec.get("pool", "gpu") == pool]
            surplus = len(entries) - target
            if surplus > 0:
                removable = [job for job in entries if str(job) not in pinned]
                leaving = self.retiring_jobs()
                queued_first = sorted(removable, key=lambda job: (job in connected, job not in leaving))
                for job in queued_first[:surplus]:
                    del self.worker_spec[job]
            # Past a per-user limit of the queue the rest are held (replacement.py submits them as jobs end).
            for _ in range(self._replacement.to_submit(self, pool) if not closing else 0):
                self.worker_spec.update(self.new_worker_spec() if pool == "gpu" else self._new_cpu_job_spec())
        if closing:
            self._replacement.hold.clear()
        planned = {pool: pool_jobs(self, pool) for pool in targets}
        try:
            await self._correct_state()
            self._replacement.deferred_since = None
            self._replacement.hold.say()
        except SubmissionError as error:
            forget_unsubmitted(self)
            if not closing and held_for_user_limit(self, error, planned):
                return
            if closing or await self._batch_reachable():
                raise
            # An outage, not a refusal: the job watch submits them once the batch system answers.
            self._replacement.defer()
            logger.warning(
                "gpujobqueue: %s; the jobs will be submitted when it answers (%s)", self._job_watch.unreachable, error
            )

    async def _batch_reachable(self) -> bool:
        """Whether the batch system answers a status query now (recorded for :attr:`jobs`)."""
        return await self._job_watch.reachable()

    def adapt(
        self,
        *args: Any,
        minimum_jobs: int | None = None,
        maximum_jobs: int | None = None,
        minimum_gpus: int | None = None,
        maximum_gpus: int | None = None,
        **kwargs: Any,
    ):
        """Scale with the load, counting GPU workers, in whole jobs, without churn.

        The target is rounded up to whole jobs (``minimum`` up, ``maximum`` down); jobs
        still queued count as capacity; it scales up at once and down only once the need
        has settled below the jobs held for ``wait_count`` looks (see
        :class:`~gpujobqueue.adaptive.GPUAdaptive`), cancelling queued jobs first.

        Parameters
        ----------
        minimum, maximum : int
            GPU workers (= GPUs) to keep between.
        minimum_gpus, maximum_gpus : int
            The same, by name.
        minimum_jobs, maximum_jobs : int
            Bounds in whole jobs (dask-jobqueue's names).
        interval : str or float
            Time between two looks (default ``gpujobqueue.adapt.interval``, 2 s).
        wait_count : int
            Looks in a row at a lower need before scaling down (default
            ``gpujobqueue.adapt.wait-count``, 10: 20 s).
        **kwargs
            Passed to :class:`distributed.deploy.Adaptive` (``target_duration``).
        """
        if self.cpu_pool is not None:
            raise ValidationError(
                "cpu_pool",
                "adapt() counts one kind of worker; with a CPU pool, size each pool with scale(gpus=..., "
                "cpu_workers=...)",
            )
        minimum, maximum = adapt_bounds(
            self.workers_per_job,
            minimum=kwargs.pop("minimum", None),
            maximum=kwargs.pop("maximum", None),
            minimum_gpus=minimum_gpus,
            maximum_gpus=maximum_gpus,
            minimum_jobs=minimum_jobs,
            maximum_jobs=maximum_jobs,
        )
        kwargs.setdefault("worker_key", self._worker_to_job)  # retire whole jobs, never half of one
        kwargs.setdefault("Adaptive", GPUAdaptive)
        kwargs["interval"] = adapt_interval(kwargs.get("interval"))
        kwargs["wait_count"] = adapt_wait_count(kwargs.get("wait_count"))
        if kwargs.get("target_duration") is not None:
            kwargs["target_duration"] = parse_duration(
                "target_duration", kwargs["target_duration"], MIN_LOOK_SECONDS, MAX_WAIT_SECONDS
            )
        if self.pinned_jobs:
            # The scheduler's job keeps its workers while the cluster lives: never aim below them.
            minimum = max(minimum, self.workers_per_job)
        return super().adapt(*args, minimum=minimum, maximum=maximum, **kwargs)

    async def scale_down(self, workers: Any) -> None:
        pinned = self.pinned_jobs
        if pinned and self.status not in (Status.closing, Status.closed):
            workers = [w for w in workers if self._worker_to_job.job_of(str(w)) not in pinned]
        await super().scale_down(workers)
