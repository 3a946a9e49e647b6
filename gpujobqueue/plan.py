"""The plan of a cluster: its keywords resolved (keyword > dask config > site > default) and
validated, once, into the frozen values that the cluster, ``render`` and ``check`` all use."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from typing import Any, Mapping

from . import config, hand_written_gpus, sites
from .batch import names
from .batch.base import BatchSystem
from .cpu_pool import CPUPool
from .dashboard import warn_if_workers_serve_dashboards
from .errors import JobSizeMissingError, ValidationError
from .install import warn_if_worker_python_lacks
from .intervals import check_configured
from .keywords import RENAMED_KEYWORDS, UCX_TRANSPORT_KEYWORDS
from .limits import MAX_GPUS_PER_NODE
from .render import check_scheduler_can_run_in_job
from .request import JobRequest, parse_bool, parse_positive_int
from .scheduler_job import SCHEDULER_HERE, SCHEDULER_IN_JOB, parse_scheduler_placement
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
    scheduler_placement: str = SCHEDULER_HERE
    job_array: bool = False
    cpu_pool: CPUPool | None = None
    cpu_request: JobRequest | None = None
    cpu_launch: WorkerLaunch | None = None
    site_queue: str | None = None  # the site's name of the queue the jobs go to
    jobs_per_user: UserJobLimit | None = None
    cpu_jobs_per_user: UserJobLimit | None = None


def parse_cluster_keywords(
    cls: type, kwargs: dict[str, Any], owner: str | None = None, *, standalone: bool = False
) -> tuple[dict[str, Any], JobRequest, WorkerLaunch]:
    """Check, resolve and validate cluster keywords; start nothing (a cluster class's ``parse_keywords``: see
    :func:`make_plan`, which takes ``standalone``).

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


def batch_system_of(cls: type) -> "type[BatchSystem]":
    """The batch system of ``cls``: a :class:`~gpujobqueue.batch.base.BatchSystem` itself, or a cluster class
    bound to one (its ``batch_system``)."""
    return cls if issubclass(cls, BatchSystem) else cls.batch_system


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
        The batch system (a :class:`~gpujobqueue.batch.base.BatchSystem`) whose keywords and
        hooks apply, or a cluster class bound to one.
    kwargs : mapping
        The keywords given; ``site`` among them picks a site file.
    owner : str, optional
        The name an unknown keyword's error gives (default: the cluster class's, ``SLURMGPUCluster``).
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
    system = batch_system_of(cls)
    owner = owner or (cls.__name__ if system is not cls else system.class_name("GPUCluster"))
    batch = system.name
    config.warn_unknown_keys(batch, system.setting_names(), names())
    plan = _resolve_keywords(system, kwargs, owner)
    warn_if_workers_serve_dashboards(plan.launch.extra_args)  # the CPU pool's workers take the same arguments
    launch, tls = plan.launch, None
    if security is not NO_CLUSTER_SECURITY:
        tls, launch = resolve_security(security, launch)
    pool = CPUPool.from_keyword(
        cpu_pool if cpu_pool is not None else config.configured(batch, "cpu_pool"), system=system, site=plan.site
    )
    cpu_request, cpu_launch = pool.job_shape(plan.request, launch, system) if pool else (None, None)
    check_configured()  # the loops' intervals and counts are read as they run: a bad one is refused here
    placement = parse_scheduler_placement(
        scheduler if scheduler is not None else config.configured(batch, "scheduler"),
        system.runs_jobs_here,
        launch.protocol,
    )
    if placement == SCHEDULER_IN_JOB:
        check_scheduler_can_run_in_job(launch, "scheduler", "scheduler='job'")
    arrays = parse_bool(
        "job_array", job_array if job_array is not None else config.configured(batch, "job_array") or False
    )
    if arrays:
        system.check_job_array(plan.request)
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


def _resolve_keywords(system: type[BatchSystem], kwargs: Mapping[str, Any], owner: str, routed: bool = False) -> Plan:
    """The plan's settings, request and launch (keyword > dask config > site > default), validated;
    a site whose routing picks another queue than its default resolves them again for that queue
    (``routed``: that second time, which says nothing the first said)."""
    settings_names = system.setting_names()
    kwargs = dict(kwargs)
    original = dict(kwargs)
    processes = kwargs.pop("processes", None)
    site = kwargs.pop("site", None)
    config.check_keywords(kwargs, settings_names + tuple(RENAMED_KEYWORDS) + tuple(system.synonyms), owner)
    batch = system.name
    given = _take_keywords(kwargs, system.synonyms)
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
        site_defaults = {k: v for k, v in sites.site_settings(site, site_queue).items() if k in settings_names}
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
    settings = config.resolve(batch, given, settings_names, site_defaults)
    if site is not None:
        settings["queue"] = site_defaults.get("queue")
    if processes is not None:  # dask-jobqueue's workers per job: here, one per GPU
        processes = parse_positive_int("processes", processes, MAX_GPUS_PER_NODE)
    explicit = {
        name: settings[name]
        for name in settings_names
        if given.get(name) is not None or config.configured(batch, name) is not None
    }
    hand_written_gpus.adopt(
        system,
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
    system.apply_defaults(settings)
    request = JobRequest.from_settings(
        settings, gpu_request_styles=system.gpu_request_styles, default_walltime=system.default_walltime
    )
    why = None
    if site is not None and site_queue is None:
        # The site picks the queue that takes the job's nodes and walltime, before the default queue's own
        # settings (a Grid Engine parallel environment of one host) judge a job that is not for it.
        site_queue, why = sites.route_queue(site, request)
        logger.info("gpujobqueue: site %s chose %s", site.name, why)
        if site_queue != site.data["default_queue"]:
            queue_names = {"queue", *(s for s, name in system.synonyms.items() if name == "queue")}
            again = {k: v for k, v in original.items() if k not in queue_names}
            routed = _resolve_keywords(system, {**again, "site": site, "queue": site_queue}, owner, routed=True)
            return dataclasses.replace(routed, request=dataclasses.replace(routed.request, queue_choice=why))
    elif site is not None:  # a queue named that cannot take the job is named so, and the one that can
        sites.check_queue_takes(site, site_queue, request)
    request = dataclasses.replace(request, options=system.parse_options(settings, request))
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
        native_launcher=system.native_launcher,
        launchers=system.launchers,
    )
    system.check_launch(request, launch)
    if site is not None:
        if why is not None and routing.walltime_bins(site.queue(site_queue)):  # the default queue, by its bin
            request = dataclasses.replace(request, queue_choice=why)
        request = system.with_site(sites.apply_site_flags(site, site_queue, request, explicit), site.data)
        sites.check_request(site, site_queue, request, settings)
    elif not system.runs_jobs_here:  # the local machine sizes itself; last, so a wrong value is named first
        require_job_size(owner, batch, settings)
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
