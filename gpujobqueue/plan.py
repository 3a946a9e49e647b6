"""The plan of a cluster: its keywords resolved (keyword > dask config > site > default) and
validated, once, into the frozen values that the cluster, ``render`` and ``check`` all use."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from typing import Any, ClassVar, Mapping

from . import config, hand_written_gpus, sites
from .batch import BATCH_SYSTEMS
from .cpu_pool import CPUPool
from .dashboard import warn_if_workers_serve_dashboards
from .errors import JobSizeMissingError, ValidationError
from .install import warn_if_worker_python_lacks
from .intervals import check_configured
from .keywords import LAUNCH_KEYWORDS, RENAMED_KEYWORDS, REQUEST_KEYWORDS, UCX_TRANSPORT_KEYWORDS, Keyword
from .limits import MAX_GPUS_PER_NODE
from .render import check_scheduler_can_run_in_job
from .request import DEFAULT_WALLTIME, JobRequest, parse_bool, parse_positive_int
from .scheduler_job import SCHEDULER_PLACEMENTS, parse_scheduler_placement
from .security import resolve_security
from .sites import routing
from .user_limits import UserJobLimit, cpu_pool_job_limit
from .validation import path_text
from .workers import WorkerLaunch, threads_of_cores

logger = logging.getLogger("gpujobqueue.cluster")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one cluster class makes of its keywords.

    Parameters
    ----------
    settings : dict
        Every setting after keyword > dask config > site > default precedence, and ``site``.
    request : JobRequest
        The job's request to the batch system.
    launch : WorkerLaunch
        How the job's workers start.
    site : Site or None
        The site whose facts filled in the keywords not given.
    security : Security or None
        The cluster's TLS credentials (held in memory; the cluster writes them to its private
        folder when it starts), None for none (``security=False``, UCX, or a plan made without
        the cluster's security, as ``render``'s, whose scripts have their own).
    scheduler_placement : {"local", "job"}
        Where the scheduler runs.
    job_array : bool
        Whether jobs started together go as one job array.
    cpu_pool : CPUPool or None
        The CPU-only pool's shape.
    cpu_request, cpu_launch : JobRequest, WorkerLaunch or None
        The CPU pool's jobs, validated as the GPU jobs are.
    site_queue : str or None
        The site's name of the queue the jobs go to (given, configured or routed).
    jobs_per_user : UserJobLimit or None
        The GPU jobs' queue's limits on one user's jobs (its site queue's ``max_jobs_per_user``,
        or ``gpujobqueue.<batch>.max-jobs-per-user``): ``scale()`` holds jobs past them.
    cpu_jobs_per_user : UserJobLimit or None
        The CPU pool's queue's: the GPU jobs' limit itself where both pools' jobs go to one queue.
    """

    settings: dict[str, Any]
    request: JobRequest
    launch: WorkerLaunch
    site: Any = None
    security: Any = None
    scheduler_placement: str = SCHEDULER_PLACEMENTS[0]  # in this process
    job_array: bool = False
    cpu_pool: CPUPool | None = None
    cpu_request: JobRequest | None = None
    cpu_launch: WorkerLaunch | None = None
    site_queue: str | None = None  # the site's name of the queue the jobs go to
    jobs_per_user: UserJobLimit | None = None
    cpu_jobs_per_user: UserJobLimit | None = None


class PlanHooks:
    """What a cluster class tells :func:`make_plan`: its batch system's keywords, GPU request
    styles and launchers, and the hooks through which its keywords become its plan
    (:class:`~gpujobqueue.cluster.GPUJobQueueCluster` and each batch system's class)."""

    job_cls: ClassVar[type]
    batch_keywords: ClassVar[tuple[Keyword, ...]] = ()
    # Other names of keywords, in this batch system's (or dask-jobqueue's) vocabulary.
    batch_synonyms: ClassVar[dict[str, str]] = {}
    # How this batch system can ask for GPUs; the first is the default.
    gpu_request_styles: ClassVar[tuple[str, ...]] = ("none",)
    # Launchers that start one task per node of this batch system's multi-node jobs.
    launchers: ClassVar[tuple[str, ...]] = ()
    # The options that can name a job's account (a site's account.flag picks one); the first is the default.
    account_flags: ClassVar[tuple[str, ...]] = ()
    # The option that sends jobs to another of the batch system's clusters (a site's clusters); None: no such thing.
    clusters_option: ClassVar[str | None] = None
    # The launcher of a job of several nodes that names none (nor its site); None: such a job must name one.
    native_launcher: ClassVar[str | None] = None
    # The walltime of jobs given none; None where nothing ends jobs (the local batch system).
    default_walltime: ClassVar[str | None] = DEFAULT_WALLTIME

    @classmethod
    def parse_keywords(
        cls, kwargs: dict[str, Any], owner: str | None = None, *, standalone: bool = False
    ) -> tuple[dict[str, Any], JobRequest, WorkerLaunch]:
        """Check, resolve and validate cluster keywords; start nothing (see :func:`gpujobqueue.plan.make_plan`,
        which takes ``standalone``).

        Returns
        -------
        settings : dict
            Every setting after keyword > dask config > site > default precedence, and
            ``site``: the :class:`~gpujobqueue.sites.Site` or None.
        request : JobRequest
        launch : WorkerLaunch
        """
        plan = make_plan(cls, kwargs, owner, standalone=standalone)
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


