"""The plan of a cluster: its keywords routed to a site queue and resolved (keyword > dask config >
site > default) once, validated into the frozen values that the cluster, its jobs, ``render`` and
``check`` all take. Making a plan starts no process: the workers' python is probed where a cluster
starts or a script is rendered (:func:`~gpujobqueue.machine.install.warn_if_worker_python_lacks`)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import warnings
from typing import Any, Iterator, Mapping

from .. import sites
from ..batch import names
from ..batch.base import BatchSystem
from ..errors import ValidationError
from ..jobs.request import JobRequest
from ..jobs.scheduler_job import (
    SCHEDULER_HERE,
    SCHEDULER_IN_JOB,
    check_scheduler_can_run_in_job,
    parse_scheduler_placement,
)
from ..jobs.workers import WorkerLaunch
from ..script.render import SchedulerAddress
from ..security.dashboard import warn_if_workers_serve_dashboards
from ..security.tls import resolve_security
from ..settings import config
from ..settings.intervals import check_configured
from ..settings.validation import check_bounded, parse_bool
from .cpu_pool import CPUPool
from .resolve import Given, job_shape, read_keywords, resolve_launch, resolve_request, shows_queue_choice
from .route import Route, route
from .soonest import SOONEST, queue_starts, soonest, start_text
from .user_limits import UserJobLimit, cpu_pool_job_limit

logger = logging.getLogger("gpujobqueue.cluster")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one cluster class makes of its keywords."""

    settings: dict[str, Any]  # every setting after keyword > dask config > site > default, and site
    request: JobRequest
    launch: WorkerLaunch
    site: Any = None  # the site whose facts filled in the keywords not given
    # The cluster's TLS credentials (in memory; the cluster writes them to its private folder when it starts); None
    # for none (security=False, UCX, or a plan made without the cluster's security: render's scripts have their own).
    security: Any = None
    scheduler_placement: str = SCHEDULER_HERE
    job_array: bool = False  # jobs started together go as one job array
    cpu_pool: CPUPool | None = None
    cpu_request: JobRequest | None = None  # the CPU pool's jobs, validated as the GPU jobs are
    cpu_launch: WorkerLaunch | None = None
    site_queue: str | None = None  # the site's name of the queue the jobs go to (given, configured or routed)
    # Where each setting that something set came from: keyword, gpujobqueue.<batch>.<key>, jobqueue.<batch>.<key>
    # (dask-jobqueue's config) or site <name>; a setting not in it has its default.
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The GPU jobs' queue's limits on one user's jobs (its site queue's max_jobs_per_user, or
    # gpujobqueue.<batch>.max-jobs-per-user): scale() holds jobs past them; the CPU pool's queue's (the GPU jobs'
    # limit itself where both pools' jobs go to one queue).
    jobs_per_user: UserJobLimit | None = None
    cpu_jobs_per_user: UserJobLimit | None = None
    system: type[BatchSystem] | None = None  # the batch system that writes, submits and watches the jobs

    def pool(self, pool: str = "gpu") -> tuple[JobRequest, WorkerLaunch]:
        """The request and launch of the jobs of ``pool``: ``"gpu"``, or ``"cpu"`` (the CPU pool's)."""
        if pool == "gpu":
            return self.request, self.launch
        if pool == "cpu" and self.cpu_request is not None and self.cpu_launch is not None:
            return self.cpu_request, self.cpu_launch
        raise ValueError(f"this plan has no {pool!r} pool")

    def worker_python_needs(self, standalone: bool = False) -> dict[str, bool]:
        """What the workers' python must import, as :func:`~gpujobqueue.machine.install.warn_if_worker_python_lacks`
        takes it: dask_cuda (dask-cuda workers), gpujobqueue's preloads (unless the script carries them,
        ``standalone``)."""
        return {
            "dask_cuda": self.launch.mode == "dask-cuda",
            "gpujobqueue": bool(self.launch.preloads) and not standalone,
        }


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
) -> Plan:
    """Check, route, resolve and validate the keywords ``kwargs`` (``site`` among them picks a site file) of one
    cluster class ``cls`` (or of a :class:`~gpujobqueue.batch.base.BatchSystem`) into its plan; start nothing (no
    process, no file: the workers' python is probed where a cluster starts or a script is rendered).

    ``owner``: the name an unknown keyword's error gives (default: the cluster class's, ``SLURMGPUCluster``);
    ``security``: the cluster's (:func:`~gpujobqueue.security.tls.resolve_security`: TLS unless False), left out
    for a plan without one, its protocol as given; ``scheduler``, ``cpu_pool``, ``job_array``: the cluster's
    keywords (else ``gpujobqueue.<batch>.*``). Raises UnknownKeywordError, ValidationError, SiteConfigError.
    """
    system = batch_system_of(cls)
    owner = owner or (cls.__name__ if system is not cls else system.class_name("GPUCluster"))
    config.warn_unknown_keys(system.name, system.setting_names(), names())
    own = {"scheduler": scheduler, "cpu_pool": cpu_pool, "job_array": job_array}
    for name, value in {**own, "security": security}.items():
        check_bounded(name, value)
    given = read_keywords(system, kwargs, owner)
    with _naming_config_keys(system.name, {**given.keywords, **own}):
        plan = _routed_and_resolved(system, given, owner)
        warn_if_workers_serve_dashboards(plan.launch.extra_args)  # the CPU pool's workers take the same arguments
        launch, tls = plan.launch, None
        if security is not NO_CLUSTER_SECURITY:
            tls, launch = resolve_security(security, launch)
        plan = dataclasses.replace(plan, launch=launch, security=tls)
        return _with_cluster_decisions(plan, scheduler=scheduler, cpu_pool=cpu_pool, job_array=job_array)


