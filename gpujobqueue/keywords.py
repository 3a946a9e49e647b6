"""The keyword registry: every keyword the cluster classes take, its kind and its help.

The cluster classes validate these names, ``gpujobqueue render`` generates one option per
keyword from them (``gpus_per_node`` is ``--gpus-per-node``), and the docs list them. Each
batch system declares its own keywords (:attr:`~gpujobqueue.batch.base.BatchSystem.keywords`)
with the same :class:`Keyword`; the registry (:func:`gpujobqueue.batch.command_line_keywords`)
adds them, and the batch systems' choices of ``gpu_request`` and ``launcher``.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .launchers import LAUNCHERS

# The kinds of value a keyword takes, and so the form of its command-line option.
INT, TEXT, LIST, PAIRS, SWITCH, CHOICE = "int", "text", "list", "pairs", "switch", "choice"


class Keyword(str):
    """A keyword's name (it is the name, as a string) with what the command line needs of it.

    Parameters
    ----------
    name : str
        The keyword, as the cluster classes take it (``gpus_per_node``).
    kind : str
        ``int``, ``text``, ``list`` (a repeatable option), ``pairs`` (repeatable ``NAME=VALUE``),
        ``switch`` (an on/off pair of options) or ``choice``.
    help : str, optional
        One line for ``--help``; default "The <name> keyword."
    options : sequence of str, optional
        The option's own spelling where it is not ``--<name with dashes>`` (click's
        declarations: ``("--exclusive/--shared",)``, ``("--env",)``).
    choices : sequence of str or callable, optional
        The accepted values of a ``choice`` (a callable is asked when the command is built).
    command_line : str, optional
        Why the keyword has no option, for one that cannot have one.
    """

    kind: str
    help: str
    options: tuple[str, ...]
    choices: Sequence[str] | Callable[[], Sequence[str]]
    command_line: str | None

    def __new__(
        cls,
        name: str,
        kind: str = TEXT,
        help: str = "",
        *,
        options: Sequence[str] = (),
        choices: Sequence[str] | Callable[[], Sequence[str]] = (),
        command_line: str | None = None,
    ) -> "Keyword":
        keyword = super().__new__(cls, name)
        keyword.kind, keyword.help, keyword.options = kind, help or f"The {name} keyword.", tuple(options)
        keyword.choices, keyword.command_line = choices, command_line
        return keyword

    def with_choices(self, choices: Sequence[str]) -> "Keyword":
        """This keyword with other accepted values (a ``choice``'s, as the batch systems registered give them)."""
        return Keyword(
            str(self),
            self.kind,
            self.help,
            options=self.options,
            choices=tuple(choices),
            command_line=self.command_line,
        )

    @property
    def option(self) -> str:
        """The first command-line spelling (``--gpus-per-node``)."""
        return self.options[0].split("/")[0] if self.options else "--" + self.replace("_", "-")


# Keywords every batch system takes: the job's request ...
REQUEST: tuple[Keyword, ...] = (
    Keyword("nodes", INT, "Nodes per job."),
    Keyword("gpus_per_node", INT, "GPUs per node; one worker runs per GPU."),
    Keyword("cpus_per_gpu", INT, "CPU cores per GPU (or --cores per job)."),
    Keyword("cores", INT, "CPU cores per job, as dask-jobqueue's cores (or --cpus-per-gpu)."),
    Keyword("memory", TEXT, "Host memory per job, e.g. 240GB (or --memory-per-gpu)."),
    Keyword("memory_per_gpu", TEXT, "Host memory per GPU, e.g. 60GiB (or --memory per job)."),
    Keyword("walltime", TEXT, "Walltime of each job, HH:MM:SS."),
    Keyword("account", TEXT, "Account (project) charged."),
    Keyword("queue", TEXT, "Queue (partition), or the site's queue name."),
    Keyword("exclusive", SWITCH, "Ask for whole nodes.", options=("--exclusive/--shared",)),
    Keyword("job_name", TEXT, "The job's name in the queue."),
    Keyword("log_directory", TEXT, "Folder of the jobs' output files."),
    Keyword("job_extra_directives", LIST, "Extra directive (without its #SBATCH prefix); repeatable."),
    Keyword("job_directives_skip", LIST, "Leave out generated directives containing this text; repeatable."),
    Keyword("job_script_prologue", LIST, "Shell line run before the workers (e.g. 'module load cuda'); repeatable."),
    Keyword("job_script_epilogue", LIST, "Shell line run after the workers stop; repeatable."),
    Keyword("environment", PAIRS, "Variable exported in the job; repeatable.", options=("--env",)),
    Keyword(
        "gpu_request",
        CHOICE,
        "How the job asks for GPUs, in the batch system's terms (slurm: gpus-per-node, gres; "
        "pbs: select, torque; lsf: gpu, csm; sge: complex, resource-type).",
        # each batch system's styles, filled in by the registry (gpujobqueue.batch.command_line_keywords)
        choices=(),
    ),
    Keyword("gpu_type", TEXT, "GPU model to ask for (a100, h100, ...)."),
    Keyword("shebang", TEXT, "First line of the script."),
    Keyword("walltime_margin", TEXT, "How long before the walltime the workers retire (auto, 5m, 0)."),
)
# ... and how its workers start.
LAUNCH: tuple[Keyword, ...] = (
    Keyword(
        "worker_mode", CHOICE, "dask-cuda per node, or one dask worker per device.", choices=("dask-cuda", "per-device")
    ),
    Keyword("python", TEXT, "The workers' python (default: this one)."),
    Keyword("worker_command", TEXT, "The worker module, as dask-jobqueue's worker_command."),
    Keyword("nthreads", INT, "Threads per worker."),
    Keyword("memory_limit", TEXT, "Host memory limit per worker (default: its share of the job's memory)."),
    Keyword("device_memory_limit", TEXT, "dask-cuda's device memory limit (spilling from the GPU)."),
    Keyword("rmm_pool_size", TEXT, "dask-cuda's rmm_pool_size."),
    Keyword("visibility_variable", TEXT, "CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or ZE_AFFINITY_MASK."),
    Keyword("allocation_variable", TEXT, "The variable in which the batch system names the job's devices."),
    Keyword(
        "nanny", SWITCH, "Workers under a nanny (per-device workers always have one).", options=("--nanny/--no-nanny",)
    ),
    Keyword("death_timeout", INT, "Seconds a worker waits for a scheduler that is gone."),
    Keyword("local_directory", TEXT, "The workers' scratch folder."),
    Keyword("protocol", TEXT, "tcp, tls or ucx."),
    Keyword("interface", TEXT, "The workers' network interface (ib0, hsn0)."),
    Keyword("worker_extra_args", LIST, "Extra worker argument; repeatable."),
    Keyword(
        "launcher",
        CHOICE,
        "How a job of several nodes starts the workers of each (srun, mpiexec-pals, mpiexec-openmpi, "
        "mpiexec-mpich, ibrun; jsrun from a CSM launch node).",
        choices=LAUNCHERS,  # and the batch systems' own, added by the registry
    ),
    Keyword("launcher_args", LIST, "Extra launcher option (e.g. --cpu-bind=none); repeatable."),
    # dask-cuda's names for device memory and UCX transports
    Keyword("rmm_maximum_pool_size", TEXT, "dask-cuda's rmm_maximum_pool_size."),
    Keyword("rmm_async", SWITCH, "dask-cuda's rmm_async.", options=("--rmm-async/--no-rmm-async",)),
    Keyword(
        "rmm_managed_memory",
        SWITCH,
        "dask-cuda's rmm_managed_memory.",
        options=("--rmm-managed-memory/--no-rmm-managed-memory",),
    ),
    Keyword("rmm_release_threshold", TEXT, "dask-cuda's rmm_release_threshold."),
    # As dask-cuda spells them; --no-enable-cudf-spill is the older spelling.
    Keyword(
        "enable_cudf_spill",
        SWITCH,
        "dask-cuda's enable_cudf_spill.",
        options=("--enable-cudf-spill/--disable-cudf-spill", " /--no-enable-cudf-spill"),
    ),
    Keyword("set_rmm_allocator_for_libs", TEXT, "dask-cuda's set_rmm_allocator_for_libs."),
    *(
        Keyword(
            f"enable_{transport.replace('-', '_')}",
            SWITCH,
            f"UCX over {transport.replace('-over-ucx', '')} (default: UCX chooses).",
            options=(f"--enable-{transport}/--disable-{transport}",),
        )
        for transport in ("tcp-over-ucx", "infiniband", "nvlink", "rdmacm")
    ),
    Keyword(
        "nic_affinity",
        SWITCH,
        "Each GPU worker on the network card nearest its GPU (UCX_NET_DEVICES); default: UCX chooses.",
        options=("--nic-affinity/--no-nic-affinity",),
    ),
)
# The UCX transport switches, which mean something only with protocol="ucx".
UCX_TRANSPORT_KEYWORDS: tuple[str, ...] = ("enable_tcp_over_ucx", "enable_infiniband", "enable_nvlink", "enable_rdmacm")
# dask-jobqueue's workers per job, taken and turned into GPUs per node.
PROCESSES = Keyword("processes", INT, "dask-jobqueue's workers per job: one per GPU here, so the GPUs per node.")

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


def command_line_base_keywords() -> list[Keyword]:
    """The keywords every batch system takes that ``render`` mirrors as options; the registry
    (:func:`gpujobqueue.batch.command_line_keywords`) adds each batch system's own."""
    return [*REQUEST, *LAUNCH, PROCESSES]
