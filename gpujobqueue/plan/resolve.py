"""The one resolution of a cluster's keywords: keyword > ``gpujobqueue.<batch>.*`` config > site
(its queue's settings) > the batch system's default, validated into the settings, the job's request
and its workers' launch. Nothing here starts a process."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Mapping

from .. import sites
from ..batch.base import BatchSystem
from ..errors import JobSizeMissingError, ValidationError, shown
from ..handwritten import directives as hand_written_directives
from ..handwritten import gpus as hand_written_gpus
from ..jobs.request import JobRequest
from ..jobs.workers import WorkerLaunch
from ..settings import config
from ..settings.declaration import read_declared
from ..settings.keywords import (
    CORE_KEYWORDS,
    MEMORY_KEYWORDS,
    RENAMED_KEYWORDS,
    default_of,
    parse_keyword,
)
from ..settings.validation import check_bounded, path_text
from ..settings.worker_args import read_worker_args, take_worker_spellings
from ..settings.worker_options import UCX_TRANSPORTS, threads_of_cores
from ..sites import Site, routing
from .soonest import SOONEST
from .user_limits import UserJobLimit

# A per-job keyword given by the user replaces the site's per-GPU one.
_PER_JOB_OVER_PER_GPU = (
    ("cores", "cpus_per_gpu"),
    ("job_cpu", "cpus_per_gpu"),
    ("ncpus", "cpus_per_gpu"),
    ("memory", "memory_per_gpu"),
)


@dataclasses.dataclass(frozen=True)
class Given:
    """The keywords as given, read once, synonyms and dask-jobqueue's renamed keywords applied: the settings
    (without ``site``, ``processes``, and ``queue`` where a site names it), the ``original`` keywords,
    dask-jobqueue's ``processes`` as given, the site and the site queue the user named (keyword or config)."""

    keywords: dict[str, Any]
    original: dict[str, Any]
    processes: Any
    site: Site | None
    named_queue: str | None


def read_keywords(system: type[BatchSystem], kwargs: Mapping[str, Any], owner: str) -> Given:
    """Refuse an unknown keyword (naming ``owner``), a value past the bounds of any
    (:func:`~gpujobqueue.settings.validation.check_bounded`) and a site of another batch system; load the site.

    Raises
    ------
    UnknownKeywordError, ValidationError, SiteConfigError
    """
    kwargs = dict(kwargs)
    original = dict(kwargs)
    processes = kwargs.pop("processes", None)
    site = kwargs.pop("site", None)
    config.check_keywords(kwargs, system.setting_names() + tuple(RENAMED_KEYWORDS) + tuple(system.synonyms), owner)
    for name, value in original.items():
        check_bounded(name, value)
    given = take_keywords(kwargs, system.synonyms)
    named_queue = None
    if site is not None:
        site = sites.load_site(path_text("site", site)) if not isinstance(site, sites.Site) else site
        if site.scheduler != system.name:
            raise ValidationError(
                "site",
                f"{site.name} runs {site.scheduler}, not {system.name}; use GPUCluster(site={site.name!r}) "
                f"({site.files[0]})",
            )
        # A queue named by the user is the site's queue name; the site maps it to its partition and QoS.
        named_queue = given.pop("queue", None) or config.configured(system.name, "queue")
    elif (given.get("queue") or config.configured(system.name, "queue")) == SOONEST:
        raise ValidationError(
            "queue", "'soonest' chooses among a site's queues where the job would start first: give site=, or a queue"
        )
    return Given(given, original, processes, site, named_queue)


def _site_defaults(system: type[BatchSystem], given: Given, site_queue: str | None) -> dict[str, Any]:
    """The site's settings for ``site_queue`` that the user's keywords and config leave standing."""
    batch, names = system.name, system.setting_names()
    defaults = {k: v for k, v in sites.site_settings(given.site, site_queue).items() if k in names}
    for per_job, per_gpu in _PER_JOB_OVER_PER_GPU:
        if given.keywords.get(per_job) is not None or config.configured(batch, per_job) is not None:
            defaults.pop(per_gpu, None)
    # The site's UCX transports go with the site's UCX: a user who picks another protocol drops them.
    protocol = given.keywords.get("protocol") or config.configured(batch, "protocol")
    if protocol is not None and protocol != "ucx":
        for name in UCX_TRANSPORTS:
            defaults.pop(name, None)
    return defaults