@contextlib.contextmanager
def _naming_config_keys(batch: str, given: Mapping[str, Any]) -> Iterator[None]:
    """A refusal raised inside names the dask config key that set the refused setting
    (``jobqueue.slurm.job-extra-directives[0]`` for ``job_extra_directives[0]``) where ``given``,
    the keywords, does not set it: the key the user wrote, not the keyword it stands for."""
    try:
        yield
    except ValidationError as error:
        name = re.match(r"[A-Za-z0-9_]*", error.field)[0]
        key = None if given.get(name) is not None else config.source(batch, name)
        if key is not None:
            named, error.field = error.field, key + error.field[len(name) :]
            if error.args == (f"{named}: {error.message}",):  # ValidationError's own form
                error.args = (f"{error.field}: {error.message}",)
        raise


def _routed_and_resolved(system: type[BatchSystem], given: Given, owner: str) -> Plan:
    """The plan's settings, request and launch: the site queue routed once by the job's shape (:func:`~.route.route`,
    a pure function of the site and the user's nodes and walltime), then the keywords resolved once for that queue
    (:mod:`.resolve`) and its request checked against the queue."""
    site = given.site
    if site is not None:
        sites.warn_if_retired(site)
    if given.named_queue == SOONEST:
        chosen = _soonest_route(system, given)
    else:
        chosen = route(site, given.named_queue, job_shape(system, given) if site is not None else None)
    resolution = resolve_request(system, given, chosen.queue)
    if site is not None:
        sites.check_queue_takes(site, chosen.queue, resolution.request)
        if chosen.why is not None:
            logger.info("gpujobqueue: site %s chose %s", site.name, chosen.why)
            if chosen.queue != site.data["default_queue"] or shows_queue_choice(site, chosen.queue):
                request = dataclasses.replace(resolution.request, queue_choice=chosen.why)
                resolution = dataclasses.replace(resolution, request=request)
    site_queue = chosen.queue
    settings, request, launch, jobs_per_user = resolve_launch(system, given, resolution, site_queue, owner)
    return Plan(
        settings=settings,
        request=request,
        launch=launch,
        site=site,
        site_queue=site_queue,
        sources=resolution.sources,
        jobs_per_user=jobs_per_user,
        system=system,
    )


def _soonest_route(system: type[BatchSystem], given: Given) -> Route:
    """``queue="soonest"``: the site's routed queue where the batch system would start the job first if it were
    submitted now (each queue asked with the script of a cluster naming it); where none would take it, or the batch
    system cannot be asked, a warning, and the site's routing by the job's nodes and walltime."""
    site = given.site

    def script_of(queue: str) -> str:
        return system.job_script(make_plan(system, {**given.original, "queue": queue}), SchedulerAddress(), name="when")

    starts = queue_starts(site, script_of)
    best = soonest(starts)
    if best is None:
        said = "; ".join(f"{start.queue}: {start_text(start)}, {start.said.splitlines()[-1]}" for start in starts)
        warnings.warn(
            f"queue='soonest': no queue of {site.name} says when it would start the job ({said or 'none asked'}); "
            "the site chooses by the job's nodes and walltime",
            stacklevel=5,
        )
        return route(site, None, job_shape(system, given))
    others = "; ".join(f"{start.queue} {start_text(start)}" for start in starts if start is not best)
    source = f"{system.start_estimates or system.name}, if submitted now; {others or 'no other queue'}"
    return Route(best.queue, f"soonest start: queue {best.queue}, {start_text(best)} ({source})")


def _with_cluster_decisions(
    plan: Plan, *, scheduler: str | None, cpu_pool: Mapping[str, Any] | None, job_array: bool | None
) -> Plan:
    """The plan with what a cluster decides beyond its jobs' request and launch: the CPU pool's jobs,
    the loops' settings checked, where the scheduler runs, job arrays, the limits on one user's jobs."""
    system, launch = plan.system, plan.launch
    batch = system.name
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
    jobs_per_user = plan.jobs_per_user
    configured_limit = config.configured(batch, "max_jobs_per_user")
    if configured_limit is not None:
        jobs_per_user = UserJobLimit.parse(
            f"gpujobqueue.{batch}.max-jobs-per-user",
            configured_limit,
            queue=plan.request.queue or "default",
            source=f"gpujobqueue.{batch}.max-jobs-per-user",
        )
    site_queue = plan.site_queue or (plan.site.data["default_queue"] if plan.site is not None else None)
    return dataclasses.replace(
        plan,
        jobs_per_user=jobs_per_user,
        cpu_jobs_per_user=cpu_pool_job_limit(pool, plan.site, site_queue, plan.request.queue, jobs_per_user),
        scheduler_placement=placement,
        job_array=arrays,
        cpu_pool=pool,
        cpu_request=cpu_request,
        cpu_launch=cpu_launch,
    )
