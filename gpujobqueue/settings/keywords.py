"""The keyword registry, the one source of every fact about a keyword the cluster classes take (each a
:class:`~gpujobqueue.settings.declaration.Keyword`), from which dask config's ``gpujobqueue.<batch>`` sections, the
cluster classes' shared docstring, ``gpujobqueue render``'s options and the site schema's keyword properties are
generated. Each batch system declares its own keywords (:attr:`~gpujobqueue.batch.base.BatchSystem.keywords`).
Adding a keyword is one line here (or in its batch system), the template line that writes it and a test.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ValidationError
from ..jobs.launchers import LAUNCHERS
from .declaration import CHOICE, INT, LIST, PAIRS, SWITCH, TEXT, Computed, Keyword, NoOption
from .limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_MEMORY_BYTES, MAX_NODES, MAX_THREADS_PER_WORKER
from .validation import (
    matching_parser,
    parse_bool,
    parse_environment,
    parse_job_path,
    parse_lines,
    parse_name,
    parse_needles,
    parse_path,
    parse_positive_int,
    parse_seconds,
    parse_shell_lines,
    parse_size,
    parse_word,
)


def sexagesimal_walltime(number: int) -> str:
    """What a whole-number walltime likely is: YAML 1.1's reading of an unquoted ``30:00`` (minutes and seconds, or
    hours and minutes) as one number, 1800."""
    return (
        f"the batch system reads it in its unit for a bare number (minutes on SLURM and LSF, seconds on PBS and Grid "
        f"Engine); if a YAML file said walltime: {number // 60}:{number % 60:02d}, YAML 1.1 read that as {number}: "
        f"quote it ('{number // 60}:{number % 60:02d}', or write '00:{number // 60:02d}:{number % 60:02d}')"
    )


def count(maximum: int) -> Callable[[str, Any], int]:
    """The parser of a whole number from 1 to ``maximum``."""
    return lambda field, value: parse_positive_int(field, value, maximum)


def size(maximum: int) -> Callable[[str, Any], int]:
    """The parser of a size in bytes, at most ``maximum``."""
    return lambda field, value: parse_size(field, value, maximum)


_shebang = matching_parser(re.compile(r"#![^\n]+"), "a line starting with #!")
_interface = matching_parser(re.compile(r"(?!-)[A-Za-z0-9_.:-]{1,32}"), "a network interface name (ib0, hsn0)")


def _visibility(field: str, value: Any) -> str:
    if value not in VISIBILITY_VARIABLES:
        raise ValidationError(
            field, f"{value!r} is not a device-visibility variable; use one of {', '.join(VISIBILITY_VARIABLES)}"
        )
    return value


# Variables that can hold the devices a batch system gave a job (a comma-separated list): the visibility
# variables, Grid Engine's SGE_HGR_<complex>, SLURM_JOB_GPUS-style lists. Any other name (PATH, HOME,
# LD_PRELOAD...) is refused: the job would read it as its devices.
ALLOCATION_VARIABLES = re.compile(
    r"[A-Z][A-Z0-9_]*_VISIBLE_DEVICES|SGE_HGR_[A-Za-z0-9_]{1,64}|[A-Z][A-Z0-9_]*_GPUS|ZE_AFFINITY_MASK|GPU_DEVICE_ORDINAL"
)


def _allocation(field: str, value: Any) -> str:
    if not isinstance(value, str) or not ALLOCATION_VARIABLES.fullmatch(value):
        raise ValidationError(
            field,
            f"{value!r} is not a variable that holds a job's devices; use one named *_VISIBLE_DEVICES, "
            "SGE_HGR_<complex>, *_GPUS, ZE_AFFINITY_MASK or GPU_DEVICE_ORDINAL",
        )
    return value


DEFAULT_SHEBANG = "#!/usr/bin/env bash"
# Where a cluster's scheduler runs: in this process (dask-jobqueue's way: the word is the placement's, not the
# local batch system's), or in the cluster's first job. Compared through these names, never as words.
SCHEDULER_HERE = "local"
SCHEDULER_IN_JOB = "job"
SCHEDULER_PLACEMENTS = (SCHEDULER_HERE, SCHEDULER_IN_JOB)
WORKER_MODES = ("dask-cuda", "per-device")  # what worker_mode takes
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "HIP_VISIBLE_DEVICES")

# The registry: one line (or a few, where the words are many) per keyword. Each keeps the layout of a table
# (name, kind, parse, default, doc, then what only some have), which ruff's formatter would break up.
# fmt: off
# Keywords every batch system takes: the job's request ...
REQUEST: tuple[Keyword, ...] = (
    Keyword("nodes", INT, count(MAX_NODES), 1, "Nodes per job; each node runs gpus_per_node GPU workers, started "
            "through launcher."),
    Keyword("gpus_per_node", INT, count(MAX_GPUS_PER_NODE), 1, "GPUs per node; one worker runs per GPU."),
    Keyword("cpus_per_gpu", INT, count(MAX_CPUS_PER_NODE), Computed("the site's share of the node; 1 without a site"),
            "CPU cores per GPU (or --cores per job). Without a site, this or cores is required (with memory), as "
            "dask-jobqueue requires cores and memory.", site_key="worker.cpus_per_gpu"),
    Keyword("cores", INT, count(MAX_CPUS_PER_NODE * MAX_NODES), None, "CPU cores per job, as dask-jobqueue's "
            "cores (or --cpus-per-gpu). They are the threads of all the job's workers, shared evenly; cores that "
            "would be left idle are refused.",
            jobqueue_key="cores"),
    Keyword("memory", TEXT, size(MAX_MEMORY_BYTES * MAX_NODES), None, "Host memory per job, as dask-jobqueue's "
            "memory (or --memory-per-gpu), such as 240GB. Each worker's memory limit is its share.",
            jobqueue_key="memory"),
    Keyword("memory_per_gpu", TEXT, parse_size, None, "Host memory per GPU, such as 60GiB (or --memory per job).",
            site_key="worker.memory_per_gpu", site_schema={"$ref": "#/$defs/size"}),
    Keyword("walltime", TEXT, None, Computed("the batch system's, ``00:30:00`` as dask-jobqueue's (none "
                                                       "on the local one)"),
            "Walltime of each job, HH:MM:SS; also D-HH:MM:SS, or a bare number in the batch system's unit: "
            "minutes on SLURM and LSF, seconds on PBS and Grid Engine.", jobqueue_key="walltime",
            numbers_as_text=True, number_warning=sexagesimal_walltime),
    Keyword("account", TEXT, parse_word, None, "Account (project) charged.", jobqueue_key="account",
            numbers_as_text=True),
    Keyword("queue", TEXT, None, None, "Queue (partition), or the site's queue name, which the site maps to its "
            "partition and QoS; on a site, 'soonest': the queue where the job would start first.",
            jobqueue_key="queue", numbers_as_text=True),
    Keyword("exclusive", SWITCH, parse_bool, False, "Ask for whole nodes.", option="--exclusive/--shared",
            site_key="directives.exclusive"),
    Keyword("job_name", TEXT, parse_name, "dask-worker", "The job's name in the queue (dask-jobqueue's default).",
            jobqueue_key="name", numbers_as_text=True),
    Keyword("log_directory", TEXT, parse_path, None, "Folder of the jobs' output files.",
            jobqueue_key="log-directory"),
    Keyword("job_extra_directives", LIST, parse_lines, None, "Extra directive (without its #SBATCH prefix). A GPU "
            "request written here (or in resource_spec), as dask-jobqueue users write it, is read: its count is the "
            "GPUs per node unless gpus_per_node says otherwise, which is refused.",
            jobqueue_key="job-extra-directives"),
    Keyword("job_directives_skip", LIST, parse_needles, None, "Leave out generated directives containing this "
            "text.",
            jobqueue_key="job-directives-skip"),
    Keyword("job_script_prologue", LIST, parse_shell_lines, None, "Shell line run before the workers (such as "
            "'module load cuda'). As in dask-jobqueue, a line that fails is written to the job's log with its status "
            "and the job goes on (see prologue_errors).",
            site_key="prologue", jobqueue_key="job-script-prologue"),
    Keyword("prologue_errors", CHOICE, matching_parser(re.compile("continue|stop"), "'continue' or 'stop'"),
            "continue", "What a failing prologue line does: continue (as dask-jobqueue's scripts, the failure in the "
            "job's log) or stop the job.",
            site_key="prologue_errors", choices=("continue", "stop")),
    Keyword("job_script_epilogue", LIST, parse_shell_lines, None, "Shell line run after the workers stop."),
    Keyword("environment", PAIRS, parse_environment, None, "Variable exported in the job. Each value is a string or "
            "a number (None, True/False, lists and mappings are refused, not written as Python spells them).",
            site_key="environment", option="--env", site_schema={
                "type": "object", "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*\\Z"},
                "additionalProperties": {"type": ["string", "integer", "boolean"]}}),
    Keyword("gpu_request", CHOICE, None, Computed("the batch system's first style"), "How the job asks for GPUs, in "
            "the batch system's terms (slurm: gpus-per-node, gres, gpus; pbs: select, torque; lsf: gpu, csm; sge: "
            "complex, resource-type; or none).", choices=()),  # each batch system's, filled in by the registry
    Keyword("gpu_type", TEXT, parse_word, None, "GPU model to ask for (a100, h100, ...), in the batch system's "
            "spelling."),
    Keyword("shebang", TEXT, _shebang, DEFAULT_SHEBANG, "First line of the script. On PBS and Grid Engine, whose -S "
            "names the shell that runs the script whatever its first line, -S follows the shebang's interpreter.",
            jobqueue_key="shebang"),
    Keyword("walltime_margin", TEXT, None, "auto", "How long before the walltime the workers retire (auto, 5m, 0); "
            "they retire gracefully (their data moved to other workers, their job then ending on its own), staggered "
            "by a quarter of the margin either way. ``auto``: 5 % of the walltime, at least 20 s and at most 10 "
            "minutes, and never more than a quarter of the walltime (a 2-minute job works 100 s, a 1-hour job 57 "
            "minutes); False lets the walltime end them. Passed to the workers as dask config "
            "(``distributed.worker.lifetime``), since ``dask cuda worker`` takes no ``--lifetime``; dask-jobqueue's "
            "``--lifetime``, ``--lifetime-stagger`` and ``--lifetime-restart`` in worker_extra_args set the same "
            "config instead (give one or the other).", type_doc="str, int or False"),
)
# ... and how its workers start.
LAUNCH: tuple[Keyword, ...] = (
    Keyword("worker_mode", CHOICE, None, "dask-cuda", "dask-cuda per node, or one dask worker per device (``dask cuda "
            "worker`` per node, or one ``dask worker`` per allocated device). The local batch system's default is "
            "per-device on a machine without NVIDIA GPUs.", site_key="worker.mode",
            choices=WORKER_MODES),
    Keyword("python", TEXT, None, Computed("this python"), "The workers' python (default: this one). As in "
            "dask-jobqueue: the interpreter, after a launcher that starts the workers if given (``srun -n 1 -c 8 "
            "python``).",
            jobqueue_key="python"),
    Keyword("worker_command", TEXT, None, Computed("dask-cuda's worker, or distributed's for per-device workers"),
            "The worker module, as dask-jobqueue's worker_command.", jobqueue_key="worker-command"),
    Keyword("nthreads", INT, count(MAX_THREADS_PER_WORKER), Computed("with cores, the job's cores shared evenly by "
            "its workers (cores=24 with "
            "4 GPUs: 6 each); otherwise, for dask-cuda workers, up to 4 of each GPU's share of the job's cores (more "
            "threads overlap one task's Python and kernel launches with another's GPU work: the 2 TB sum ran 28 % "
            "faster with 4 than with 1 on an H200); for per-device workers, 1"), "Threads per worker."),
    Keyword("memory_limit", TEXT, parse_size, Computed("its share of the job's memory"),
            "Host memory limit per worker (default: its share of the job's memory)."),
    Keyword("device_memory_limit", TEXT, None, None, "dask-cuda's device memory limit (spilling from the GPU), a size "
            "such as 20GB or a fraction of the device's memory."),
    Keyword("rmm_pool_size", TEXT, None, Computed("with protocol='ucx' and no RMM keyword, a 1 GB pool that grows on "
            "demand; rmm_pool_size=False turns it off"), "dask-cuda's rmm_pool_size, a size or a fraction of the "
            "device's memory."),
    Keyword("visibility_variable", TEXT, _visibility, "CUDA_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or "
            "ZE_AFFINITY_MASK.", site_key="worker.visibility_variable",
            site_schema={"enum": list(VISIBILITY_VARIABLES)}),
    Keyword("allocation_variable", TEXT, _allocation, Computed("visibility_variable; where it is unset in the job, "
            "devices "
            "0 .. G-1"), "The variable in which the batch system names the job's devices."),
    Keyword("nanny", SWITCH, parse_bool, True, "Workers under a nanny. As in dask-jobqueue, False starts one ``dask "
            "worker --no-nanny`` per GPU (dask-cuda's workers always have nannies)."),
    Keyword("death_timeout", INT, parse_seconds, 60, "Seconds a worker waits for a scheduler that is gone.",
            jobqueue_key="death-timeout"),
    Keyword("local_directory", TEXT, parse_job_path, None, "The workers' scratch folder.",
            site_key="worker.local_directory",
            jobqueue_key="local-directory"),
    Keyword("protocol", TEXT, None, Computed("``tls`` (TCP with the cluster's credentials); on the local batch system "
            "``ucx`` where two or more GPUs are joined by NVLink and distributed-ucxx is installed"), "tcp, tls or "
            "ucx. ``ucxx``, distributed-ucxx's name for it, is ``ucx``; distributed's ``inproc`` (within one process) "
            "and ``ws``/``wss`` (websockets, which gpujobqueue's scripts and TLS do not set up) are refused.",
            site_key="network.protocol", site_schema={"enum": ["tcp", "tls", "ucx"]}),
    Keyword("interface", TEXT, _interface, None, "The workers' network interface (ib0, hsn0).",
            site_key="network.interface",
            site_schema={"$ref": "#/$defs/word"}, jobqueue_key="interface"),
    Keyword("worker_extra_args", LIST, None, None, "Extra worker arguments, as in dask-jobqueue: joined with spaces "
            "and read as shell words (``['--resources GPU=1']`` is two words). ``--resources`` is merged with each "
            "worker's ``GPU=1``; an option the worker command does not take is refused, saying what to give.",
            jobqueue_key="worker-extra-args"),
    Keyword("launcher", CHOICE, None, Computed("the site's, else the batch system's own for a job of several nodes"),
            "How a job of several nodes starts the workers of each (srun, mpiexec-pals, mpiexec-openmpi, "
            "mpiexec-mpich, ibrun; jsrun from a CSM launch node).", site_key="launcher.name",
            choices=LAUNCHERS, type_doc="str", site_schema={}),  # and the batch systems' own, added by the registry
    Keyword("launcher_args", LIST, parse_lines, None, "Extra launcher option (such as --cpu-bind=none), after "
            "gpujobqueue's "
            "own.", site_key="launcher.args"),
    # dask-cuda's names for device memory and UCX transports
    Keyword("rmm_maximum_pool_size", TEXT, None, None, "dask-cuda's rmm_maximum_pool_size."),
    Keyword("rmm_async", SWITCH, None, None, "dask-cuda's rmm_async (cudaMallocAsync)."),
    Keyword("rmm_managed_memory", SWITCH, None, None, "dask-cuda's rmm_managed_memory."),
    Keyword("rmm_release_threshold", TEXT, None, None, "dask-cuda's rmm_release_threshold."),
    # As dask-cuda spells them; --no-enable-cudf-spill is the older spelling.
    Keyword("enable_cudf_spill", SWITCH, None, None, "dask-cuda's enable_cudf_spill.",
            option=("--enable-cudf-spill/--disable-cudf-spill", " /--no-enable-cudf-spill")),
    Keyword("set_rmm_allocator_for_libs", TEXT, None, None, "dask-cuda's set_rmm_allocator_for_libs: ``cupy``, "
            "``torch`` (or a list of them) allocate through RMM on the workers.", type_doc="str or list of str"),
    *(
        Keyword(f"enable_{transport.replace('-', '_')}", SWITCH, None, Computed("UCX chooses"),
                f"UCX over {transport.replace('-over-ucx', '')} (default: UCX chooses). Only with protocol='ucx'; a "
                "site with UCX sets it from its network.ucx.", site_key=f"network.ucx.{transport.replace('-', '_')}",
                option=(f"--enable-{transport}/--disable-{transport}",))
        for transport in ("tcp-over-ucx", "infiniband", "nvlink", "rdmacm")
    ),
    Keyword("nic_affinity", SWITCH, parse_bool, False, "Each GPU worker on the network card nearest its GPU "
            "(UCX_NET_DEVICES); default: UCX chooses. Each NVIDIA GPU worker's nanny sets it, for sites that document "
            "one card per GPU (a site's network.nic_affinity); ``gpujobqueue check`` shows the map as a diagnosis.",
            site_key="network.nic_affinity"),
)
# dask-jobqueue's workers per job, taken and turned into GPUs per node.
PROCESSES = Keyword("processes", INT, count(MAX_GPUS_PER_NODE), None, "dask-jobqueue's workers per job: alone, one "
                    "per GPU (the GPUs per node); with a GPU count it divides, each worker sees its share of the GPUs.",
                    jobqueue_key="processes")
# The cluster's own keywords that dask config sets too, which no rendered script carries.
_CONSTRUCTOR = "the cluster's own keyword; render's command line has its own options for a script's scheduler"
CLUSTER: tuple[Keyword, ...] = (
    Keyword("shared_temp_directory", TEXT, None, Computed("the current directory"), "Where the cluster keeps its "
            "private folder (and a job's scheduler its scheduler file).", option=NoOption(_CONSTRUCTOR),
            jobqueue_key="shared-temp-directory"),
    Keyword("scheduler_options", PAIRS, None, None, "Options of the scheduler that runs here, as in "
            "dask_jobqueue.SLURMCluster.", option=NoOption(_CONSTRUCTOR), jobqueue_key="scheduler-options"),
    Keyword("cpu_pool", PAIRS, None, None, "A CPU-only pool beside the GPU workers, on the same scheduler, scaled with "
            "``scale(cpu_workers=N)``. Its jobs ask for no GPU and its workers carry no ``GPU`` resource, so "
            "``dask.annotate(resources={\"GPU\": 1})`` keeps tasks off them. Keys: ``processes`` (workers per job, "
            "default 1), ``cores``, ``nthreads``, ``memory`` (per job), ``queue`` (a site's queue name maps to its "
            "partition and QoS), ``account``, ``qos``, ``constraint`` (SLURM), ``walltime``, ``job_name``, "
            "``job_extra_directives``; the rest is the GPU jobs' settings.", option=NoOption(_CONSTRUCTOR)),
    Keyword("scheduler", CHOICE, None, Computed("``local``, except with UCX on a batch system"), "Where the "
            "scheduler runs. ``local``: in this process, as in dask-jobqueue. ``job``: in the cluster's first job, on "
            "a compute node, beside that job's GPU workers; it writes a scheduler file in a private folder of "
            "shared_temp_directory, where this process and the other jobs' workers find it. That job lives as long as "
            "the cluster, so its GPUs are the cluster's minimum, and closing the cluster ends it last. The default "
            "with protocol='ucx' on a batch system: UCX has no TLS, so the scheduler is kept off the shared login "
            "node, on the job's own network (interface).", choices=SCHEDULER_PLACEMENTS, option=NoOption(_CONSTRUCTOR)),
    Keyword("job_array", SWITCH, None, False, "Submit the jobs that ``scale()`` and ``adapt()`` start together as one "
            "job array (SLURM ``--array=1-K``, PBS Pro ``-J 1-K``, LSF ``-J \"name[1-K]\"``, Grid Engine ``-t "
            "1-K``): one submission for many one-node jobs. Each element is one of the cluster's jobs, and scaling "
            "down cancels single elements.", option=NoOption(_CONSTRUCTOR)),
)
# fmt: on
REQUEST_KEYWORDS: tuple[str, ...] = tuple(REQUEST)
LAUNCH_KEYWORDS: tuple[str, ...] = tuple(LAUNCH)

# dask-jobqueue's deprecated spellings, kept with the same meaning and warning
# (unless a batch system keeps the old name as its own, as PBS, LSF and SGE keep project).
RENAMED_KEYWORDS = {
    "project": "account",
    "job_extra": "job_extra_directives",
    "header_skip": "job_directives_skip",
    "env_extra": "job_script_prologue",
    "extra": "worker_extra_args",
}


def setting_keywords() -> tuple[Keyword, ...]:
    """The keywords every batch system's clusters resolve keyword > ``gpujobqueue.<batch>.*`` > site > default
    (read when asked, so that one added to the registry is in everything made from it)."""
    return (*REQUEST, *LAUNCH)


def command_line_base_keywords() -> list[Keyword]:
    """The keywords every batch system takes that ``render`` mirrors as options; the registry
    (:func:`gpujobqueue.batch.command_line_keywords`) adds each batch system's own."""
    return [*setting_keywords(), PROCESSES]


