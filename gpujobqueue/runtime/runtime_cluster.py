"""The cluster at run time: SpecCluster over a job book, the parts acting on its jobs, the methods delegating."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from distributed.core import Status

from ..jobs.job_status import JobFailedError
from ..jobs.jobqueue_base import JobQueueCluster
from ..jobs.usage import UsageReport
from ..plan import Plan
from ..settings.intervals import job_poll_interval
from ..settings.naming import WorkerJobKey
from .cluster_options import check_adapt_keywords
from .job import GPUJob
from .job_watch import JobTable, JobWatch
from .jobbook import BookJob, JobBook
from .notebook import cluster_status_html
from .replacement import Replacement
from .scaling import Scaling
from .scheduler_process import HostedWorkers
from .usage_watch import UsageWatch, site_charge
from .worker_wait import SchedulerInfo, parse_timeout, wait_arguments, wait_for_workers

logger = logging.getLogger("gpujobqueue.cluster")


class RuntimeCluster(JobQueueCluster):
    """dask-jobqueue's cluster whose ``worker_spec`` and ``workers`` are a job book's, in GPU workers."""

    def _start_parts(
        self, plan: Plan, job_cls: type[GPUJob], worker_key: WorkerJobKey, new_job: Callable[[str], dict[str, Any]]
    ) -> None:
        """Make the cluster's parts from its ``plan``; ``new_job(pool)`` gives a new job's name and spec."""
        interval = job_poll_interval()
        self._book = JobBook(
            worker_key,
            new_job=new_job,
            apply=self._correct_state,
            scheduler_workers=lambda: self.scheduler_info.get("workers", {}).values(),
            closing=lambda: self.status in (Status.closing, Status.closed),
            user_limits={"gpu": plan.jobs_per_user, "cpu": plan.cpu_jobs_per_user},
            poll_interval=interval,
        )
        system = job_cls.batch_system
        self._replacement = Replacement(self._book, user_limit_refusals=system.user_limit_refusals)
        self._job_watch = JobWatch(
            self._book,
            self._replacement,
            probe=system.probe,
            retire_workers=self._retire,
            interval=interval,
            batch=system.name,
            start_estimates=system.start_estimates,
            no_start_estimates=system.no_start_estimates,
        )
        cpu_workers_per_job = plan.cpu_launch.workers_per_node if plan.cpu_launch is not None else None
        self._scaling = Scaling(
            self._book,
            self._replacement,
            self._job_watch,
            workers_per_job=plan.launch.workers_per_node * plan.request.nodes,
            gpus_per_worker=plan.launch.gpus_per_worker,
            memory_per_worker=plan.launch.memory_limit,
            nthreads=plan.launch.nthreads,
            cpu_workers_per_job=cpu_workers_per_job,
        )
        site = plan.site.name if plan.site is not None else None
        self._usage = UsageWatch(
            self._book,
            identity=lambda: self.scheduler_comm.identity(),
            batch=job_cls.batch,
            site=site,
            log_directory=lambda: plan.request.log_directory or system.default_log_directory(),
            charge=site_charge(plan.site, plan.site_queue),
        )
        self._shown = {"site": site, "batch": job_cls.batch, "protocol": plan.launch.protocol}  # in a notebook

    def _start_watches(self) -> None:
        """The job watch and the usage watch begin (the scheduler has started)."""
        self._job_watch.start()
        self._usage.start()

    async def _stop_watches(self) -> None:
        """The job watch and the usage watch end; the jobs are noted once more for the count at close."""
        await self._job_watch.stop()
        await self._usage.stop()
        self._usage.note_jobs()

    @property
    def worker_spec(self) -> dict[str, dict[str, Any]]:
        """Each job the cluster wants, by name: its spec (distributed's), the job book's ``specs``."""
        return self._book.specs

    @worker_spec.setter
    def worker_spec(self, specs: dict[str, dict[str, Any]]) -> None:
        self._book.specs = specs

    @property
    def workers(self) -> dict[str, BookJob | HostedWorkers]:
        """Each job started, by name: its job object (distributed's), the job book's ``jobs``."""
        return self._book.jobs

    @workers.setter
    def workers(self, jobs: dict[str, BookJob | HostedWorkers]) -> None:
        self._book.jobs = jobs

    def _retire(self, names: list[str]) -> Any:
        return self.scheduler_comm.retire_workers(names=names, remove=True, close_workers=True)

    async def _scheduler_identity(self) -> SchedulerInfo:
        """The scheduler's identity now, kept as the cluster's ``scheduler_info``."""
        self.scheduler_info = SchedulerInfo(await self.scheduler_comm.identity())
        return self.scheduler_info

    def _close_usage(self) -> None:
        """Every job has ended: log the usage summary and write the report beside the job logs."""
        try:
            self._usage.close(cluster=str(self._name), adaptive=self._adapted)
        except Exception:  # the count must not keep a cluster from closing
            logger.exception("gpujobqueue: could not summarise the cluster's usage")

    def usage(self) -> UsageReport:
        """What the cluster's jobs held and did, so far: per job and in total, GPUs held, wall
        time held, GPU-hours charged, time queued, GPU-hours busy (NVML's GPU utilisation, else
        the workers' threads executing tasks, sampled every ``gpujobqueue.usage.sample-interval``)
        and service units where the site states its charge factor.

        Returns
        -------
        UsageReport
            Printed, a table and a one-paragraph summary; ``to_json()`` for other tools.
        """
        return self._usage.report(cluster=str(self._name), adaptive=self._adapted)

    @property
    def _adapted(self) -> bool:
        """Whether ``adapt()`` was called (distributed keeps what it started as ``_adaptive``)."""
        return getattr(self, "_adaptive", None) is not None

    def _update_worker_status(self, op: str, msg: Any) -> None:
        if op == "add":
            for worker in msg.get("workers", {}).values():
                self._job_watch.note_worker(str(worker.get("name")))
        super()._update_worker_status(op, msg)

    @property
    def jobs(self) -> JobTable:
        """The cluster's jobs: name, batch job id, state, pending reason, nodes, GPUs and
        workers connected, as the batch system answered (asked afresh unless asynchronous).
        While the batch system cannot be reached, the table's first line says since when
        and its error, and each job's state is ``unknown`` (``last seen RUNNING``).

        Examples
        --------
        >>> cluster.jobs  # doctest: +SKIP
        name            job_id  state    reason    nodes  gpus  workers
        gpujobqueue-0   4021    RUNNING  -         nid01  4     4
        gpujobqueue-1   4022    PENDING  Priority  -      4     0
        """
        # During an outage the watch keeps asking in the background; a query here would only wait.
        if not self.asynchronous and self.status == Status.running and self._job_watch.unreachable_since is None:
            self.sync(self._job_watch.poll)
        return self._job_watch.rows()

    def __repr__(self) -> str:
        text = super().__repr__()
        if not hasattr(self, "_job_watch"):
            return text
        waiting = [row.expected for row in self._job_watch.rows() if row.expected and not row.workers]
        parts = [self._job_watch.notice(), f"a waiting job {waiting[0]}" if waiting else None]
        shown = ", ".join(part for part in parts if part)
        return f"{text[:-1]}, {shown})" if shown else text

    def _repr_html_(self, cluster_status: str | None = None) -> str:
        usage = self.usage() if hasattr(self, "_usage") else None
        status = cluster_status_html(self._job_watch.rows(), usage=usage, **self._shown)
        return super()._repr_html_(cluster_status=status + (cluster_status or ""))

    @property
    def job_failures(self) -> list[JobFailedError]:
        """Every job that ended before its workers connected, with its exit code and log tail."""
        return list(self._job_watch.failures)

    # Scaling, delegated to the cluster's strategy (scaling.py), as distributed delegates adapt() to Adaptive.

    @property
    def workers_per_job(self) -> int:
        """GPU workers in one job."""
        return self._scaling.workers_per_job

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

        Rounds up to whole jobs; submits (or cancels, queued jobs first) and returns once the batch system has
        answered, raising :class:`SubmissionError` with its message if it refused. The cluster then keeps that
        many jobs until it closes: a job that ends early is replaced within one job poll
        (``gpujobqueue.job-poll-interval``). After ``gpujobqueue.replace.max-failures`` (default 3) jobs in a row
        ended before their workers connected, no more are submitted and :meth:`wait_for_workers` raises the last
        :class:`JobFailedError`; ``scale()`` again resumes. A submission refused while the batch system cannot be
        reached, or past a queue's limit on one user's jobs (the site's ``max_jobs_per_user``,
        ``gpujobqueue.<batch>.max-jobs-per-user``, or the batch system's refusal for one), is not raised: it is
        logged, shown by :attr:`jobs` and the repr, and submitted once the batch system answers or the cluster's
        own jobs end. The GPU and CPU pools scale separately: ``scale(cpu_workers=8)`` leaves the GPU workers as
        they are, ``scale(gpus=4)`` the CPU workers.

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
        gpu_jobs, cpu_jobs = self._scaling.jobs_to_scale(n, jobs, memory, cores, gpus=gpus, cpu_workers=cpu_workers)
        self._replacement.resume()  # asking again resumes a replacing that failures stopped
        if self.asynchronous:
            return asyncio.ensure_future(self._scaling.scale_jobs(gpu_jobs, cpu_jobs))
        return self.sync(self._scaling.scale_jobs, gpu_jobs, cpu_jobs)

    def scale_up(self, n: int = 0, memory: str | None = None, cores: int | None = None):
        """distributed's older name of :meth:`scale`, which counts GPU workers here too."""
        return self.scale(n, memory=memory, cores=cores)

    def adapt(
        self,
        *args: Any,
        minimum_jobs: int | None = None,
        maximum_jobs: int | None = None,
        minimum_gpus: int | None = None,
        maximum_gpus: int | None = None,
        **kwargs: Any,
    ):
        """Scale with the load, counting GPU workers, in whole jobs, without churn
        (:class:`~gpujobqueue.runtime.adaptive.GPUAdaptive` says how).

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
            Passed to :class:`distributed.deploy.Adaptive` (``target_duration``), or to the class given
            as ``Adaptive``; a keyword neither takes is refused (:class:`UnknownKeywordError`).
        """
        check_adapt_keywords(kwargs)
        options = self._scaling.adapt_options(
            minimum_jobs=minimum_jobs,
            maximum_jobs=maximum_jobs,
            minimum_gpus=minimum_gpus,
            maximum_gpus=maximum_gpus,
            **kwargs,
        )
        adaptive = super().adapt(*args, **options)
        self._scaling.adapting(adaptive)
        return adaptive

    def close(self, timeout: Any = None) -> Any:
        """Close the cluster, as distributed's: its jobs cancelled, its scheduler closed.

        Parameters
        ----------
        timeout : float or str, optional
            Seconds (or ``"30s"``) to wait for it, from 0.1 s to a week; None waits without end.

        Raises
        ------
        ValidationError
            ``timeout`` not such a duration; the cluster is left as it was.
        """
        return super().close(parse_timeout(timeout))

    async def scale_down(self, workers: Any) -> None:
        await super().scale_down(self._scaling.removable(workers))

    def wait_for_workers(self, n_workers: int, timeout: Any = None) -> None:
        """Wait for ``n_workers`` running workers, as distributed's does; a job that failed before
        its workers connected is raised (:class:`JobFailedError`) once replacing stops. While the batch system
        does not answer, the progress line (on a terminal) says so with its error.

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
        BatchSystemUnreachableError
            The batch system's commands are here but it has answered none of the cluster's asks, after
            ``gpujobqueue.replace.max-failures`` in a row (its controller down, or this host not its client).
        """
        pools = self.workers_per_job + (self._scaling.cpu_workers_per_job or 0)
        n_workers, timeout = wait_arguments(n_workers, timeout, pools)
        return self.sync(self._wait_for_workers, n_workers, timeout=timeout)

    async def _wait_for_workers(self, n_workers: int = 0, timeout: Any = None) -> None:
        """:func:`~gpujobqueue.runtime.worker_wait.wait_for_workers`, in the place of distributed's."""
        await wait_for_workers(self._replacement, self._job_watch, self._scheduler_identity, n_workers, timeout)
