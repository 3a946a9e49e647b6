"""The keyword registry, the one source of every fact about a keyword the cluster classes take.

A :class:`Keyword` holds its name, kind, parser, default, documentation, site-file key and
command-line option; from the registry are generated the ``gpujobqueue.<batch>`` sections of dask
config (:func:`gpujobqueue.config.add_batch_sections`), the shared docstring of every cluster class
(:mod:`gpujobqueue.cluster_parameters`), ``gpujobqueue render``'s options
(:func:`gpujobqueue.cli_render.keyword_options`) and the site schema's keyword properties
(:func:`site_schema_fragment`). Each batch system declares its own keywords
(:attr:`~gpujobqueue.batch.base.BatchSystem.keywords`) with the same :class:`Keyword`; the batch
registry (:func:`gpujobqueue.batch.command_line_keywords`) adds them. Adding a keyword is one line
here (or in its batch system), the template line that writes it and a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .launchers import LAUNCHERS
from .limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES
from .validation import parse_bool, parse_name, parse_path, parse_positive_int, parse_size, parse_word
from .walltimes import parse_walltime

# The kinds of value a keyword takes, and so the form of its command-line option.
INT, TEXT, LIST, PAIRS, SWITCH, CHOICE = "int", "text", "list", "pairs", "switch", "choice"
_TYPE_DOCS = {INT: "int", TEXT: "str", LIST: "list of str", PAIRS: "dict", SWITCH: "bool", CHOICE: "str"}
_SCHEMAS: dict[str, dict[str, Any]] = {
    INT: {"type": "integer", "minimum": 1},
    TEXT: {"type": "string"},
    LIST: {"$ref": "#/$defs/lines"},
    PAIRS: {"type": "object", "additionalProperties": {"type": ["string", "integer"]}},
    SWITCH: {"type": "boolean"},
}
_FIRST_SENTENCE = re.compile(r"(.+?\.)(?:\s|$)", re.DOTALL)


@dataclass(frozen=True)
class NoOption:
    """A keyword that ``render`` cannot mirror as an option, and why (more than a few words)."""

    why: str


@dataclass(frozen=True)
class Computed:
    """A default the plan works out from the other settings, as the docstring says it (``how``)."""

    how: str


class Keyword(str):
    """A keyword's name (it is the name, as a string) with every fact the package derives from it.

    Parameters
    ----------
    name : str
        The keyword, as the cluster classes take it (``gpus_per_node``); its dask config key is
        ``gpujobqueue.<batch>.<name with dashes>``.
    kind : str
        ``int``, ``text``, ``list`` (a repeatable option), ``pairs`` (repeatable ``NAME=VALUE``),
        ``switch`` (an on/off pair of options) or ``choice``.
    parse : callable, optional
        ``parse(field, value)``: the value read alone (a :mod:`~gpujobqueue.validation` parser with
        the plan's bounds), raising :class:`~gpujobqueue.errors.ValidationError` naming ``field``;
        None where the plan reads the value together with others.
    default : object, optional
        The value the plan uses where nothing sets it; a :class:`Computed` where the plan works it
        out; None for unset.
    doc : str
        The docstring entry's text; its first sentence is ``--help``'s line.
    site_key : str, optional
        The site file's key that sets it, dotted (``worker.cpus_per_gpu``), for the keys whose
        schema is generated here (:func:`site_schema_fragment`).
    option : str, sequence of str or NoOption, optional
        The option's click declarations where they are not ``--<name with dashes>`` (``--<name>/--no-<name>``
        for a switch), or why there is none.
    type_doc : str, optional
        The docstring's type where the kind's is not enough (``str, int or False``).
    choices : sequence of str or callable, optional
        The accepted values of a ``choice`` (a callable is asked when the command is built).
    site_schema : dict, optional
        The value's JSON schema in the site file, where the kind's is not enough.
    jobqueue_key : str, optional
        dask-jobqueue's config key of the same meaning (``jobqueue.<batch>.<key>``, in the sections of
        the batch systems that have it), which issue 31 reads under gpujobqueue's own; None where
        dask-jobqueue has none.
    """

    kind: str
    parse: Callable[[str, Any], Any] | None
    default: Any
    doc: str
    site_key: str | None
    option: tuple[str, ...] | NoOption
    type_doc: str
    choices: Sequence[str] | Callable[[], Sequence[str]]
    site_schema: dict[str, Any]
    jobqueue_key: str | None

    def __new__(
        cls,
        name: str,
        kind: str = TEXT,
        parse: Callable[[str, Any], Any] | None = None,
        default: Any = None,
        doc: str = "",
        site_key: str | None = None,
        option: str | Sequence[str] | NoOption = (),
        *,
        type_doc: str | None = None,
        choices: Sequence[str] | Callable[[], Sequence[str]] = (),
        site_schema: dict[str, Any] | None = None,
        jobqueue_key: str | None = None,
    ) -> "Keyword":
        if parse is not None and not callable(parse):
            raise TypeError(f"keyword {name}: parse must be a parser, (field, value) -> value, not {parse!r}")
        keyword = super().__new__(cls, name)
        if not option:
            dashed = name.replace("_", "-")
            option = (f"--{dashed}/--no-{dashed}",) if kind == SWITCH else (f"--{dashed}",)
        keyword.kind, keyword.parse, keyword.default = kind, parse, default
        keyword.doc, keyword.site_key = doc or f"The {name} keyword.", site_key
        keyword.option = (
            option if isinstance(option, NoOption) else tuple([option] if isinstance(option, str) else option)
        )
        keyword.type_doc = type_doc or (
            "{" + ", ".join(f'"{c}"' for c in choices) + "}"
            if kind == CHOICE and choices and not callable(choices)
            else _TYPE_DOCS[kind]
        )
        keyword.choices, keyword.jobqueue_key = choices, jobqueue_key
        keyword.site_schema = site_schema or (
            {"enum": list(choices)} if kind == CHOICE and not callable(choices) else _SCHEMAS.get(kind, {})
        )
        return keyword

    def with_facts(self, **changes: Any) -> "Keyword":
        """This keyword with some facts changed (``choices``: a ``choice``'s, as the batch systems registered give
        them)."""
        facts = {field: getattr(self, field) for field in _FIELDS}
        return Keyword(str(self), **{**facts, **changes})

    @property
    def options(self) -> tuple[str, ...]:
        """The option's click declarations; none for a keyword without one."""
        return () if isinstance(self.option, NoOption) else self.option

    @property
    def command_line(self) -> str | None:
        """Why the keyword has no option, or None where it has one."""
        return self.option.why if isinstance(self.option, NoOption) else None

    @property
    def summary(self) -> str:
        """The doc's first sentence."""
        match = _FIRST_SENTENCE.match(self.doc)
        return " ".join((match.group(1) if match else self.doc).split())

    @property
    def help(self) -> str:
        """``--help``'s line: the doc's first sentence (saying so where the option is repeatable)."""
        line = self.summary
        return line[:-1] + "; repeatable." if self.kind in (LIST, PAIRS) and line.endswith(".") else line

    @property
    def config_key(self) -> str:
        """Its key in ``gpujobqueue.<batch>`` (``gpus-per-node``)."""
        return self.replace("_", "-")

    @property
    def default_doc(self) -> str:
        """The default as the docstring says it."""
        if isinstance(self.default, Computed):
            return f"Default: {self.default.how}."
        if self.default is None:
            return "Default: not set."
        return f"Default ``{self.default!r}``."