def documented_keywords() -> tuple[Keyword, ...]:
    """Every keyword of the shared docstring (:mod:`gpujobqueue.settings.cluster_parameters`), in its order."""
    return (*setting_keywords(), PROCESSES, *CLUSTER)


# The keywords that give a job's cores and its memory (shared ones and the batch systems' own, as dask-jobqueue's
# cores and memory): dask-jobqueue requires one of each, and a site's per-GPU value gives way to a user's per-job one.
CORE_KEYWORDS = ("cores", "cpus_per_gpu", "job_cpu", "ncpus")
MEMORY_KEYWORDS = ("memory", "memory_per_gpu", "job_mem", "mem")


def parse_keyword(name: str, value: Any) -> Any:
    """``value`` read by the declaration of the shared keyword ``name``: its parser, with its bounds."""
    return next(keyword for keyword in documented_keywords() if keyword == name).parse(name, value)


def default_of(name: str) -> Any:
    """The default the plan uses for the shared keyword ``name`` (its :attr:`Keyword.default`)."""
    return next(keyword.default for keyword in documented_keywords() if keyword == name)


# Where a site file's key path starts in the schema: worker settings are a definition that a queue's
# ``worker`` uses too.
_SCHEMA_ROOTS = {"worker": ("$defs", "worker_settings")}


