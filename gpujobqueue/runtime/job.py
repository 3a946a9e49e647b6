"""One batch job of GPU workers: dask-jobqueue's Job, bound to a batch system that runs it."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import tempfile
import time
from typing import Any, Callable, ClassVar, Iterator

from distributed.core import Status
from distributed.deploy.spec import ProcessInterface
from distributed.security import Security

from ..batch.base import BatchSystem
from ..errors import ValidationError
from ..jobs.job_commands import ArrayElements, CommandFailed, JobCommands
from ..jobs.job_status import JobFailedError, JobStatus, read_log_tail, script_exit_code
from ..jobs.jobqueue_base import Job
from ..jobs.scheduler_job import SchedulerStart
from ..plan import Plan, make_plan
from ..script.render import SchedulerAddress, SchedulerFile, SchedulerInJob
from ..security.owned_folders import ClusterFolder
from ..security.tls import tls_args
from ..settings import config

logger = logging.getLogger(__name__)

__all__ = ["CommandFailed", "GPUJob", "check_log_directory", "make_log_directory"]


def check_log_directory(path: str | None) -> None:
    """Refuse a ``log_directory`` that is a file, or cannot be made (below a file, or unwritable by this user)."""
    if path is None:
        return
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValidationError("log_directory", f"{path!r} exists and is not a directory")
        return
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    if parent and not os.path.isdir(parent):
        raise ValidationError("log_directory", f"{path!r} cannot be made: {parent!r} is not a directory")
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        raise ValidationError("log_directory", f"{path!r} cannot be made: {parent!r} is not writable by this user")


def make_log_directory(path: str | None) -> None:
    """Make ``log_directory`` (and its parents) if it is not there yet; :class:`ValidationError` if it cannot."""
    if not path:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ValidationError("log_directory", f"{path!r} cannot be made a directory: {error.strerror}") from None


class GPUJob(Job):
    """A batch job that runs one Dask worker per GPU, of the batch system it is bound to (``GPUJob.bound_to``).

    It does not call dask-jobqueue's ``Job.__init__``, which reads the deprecated ``jobqueue.<config_name>.*``
    settings and assigns the read-only :attr:`job_header`; it sets what dask-jobqueue's cluster reads itself.

    Parameters
    ----------
    scheduler : str
        Address of the Dask scheduler.
    name : str
        The job's name in the cluster; its workers are ``<name>-<i>``.
    plan : Plan, optional
        The cluster's plan, of whose ``pool`` the job is; without one, the plan of ``**cluster_keywords``.
    pool : {"gpu", "cpu"}
        The plan's pool the job is of: its GPU workers, or its CPU pool's.
    security : Security, optional
        TLS credentials for the workers.
    scheduler_file : str, optional
        The workers find the scheduler through this file (``scheduler="job"``).
    start_scheduler : SchedulerStart, optional
        This job starts the cluster's scheduler, then its workers (``scheduler="job"``).
    cluster_folder : callable, optional
        Gives the cluster's private folder (a ``ClusterFolder``, or None): the job reads its files only from it.
    commands : JobCommands, optional
        The cluster's gatherer of batch commands, which cancels (and, with ``arrays``, submits) jobs together.
    batch_state : object, optional
        What the batch system keeps for all the cluster's jobs (:meth:`BatchSystem.cluster_state`).
    config_name : str, optional
        dask-jobqueue's cluster passes it to every job; the job keeps it (default: its batch system's name).
    interface, protocol : str, optional
        :class:`dask_jobqueue.JobQueueCluster` passes them to every job; read only without a plan.
    **cluster_keywords
        Without a plan, the job is made as dask-jobqueue's are, from its batch system's cluster keywords.
    """

    batch_system: ClassVar[type[BatchSystem]]
    batch: ClassVar[str]  # its name (``slurm``)
    _bound: ClassVar[dict[type[BatchSystem], type["GPUJob"]]] = {}

    @classmethod
    def bound_to(cls, system: type[BatchSystem]) -> type["GPUJob"]:
        """The job class of ``system`` (``SLURMGPUJob``), made once: this class with its batch system set."""
        if system not in GPUJob._bound:
            GPUJob._bound[system] = type(
                system.class_name("GPUJob"),
                (cls,),
                {
                    "batch_system": system,
                    "batch": system.name,
                    "config_name": system.name,
                    "__module__": system.__module__,
                    "__doc__": f"A {system.name} job of GPU workers: :class:`~gpujobqueue.job.GPUJob` bound to "
                    f":class:`~{system.__module__}.{system.__qualname__}`.",
                },
            )
        return GPUJob._bound[system]

    def __init__(
        self,
        scheduler: str | None = None,
        name: str | None = None,
        *,
        plan: Plan | None = None,
        pool: str = "gpu",
        security: Security | None = None,
        config_name: str | None = None,
        interface: str | None = None,
        protocol: str | None = None,
        scheduler_file: str | None = None,
        start_scheduler: SchedulerStart | None = None,
        cluster_folder: Callable[[], ClusterFolder | None] | None = None,
        commands: JobCommands | None = None,
        batch_state: Any = None,
        **cluster_keywords: Any,
    ):
        if plan is None:  # made as dask-jobqueue's jobs are (SLURMGPUJob(cores=..., memory=...)): their plan
            plan = self._plan_of(dict(cluster_keywords, interface=interface, protocol=protocol))
        elif cluster_keywords:
            config.check_keywords(cluster_keywords, (), type(self).__name__)
        request, launch = plan.pool(pool)
        make_log_directory(request.log_directory)  # where dask-jobqueue's Job makes it
        ProcessInterface.__init__(self)  # not Job.__init__: the class docstring says why
        self.scheduler = scheduler
        self.name = name
        self.job_id: str | None = None
        self.submitted_at: float | None = None  # time.time() once the batch system took it
        self.closed_at: float | None = None  # ... and once this cluster cancelled it
        self.config_name = config_name or type(self).config_name
        self.plan, self.pool = plan, pool
        self.request = request
        self.launch = launch
        self.job_name = request.job_name
        self.log_directory = request.log_directory
        self.shebang = request.shebang
        self.worker_processes = launch.workers_per_node * request.nodes
        self.worker_cores = launch.nthreads * self.worker_processes
        self.worker_memory = launch.memory_limit * self.worker_processes if launch.memory_limit else None
        self._tls_args = tls_args("worker", security)
        self.scheduler_file = scheduler_file
        self.start_scheduler = start_scheduler
        self.cluster_folder = cluster_folder
        self.commands = commands
        self.batch_state = batch_state
        self.handle: Any = None  # what the batch system keeps of this job once submitted
        self.submit_directory = os.getcwd()  # where batch systems write logs by default; set again at submission

    @classmethod
    def _plan_of(cls, keywords: dict[str, Any]) -> Plan:
        """The plan the batch system's clusters make of cluster ``keywords``."""
        plan = make_plan(cls.batch_system, keywords, owner=cls.__name__)
        check_log_directory(plan.request.log_directory)
        return plan

    @property
    def tls_args(self) -> tuple[str, ...]:
        """The workers' ``--tls-*`` options (the cluster's credential files), empty without TLS."""
        return tuple(self._tls_args)

    def job_script(self, array: ArrayElements | None = None) -> str:
        """The script this job submits; with ``array``, the script of that job array."""
        if self.start_scheduler is not None:
            connection = SchedulerInJob(start=self.start_scheduler)
        elif self.scheduler_file is not None:
            connection = SchedulerFile(self.scheduler_file)
        else:
            connection = SchedulerAddress(self.scheduler) if self.scheduler else SchedulerAddress()
        return self.plan.system.job_script(
            self.plan,
            connection,
            name=str(self.name),
            pool=self.pool,
            tls_args=self._tls_args,
            array=array,
            plain_tcp=not self._tls_args and self.launch.protocol in (None, "tcp"),
            cluster_folder=self.cluster_folder() if self.cluster_folder else None,
        )

    @contextlib.contextmanager
    def job_file(self, array: ArrayElements | None = None) -> Iterator[str]:
        """The job's script (with ``array``, that array's) in a temporary file."""
        descriptor, path = tempfile.mkstemp(suffix=".sh", prefix="gpujobqueue-job-")
        try:
            with os.fdopen(descriptor, "w") as f:
                f.write(self.job_script(array=array))
            yield path
        finally:
            os.unlink(path)

    @property
    def job_header(self) -> str:
        """The directive lines of the script (dask-jobqueue's ``job_header``)."""
        return self.batch_system.job_header(self.job_script())

    async def start(self) -> None:
        try:
            make_log_directory(self.log_directory)
            self.submit_directory = os.getcwd()
            if self.commands is not None and self.commands.arrays and self.start_scheduler is None:
                await self.commands.submit(self)
            else:
                await self.submit_alone()
            await ProcessInterface.start(self)
            self.submitted_at = time.time()
        except BaseException:
            self.status = Status.failed  # the cluster must not wait for a job that never was
            raise

    async def submit_alone(self) -> None:
        """Submit this job's own script; set its job id."""
        self.job_id = await self.batch_system.submit(self)

    async def close(self) -> None:
        await self.batch_system.stop(self)
        self.closed_at = time.time()
        # dask-jobqueue's leaves the status `running`; SpecCluster.close asserts every job it holds is closed.
        await ProcessInterface.close(self)

    async def batch_status(self) -> JobStatus | None:
        """What the batch system says of this job now; None before it is submitted or when it does not answer."""
        if self.job_id is None:
            return None
        statuses, _ = await self.batch_system.query_answer([self])
        return (statuses or {}).get(self.job_id)

    def log_paths(self) -> list[str]:
        """Where the batch system writes this job's output (stdout first)."""
        return self.batch_system.log_paths(self)

    def log_file(self, name: str) -> str:
        """A log file's path: in ``log_directory`` if set, else in the submit directory."""
        return os.path.join(self.submit_directory, self.log_directory or "", name)

    async def failure(self, status: JobStatus, before: str = "its workers connected") -> JobFailedError:
        """The report of this job having ended too soon (``before`` what): state, exit code, end of its log."""
        exit_code = status.exit_code
        if exit_code is None:
            exit_code = await self.batch_system.query_exit_code(self)
        path, tail = read_log_tail(self.log_paths())
        if exit_code is None:
            exit_code = script_exit_code(tail)
        return JobFailedError(
            str(self.name), self.batch, dataclasses.replace(status, exit_code=exit_code), path, tail, before
        )