@dataclasses.dataclass(frozen=True)
class JobShape:
    """What a site routes a job by (:func:`~.route.route`): its nodes and walltime (seconds; None for none)."""

    nodes: int
    walltime: int | None
    walltime_text = JobRequest.walltime_text


def job_shape(system: type[BatchSystem], given: Given) -> JobShape:
    """The job's nodes and walltime as the user gives them (keyword > config > a directive written by hand), else
    the declared default and the batch system's walltime: read before any site queue is chosen, as no site's own
    settings set them (``tests/plan/test_routing.py`` holds every shipped site to that). A value refused raises
    :class:`~gpujobqueue.errors.ValidationError` naming the keyword or the directive."""
    read = [name for name in system.setting_names() if name in ("nodes", "walltime", "job_extra_directives")]
    user = config.resolve(system.name, given.keywords, read)
    lines = parse_keyword("job_extra_directives", user["job_extra_directives"])
    written = {option.setting: option.value for option in hand_written_directives.find(system, lines)}
    nodes = (
        written.get("nodes", default_of("nodes")) if user["nodes"] is None else parse_keyword("nodes", user["nodes"])
    )
    walltime = user["walltime"] if user["walltime"] is not None else written.get("walltime", system.default_walltime)
    if isinstance(walltime, str):
        walltime = system.walltime_seconds(walltime)
    return JobShape(nodes, walltime)


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The settings (keyword > config > site > default) and the job's request (its batch system's options not yet
    parsed) for one site queue; the settings the user gave (keyword or config), as site flags and hand-written GPUs
    weigh them; dask-jobqueue's ``processes`` where it divides the GPUs per node (None: one worker per GPU); where
    each setting came from (:attr:`~gpujobqueue.plan.Plan.sources`)."""

    settings: dict[str, Any]
    request: JobRequest
    explicit: dict[str, Any]
    workers_per_node: int | None = None
    sources: dict[str, str] = dataclasses.field(default_factory=dict)


def resolve_request(system: type[BatchSystem], given: Given, site_queue: str | None) -> Resolution:
    """Resolve the settings for the site queue ``site_queue`` (None: the site's default queue, or no site)
    and validate the job's request (a ValidationError names the keyword); the GPUs, walltime, nodes and tasks
    users write by hand are adopted or refused here."""
    batch, names, site = system.name, system.setting_names(), given.site
    site_defaults = _site_defaults(system, given, site_queue) if site is not None else {}
    configured = config.batch_settings(batch)  # dask config read once for this resolution
    settings = config.resolve(batch, dict(given.keywords), names, site_defaults, configured)
    if site is not None:
        settings["queue"] = site_defaults.get("queue")
    processes = given.processes
    if processes is not None:  # dask-jobqueue's workers per job: here, one per GPU
        processes = parse_keyword("processes", processes)
    explicit = {
        name: settings[name]
        for name in names
        if given.keywords.get(name) is not None or configured.get(name) is not None
    }
    node_gpus = site_defaults.get("gpus_per_node") if site is not None else None
    # The walltime (and SLURM's nodes, tasks) written by hand, then the GPUs, each line read where the user put it.
    take_worker_spellings(settings, explicit)
    # The workers' GPU resource (--resources GPU=2), read once: a GPU count where it is the only one.
    worker_args = settings.get("worker_extra_args")
    gpu_resource = (
        dict(read_worker_args("worker_extra_args", worker_args).resources).get("GPU") if worker_args else None
    )
    written, emptied = hand_written_directives.adopt(system, settings, explicit)
    hand_written = hand_written_gpus.adopt(
        system, settings, explicit, site=site, node_gpus=node_gpus, processes=processes
    )
    hand_written_directives.drop_emptied(settings, emptied)
    if not (system.runs_jobs_here or hand_written or site or _gpu_count_given(explicit, gpu_resource)):
        # as dask-jobqueue's job: a batch system without GPU resources refuses a GPU request
        settings["gpu_request"] = "none"
        warnings.warn(
            f"{system.name}: no GPU count given (gpus_per_node, a GPU directive in job_extra_directives or a GPU "
            "resource in worker_extra_args), so the jobs ask for no GPU, as dask-jobqueue's would: give "
            "gpus_per_node=N for N GPUs per node",
            UserWarning,
            stacklevel=5,
        )
    workers_per_node = None
    gpu_count_given = hand_written is not None or explicit.get("gpus_per_node") is not None
    per_worker = None if gpu_count_given else _whole_gpus(gpu_resource)
    if processes is not None and gpu_count_given:
        where = hand_written.describe() if hand_written is not None else f"gpus_per_node={settings['gpus_per_node']}"
        gpus = parse_keyword("gpus_per_node", settings["gpus_per_node"])
        workers_per_node = share_of_gpus(processes, gpus, where)
    elif processes is not None or per_worker is not None:
        # No GPU count given: dask-jobqueue's processes are the workers per job, each with the GPUs its
        # GPU resource names (worker_extra_args=["--resources GPU=2"]), else one.
        settings["gpus_per_node"] = (processes or 1) * (per_worker or 1)
        if per_worker is not None and per_worker > 1:
            workers_per_node = processes or 1
    if workers_per_node is not None and explicit.get("worker_mode") is None:
        # Workers that share the GPUs are per-device ones (dask cuda worker gives each GPU a worker),
        # whatever a batch system's default mode (the local one's dask-cuda where GPUs are).
        settings["worker_mode"] = "per-device"
    system.apply_defaults(settings)
    # The batch system's own keyword that the request's rule of cores reads (SLURM's job_cpu), by its declaration.
    settings.update(read_declared([keyword for keyword in system.keywords if keyword == "job_cpu"], settings))
    request = JobRequest.from_settings(
        settings,
        gpu_request_styles=system.gpu_request_styles,
        default_walltime=system.default_walltime,
        walltime_number_unit=system.walltime_number_unit,
        queue_separator=system.queue_list_separator,
        submit_command=system.submit_command,
    )
    _refuse_directives_in_shell_lines(system, request)
    sources = {**_sources(system, given, settings, site_defaults, configured), **written}
    return Resolution(settings, request, explicit, workers_per_node, sources)


def share_of_gpus(processes: int, gpus: int, where: str) -> int | None:
    """The workers per node of dask-jobqueue's ``processes`` on ``gpus`` GPUs per node (``where`` says who asked
    for them): None for one worker per GPU, else ``processes``, each seeing ``gpus // processes`` devices; a
    ValidationError where it does not divide the GPUs, with the values that would."""
    if processes == gpus:
        return None
    if gpus % processes:
        fits = [str(count) for count in range(1, gpus + 1) if gpus % count == 0]
        choices = ", ".join(fits[:-1]) + f" or {fits[-1]}" if len(fits) > 1 else fits[0]
        raise ValidationError(
            "processes",
            f"processes={processes} but {where} asks for {gpus} GPU(s) per node: each worker gets an equal share "
            f"of the node's GPUs, so processes must divide {gpus}: give processes={choices}, or ask for GPUs "
            f"that {processes} divides",
        )
    return processes


def _gpu_count_given(explicit: Mapping[str, Any], gpu_resource: str | None) -> bool:
    """Whether the user asked for GPUs: by keyword or config (``gpus_per_node``, ``gpu_type``,
    ``gpu_request``), or by a ``GPU`` resource in ``worker_extra_args``."""
    return gpu_resource is not None or any(
        explicit.get(n) is not None for n in ("gpus_per_node", "gpu_type", "gpu_request")
    )


def _refuse_directives_in_shell_lines(system: type[BatchSystem], request: JobRequest) -> None:
    """A prologue or epilogue line is the user's shell (an item may hold several, as dask-jobqueue writes it), but
    one that starts with the batch system's directive prefix (``#SBATCH``) could be read as a directive: refused."""
    prefix = system.directive_prefix
    for name in ("job_script_prologue", "job_script_epilogue") if prefix != "#" else ():
        for index, item in enumerate(getattr(request, name)):
            if any(line.lstrip().startswith(prefix) for line in item.split("\n")):
                raise ValidationError(
                    f"{name}[{index}]",
                    f"{shown(item)}: a line starting {prefix} could be read as a batch directive; give it in "
                    "job_extra_directives",
                )