def site_schema_fragment(keywords: Sequence[Keyword]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Where each site-settable keyword's value sits in the site schema, and its schema: a path of
    schema keys from the root (``("$defs", "worker_settings", "properties", "mode")``) and the value's
    schema, with the keyword's documentation as its description."""
    fragment = []
    for keyword in keywords:
        if keyword.site_key is None:
            continue
        first, *rest = keyword.site_key.split(".")
        path = _SCHEMA_ROOTS.get(first, ("properties", first)) if rest else ("properties", first)
        for key in rest:
            path = (*path, "properties", key)
        fragment.append((path, {**keyword.site_schema, "description": f"sets {keyword}: {keyword.summary}"}))
    return fragment


def jobqueue_keys(setting_names: Iterable[str], synonyms: Mapping[str, str]) -> dict[str, str]:
    """dask-jobqueue's config keys (``jobqueue.<batch>.<key>``) to the settings they set, for a batch
    system of ``setting_names`` and ``synonyms``: each keyword's ``jobqueue_key`` (the cluster's own,
    :data:`CLUSTER`, included), dask-jobqueue's deprecated spellings (``job-extra``, ``extra``) and
    the batch system's synonyms, as dask-jobqueue's cluster of it spells them (``project``)."""
    keys = {old: new for old, new in RENAMED_KEYWORDS.items() if old not in synonyms}
    keys.update(synonyms)
    for keyword in (*setting_names, *CLUSTER):
        if isinstance(keyword, Keyword) and keyword.jobqueue_key is not None:
            keys[keyword.jobqueue_key] = str(keyword)
    return keys