_FIELDS = (
    "kind",
    "parse",
    "default",
    "doc",
    "site_key",
    "option",
    "type_doc",
    "choices",
    "site_schema",
    "jobqueue_key",
)


def _count(maximum: int) -> Callable[[str, Any], int]:
    return lambda field, value: parse_positive_int(field, value, maximum)


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
    Keyword("nodes", INT, _count(MAX_NODES), 1, "Nodes per job; each node runs gpus_per_node GPU workers, started "
            "through launcher."),
    Keyword("gpus_per_node", INT, _count(MAX_GPUS_PER_NODE), 1, "GPUs per node; one worker runs per GPU."),
    Keyword("cpus_per_gpu", INT, _count(MAX_CPUS_PER_NODE), Computed("the site's share of the node; 1 without a site"),
            "CPU cores per GPU (or --cores per job). Without a site, this or cores is required (with memory), as "
            "dask-jobqueue requires cores and memory.", site_key="worker.cpus_per_gpu"),
    Keyword("cores", INT, None, None, "CPU cores per job, as dask-jobqueue's cores (or --cpus-per-gpu). They are the "
            "threads of all the job's workers, shared evenly; cores that would be left idle are refused.",
            jobqueue_key="cores"),
    Keyword("memory", TEXT, None, None, "Host memory per job, as dask-jobqueue's memory (or --memory-per-gpu), such as "
            "240GB. Each worker's memory limit is its share.", jobqueue_key="memory"),
    Keyword("memory_per_gpu", TEXT, parse_size, None, "Host memory per GPU, such as 60GiB (or --memory per job).",
            site_key="worker.memory_per_gpu", site_schema={"$ref": "#/$defs/size"}),
    Keyword("walltime", TEXT, parse_walltime, Computed("the batch system's, ``00:30:00`` as dask-jobqueue's (none "
                                                       "on the local one)"),
            "Walltime of each job, HH:MM:SS; also D-HH:MM:SS, or a bare number in the batch system's unit: "
            "minutes on SLURM and LSF, seconds on PBS and Grid Engine.", jobqueue_key="walltime"),
    Keyword("account", TEXT, parse_word, None, "Account (project) charged.", jobqueue_key="account"),
    Keyword("queue", TEXT, None, None, "Queue (partition), or the site's queue name, which the site maps to its "
            "partition and QoS.", jobqueue_key="queue"),
    Keyword("exclusive", SWITCH, parse_bool, False, "Ask for whole nodes.", option="--exclusive/--shared",
            site_key="directives.exclusive"),
    Keyword("job_name", TEXT, parse_name, "dask-worker", "The job's name in the queue (dask-jobqueue's default).",
            jobqueue_key="name"),
    Keyword("log_directory", TEXT, parse_path, None, "Folder of the jobs' output files.",
            jobqueue_key="log-directory"),
    Keyword("job_extra_directives", LIST, None, None, "Extra directive (without its #SBATCH prefix). A GPU request "
            "written here (or in resource_spec), as dask-jobqueue users write it, is read: its count is the GPUs per "
            "node unless gpus_per_node says otherwise, which is refused.", jobqueue_key="job-extra-directives"),
    Keyword("job_directives_skip", LIST, None, None, "Leave out generated directives containing this text.",
            jobqueue_key="job-directives-skip"),
    Keyword("job_script_prologue", LIST, None, None, "Shell line run before the workers (such as 'module load cuda').",
            site_key="prologue", jobqueue_key="job-script-prologue"),
    Keyword("job_script_epilogue", LIST, None, None, "Shell line run after the workers stop."),
    Keyword("environment", PAIRS, None, None, "Variable exported in the job. Each value is a string or a number "
            "(None, True/False, lists and mappings are refused, not written as Python spells them).",
            site_key="environment", option="--env", site_schema={
                "type": "object", "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*\\Z"},
                "additionalProperties": {"type": ["string", "integer", "boolean"]}}),
    Keyword("gpu_request", CHOICE, None, Computed("the batch system's first style"), "How the job asks for GPUs, in "
            "the batch system's terms (slurm: gpus-per-node, gres, gpus; pbs: select, torque; lsf: gpu, csm; sge: "
            "complex, resource-type; or none).", choices=()),  # each batch system's, filled in by the registry
    Keyword("gpu_type", TEXT, parse_word, None, "GPU model to ask for (a100, h100, ...), in the batch system's "
            "spelling."),
    Keyword("shebang", TEXT, None, DEFAULT_SHEBANG, "First line of the script. On PBS and Grid Engine, whose -S names "
            "the shell that runs the script whatever its first line, -S follows the shebang's interpreter.",
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
    Keyword("nthreads", INT, None, Computed("with cores, the job's cores shared evenly by its workers (cores=24 with "
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
    Keyword("visibility_variable", TEXT, None, "CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or "
            "ZE_AFFINITY_MASK.", site_key="worker.visibility_variable",
            site_schema={"enum": list(VISIBILITY_VARIABLES)}),
    Keyword("allocation_variable", TEXT, None, Computed("visibility_variable; where it is unset in the job, devices "
            "0 .. G-1"), "The variable in which the batch system names the job's devices."),
    Keyword("nanny", SWITCH, None, True, "Workers under a nanny. As in dask-jobqueue, False starts one ``dask "
            "worker --no-nanny`` per GPU (dask-cuda's workers always have nannies)."),
    Keyword("death_timeout", INT, None, 60, "Seconds a worker waits for a scheduler that is gone.",
            jobqueue_key="death-timeout"),
    Keyword("local_directory", TEXT, None, None, "The workers' scratch folder.", site_key="worker.local_directory",
            jobqueue_key="local-directory"),
    Keyword("protocol", TEXT, None, Computed("``tls`` (TCP with the cluster's credentials); on the local batch system "
            "``ucx`` where two or more GPUs are joined by NVLink and distributed-ucxx is installed"), "tcp, tls or "
            "ucx. ``ucxx``, distributed-ucxx's name for it, is ``ucx``; distributed's ``inproc`` (within one process) "
            "and ``ws``/``wss`` (websockets, which gpujobqueue's scripts and TLS do not set up) are refused.",
            site_key="network.protocol", site_schema={"enum": ["tcp", "tls", "ucx"]}),
    Keyword("interface", TEXT, None, None, "The workers' network interface (ib0, hsn0).", site_key="network.interface",
            site_schema={"$ref": "#/$defs/word"}, jobqueue_key="interface"),
    Keyword("worker_extra_args", LIST, None, None, "Extra worker arguments, as in dask-jobqueue: joined with spaces "
            "and read as shell words (``['--resources GPU=1']`` is two words). ``--resources`` is merged with each "
            "worker's ``GPU=1``; an option the worker command does not take is refused, saying what to give.",
            jobqueue_key="worker-extra-args"),
    Keyword("launcher", CHOICE, None, Computed("the site's, else the batch system's own for a job of several nodes"),
            "How a job of several nodes starts the workers of each (srun, mpiexec-pals, mpiexec-openmpi, "
            "mpiexec-mpich, ibrun; jsrun from a CSM launch node).", site_key="launcher.name",
            choices=LAUNCHERS, type_doc="str", site_schema={}),  # and the batch systems' own, added by the registry
    Keyword("launcher_args", LIST, None, None, "Extra launcher option (such as --cpu-bind=none), after gpujobqueue's "
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
    Keyword("nic_affinity", SWITCH, None, False, "Each GPU worker on the network card nearest its GPU "
            "(UCX_NET_DEVICES); default: UCX chooses. Each NVIDIA GPU worker's nanny sets it, for sites that document "
            "one card per GPU (a site's network.nic_affinity); ``gpujobqueue check`` shows the map as a diagnosis.",
            site_key="network.nic_affinity"),
)
# dask-jobqueue's workers per job, taken and turned into GPUs per node.
PROCESSES = Keyword("processes", INT, None, None, "dask-jobqueue's workers per job: alone, one per GPU (the GPUs per "
                    "node); with a GPU count it divides, each worker sees its share of the GPUs.",
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
# The UCX transport switches, which mean something only with protocol="ucx".
UCX_TRANSPORT_KEYWORDS: tuple[str, ...] = ("enable_tcp_over_ucx", "enable_infiniband", "enable_nvlink", "enable_rdmacm")

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
    """Every keyword of the shared docstring (:mod:`gpujobqueue.cluster_parameters`), in its order."""
    return (*setting_keywords(), PROCESSES, *CLUSTER)


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