# make_plan's ``security`` when the caller decides the scripts' TLS itself (``render``, ``check``).
NO_CLUSTER_SECURITY = object()


def make_plan(
    cls: type,
    kwargs: Mapping[str, Any],
    owner: str | None = None,
    *,
    security: Any = NO_CLUSTER_SECURITY,
    scheduler: str | None = None,
    cpu_pool: Mapping[str, Any] | None = None,
    job_array: bool | None = None,
    standalone: bool = False,
) -> Plan:
    """Check, resolve and validate one cluster class's keywords into its plan; start nothing.

    Parameters
    ----------
    cls : type
        The cluster class (:class:`~gpujobqueue.cluster.GPUJobQueueCluster` subclass) whose
        batch system, keywords and hooks apply.
    kwargs : mapping
        The keywords given; ``site`` among them picks a site file.
    owner : str, optional
        The name an unknown keyword's error gives (default: the class's).
    security : None, bool or Security, optional
        The cluster's ``security`` (:func:`~gpujobqueue.security.resolve_security`: TLS unless
        False, the protocol ``tls``); left out, the plan has none and its protocol is as given.
    scheduler, cpu_pool, job_array
        The cluster's keywords of those names (else ``gpujobqueue.<batch>.*``).
    standalone : bool
        The job scripts carry the preloads (``gpujobqueue render --standalone``): the workers'
        python need not import gpujobqueue. Whatever needs it lacks is warned of, last.

    Returns
    -------
    Plan

    Raises
    ------
    UnknownKeywordError, ValidationError, SiteConfigError
    """
    batch = cls.job_cls.batch
    config.warn_unknown_keys(batch, setting_names(cls), BATCH_SYSTEMS)
    plan = _resolve_keywords(cls, kwargs, owner)
    warn_if_workers_serve_dashboards(plan.launch.extra_args)  # the CPU pool's workers take the same arguments
    launch, tls = plan.launch, None
    if security is not NO_CLUSTER_SECURITY:
        tls, launch = resolve_security(security, launch)
    pool = CPUPool.from_keyword(
        cpu_pool if cpu_pool is not None else config.configured(batch, "cpu_pool"), batch=batch, site=plan.site
    )
    cpu_request, cpu_launch = pool.job_shape(plan.request, launch) if pool else (None, None)
    check_configured()  # the loops' intervals and counts are read as they run: a bad one is refused here
    placement = parse_scheduler_placement(
        scheduler if scheduler is not None else config.configured(batch, "scheduler"), batch, launch.protocol
    )
    if placement == "job":
        check_scheduler_can_run_in_job(launch, "scheduler", "scheduler='job'")
    arrays = parse_bool(
        "job_array", job_array if job_array is not None else config.configured(batch, "job_array") or False
    )
    if arrays:
        cls._check_job_array(plan.request)
    configured_limit = config.max_jobs_per_user(batch)
    if configured_limit is not None:
        queue = plan.request.queue or "default"
        jobs_per_user = UserJobLimit.parse(
            f"gpujobqueue.{batch}.max-jobs-per-user",
            configured_limit,
            queue=queue,
            source=f"gpujobqueue.{batch}.max-jobs-per-user",
        )
        plan = dataclasses.replace(plan, jobs_per_user=jobs_per_user)
    # At once, not after the jobs' queue wait; last, so that a wrong keyword is named first.
    warn_if_worker_python_lacks(
        launch.python, dask_cuda=launch.mode == "dask-cuda", gpujobqueue=bool(launch.preloads) and not standalone
    )
    return dataclasses.replace(
        plan,
        cpu_jobs_per_user=cpu_pool_job_limit(
            pool,
            plan.site,
            plan.site_queue or (plan.site.data["default_queue"] if plan.site is not None else None),
            plan.request.queue,
            plan.jobs_per_user,
        ),
        launch=launch,
        security=tls,
        scheduler_placement=placement,
        job_array=arrays,
        cpu_pool=pool,
        cpu_request=cpu_request,
        cpu_launch=cpu_launch,
    )


