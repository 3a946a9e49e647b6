"""The shared cluster: dask-jobqueue's JobQueueCluster counting GPU workers, not processes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import logging
import math
import os
import shutil
import socket
import time
import warnings
from typing import Any, ClassVar

import dask.config
from dask.utils import parse_bytes, parse_timedelta
from dask_jobqueue.core import JobQueueCluster
from distributed.core import Status
from distributed.scheduler import Scheduler
from distributed.security import Security
from distributed.utils import format_dashboard_link

from . import config, exit_cleanup, gpus, sites
from .adaptive import GPUAdaptive
from .cpu_pool import CPUPool
from .docstrings import with_shared_parameters
from .errors import GPUJobQueueError, SubmissionError, ValidationError
from .interfaces import check_scheduler_interface
from .job import GPUJob, check_log_directory
from .job_commands import JobCommands
from .job_status import JobFailedError
from .job_watch import JobTable, JobWatch
from .keywords import Keyword
from .limits import MAX_JOBS_PER_CLUSTER
from .naming import WorkerJobKey, cpu_job_name, gpu_job_name
from .notebook import cluster_status_html
from .plan import make_plan
from .progress import WaitProgress
from .render import check_scheduler_can_run_in_job
from .replacement import Replacement, forget_unsubmitted
from .request import DEFAULT_WALLTIME, JobRequest, parse_bool, parse_name, parse_positive_int
from .scheduler_job import SCHEDULER_FILE_NAME, HostedWorkers, JobScheduler, SchedulerStart, parse_scheduler_placement
from .security import (
    make_private_directory,
    remove_stale_private_directories,
    resolve_security,
    scheduler_tls_args,
    worker_security_with_files,
)
from .watchdog import CLUSTER_ALIVE_HANDLER, probe_interval
from .workers import WorkerLaunch

try:
    from distributed.deploy.cluster import SchedulerInfo, WorkerStartTimeoutError
except ImportError:  # older distributed keeps a plain dict and raises a TimeoutError
    SchedulerInfo = dict

    class WorkerStartTimeoutError(asyncio.TimeoutError):  # type: ignore[no-redef]
        def __init__(self, available_workers: int, expected_workers: int, timeout: Any):
            super().__init__(f"only {available_workers} of {expected_workers} workers started within {timeout}")


logger = logging.getLogger(__name__)


class WorkersNotStartedError(WorkerStartTimeoutError, GPUJobQueueError):
    """:meth:`~GPUJobQueueCluster.wait_for_workers` timed out; the message keeps why the jobs
    wait, as the batch system said: ``0/8 workers after 12 s; SLURMGPUCluster-0 PENDING (Resources)``.

    Attributes
    ----------
    waiting : list of str
        Each job without all its workers: its name, state and the batch system's reason.
    """

    def __init__(self, available_workers: int, expected_workers: int, timeout: Any, waiting: list[str]):
        self.waiting = waiting
        super().__init__(available_workers, expected_workers, timeout)
        self.available_workers, self.expected_workers, self.timeout = available_workers, expected_workers, timeout

    def __str__(self) -> str:
        seconds = parse_timedelta(self.timeout)
        return (
            f"{self.available_workers}/{self.expected_workers} workers after {seconds:g} s; "
            f"{', '.join(self.waiting) or 'no job submitted'}"
        )


# Jobs named in a wait_for_workers timeout; the rest are counted.
MAX_JOBS_NAMED = 8

# Keywords every batch system takes; each cluster class adds its own (batch_keywords).
REQUEST_KEYWORDS = (
    "nodes",
    "gpus_per_node",
    "cpus_per_gpu",
    "cores",
    "memory",
    "memory_per_gpu",
    "walltime",
    "account",
    "queue",
    "exclusive",
    "job_name",
    "log_directory",
    "job_extra_directives",
    "job_directives_skip",
    "job_script_prologue",
    "job_script_epilogue",
    "environment",
    "gpu_request",
    "gpu_type",
    "shebang",
    "walltime_margin",
)
LAUNCH_KEYWORDS = (
    "worker_mode",
    "python",
    "worker_command",
    "nthreads",
    "memory_limit",
    "device_memory_limit",
    "rmm_pool_size",
    "visibility_variable",
    "allocation_variable",
    "nanny",
    "death_timeout",
    "local_directory",
    "protocol",
    "interface",
    "worker_extra_args",
    "launcher",
    "launcher_args",
    # dask-cuda's names for device memory and UCX transports
    "rmm_maximum_pool_size",
    "rmm_async",
    "rmm_managed_memory",
    "rmm_release_threshold",
    "enable_cudf_spill",
    "set_rmm_allocator_for_libs",
    "enable_tcp_over_ucx",
    "enable_infiniband",
    "enable_nvlink",
    "enable_rdmacm",
)
# dask-jobqueue's deprecated spellings, kept with the same meaning and warning
# (unless a batch system keeps the old name as its own, as PBS, LSF and SGE keep project).
RENAMED_KEYWORDS = {
    "project": "account",
    "job_extra": "job_extra_directives",
    "header_skip": "job_directives_skip",
    "env_extra": "job_script_prologue",
    "extra": "worker_extra_args",
}


# The dashboard shows worker logs and takes no password: on a shared login node (or a compute
# node) it listens on the loopback only, reached through an SSH tunnel or jupyter-server-proxy.
DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787"


def is_loopback_address(address: Any) -> bool:
    """Whether a ``host:port`` dashboard address names the loopback."""
    return str(address).rpartition(":")[0].strip("[]") in ("127.0.0.1", "localhost", "::1")


class OpenDashboardWarning(UserWarning):
    """The dashboard listens beyond the loopback, without authentication."""


def dashboard_options(scheduler_options: dict | None) -> dict[str, Any]:
    """The scheduler options with the dashboard on the loopback unless
    ``scheduler_options["dashboard_address"]`` gives an address; one open beyond the loopback warns."""
    options = dict(scheduler_options or {})
    address = options.setdefault("dashboard_address", DEFAULT_DASHBOARD_ADDRESS)
    if address not in (None, False) and not is_loopback_address(address):
        warnings.warn(
            f"the dashboard at {address!r} listens beyond this machine's loopback, without authentication, and "
            "shows your workers' logs; leave scheduler_options' dashboard_address unset to keep it on 127.0.0.1 "
            "and reach it through an SSH tunnel",
            OpenDashboardWarning,
            stacklevel=3,
        )
    return options


class GPUJobQueueCluster(JobQueueCluster):
    """A Dask cluster of GPU workers started through a batch system.

    Counts in GPU workers: ``scale(8)`` and ``scale(gpus=8)`` ask for eight GPU workers,
    which is ``ceil(8 / gpus_per_job)`` jobs. Use a batch system's class
    (:class:`SLURMGPUCluster`, :class:`LocalGPUCluster`) or :func:`GPUCluster`.

    Parameters
    ----------
    n_workers : int
        GPU workers to start at once (default 0; see :meth:`scale`).
    site : str or Site, optional
        A site config (``"perlmutter"``, or a path to a YAML file) whose facts fill in
        every keyword not given; ``queue`` then names one of the site's queues, and the
        request is checked against the site's limits before anything is submitted.
    gpus_per_node : int
        GPUs each job asks for on its node; one worker per GPU.
    cpus_per_gpu, cores : int
        CPU cores per GPU, or per job (dask-jobqueue's ``cores``). With a site, the site's
        share of the node by default; without one, one of them is required (with memory),
        as dask-jobqueue requires ``cores`` and ``memory``.
    memory_per_gpu, memory : str
        Host memory per GPU, or per job (dask-jobqueue's ``memory``), e.g. ``"60GiB"``;
        each worker's memory limit is its share. Required without a site, as above.
    walltime : str
        ``HH:MM:SS``, ``D-HH:MM:SS`` or minutes.
    walltime_margin : str, int or False
        How long before the walltime the workers retire gracefully (their data moved to
        other workers, their job then ending on its own), staggered by a quarter of the
        margin either way so they do not all leave at once. Default ``"auto"``: 5 % of the
        walltime, at least 20 s and at most 10 minutes, and never more than a quarter of
        the walltime (a 2-minute job works 100 s, a 1-hour job 57 minutes);
        ``False`` lets the walltime end them. Passed to the workers as dask config
        (``distributed.worker.lifetime``), since ``dask cuda worker`` takes no ``--lifetime``.
    queue, account, qos, constraint : str
        Where the job runs and who pays (``partition`` is a synonym of ``queue``).
    exclusive : bool
        Whole nodes.
    job_name : str
        The batch job's name.
    gpu_request : {"gpus-per-node", "gres", "none"}
        How the job asks for GPUs; ``gpu_type`` adds a model (``--gres=gpu:a100:4``).
    gpu_type : str
        The GPU model asked for, in the batch system's spelling.
    worker_mode : {"dask-cuda", "per-device"}
        ``dask cuda worker`` per node, or one ``dask worker`` per allocated device.
    nthreads : int
        Threads per worker. Default: with ``cores`` (dask-jobqueue's threads of the whole
        job), the job's cores shared evenly by its workers (``cores=24`` with 4 GPUs: 6 each;
        cores that would be left idle are refused); otherwise, for dask-cuda workers, up to 4
        of each GPU's share of the job's cores (more threads overlap one task's Python and kernel launches with
        another's GPU work: the 2 TB sum ran 28 % faster with 4 than with 1 on an H200);
        for per-device workers, 1.
    device_memory_limit, rmm_pool_size, rmm_maximum_pool_size, rmm_release_threshold : str
        Passed to dask-cuda with its names and defaults (sizes such as ``"20GB"`` or
        fractions of the device's memory). With ``protocol="ucx"`` and no RMM keyword, each
        worker gets a 1 GB RMM pool that grows on demand; ``rmm_pool_size=False`` turns it off.
    rmm_async, rmm_managed_memory, enable_cudf_spill : bool
        dask-cuda's switches (``cudaMallocAsync``, managed memory, cuDF spilling).
    set_rmm_allocator_for_libs : str or list of str
        ``"cupy"``, ``"torch"``: those libraries allocate through RMM on the workers.
    enable_nvlink, enable_infiniband, enable_rdmacm, enable_tcp_over_ucx : bool
        UCX transports (``protocol="ucx"`` only); those not given are left to UCX. A site
        with UCX sets them from its ``network.ucx``.
    visibility_variable : str
        ``CUDA_VISIBLE_DEVICES`` (default), ``ROCR_VISIBLE_DEVICES`` or ``ZE_AFFINITY_MASK``.
    log_directory : str
        Where the batch system writes the job's output.
    job_extra_directives, job_directives_skip, job_script_prologue, job_script_epilogue : list of str
        Extra directive lines, generated lines to leave out, and shell lines before and
        after the workers. A GPU request written among the extra directives (or in
        ``resource_spec``), as dask-jobqueue users write it, is read: its count is the
        GPUs per node unless ``gpus_per_node`` says otherwise, which is refused
        (:mod:`gpujobqueue.hand_written_gpus`).
    environment : dict
        Variables exported in the job.
    cpu_pool : dict, optional
        A CPU-only pool beside the GPU workers, on the same scheduler, scaled with
        ``scale(cpu_workers=N)``. Its jobs ask for no GPU and its workers carry no ``GPU``
        resource, so ``dask.annotate(resources={"GPU": 1})`` keeps tasks off them. Keys:
        ``processes`` (workers per job, default 1), ``cores``, ``nthreads``, ``memory``
        (per job), ``queue`` (a site's queue name maps to its partition and QoS),
        ``account``, ``qos``, ``constraint`` (SLURM), ``walltime``, ``job_name``,
        ``job_extra_directives``; the rest is the GPU jobs' settings.
    job_array : bool
        Submit the jobs that ``scale()`` and ``adapt()`` start together as one job array
        (SLURM ``--array=1-K``, PBS Pro ``-J 1-K``, LSF ``-J "name[1-K]"``, Grid Engine
        ``-t 1-K``): one submission for many one-node jobs. Each element is one of the
        cluster's jobs, and scaling down cancels single elements. Default false
        (``gpujobqueue.<batch>.job-array``).
    scheduler : {"local", "job"}
        Where the scheduler runs. ``"local"`` (default, except with UCX): in this process, as in
        dask-jobqueue. ``"job"``: in the cluster's first job, on a compute node, beside
        that job's GPU workers; it writes a scheduler file in a private folder of
        ``shared_temp_directory`` (default: the current directory), where this process
        and the other jobs' workers find it. That job lives as long as the cluster, so
        its GPUs are the cluster's minimum, and closing the cluster ends it last. The
        default with ``protocol="ucx"`` on a batch system: UCX has no TLS, so the scheduler
        is kept off the shared login node, on the job's own network (``interface``).
    nodes : int
        Nodes per job (default 1); each node runs ``gpus_per_node`` GPU workers, started
        through ``launcher``.
    processes : int
        dask-jobqueue's workers per job. One worker runs per GPU, so ``processes`` is
        ``gpus_per_node`` (giving both with different values is refused).
    launcher : str
        How a job of several nodes starts one task per node: ``srun``, ``ibrun``,
        ``mpiexec-pals``, ``mpiexec-openmpi``, ``mpiexec-mpich`` or ``jsrun``.
    launcher_args : list of str
        More launcher options, after gpujobqueue's own.
    allocation_variable : str
        The variable from which a job reads the devices the batch system allocated
        (default: ``visibility_variable``); where it is unset, devices ``0 .. G-1``.
    memory_limit : str
        Each worker's host memory limit, instead of its share of the job's memory.
    dashboard_address : str
        Refused, as in dask-jobqueue: give it in ``scheduler_options`` (where the dashboard
        listens, default ``127.0.0.1:8787``, the loopback; an address beyond it warns).
    host : str
        Refused, as in dask-jobqueue: give the scheduler's host in ``scheduler_options``.
    job_cls : type
        The job class; each batch system's cluster class sets its own.
    death_timeout, local_directory, interface, protocol, security, python, worker_command, worker_extra_args
        As in :class:`dask_jobqueue.SLURMCluster`.
    nanny, scheduler_options, scheduler_cls, shared_temp_directory, silence_logs, asynchronous, loop, name
        As in :class:`dask_jobqueue.SLURMCluster`.
    config_name, shebang
        As in :class:`dask_jobqueue.SLURMCluster`. On PBS and Grid Engine, whose ``-S``
        names the shell that runs the script whatever its first line, ``-S`` follows
        ``shebang``'s interpreter.

    Raises
    ------
    ValidationError
        A value of the wrong form, naming the keyword; nothing is submitted.
    UnknownKeywordError
        A keyword no gpujobqueue cluster takes.
    """

    job_cls: ClassVar[type[GPUJob]]
    batch_keywords: ClassVar[tuple[Keyword, ...]] = ()
    # Other names of keywords, in this batch system's (or dask-jobqueue's) vocabulary.
    batch_synonyms: ClassVar[dict[str, str]] = {}
    # How this batch system can ask for GPUs; the first is the default.
    gpu_request_styles: ClassVar[tuple[str, ...]] = ("none",)
    # Launchers that start one task per node of this batch system's multi-node jobs.
    launchers: ClassVar[tuple[str, ...]] = ()
    # The launcher of a job of several nodes that names none (nor its site); None: such a job must name one.
    native_launcher: ClassVar[str | None] = None
    # The walltime of jobs given none; None where nothing ends jobs (the local batch system).
    default_walltime: ClassVar[str | None] = DEFAULT_WALLTIME

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("__doc__"):  # a batch system's class documents the shared keywords too
            cls.__doc__ = with_shared_parameters(cls.__doc__, GPUJobQueueCluster.__doc__ or "")

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
        """Make the cluster's plan and start its scheduler; no job is submitted until :meth:`scale`.

        In order: dask-jobqueue's refusals, the plan (:func:`~gpujobqueue.plan.make_plan`), the
        security (TLS by default), the CPU pool's job shape, where the scheduler runs and whether
        it can (UCX needs a GPU beside it), job arrays, the private folder for the credentials and
        the scheduler file, the scheduler's interface on this host; then distributed's cluster
        starts. A constructor that fails part way closes whatever it started (:meth:`_abandon`).
        """
        if dashboard_address is not None:  # dask-jobqueue's rule, and its words
            raise ValidationError(
                "dashboard_address",
                "pass 'dashboard_address' through 'scheduler_options', "
                f"e.g. scheduler_options={{'dashboard_address': {dashboard_address!r}}}",
            )
        if job_cls is not None:
            self.job_cls = job_cls
        config_name = config_name or self.job_cls.config_name
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
        settings, request, launch, security = plan.settings, plan.request, plan.launch, plan.security
        check_log_directory(request.log_directory)
        self.request, self.launch, self.site = request, launch, plan.site
        sites.warn_unconfirmed(self.site)
        self.cpu_pool, self.cpu_request, self.cpu_launch = plan.cpu_pool, plan.cpu_request, plan.cpu_launch
        # Not `_job_key`: dask-jobqueue keeps the TLS key file of security=True in `self._job_key`.
        self._worker_to_job = WorkerJobKey(
            launch.name_suffixes, self.cpu_launch.name_suffixes if self.cpu_launch else None
        )
        self._cpu_i = 0
        self.scheduler_placement = plan.scheduler_placement
        if launch.protocol == "ucx":
            check_ucx_scheduler_host(scheduler_here=self.scheduler_placement == "local")
            if gpus.nvidia_gpu_ids():
                # The scheduler (when in this process) and the client need a CUDA context before UCX starts.
                dask.config.set({"distributed-ucxx.create-cuda-context": True})
        # Jobs started or stopped together submit and cancel in one command each.
        self._job_commands = JobCommands(arrays=plan.job_array)
        job_kwargs = dict(self._batch_job_kwargs(settings), commands=self._job_commands)
        # The scheduler file and TLS credentials go to a private folder the compute nodes can read.
        self._shared_directory = (
            shared_temp_directory
            or dask.config.get(f"jobqueue.{config_name}.shared-temp-directory", default=None)
            or os.getcwd()
        )
        self._private_directory: str | None = None
        # A SIGKILLed cluster could not remove its folder (its TLS key inside); this start does.
        for folder in remove_stale_private_directories(self._shared_directory)[0]:
            logger.info("removed the private folder %s: %s", folder.path, folder.reason)
        self._replacement = Replacement()  # keeps the jobs scale() asked for (replacement.py)
        self._job_watch = JobWatch(self)
        if self.scheduler_placement == "job":
            scheduler_file = os.path.join(self._private_folder(), SCHEDULER_FILE_NAME)
            job_kwargs["scheduler_file"] = scheduler_file
            scheduler_cls = functools.partial(
                JobScheduler,
                make_job=self._make_scheduler_job,
                scheduler_file=scheduler_file,
                tls_args=scheduler_tls_args(security, self._private_folder()) if security else (),
            )
        if scheduler_options is None:
            scheduler_options = dask.config.get(f"jobqueue.{config_name}.scheduler-options", default=None)
        scheduler_options = dashboard_options(scheduler_options)
        self._dashboard_address = scheduler_options["dashboard_address"]
        if self.scheduler_placement == "local" and host is None and "host" not in scheduler_options:
            # Here, on the login node, not on the compute nodes: the scheduler's interface must exist on this host.
            named = "scheduler_options" if "interface" in scheduler_options else "interface"
            check_scheduler_interface(scheduler_options.get("interface", launch.interface), named, self.site)
        exit_cleanup.track(self)  # from here on, its jobs are cancelled when this process ends
        try:
            self._init_job_queue_cluster(
                job_cls=job_cls,
                loop=loop,
                security=security,
                shared_temp_directory=shared_temp_directory,
                silence_logs=silence_logs,
                name=name,
                asynchronous=asynchronous,
                host=host,
                scheduler_options=scheduler_options,
                scheduler_cls=scheduler_cls,
                config_name=config_name,
                job_kwargs=job_kwargs,
            )
            if n_workers:
                self.scale(n_workers)
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Undo a constructor that failed half way: the caller never gets the cluster, so close
        what it started (scheduler, job watch, any job submitted) and stop its event loop's
        thread; nothing of it is left running, nor closed at exit."""
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

    def _init_job_queue_cluster(self, *, job_kwargs: dict[str, Any], **options: Any) -> None:
        launch = self.launch
        super().__init__(
            n_workers=0,
            interface=launch.interface,
            protocol=f"{launch.protocol}://" if launch.protocol else None,
            request=self.request,
            launch=launch,
            **options,
            **job_kwargs,
        )
        self.new_spec["group"] = launch.name_suffixes

    def _new_worker_name(self, worker_number: int) -> str:
        """The name of the GPU job number ``worker_number`` (:func:`gpujobqueue.naming.gpu_job_name`)."""
        return gpu_job_name(self._name, worker_number)

    def new_worker_spec(self) -> dict[str, Any]:
        """A new job's name and spec. Job numbers are never reused (SpecCluster would give a
        job that ended its number again): a job's name, its workers' names and what the job
        watch knew of it belong to that job alone, so a replacement is not taken for the job
        it replaces, nor refused by the scheduler for a name still held by a leaving worker."""
        while True:
            name = self._new_worker_name(self._i)
            self._i += 1
            if name not in self.worker_spec:
                return {name: self.new_spec}

    def _new_cpu_job_spec(self) -> dict[str, Any]:
        name = cpu_job_name(self._name, self._cpu_i)
        self._cpu_i += 1
        options = dict(self._job_kwargs, request=self.cpu_request, launch=self.cpu_launch)
        return {name: {"cls": self.job_cls, "options": options, "group": self.cpu_launch.name_suffixes, "pool": "cpu"}}

    def cpu_job_script(self) -> str:
        """The script of one CPU-pool job (``cpu_pool``)."""
        if self.cpu_pool is None:
            raise ValidationError("cpu_pool", "this cluster has no CPU pool; give cpu_pool={...}")
        return self.job_cls(
            None, name="dummy-name-cpu", **dict(self._job_kwargs, request=self.cpu_request, launch=self.cpu_launch)
        ).job_script()

    def _make_scheduler_job(self, start: SchedulerStart) -> GPUJob:
        """The cluster's first job, which starts the scheduler before its GPU workers."""
        name = self._new_worker_name(self._i)
        self._i += 1
        return self.job_cls(None, name=name, start_scheduler=start, **self._job_kwargs)

    @property
    def scheduler_job(self) -> GPUJob | None:
        """The job that runs the scheduler (``scheduler="job"``), else None."""
        return self.scheduler.job if isinstance(self.scheduler, JobScheduler) else None

    @property
    def pinned_jobs(self) -> set[str]:
        """Jobs that scaling down must leave alone: the scheduler's own job (``scheduler="job"``)."""
        job = self.scheduler_job
        return {str(job.name)} if job is not None else set()

    async def _start(self) -> None:
        try:
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
        self._job_watch.start()

    async def _call_scheduler_job(self, timeout: int) -> None:
        """Tell the job's scheduler, every few seconds, that its cluster lives: it closes (and its
        job ends) when this process has not called for ``timeout`` s (gpujobqueue/watchdog.py)."""
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
            await self._job_watch.stop()
            await super()._close()
        finally:
            self._remove_private_directory()
            exit_cleanup.forget(self)

    def cancel_jobs_now(self) -> None:
        """Cancel every job this cluster submitted, at once and without the event loop (at
        interpreter exit, on SIGTERM and SIGHUP); the cluster is of no use afterwards."""
        jobs: dict[int, GPUJob] = {}
        # A cluster whose start failed half way may lack any of these.
        scheduler_job = self.scheduler_job if getattr(self, "scheduler", None) is not None else None
        for entry in [*getattr(self, "workers", {}).values(), *getattr(self, "_created", ()), scheduler_job]:
            job = getattr(entry, "job", entry)  # the scheduler job's entry holds its job
            if isinstance(job, GPUJob) and job.job_id is not None and job.status != Status.closed:
                jobs[id(job)] = job
        by_class: dict[type[GPUJob], list[GPUJob]] = {}
        for job in jobs.values():
            by_class.setdefault(type(job), []).append(job)
        for job_cls, group in by_class.items():
            job_cls.cancel_now(group)
        self._remove_private_directory()
        exit_cleanup.forget(self)

    def _private_folder(self) -> str:
        """The cluster's private folder (mode 0700) in its shared directory, made on first use."""
        if self._private_directory is None:
            self._private_directory = make_private_directory(self._shared_directory)
        return self._private_directory

    def _get_worker_security(self, security: Security | None) -> Security | None:
        # dask-jobqueue's hook; its own writes in-memory credentials into the shared directory.
        return worker_security_with_files(security, self._private_folder)

    def _update_worker_status(self, op: str, msg: Any) -> None:
        if op == "add":
            for worker in msg.get("workers", {}).values():
                self._job_watch.note_worker(str(worker.get("name")))
        super()._update_worker_status(op, msg)

    @property
    def dashboard_link(self) -> str:
        """The dashboard's address; ``http://127.0.0.1:<port>/status`` where it listens on the
        loopback of the scheduler's host (this one, or the scheduler job's node), as an SSH
        tunnel to that host (``ssh -L <port>:127.0.0.1:<port> HOST``) reaches it."""
        link = super().dashboard_link
        if not link or not is_loopback_address(self._dashboard_address):
            return link
        return format_dashboard_link("127.0.0.1", self.scheduler_info["services"]["dashboard"])

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
        # During an outage the watch keeps asking in the background; a query here would only
        # wait for the batch command's own timeout to show the same notice.
        if not self.asynchronous and self.status == Status.running and self._job_watch.unreachable_since is None:
            self.sync(self._job_watch.poll)
        return self._job_watch.rows()

    def __repr__(self) -> str:
        text = super().__repr__()
        notice = self._job_watch.notice() if hasattr(self, "_job_watch") else None
        return f"{text[:-1]}, {notice})" if notice else text

    def _repr_html_(self, cluster_status: str | None = None) -> str:
        return super()._repr_html_(cluster_status=cluster_status_html(self) + (cluster_status or ""))

    @property
    def job_failures(self) -> list[JobFailedError]:
        """Every job that ended before its workers connected, with its exit code and log tail."""
        return list(self._job_watch.failures)

    async def _wait_for_workers(self, n_workers: int = 0, timeout: Any = None) -> None:
        """Wait for ``n_workers`` running workers. A job that ends before its workers connect
        is replaced (:meth:`scale`); once ``gpujobqueue.replace.max-failures`` of them in a row
        have failed, raise the last one's :class:`JobFailedError` rather than wait for workers
        that will never come."""
        deadline = None if not timeout else time.monotonic() + parse_timedelta(timeout)
        last_report = time.monotonic()
        progress = WaitProgress(n_workers)  # on a terminal only
        try:
            while True:
                # Each failed job is logged and replaced; the one that stopped the replacing is raised.
                failure = self._replacement.take_stop()
                if failure is not None:
                    raise failure
                self.scheduler_info = SchedulerInfo(await self.scheduler_comm.identity())
                running = sum(w["status"] == Status.running.name for w in self.scheduler_info["workers"].values())
                if running >= n_workers:
                    return
                if deadline is not None and time.monotonic() > deadline:
                    raise WorkersNotStartedError(running, n_workers, timeout, await self._why_jobs_wait())
                if progress.shown:
                    progress.show(running, self._job_watch.rows())
                if time.monotonic() - last_report > 60:
                    last_report = time.monotonic()
                    waiting = [
                        f"{row.name} {row.state or 'submitted'}" + (f" ({row.reason})" if row.reason else "")
                        for row in self._job_watch.rows()
                        if row.workers == 0
                    ]
                    logger.info(
                        "gpujobqueue: %d of %d workers running; waiting for %s",
                        running,
                        n_workers,
                        ", ".join(waiting) or "jobs to be submitted",
                    )
                await asyncio.sleep(0.2)
        finally:
            progress.close()

    async def _why_jobs_wait(self) -> list[str]:
        """Each job short of its workers, as the batch system says now: ``name STATE (reason)``;
        the batch system's outage, where it does not answer."""
        if self._job_watch.unreachable_since is None:  # in an outage, the notice says so without a query's wait
            with contextlib.suppress(Exception):  # the timeout is raised whatever the batch system says
                await asyncio.wait_for(self._job_watch.poll(), 30)
        rows = self._job_watch.rows()
        waiting = [
            f"{row.name} {row.state or 'not yet listed'}" + (f" ({row.reason})" if row.reason else "")
            for row in rows
            if row.workers < max(1, row.gpus)
        ]
        if len(waiting) > MAX_JOBS_NAMED:
            waiting = waiting[:MAX_JOBS_NAMED] + [f"{len(waiting) - MAX_JOBS_NAMED} more"]
        if rows.notice:
            waiting.append(rows.notice)
        return waiting

    def _remove_private_directory(self) -> None:
        if self._private_directory is not None:
            shutil.rmtree(self._private_directory, ignore_errors=True)

    @classmethod
    def parse_keywords(
        cls, kwargs: dict[str, Any], owner: str | None = None
    ) -> tuple[dict[str, Any], JobRequest, WorkerLaunch]:
        """Check, resolve and validate cluster keywords; start nothing (see :func:`gpujobqueue.plan.make_plan`).

        Returns
        -------
        settings : dict
            Every setting after keyword > dask config > site > default precedence, and
            ``site``: the :class:`~gpujobqueue.sites.Site` or None.
        request : JobRequest
        launch : WorkerLaunch
        """
        plan = make_plan(cls, kwargs, owner)
        return plan.settings, plan.request, plan.launch

    @classmethod
    def _apply_batch_defaults(cls, settings: dict[str, Any]) -> None:
        """Hook for a batch system to fill defaults of its own into the settings."""

    @classmethod
    def _parse_batch_options(cls, settings: dict[str, Any], request: JobRequest) -> Any:
        """Hook: parse the batch system's own keywords into its options object."""
        return None

    @classmethod
    def _check_job_array(cls, request: JobRequest) -> None:
        """Refuse job arrays where this batch system or this request has none."""
        if cls.job_cls.array_task_variable is None:
            raise ValidationError("job_array", f"{cls.job_cls.batch} jobs cannot be submitted as job arrays")
        if request.nodes > 1:
            raise ValidationError(
                "job_array",
                f"job arrays are for many one-node jobs; jobs of {request.nodes} nodes go as they are "
                "(job_array=False)",
            )

    @classmethod
    def _check_launch(cls, request: JobRequest, launch: WorkerLaunch) -> None:
        """Refuse a launcher that does not start tasks on this batch system's nodes."""
        if launch.launcher != "direct" and launch.launcher not in cls.launchers:
            accepted = (
                ", ".join(cls.launchers)
                if cls.launchers
                else "none: its jobs have one node, whose workers start directly"
            )
            raise ValidationError(
                "launcher",
                f"{launch.launcher!r} does not start tasks on the nodes of a {cls.job_cls.batch} job; launchers "
                f"for {cls.job_cls.batch}: {accepted}",
            )

    def _batch_job_kwargs(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Hook for a batch system's extra job keywords."""
        return {}

    def retiring_jobs(self) -> set[str]:
        """Jobs whose workers may be retiring already (the earliest end of their lifetime
        before the walltime has passed): :meth:`adapt` replaces them before they go."""
        lifetime = self.request.worker_lifetime
        if not lifetime:
            return set()
        earliest = lifetime - self.request.lifetime_stagger
        now = time.monotonic()
        return {
            job
            for job, since in self._job_watch.first_connected.items()
            if now - since >= earliest and job in self.worker_spec
        }

    @property
    def workers_per_job(self) -> int:
        """GPU workers in one job."""
        return self.request.gpus_per_job

    def _memory_per_worker(self) -> int:
        if self.launch.memory_limit is None:
            raise ValidationError("memory", "scale(memory=...) needs memory or memory_per_gpu to be set")
        return self.launch.memory_limit

    def _threads_per_worker(self) -> int:
        return self.launch.nthreads

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
        the batch system answers. The GPU
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
        gpu_pool_named = cpu_workers is None or any(v is not None for v in (n, gpus, memory, cores)) or jobs
        if gpus is not None:
            if n is not None and n != gpus:
                raise ValidationError("gpus", f"scale(n={n}, gpus={gpus}): one worker runs per GPU, give one of them")
            n = gpus
        if memory is not None:
            n = max(n or 0, math.ceil(parse_bytes(memory) / self._memory_per_worker()))
        if cores is not None:
            n = max(n or 0, math.ceil(cores / self._threads_per_worker()))
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValidationError("n", f"expected a number of GPU workers (0 or more), got {n!r}")
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
            if self.cpu_pool is None:
                raise ValidationError(
                    "cpu_workers",
                    "this cluster has no CPU pool; give cpu_pool={'processes': ..., 'cores': ..., 'memory': ...} "
                    "when making it",
                )
            if isinstance(cpu_workers, bool) or not isinstance(cpu_workers, int) or cpu_workers < 0:
                raise ValidationError(
                    "cpu_workers", f"expected a number of CPU workers (0 or more), got {cpu_workers!r}"
                )
            cpu_jobs = math.ceil(cpu_workers / self.cpu_pool.processes)
        gpu_jobs = jobs if gpu_pool_named else None
        for field, count in (("jobs", gpu_jobs), ("cpu_workers", cpu_jobs)):
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_JOBS_PER_CLUSTER
            ):
                raise ValidationError(
                    field if field != "jobs" or n is None else "n",
                    f"{count!r} jobs: a cluster holds 0 to {MAX_JOBS_PER_CLUSTER} jobs (gpujobqueue.limits)",
                )
        self._replacement.resume()
        if self.asynchronous:
            return asyncio.ensure_future(self._scale_jobs(gpu_jobs, cpu_jobs))
        return self.sync(self._scale_jobs, gpu_jobs, cpu_jobs)

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
                queued_first = sorted(removable, key=lambda job: job in connected)
                for job in queued_first[:surplus]:
                    del self.worker_spec[job]
            for _ in range(-surplus if not closing else 0):
                self.worker_spec.update(self.new_worker_spec() if pool == "gpu" else self._new_cpu_job_spec())
        try:
            await self._correct_state()
            self._replacement.deferred_since = None
        except SubmissionError as error:
            forget_unsubmitted(self)
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
        if minimum_gpus is not None:
            kwargs["minimum"] = minimum_gpus
        if maximum_gpus is not None:
            kwargs["maximum"] = maximum_gpus
        kwargs.setdefault("worker_key", self._worker_to_job)  # retire whole jobs, never half of one
        kwargs.setdefault("Adaptive", GPUAdaptive)
        if kwargs.get("interval") is None:
            kwargs["interval"] = dask.config.get("gpujobqueue.adapt.interval", default="2s")
        if kwargs.get("wait_count") is None:
            kwargs["wait_count"] = parse_positive_int(
                "wait_count", dask.config.get("gpujobqueue.adapt.wait-count", default=10)
            )
        if self.pinned_jobs:
            # The scheduler's job keeps its workers while the cluster lives: never aim below them.
            if minimum_jobs is not None:
                minimum_jobs = max(minimum_jobs, 1)
            kwargs["minimum"] = max(kwargs.get("minimum") or 0, self.workers_per_job)
        return super().adapt(*args, minimum_jobs=minimum_jobs, maximum_jobs=maximum_jobs, **kwargs)

    async def scale_down(self, workers: Any) -> None:
        pinned = self.pinned_jobs
        if pinned and self.status not in (Status.closing, Status.closed):
            workers = [w for w in workers if self._worker_to_job.job_of(str(w)) not in pinned]
        await super().scale_down(workers)


def check_ucx_scheduler_host(scheduler_here: bool = True) -> None:
    """Refuse UCX where it cannot run: without distributed-ucxx, or, when the scheduler runs
    in this process, without a GPU here.

    Raises
    ------
    ValidationError
    """
    if importlib.util.find_spec("distributed_ucxx") is None:
        raise ValidationError(
            "protocol",
            "protocol='ucx' needs distributed-ucxx here and on the workers: "
            "pip install distributed-ucxx-cu12 (CUDA 12) or distributed-ucxx-cu13 (CUDA 13)",
        )
    if scheduler_here and not gpus.nvidia_gpu_ids():
        raise ValidationError(
            "protocol",
            "protocol='ucx' needs a GPU where the scheduler runs, for its CUDA context, and "
            f"{socket.gethostname()} has none (a login node?); use scheduler='job' (the scheduler then runs in "
            "the first job, on a GPU node), protocol='tcp' or 'tls', or start the cluster on a GPU node",
        )
