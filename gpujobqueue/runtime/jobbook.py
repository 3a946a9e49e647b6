"""The cluster's jobs, in one book the job watch, the replacement, the scaling and the usage watch share."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, ClassVar, Iterable, Mapping, Protocol

from ..batch.base import BatchSystem
from ..jobs.job_status import JobFailedError, JobStatus
from ..jobs.request import JobRequest
from ..jobs.workers import WorkerLaunch
from ..plan.user_limits import JobHold, UserJobLimit
from ..settings.naming import WorkerJobKey
from .handover import Handover
from .scheduler_process import HostedWorkers

DEFAULT_POOL = "gpu"  # the pool of a job whose spec names none


class BookJob(Protocol):
    """What the job book and its watchers read of a job (a :class:`~gpujobqueue.runtime.job.GPUJob`)."""

    batch_system: ClassVar[type[BatchSystem]]
    batch: ClassVar[str]
    job_id: str | None  # the batch system's, None until it took the job
    submitted_at: float | None  # time.time() once the batch system took it
    closed_at: float | None  # ... and once the cluster cancelled it
    request: JobRequest
    launch: WorkerLaunch

    async def failure(self, status: JobStatus, before: str = ...) -> JobFailedError:
        """The report of the job having ended too soon (``before`` what)."""
        ...


class JobBook:
    """The jobs of one cluster: the specs of those it wants (distributed's ``worker_spec``), the job objects
    started from them (its ``workers``), and what is known of each. ``new_job(pool)`` gives a new job's
    ``{name: spec}``; ``apply()``, awaited, submits and cancels jobs to match the specs (SpecCluster's);
    ``scheduler_workers()`` gives the workers' identities the cluster last heard."""

    def __init__(
        self,
        worker_key: WorkerJobKey,
        *,
        new_job: Callable[[str], dict[str, dict[str, Any]]],
        apply: Callable[[], Awaitable[None]],
        scheduler_workers: Callable[[], Iterable[Mapping[str, Any]]],
        closing: Callable[[], bool],
        user_limits: Mapping[str, UserJobLimit | None] | None = None,
        poll_interval: float,
    ):
        self.worker_key = worker_key
        self._new_job, self._apply = new_job, apply
        self._scheduler_workers, self._closing = scheduler_workers, closing
        self.specs: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, BookJob | HostedWorkers] = {}
        self.statuses: dict[str, JobStatus] = {}  # job -> the batch system's last answer
        self.first_connected: dict[str, float] = {}  # job -> when its first worker connected (monotonic clock)
        self.pinned: set[str] = set()
        self.hold = JobHold({pool: limit for pool, limit in (user_limits or {}).items() if limit is not None})
        self.handover = Handover(poll_interval)

    def pool_of(self, name: str) -> str:
        """The pool (``"gpu"``, ``"cpu"``) of a job the cluster wants."""
        return self.specs[name].get("pool", DEFAULT_POOL)

    def names(self, pool: str) -> list[str]:
        """The jobs the pool has (submitted, or about to be), oldest first."""
        return [name for name, spec in self.specs.items() if spec.get("pool", DEFAULT_POOL) == pool]

    def count(self, pool: str) -> int:
        return len(self.names(pool))

    def wants(self, name: str) -> bool:
        """Whether the cluster still wants the job (it is neither ended nor being cancelled)."""
        return name in self.specs

    def add(self, pool: str, count: int = 1) -> None:
        """Want ``count`` new jobs in ``pool``; :meth:`apply` submits them."""
        for _ in range(count):
            self.specs.update(self._new_job(pool))

    def drop(self, name: str) -> None:
        """No longer want the job; :meth:`apply` cancels it."""
        self.specs.pop(name, None)

    async def apply(self) -> None:
        """Submit the jobs wanted and not started, cancel those started and no longer wanted."""
        await self._apply()

    def forget_unsubmitted(self) -> int:
        """Drop the jobs whose submission failed (no job id); how many."""
        dropped = 0
        for name, entry in list(self.jobs.items()):
            if job_of_entry(entry).job_id is None:
                self.specs.pop(name, None)
                self.jobs.pop(name, None)
                dropped += 1
        return dropped

    @property
    def closing(self) -> bool:
        return self._closing()

    def started(self) -> list[tuple[str, BookJob]]:
        """Every job started and not yet forgotten, with its job object, oldest first."""
        return [(str(name), job_of_entry(entry)) for name, entry in list(self.jobs.items())]

    def job(self, name: str) -> BookJob | None:
        """The job object of a job started, else None."""
        entry = self.jobs.get(name)
        return None if entry is None else job_of_entry(entry)

    def submitted(self) -> dict[str, BookJob]:
        """The jobs the batch system has been given and the cluster still wants, with their job objects."""
        return {name: job for name, job in self.started() if job.job_id and name in self.specs}

    def job_of(self, worker_name: str) -> str:
        return self.worker_key.job_of(str(worker_name))

    def connected_workers(self) -> dict[str, list[str]]:
        """Each job's workers connected to the scheduler now, by name."""
        by_job: dict[str, list[str]] = {}
        for worker in self._scheduler_workers():
            name = str(worker.get("name"))
            by_job.setdefault(self.job_of(name), []).append(name)
        return by_job

    def note_worker(self, worker_name: str) -> bool:
        """A worker connected: True if it is its job's first (its start-up time is then measured)."""
        job = self.job_of(worker_name)
        if job in self.first_connected:
            return False
        self.first_connected[job] = time.monotonic()
        started = self.job(job)  # None for a worker of a job the cluster no longer holds
        self.handover.job_started(started.submitted_at if started is not None else None)
        return True

    @property
    def connected(self) -> set[str]:
        """Jobs of which a worker has connected at some point."""
        return set(self.first_connected)

    def forget_gone(self) -> None:
        """Forget what was said of jobs the cluster no longer has."""
        for name in [name for name in self.statuses if name not in self.jobs]:
            del self.statuses[name]
        for name in [name for name in self.first_connected if name not in self.jobs and name not in self.specs]:
            del self.first_connected[name]

    def pin(self, name: str) -> None:
        """Never scale the job down (the scheduler's own job): it lives as long as the cluster."""
        self.pinned.add(str(name))

    def leaving(self) -> set[str]:
        """Jobs retiring or due to (:meth:`Handover.leaving`); ``scale()`` and ``adapt()`` replace them first."""
        return self.handover.leaving() & set(self.specs)


def job_of_entry(entry: BookJob | HostedWorkers) -> BookJob:
    """The job object of an entry of distributed's ``workers``: the scheduler job's entry holds its job."""
    return entry.job if isinstance(entry, HostedWorkers) else entry


def gpus_of(job: BookJob) -> int:
    """The GPUs a job asked for: none for a CPU-pool job."""
    return job.launch.gpus_per_node * job.request.nodes