def _whole_gpus(amount: str | None) -> int | None:
    """A ``GPU`` resource's whole number (``--resources GPU=2``: 2); None for none, or for a share of a GPU
    (``GPU=0.5``), which asks for no GPU count."""
    return int(amount) if amount is not None and amount.isascii() and amount.isdigit() and int(amount) > 0 else None


def _sources(
    system: type[BatchSystem],
    given: Given,
    settings: Mapping[str, Any],
    site_defaults: Mapping[str, Any],
    configured: Mapping[str, tuple[Any, str]],
) -> dict[str, str]:
    """Where each setting that something set came from: keyword > config (gpujobqueue's, then
    dask-jobqueue's) > site; one nothing set is left out (its default)."""
    sources = {}
    for name in system.setting_names():
        if given.keywords.get(name) is not None:
            sources[name] = "keyword"
        elif name in configured:
            sources[name] = configured[name][1]
        elif site_defaults.get(name) is not None and given.site is not None:
            sources[name] = f"site {given.site.name}"
    if given.site is not None and settings.get("queue") is not None:  # the site's partition for the queue named
        named = "keyword" if given.original.get("queue") is not None else configured.get("queue", (None, None))[1]
        sources["queue"] = named or f"site {given.site.name}"
    return sources


def resolve_launch(
    system: type[BatchSystem], given: Given, resolution: Resolution, site_queue: str | None, owner: str
) -> tuple[dict[str, Any], JobRequest, WorkerLaunch, UserJobLimit | None]:
    """The rest of the plan of a resolved request: the settings (with ``site``), the request with its batch
    system's options and the site's flags and admission (or, without a site, the job's size required), the
    workers' launch, and the site queue's limit on one user's jobs."""
    settings, request, site = resolution.settings, resolution.request, given.site
    request = dataclasses.replace(request, options=system.parse_options(settings, request))
    if settings.get("cores") is not None and settings.get("nthreads") is None:
        # dask-jobqueue's cores: the threads of all the job's workers, none left idle
        cores = parse_keyword("cores", settings["cores"])
        workers = resolution.workers_per_node or request.gpus_per_node
        settings["nthreads"] = threads_of_cores(cores // request.nodes, workers)
    launch = WorkerLaunch.from_settings(
        settings,
        gpus_per_node=request.gpus_per_node,
        workers_per_node=resolution.workers_per_node,
        memory_per_node=request.memory_per_node,
        cpus_per_node=request.cpus_per_node,
        nodes=request.nodes,
        native_launcher=system.native_launcher,
        launchers=system.launchers,
    )
    system.check_launch(request, launch)
    jobs_per_user = None
    if site is not None:
        request = system.with_site(sites.apply_site_flags(site, site_queue, request, resolution.explicit), site.data)
        sites.check_request(site, site_queue, request, settings)
        queue_name = site_queue or site.data["default_queue"]
        jobs_per_user = UserJobLimit.of_site_queue("max_jobs_per_user", site, queue_name)
    elif not system.runs_jobs_here:  # the local machine sizes itself; last, so a wrong value is named first
        require_job_size(owner, system.name, settings)
    settings["site"] = site
    return settings, request, launch, jobs_per_user


def shows_queue_choice(site: Site, queue: str) -> bool:
    """Whether a script says why the site chose ``queue`` when it is the default queue: where that
    queue takes jobs by walltime bins."""
    return bool(routing.walltime_bins(site.queue(queue)))


def take_keywords(kwargs: dict[str, Any], synonyms: dict[str, str]) -> dict[str, Any]:
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


def require_job_size(owner: str, batch: str, settings: dict[str, Any]) -> None:
    """Refuse a job whose cores or memory nothing says, as dask-jobqueue refuses one: with no site describing
    the node, it would get the batch system's default (often one core and a few GB) while its worker would size
    its memory limit and spilling for the whole node."""

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