def setting_names(cls: type) -> tuple[str, ...]:
    """The settings a cluster class resolves keyword > ``gpujobqueue.<batch>.*`` > site > default."""
    return REQUEST_KEYWORDS + LAUNCH_KEYWORDS + cls.batch_keywords


def _resolve_keywords(cls: type, kwargs: Mapping[str, Any], owner: str | None = None, routed: bool = False) -> Plan:
    """The plan's settings, request and launch (keyword > dask config > site > default), validated;
    a site whose routing picks another queue than its default resolves them again for that queue
    (``routed``: that second time, which says nothing the first said)."""
    names = setting_names(cls)
    kwargs = dict(kwargs)
    original = dict(kwargs)
    processes = kwargs.pop("processes", None)
    site = kwargs.pop("site", None)
    config.check_keywords(kwargs, names + tuple(RENAMED_KEYWORDS) + tuple(cls.batch_synonyms), owner or cls.__name__)
    batch = cls.job_cls.batch
    given = _take_keywords(kwargs, cls.batch_synonyms)
    site_defaults, site_queue = {}, None
    if site is not None:
        site = sites.load_site(path_text("site", site)) if not isinstance(site, sites.Site) else site
        if site.scheduler != batch:
            raise ValidationError(
                "site",
                f"{site.name} runs {site.scheduler}, not {batch}; use GPUCluster(site={site.name!r}) ({site.files[0]})",
            )
        if not routed:
            sites.warn_if_retired(site)
        # A queue named by the user is the site's queue name; the site maps it to its partition and QoS.
        site_queue = given.get("queue") or config.configured(batch, "queue")
        site_defaults = {k: v for k, v in sites.site_settings(site, site_queue).items() if k in names}
        given.pop("queue", None)
        # A per-job keyword given by the user replaces the site's per-GPU one.
        for per_job, per_gpu in (
            ("cores", "cpus_per_gpu"),
            ("job_cpu", "cpus_per_gpu"),
            ("ncpus", "cpus_per_gpu"),
            ("memory", "memory_per_gpu"),
        ):
            if given.get(per_job) is not None or config.configured(batch, per_job) is not None:
                site_defaults.pop(per_gpu, None)
        # The site's UCX transports go with the site's UCX: a user who picks another protocol drops them.
        protocol = given.get("protocol") or config.configured(batch, "protocol")
        if protocol is not None and protocol != "ucx":
            for name in UCX_TRANSPORT_KEYWORDS:
                site_defaults.pop(name, None)
    settings = config.resolve(batch, given, names, site_defaults)
    if site is not None:
        settings["queue"] = site_defaults.get("queue")
    if processes is not None:  # dask-jobqueue's workers per job: here, one per GPU
        processes = parse_positive_int("processes", processes, MAX_GPUS_PER_NODE)
    explicit = {
        name: settings[name]
        for name in names
        if given.get(name) is not None or config.configured(batch, name) is not None
    }
    hand_written_gpus.adopt(
        batch,
        settings,
        explicit,
        processes=processes,
        site=site,
        node_gpus=site_defaults.get("gpus_per_node") if site is not None else None,
    )
    if processes is not None:
        gpus = settings.get("gpus_per_node")
        if gpus is not None and parse_positive_int("gpus_per_node", gpus) != processes:
            raise ValidationError(
                "processes",
                f"processes={processes} but gpus_per_node={gpus}: one worker runs per GPU, so give gpus_per_node alone",
            )
        settings["gpus_per_node"] = processes
    cls._apply_batch_defaults(settings)
    request = JobRequest.from_settings(
        settings, gpu_request_styles=cls.gpu_request_styles, default_walltime=cls.default_walltime
    )
    why = None
    if site is not None and site_queue is None:
        # The site picks the queue that takes the job's nodes and walltime, before the default queue's own
        # settings (a Grid Engine parallel environment of one host) judge a job that is not for it.
        site_queue, why = sites.route_queue(site, request)
        logger.info("gpujobqueue: site %s chose %s", site.name, why)
        if site_queue != site.data["default_queue"]:
            queue_names = {"queue", *(s for s, name in cls.batch_synonyms.items() if name == "queue")}
            again = {k: v for k, v in original.items() if k not in queue_names}
            routed = _resolve_keywords(cls, {**again, "site": site, "queue": site_queue}, owner, routed=True)
            return dataclasses.replace(routed, request=dataclasses.replace(routed.request, queue_choice=why))
    elif site is not None:  # a queue named that cannot take the job is named so, and the one that can
        sites.check_queue_takes(site, site_queue, request)
    request = dataclasses.replace(request, options=cls._parse_batch_options(settings, request))
    if settings.get("cores") is not None and settings.get("nthreads") is None:
        # dask-jobqueue's cores: the threads of all the job's workers, none left idle
        cores = parse_positive_int("cores", settings["cores"])
        settings["nthreads"] = threads_of_cores(cores // request.nodes, request.gpus_per_node)
    launch = WorkerLaunch.from_settings(
        settings,
        gpus=request.gpus_per_node,
        memory_per_node=request.memory_per_node,
        cpus_per_node=request.cpus_per_node,
        nodes=request.nodes,
        native_launcher=cls.native_launcher,
    )
    cls._check_launch(request, launch)
    if site is not None:
        if why is not None and routing.walltime_bins(site.queue(site_queue)):  # the default queue, by its bin
            request = dataclasses.replace(request, queue_choice=why)
        request = sites.apply_site_flags(site, site_queue, request, explicit)
        sites.check_request(site, site_queue, request, settings)
    elif not getattr(
        cls.job_cls, "runs_jobs_here", False
    ):  # the local machine sizes itself; last, so a wrong value is named first
        require_job_size(owner or cls.__name__, batch, settings)
    settings["site"] = site
    jobs_per_user = None
    if site is not None:
        queue_name = site_queue or site.data["default_queue"]
        jobs_per_user = UserJobLimit.parse(
            "max_jobs_per_user",
            site.queue(queue_name).get("max_jobs_per_user"),
            queue=queue_name,
            source=f"site {site.name}",
        )
    return Plan(
        settings=settings,
        request=request,
        launch=launch,
        site=site,
        site_queue=site_queue,
        jobs_per_user=jobs_per_user,
    )


def _take_keywords(kwargs: dict[str, Any], synonyms: dict[str, str]) -> dict[str, Any]:
    """Apply dask-jobqueue's renamed keywords and the batch system's synonyms; return the settings."""
    given = dict(kwargs)
    for old, new in RENAMED_KEYWORDS.items():
        if old in given and old not in synonyms:
            value = given.pop(old)
            if value is not None:
                warnings.warn(
                    f"{old} has been renamed to {new} (as in dask-jobqueue); {old} is used only where {new} is not set",
                    FutureWarning,
                    stacklevel=4,
                )
                if given.get(new) is None or given.get(new) == []:  # dask-jobqueue takes an empty list for unset too
                    given[new] = value
    for synonym, name in synonyms.items():
        if synonym in given:
            value = given.pop(synonym)
            if given.get(name) is not None and value is not None and value != given[name]:
                raise ValidationError(synonym, f"{synonym}={value!r} contradicts {name}={given[name]!r}; give one")
            given[name] = given.get(name) if value is None else value
    return given


CORE_KEYWORDS = ("cores", "cpus_per_gpu", "job_cpu", "ncpus")
MEMORY_KEYWORDS = ("memory", "memory_per_gpu", "job_mem", "mem")


def require_job_size(owner: str, batch: str, settings: dict[str, Any]) -> None:
    """Refuse a job whose cores or memory nothing says, as dask-jobqueue refuses one.

    With no site describing the node, such a job gets the batch system's default (often one
    core and a few GB) while its worker would size its memory limit and spilling for the
    whole node.
    """
    has_cores = any(settings.get(name) is not None for name in CORE_KEYWORDS)
    has_memory = any(settings.get(name) is not None for name in MEMORY_KEYWORDS)
    if has_cores and has_memory:
        return
    cores = settings.get("cores") if settings.get("cores") is not None else 8
    memory = settings.get("memory") if settings.get("memory") is not None else "64GB"
    missing = [name for name, given in (("cores", has_cores), ("memory", has_memory)) if not given]
    raise JobSizeMissingError(
        owner,
        missing,
        f"{owner} has no site to size its jobs, so say how many cores and how much memory each job "
        f"asks for, as with dask-jobqueue: {owner}(cores={cores!r}, memory={memory!r}) ({' and '.join(missing)} not "
        "given; cpus_per_gpu and memory_per_gpu size them by the GPU instead, site= takes both from a site file, "
        f"and gpujobqueue.{batch}.cores and .memory in dask config set them once)",
    )
