"""The shared cluster: dask-jobqueue's JobQueueCluster counting GPU workers, made from its plan."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from typing import Any, ClassVar

from distributed.core import Status
from distributed.scheduler import Scheduler
from distributed.security import Security
from distributed.utils import format_dashboard_link

from .. import sites
from ..batch.base import BatchSystem
from ..errors import GPUJobQueueError, ValidationError
from ..jobs.job_commands import JobCommands
from ..jobs.scheduler_job import (
    SCHEDULER_FILE_NAME,
    SCHEDULER_HERE,
    SCHEDULER_IN_JOB,
    SchedulerStart,
    check_ucx_scheduler_host,
)
from ..machine import gpus
from ..machine.install import WorkerPythonCheck
from ..machine.interfaces import check_scheduler_interface
from ..plan import Plan, make_plan
from ..preloads.watchdog import CLUSTER_ALIVE_HANDLER, probe_interval
from ..security.dashboard import OpenDashboardWarning, is_loopback_address
from ..security.owned_folders import ClusterFolder, owner_prefix, remove_owned_folder, remove_stale_private_directories
from ..security.tls import make_private_directory, tls_args, worker_security_with_files
from ..settings import config
from ..settings.cluster_parameters import CLUSTER_PARAMETERS, with_shared_parameters
from ..settings.limits import MAX_JOBS_PER_CLUSTER
from ..settings.naming import WorkerJobKey, cpu_job_name, gpu_job_name
from ..settings.validation import parse_count, parse_name
from . import exit_cleanup
from .cluster_options import check_cluster_keywords, shared_directory
from .cluster_options import scheduler_options as checked_scheduler_options
from .handover import quiet_cancellations
from .job import GPUJob, check_log_directory
from .jobbook import job_of_entry
from .runtime_cluster import RuntimeCluster
from .scheduler_process import HostedWorkers, JobScheduler
from .worker_wait import WorkersNotStartedError

# Imported from here by gpujobqueue/__init__.py and the tests.
__all__ = ["GPUJobQueueCluster", "OpenDashboardWarning", "WorkerJobKey", "WorkersNotStartedError"]

logger = logging.getLogger(__name__)


class GPUJobQueueCluster(RuntimeCluster):
    """A Dask cluster of GPU workers started through a batch system.

    Counts in GPU workers: ``scale(8)`` and ``scale(gpus=8)`` ask for eight GPU workers,
    which is ``ceil(8 / gpus_per_job)`` jobs. A batch system's cluster class (:class:`SLURMGPUCluster`,
    :class:`LocalGPUCluster`) is this class bound to its :class:`~gpujobqueue.batch.base.BatchSystem`.

    Raises
    ------
    ValidationError
        A value of the wrong form, naming the keyword; nothing is submitted.
    UnknownKeywordError
        A keyword no gpujobqueue cluster takes.
    """

    batch_system: ClassVar[type[BatchSystem]]  # its jobs' batch system (gpujobqueue.runtime.factory.bound_cluster)
    job_cls: ClassVar[type[GPUJob]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("__doc__"):  # a batch system's class documents the shared keywords too
            cls.__doc__ = with_shared_parameters(cls.__doc__, CLUSTER_PARAMETERS)

    @classmethod
    def parse_keywords(cls, kwargs: dict[str, Any]) -> Plan:
        """The :class:`~gpujobqueue.plan.Plan` these keywords make for this class (:func:`~gpujobqueue.plan.make_plan`):
        checked, resolved and validated; nothing is started."""
        return make_plan(cls, kwargs)

    def __init__(
        self,
        n_workers: int = 0,
        *,
        job_cls: type[GPUJob] | None = None,
        loop: Any = None,
        security: Any = None,
        shared_temp_directory: str | None = None,
        silence_logs: str = "error",
        name: str | None = None,
        asynchronous: bool = False,
        dashboard_address: str | None = None,
        host: str | None = None,
        scheduler_options: dict | None = None,
        scheduler_cls: type = Scheduler,
        config_name: str | None = None,
        processes: int | None = None,
        scheduler: str | None = None,
        cpu_pool: dict[str, Any] | None = None,
        job_array: bool | None = None,
        **kwargs: Any,
    ):
        """Make the cluster's plan and start its scheduler (no job until :meth:`scale`); a failure closes it all."""
        # The constructor's own keywords, checked before anything starts, then given to distributed's cluster.
        own = dict(job_cls=job_cls, loop=loop, silence_logs=silence_logs, asynchronous=asynchronous, host=host)
        check_cluster_keywords(
            **own, dashboard_address=dashboard_address, scheduler_cls=scheduler_cls, config_name=config_name
        )
        if job_cls is not None:
            self.job_cls = job_cls
        if name is not None:  # the prefix of every job and worker name, written into the job scripts
            name = parse_name("name", name)
        plan = make_plan(
            type(self),
            dict(kwargs, processes=processes),
            security=security,
            scheduler=scheduler,
            cpu_pool=cpu_pool,
            job_array=job_array,
        )
        n_workers = parse_count("n_workers", n_workers, maximum=MAX_JOBS_PER_CLUSTER * plan.request.gpus_per_job)
        check_log_directory(plan.request.log_directory)
        self._worker_saturation = config.worker_saturation()  # a bad setting refused before anything starts
        # At once, not after the jobs' queue wait; beside the scheduler's start, which it need not delay.
        probe = WorkerPythonCheck(plan.launch.python, **plan.worker_python_needs())
        job_kwargs, scheduler_cls = self._take_plan(plan, shared_temp_directory, scheduler_cls)
        scheduler_options = self._checked_scheduler_options(scheduler_options, scheduler_cls, host)
        exit_cleanup.track(self)  # from here on, its jobs are cancelled when this process ends
        try:
            self._init_job_queue_cluster(
                **own,
                name=name,
                scheduler_options=scheduler_options,
                scheduler_cls=scheduler_cls,
                config_name=config_name or self.batch_system.name,
                job_kwargs=job_kwargs,
            )
            probe.warn()
            if n_workers:
                self.scale(n_workers)
        except BaseException:
            self._abandon()
            raise

    def _take_plan(
        self, plan: Plan, shared_temp_directory: str | None, scheduler_cls: Any
    ) -> tuple[dict[str, Any], Any]:
        """Keep what the cluster reads of its plan and make its parts; return the jobs' keywords and scheduler class."""
        self.cluster_plan = plan  # not `plan`: distributed's Cluster.plan is the workers it plans for
        self.request, self.launch, self.site = plan.request, plan.launch, plan.site
        sites.warn_unconfirmed(self.site)
        self.cpu_pool, self.cpu_request, self.cpu_launch = plan.cpu_pool, plan.cpu_request, plan.cpu_launch
        # Not `_job_key`: dask-jobqueue keeps the TLS key file of security=True in `self._job_key`.
        self._worker_to_job = WorkerJobKey(
            plan.launch.name_suffixes, self.cpu_launch.name_suffixes if self.cpu_launch else None
        )
        self._cpu_i = 0
        self.scheduler_placement = plan.scheduler_placement
        if plan.launch.protocol == "ucx":
            check_ucx_scheduler_host(scheduler_here=self.scheduler_placement == SCHEDULER_HERE)
        # The scheduler (when in this process) and the client need a CUDA context before UCX starts.
        self._ucx_cuda_context = plan.launch.protocol == "ucx" and bool(gpus.nvidia_gpu_ids())
        # Jobs started or stopped together submit and cancel in one command each.
        self._job_commands = JobCommands(arrays=plan.job_array)
        job_kwargs = {
            "batch_state": self.batch_system.cluster_state(plan.settings, plan.request),
            "commands": self._job_commands,
            "cluster_folder": self._made_folder,  # the jobs check it before they read what it holds
        }
        # The scheduler file and TLS credentials go to a private folder the compute nodes can read.
        self._shared_directory = shared_directory(self.batch_system.name, shared_temp_directory)
        self._private_directory: str | None = None
        self._folder_made: ClusterFolder | None = None
        # A SIGKILLed cluster could not remove its folder (its TLS key inside); this start does.
        for folder in remove_stale_private_directories(self._shared_directory)[0]:
            logger.info("removed the private folder %s: %s", folder.path, folder.reason)
        self._start_parts(plan, self.job_cls, self._worker_to_job, self._new_job_spec)
        if self.scheduler_placement == SCHEDULER_IN_JOB:
            scheduler_file = os.path.join(self._private_folder(), SCHEDULER_FILE_NAME)
            job_kwargs["scheduler_file"] = scheduler_file
            scheduler_cls = functools.partial(
                JobScheduler,
                make_job=self._make_scheduler_job,
                scheduler_file=scheduler_file,
                folder=self._made_folder(),
                tls_args=tls_args("scheduler", plan.security, self._private_folder()) if plan.security else (),
                worker_saturation=config.worker_saturation_text(self._worker_saturation),
            )
        return job_kwargs, scheduler_cls

    def _checked_scheduler_options(self, options: dict | None, scheduler_cls: Any, host: str | None) -> dict:
        """``scheduler_options`` checked, and the scheduler's interface, where it runs here, found on this host."""
        where = "the scheduler job's node" if self.scheduler_placement == SCHEDULER_IN_JOB else "this host"
        options, self._dashboard_address = checked_scheduler_options(
            self.batch_system.name, options, scheduler_cls, where
        )
        if self.scheduler_placement == SCHEDULER_HERE and host is None and "host" not in options:
            # Here, on the login node, not on the compute nodes: the scheduler's interface must exist on this host.
            named = "scheduler_options" if "interface" in options else "interface"
            check_scheduler_interface(options.get("interface", self.launch.interface), named, self.site)
        return options

    def _abandon(self) -> None:
        """Undo a constructor that failed half way: close what it started and stop its event loop's thread."""
        if not getattr(self, "asynchronous", True):
            if getattr(self, "status", None) == Status.running:
                with contextlib.suppress(Exception):
                    self.close(timeout=30)
            loop_runner = getattr(self, "_loop_runner", None)
            if loop_runner is not None:
                with contextlib.suppress(Exception):
                    loop_runner.stop()
        # A constructor refused before distributed's Cluster was set up has no name yet.
        with contextlib.suppress(Exception):
            self._remove_private_directory()
        exit_cleanup.forget(self)

    def _new_job_spec(self, pool: str) -> dict[str, Any]:
        return self.new_worker_spec() if pool == "gpu" else self._new_cpu_job_spec()

    def _init_job_queue_cluster(self, *, job_kwargs: dict[str, Any], **options: Any) -> None:
        launch = self.launch
        # All JobQueueCluster would read from jobqueue.<name>.* is given ("" for the jobs' interface: launch has it).
        scheduler_options = dict(options.pop("scheduler_options"))
        if "host" not in scheduler_options:
            scheduler_options.setdefault("interface", launch.interface)
        super().__init__(
            n_workers=0,
            interface=launch.interface or "",
            scheduler_options=scheduler_options,
            protocol=f"{launch.protocol}://" if launch.protocol else None,
            security=self.cluster_plan.security,
            shared_temp_directory=self._shared_directory,
            plan=self.cluster_plan,
            **options,
            **job_kwargs,
        )
        self.new_spec["group"] = launch.name_suffixes

    def _new_worker_name(self, worker_number: int) -> str:
        return gpu_job_name(self._name, worker_number)

    def new_worker_spec(self) -> dict[str, Any]:
        """A new job's name and spec; unlike SpecCluster's, a number is never reused (a leaving worker may hold it)."""
        spec = super().new_worker_spec()  # distributed's: the first number from self._i whose name is free
        self._i += 1
        return spec

    def _new_cpu_job_spec(self) -> dict[str, Any]:
        name = cpu_job_name(self._name, self._cpu_i)
        self._cpu_i += 1
        options = dict(self._job_kwargs, pool="cpu")
        return {name: {"cls": self.job_cls, "options": options, "group": self.cpu_launch.name_suffixes, "pool": "cpu"}}

    def cpu_job_script(self) -> str:
        """The script of one CPU-pool job (``cpu_pool``)."""
        if self.cpu_pool is None:
            raise ValidationError("cpu_pool", "this cluster has no CPU pool; give cpu_pool={...}")
        return self.job_cls(None, name="dummy-name-cpu", **dict(self._job_kwargs, pool="cpu")).job_script()

    def _make_scheduler_job(self, start: SchedulerStart) -> GPUJob:
        """The cluster's first job, which starts the scheduler before its GPU workers."""
        name = self._new_worker_name(self._i)
        self._i += 1
        self._book.pin(name)  # its workers live as long as the cluster
        return self.job_cls(None, name=name, start_scheduler=start, **self._job_kwargs)

    @property
    def scheduler_job(self) -> GPUJob | None:
        """The job that runs the scheduler (``scheduler="job"``), else None."""
        return self.scheduler.job if isinstance(self.scheduler, JobScheduler) else None

    async def _start(self) -> None:
        try:
            closed = self._dashboard_address is None  # a scheduler here serves no HTTP route
            with (
                config.ucx_cuda_context(self._ucx_cuda_context),
                config.no_scheduler_http_routes(closed),
                config.scheduler_worker_saturation(self._worker_saturation),
            ):
                await super()._start()
        except RuntimeError as error:
            if isinstance(error.__cause__, GPUJobQueueError):  # SpecCluster wraps it; ours says more alone
                raise error.__cause__ from None
            raise
        job = self.scheduler_job
        if job is not None and job.name not in self.worker_spec:
            # The scheduler's job runs GPU workers too: they count, and live as long as the cluster.
            self.worker_spec[job.name] = {
                "cls": HostedWorkers,
                "options": {"job": job},
                "group": self.launch.name_suffixes,
            }
            await self._correct_state()
        if job is not None and self.launch.death_timeout:
            self._scheduler_job_calls = asyncio.ensure_future(self._call_scheduler_job(self.launch.death_timeout))
        self._start_watches()

    async def _call_scheduler_job(self, timeout: int) -> None:
        """Tell the job's scheduler every few seconds that its cluster lives (it closes after ``timeout`` s without)."""
        while True:
            try:
                await asyncio.wait_for(getattr(self.scheduler_comm, CLUSTER_ALIVE_HANDLER)(), timeout)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the job watch reports a scheduler job that ended
                logger.debug("the scheduler job did not take the cluster's call: %r", error)
            await asyncio.sleep(probe_interval(timeout))

    async def _close(self) -> None:
        calls = getattr(self, "_scheduler_job_calls", None)
        if calls is not None:
            calls.cancel()
        try:
            await self._stop_watches()
            with quiet_cancellations():  # of workers retired just before
                await super()._close()
        finally:
            self._remove_private_directory()
            exit_cleanup.forget(self)
            self._close_usage()

    def cancel_jobs_now(self) -> None:
        """Cancel every job this cluster submitted, at once and without the event loop (at
        interpreter exit, on SIGTERM and SIGHUP); the cluster is of no use afterwards."""
        jobs: dict[int, GPUJob] = {}
        # A cluster whose start failed half way may lack any of these.
        entries = [*getattr(self, "workers", {}).values(), *getattr(self, "_created", ())]
        if getattr(self, "scheduler", None) is not None and self.scheduler_job is not None:
            entries.append(self.scheduler_job)
        for entry in entries:
            job = job_of_entry(entry)
            if isinstance(job, GPUJob) and job.job_id is not None and job.status != Status.closed:
                jobs[id(job)] = job
        by_system: dict[type[BatchSystem], list[GPUJob]] = {}
        for job in jobs.values():
            by_system.setdefault(job.batch_system, []).append(job)
        for system, group in by_system.items():
            system.cancel_now(group)
        self._remove_private_directory()
        exit_cleanup.forget(self)
        if hasattr(self, "_usage"):  # a constructor that failed early has none
            self._close_usage()

    def _private_folder(self) -> str:
        """The cluster's private folder (mode 0700) in its shared directory, made on first use."""
        if self._private_directory is None:
            self._folder_made = ClusterFolder(*make_private_directory(self._shared_directory, owner_prefix()))
            self._private_directory = self._folder_made.path
        return self._private_directory

    def _made_folder(self) -> ClusterFolder | None:
        """The cluster's private folder as made (its owner, mode and inode), None before it is made."""
        return self._folder_made

    def _get_worker_security(self, security: Security | None) -> Security | None:
        # dask-jobqueue's hook (its own writes credentials into the shared directory)
        return worker_security_with_files(security, self._private_folder)

    @property
    def dashboard_link(self) -> str:
        """The dashboard's address, ``""`` where none was opened; ``http://127.0.0.1:<port>/status`` on a loopback."""
        link = super().dashboard_link if self._dashboard_address else ""
        if not link or not is_loopback_address(self._dashboard_address):
            return link
        return format_dashboard_link("127.0.0.1", self.scheduler_info["services"]["dashboard"])

    def _remove_private_directory(self) -> None:
        if self._private_directory is not None:
            with contextlib.suppress(OSError):
                remove_owned_folder(self._private_directory)


GPUJobQueueCluster.__doc__ = with_shared_parameters(GPUJobQueueCluster.__doc__ or "", CLUSTER_PARAMETERS)
