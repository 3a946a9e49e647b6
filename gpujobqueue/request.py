"""What one batch job asks of the batch system, parsed and validated (no I/O)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .errors import ValidationError
from .keywords import DEFAULT_SHEBANG, default_of
from .limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_MEMORY_BYTES, MAX_NODES
from .validation import (
    MAX_LIST_ITEMS,
    SAFE_PATH,
    given_or,
    matching,
    one_line,
    parse_bool,
    parse_constraint,
    parse_count,
    parse_environment,
    parse_job_path,
    parse_lines,
    parse_name,
    parse_needles,
    parse_path,
    parse_positive_int,
    parse_queues,
    parse_size,
    parse_word,
    per_node,
)
from .walltimes import (
    MARGIN_FEWEST_SECONDS,
    MARGIN_FRACTION,
    MARGIN_MOST_SECONDS,
    default_walltime_margin,
    format_hours_walltime,
    format_walltime,
    parse_walltime,
    parse_walltime_margin,
)
from .worker_args import read_worker_args

GPU_REQUEST_STYLES = ("none",)  # without a batch system's own styles: the queue implies the GPUs
DEFAULT_WALLTIME = "00:30:00"  # dask-jobqueue's; every job ends: an allocation nobody closes burns half an hour at most

# The validation and walltime helpers stay importable from here, where JobRequest uses them.
__all__ = [
    "DEFAULT_SHEBANG",
    "DEFAULT_WALLTIME",
    "GPU_REQUEST_STYLES",
    "JobRequest",
    "MARGIN_FEWEST_SECONDS",
    "MARGIN_FRACTION",
    "MARGIN_MOST_SECONDS",
    "MAX_LIST_ITEMS",
    "SAFE_PATH",
    "ValidationError",
    "default_walltime_margin",
    "format_hours_walltime",
    "format_walltime",
    "given_or",
    "matching",
    "one_line",
    "parse_bool",
    "parse_constraint",
    "parse_count",
    "parse_environment",
    "parse_job_path",
    "parse_lines",
    "parse_name",
    "parse_needles",
    "parse_path",
    "parse_positive_int",
    "parse_size",
    "parse_walltime",
    "parse_walltime_margin",
    "parse_word",
    "per_node",
]


@dataclass(frozen=True)
class JobRequest:
    """What one batch job asks of the batch system.

    Build it with :meth:`JobRequest.from_settings`, which parses and validates every field;
    the fields below are already parsed.

    Parameters
    ----------
    job_name : str
        The batch job's name (``#SBATCH --job-name``).
    nodes : int
        Nodes per job.
    gpus_per_node : int
        GPUs asked for on each node; one Dask worker runs per GPU.
    cpus_per_node : int
        CPU cores asked for on each node.
    memory_per_node : int or None
        Bytes of host memory per node, or None to leave it to the batch system's default.
    walltime : int or None
        Seconds; one hour unless given. None (the local batch system, unless one is given):
        no walltime, and the workers live until the cluster stops them.
    account, queue : str or None
        Where the job is charged and placed (``queue`` is SLURM's partition; a list of them, as the
        batch system writes one, where it takes a list: ``gpu,gpu-preempt`` on SLURM).
    exclusive : bool
        Ask for whole nodes.
    gpu_request : str
        How GPUs are asked for, one of the batch system's styles
        (:attr:`~gpujobqueue.batch.base.BatchSystem.gpu_request_styles`; SLURM's ``"gpus-per-node"``,
        PBS's ``"select"``, ...), or ``"none"`` (the queue implies them).
    gpu_type : str or None
        GPU model for typed requests, e.g. ``a100`` in ``--gres=gpu:a100:4``.
    log_directory : str or None
        Directory for the job's output and error files.
    extra_directives : tuple of str
        Extra batch directives, without the ``#SBATCH`` prefix.
    directives_skip : tuple of str
        Generated directive lines containing any of these strings are left out.
    prologue, epilogue : tuple of str
        Shell lines run before the workers start and after they stop.
    environment : tuple of (str, str)
        Variables exported in the job.
    shebang : str
        First line of the script.
    walltime_margin : int or None
        Seconds before the walltime at which the workers start to retire gracefully; None
        for the default (:func:`default_walltime_margin`), 0 to let the walltime end them.
    options : object
        The batch system's own settings (:meth:`~gpujobqueue.batch.base.BatchSystem.parse_options`: for
        example :class:`~gpujobqueue.batch.slurm.SLURMOptions`, :class:`~gpujobqueue.batch.pbs.PBSOptions`),
        or None.
    queue_choice : str or None
        Why the site chose the queue, for a job that named none (a comment line in the script).
    account_flag : str or None
        The option that names the account where the site's differs from the batch system's (ABCI's ``-P``).
    given_lifetime, given_lifetime_stagger : int or None
        Seconds of ``--lifetime`` and ``--lifetime-stagger`` in ``worker_extra_args`` (dask-jobqueue's
        recipe for walltimes), which set the workers' lifetime in the place of ``walltime_margin``.
    lifetime_restart : bool
        ``--lifetime-restart``: a worker whose lifetime ends is restarted by its nanny.
    """

    job_name: str = "gpujobqueue"
    nodes: int = 1
    gpus_per_node: int = 1
    cpus_per_node: int = 1
    memory_per_node: int | None = None
    walltime: int | None = 3600
    account: str | None = None
    queue: str | None = None
    exclusive: bool = False
    gpu_request: str = "none"
    gpu_type: str | None = None
    log_directory: str | None = None
    extra_directives: tuple[str, ...] = ()
    directives_skip: tuple[str, ...] = ()
    prologue: tuple[str, ...] = ()
    epilogue: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    shebang: str = DEFAULT_SHEBANG
    walltime_margin: int | None = None
    options: Any = None
    queue_choice: str | None = None
    account_flag: str | None = None
    given_lifetime: int | None = None
    given_lifetime_stagger: int | None = None
    lifetime_restart: bool = False

    @property
    def shell(self) -> str | None:
        """The shell that PBS's and Grid Engine's ``-S`` name, which run the script with it
        whatever its first line: the shebang's interpreter (``/bin/bash`` for the default
        ``#!/usr/bin/env bash``); None for another ``#!/usr/bin/env NAME``, which names no path."""
        if self.shebang == DEFAULT_SHEBANG:
            return "/bin/bash"
        interpreter = self.shebang[2:].split(maxsplit=1)[0] if self.shebang[2:].strip() else ""
        if interpreter == "/usr/bin/env" or not re.fullmatch(r"/[\w./+-]+", interpreter):
            return None
        return interpreter

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, Any],
        *,
        gpu_request_styles: Sequence[str] = GPU_REQUEST_STYLES,
        default_walltime: str | None = DEFAULT_WALLTIME,
        walltime_number_unit: int = 60,
        queue_separator: str | None = None,
        submit_command: str = "the batch system",
    ) -> "JobRequest":
        """Parse and validate the request part of resolved settings.

        Parameters
        ----------
        settings : mapping
            Keyword names (as the cluster classes take them) to values; missing or None
            values take the defaults.
        gpu_request_styles : sequence of str
            The batch system's GPU request styles; the first is the default (without: ``none``).
        default_walltime : str or None
            The walltime when none is given; None for none (jobs that no batch system ends).
        walltime_number_unit : int, default 60
            The seconds a walltime given as a bare number counts: 60 (minutes, SLURM's and LSF's
            reading), 1 (seconds, PBS's and Grid Engine's).
        queue_separator : str or None
            How the batch system's queue option reads a list of queues (``","``, ``" "``), or None
            where it takes one (:func:`~gpujobqueue.validation.parse_queues`).
        submit_command : str
            The batch system's submit command, which a refused list names.

        Raises
        ------
        ValidationError
            Naming the field and the accepted form.
        """
        get = settings.get
        nodes = parse_positive_int("nodes", given_or(get("nodes"), default_of("nodes")), MAX_NODES)
        gpus = parse_positive_int(
            "gpus_per_node", given_or(get("gpus_per_node"), default_of("gpus_per_node")), MAX_GPUS_PER_NODE
        )

        cores, cpus_per_gpu = get("cores"), get("cpus_per_gpu")
        if cores is not None and cpus_per_gpu is not None:
            raise ValidationError("cores", "give cores (per job) or cpus_per_gpu, not both")
        if get("job_cpu") is not None:
            cpus = parse_positive_int("job_cpu", get("job_cpu"), MAX_CPUS_PER_NODE)
        elif cores is not None:
            cpus = per_node("cores", parse_positive_int("cores", cores, MAX_CPUS_PER_NODE * nodes), nodes)
        else:
            cpus = gpus * parse_positive_int(
                "cpus_per_gpu", cpus_per_gpu if cpus_per_gpu is not None else 1, MAX_CPUS_PER_NODE
            )
        if cpus > MAX_CPUS_PER_NODE:
            raise ValidationError(
                "cpus_per_gpu", f"{cpus} cores per node is more than the {MAX_CPUS_PER_NODE} gpujobqueue accepts"
            )

        memory, memory_per_gpu = get("memory"), get("memory_per_gpu")
        if memory is not None and memory_per_gpu is not None:
            raise ValidationError("memory", "give memory (per job) or memory_per_gpu, not both")
        if memory is not None:
            memory_bytes = per_node("memory", parse_size("memory", memory, MAX_MEMORY_BYTES * nodes), nodes)
        elif memory_per_gpu is not None:
            memory_bytes = gpus * parse_size("memory_per_gpu", memory_per_gpu)
            if memory_bytes > MAX_MEMORY_BYTES:
                raise ValidationError(
                    "memory_per_gpu",
                    f"{memory_per_gpu!r} for each of {gpus} GPUs is more than {MAX_MEMORY_BYTES // 2**40} TiB per node",
                )
        else:
            memory_bytes = None

        style = given_or(get("gpu_request"), gpu_request_styles[0])
        if style not in gpu_request_styles:
            raise ValidationError(
                "gpu_request",
                f"{style!r} is not a GPU request style of this batch system; use one of "
                f"{', '.join(gpu_request_styles)}",
            )

        def optional(name, parser):
            value = get(name)
            return None if value is None else parser(name, value)

        walltime = get("walltime")
        walltime = default_walltime if walltime is None else walltime
        walltime = None if walltime is None else parse_walltime("walltime", walltime, walltime_number_unit)
        lifetime = read_worker_args("worker_extra_args", get("worker_extra_args"))
        if lifetime.lifetime is not None and get("walltime_margin") is not None:
            raise ValidationError(
                "worker_extra_args",
                f"--lifetime says when the workers retire, and so does walltime_margin={get('walltime_margin')!r}; "
                "give one",
            )
        return cls(
            job_name=parse_name("job_name", given_or(get("job_name"), default_of("job_name"))),
            nodes=nodes,
            gpus_per_node=gpus,
            cpus_per_node=cpus,
            memory_per_node=memory_bytes,
            walltime=walltime,
            account=optional("account", parse_word),
            queue=optional("queue", lambda name, value: parse_queues(name, value, queue_separator, submit_command)),
            exclusive=parse_bool("exclusive", given_or(get("exclusive"), default_of("exclusive"))),
            gpu_request=style,
            gpu_type=optional("gpu_type", parse_word),
            log_directory=optional("log_directory", parse_path),
            extra_directives=parse_lines("job_extra_directives", get("job_extra_directives")),
            directives_skip=parse_needles("job_directives_skip", get("job_directives_skip")),
            prologue=parse_lines("job_script_prologue", get("job_script_prologue")),
            epilogue=parse_lines("job_script_epilogue", get("job_script_epilogue")),
            environment=parse_environment("environment", get("environment")),
            shebang=matching(
                "shebang",
                given_or(get("shebang"), default_of("shebang")),
                re.compile(r"#![^\n]+"),
                "a line starting with #!",
            ),
            walltime_margin=parse_walltime_margin("walltime_margin", get("walltime_margin"), walltime),
            given_lifetime=lifetime.lifetime,
            given_lifetime_stagger=lifetime.lifetime_stagger,
            lifetime_restart=bool(lifetime.lifetime_restart),
        )

    @property
    def gpus_per_job(self) -> int:
        """GPUs in one job, over all its nodes."""
        return self.nodes * self.gpus_per_node

    @property
    def worker_lifetime(self) -> int | None:
        """Seconds a worker lives before it retires (dask's ``lifetime``), None for no limit: the
        ``--lifetime`` given, unless the walltime ends the job first; else the walltime less its margin."""
        if self.given_lifetime is not None:
            return self.given_lifetime if self.walltime is None or self.given_lifetime < self.walltime else None
        if self.walltime is None:
            return None
        margin = default_walltime_margin(self.walltime) if self.walltime_margin is None else self.walltime_margin
        return self.walltime - margin if margin else None

    @property
    def lifetime_stagger(self) -> int:
        """Seconds by which each worker's lifetime is moved, at random, either way."""
        lifetime = self.worker_lifetime
        if not lifetime:
            return 0
        if self.given_lifetime_stagger is not None:
            return self.given_lifetime_stagger
        return (self.walltime - lifetime) // 4 if self.walltime else 0

    @property
    def walltime_text(self) -> str:
        """The walltime as SLURM writes it; ``"none"`` for a job without one."""
        return "none" if self.walltime is None else format_walltime(self.walltime)
