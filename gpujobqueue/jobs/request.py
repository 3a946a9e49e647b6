"""What one batch job asks of the batch system, parsed and validated (no I/O)."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

from ..errors import ValidationError
from ..settings import keywords
from ..settings.declaration import read_declared
from ..settings.keywords import DEFAULT_SHEBANG
from ..settings.limits import MAX_CPUS_PER_NODE, MAX_MEMORY_BYTES
from ..settings.validation import parse_queues, per_node
from ..settings.walltimes import default_walltime_margin, format_walltime, parse_walltime, parse_walltime_margin
from ..settings.worker_args import read_worker_args

GPU_REQUEST_STYLES = ("none",)  # without a batch system's own styles: the queue implies the GPUs
DEFAULT_WALLTIME = "00:30:00"  # dask-jobqueue's; every job ends: an allocation nobody closes burns half an hour at most


@dataclass(frozen=True)
class JobRequest:
    """What one batch job asks of the batch system.

    Build it with :meth:`JobRequest.from_settings`, which parses and validates every field.

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
        Seconds; None: no walltime (the local batch system's default), the cluster stops the workers.
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
    job_extra_directives : tuple of str
        Extra batch directives, without the ``#SBATCH`` prefix.
    job_directives_skip : tuple of str
        Generated directive lines containing any of these strings are left out.
    job_script_prologue, job_script_epilogue : tuple of str
        Shell lines run before the workers start and after they stop.
    prologue_errors : str
        ``continue`` (a failing prologue line is logged and the job goes on, as in dask-jobqueue) or ``stop``.
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

    job_name: str
    nodes: int
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node: int | None
    walltime: int | None
    account: str | None
    queue: str | None
    exclusive: bool
    gpu_request: str
    gpu_type: str | None
    log_directory: str | None
    job_extra_directives: tuple[str, ...]
    job_directives_skip: tuple[str, ...]
    job_script_prologue: tuple[str, ...]
    prologue_errors: str
    job_script_epilogue: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    shebang: str
    walltime_margin: int | None
    given_lifetime: int | None
    given_lifetime_stagger: int | None
    lifetime_restart: bool
    options: Any = None  # these three are the plan's later steps', set by dataclasses.replace
    queue_choice: str | None = None
    account_flag: str | None = None

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
        """The request part of resolved settings: each keyword read by its declaration, then the rules that
        read several together or ask the batch system.

        Parameters
        ----------
        settings : mapping
            Keyword names to values; missing or None values take the defaults.
        gpu_request_styles : sequence of str
            The batch system's GPU request styles; the first is the default.
        default_walltime : str or None
            The walltime when none is given; None for none (jobs that no batch system ends).
        walltime_number_unit : int, default 60
            The seconds a bare number counts: 60 (SLURM's and LSF's minutes), 1 (PBS's and Grid Engine's).
        queue_separator : str or None
            How the queue option reads a list of queues (``","``, ``" "``), or None where it takes one.
        submit_command : str
            The batch system's submit command, which a refused list names.

        Raises
        ------
        ValidationError
            Naming the field and the accepted form.
        """
        value = read_declared(keywords.REQUEST, settings)  # read when asked: a keyword added is read too
        walltime = settings.get("walltime")
        walltime = default_walltime if walltime is None else walltime
        walltime = None if walltime is None else parse_walltime("walltime", walltime, walltime_number_unit)
        lifetime = read_worker_args("worker_extra_args", settings.get("worker_extra_args"))
        margin = settings.get("walltime_margin")
        if lifetime.lifetime is not None and margin is not None:
            raise ValidationError(
                "worker_extra_args",
                f"--lifetime says when the workers retire, and so does walltime_margin={margin!r}; give one",
            )
        queue = value["queue"]
        computed = dict(
            cpus_per_node=cpus_per_node(value, settings.get("job_cpu")),
            memory_per_node=memory_per_node(value),
            walltime=walltime,
            queue=None if queue is None else parse_queues("queue", queue, queue_separator, submit_command),
            gpu_request=gpu_request_style(value["gpu_request"], gpu_request_styles),
            walltime_margin=parse_walltime_margin("walltime_margin", margin, walltime),
            given_lifetime=lifetime.lifetime,
            given_lifetime_stagger=lifetime.lifetime_stagger,
            lifetime_restart=bool(lifetime.lifetime_restart),
        )
        # The other fields are keywords read alone by their declarations.
        alone = {field.name: value[field.name] for field in fields(cls) if field.name in value.keys() - computed}
        return cls(**alone, **computed)

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


def cpus_per_node(value: Mapping[str, Any], job_cpu: int | None) -> int:
    """The cores each node asks for: LSF's ``job_cpu``, dask-jobqueue's ``cores`` per job shared by the nodes, or
    ``cpus_per_gpu`` (1 where nothing says) for each GPU; both of the last two, or too many, refused."""
    cores, per_gpu = value["cores"], value["cpus_per_gpu"]
    if cores is not None and per_gpu is not None:
        raise ValidationError("cores", "give cores (per job) or cpus_per_gpu, not both")
    if job_cpu is not None:
        field, cpus = "job_cpu", job_cpu  # read by the batch system's declaration (SLURM), or LSF's ncpus rule
    elif cores is not None:
        field, cpus = "cores", per_node("cores", cores, value["nodes"])
    else:
        field, cpus = "cpus_per_gpu", value["gpus_per_node"] * (per_gpu or 1)
    if cpus > MAX_CPUS_PER_NODE:
        raise ValidationError(field, f"{cpus} cores per node is more than the {MAX_CPUS_PER_NODE} gpujobqueue accepts")
    return cpus


def memory_per_node(value: Mapping[str, Any]) -> int | None:
    """The host memory each node asks for: ``memory`` per job shared by the nodes, or ``memory_per_gpu`` for each
    GPU; None where neither is given; both, or too much, refused."""
    memory, per_gpu, gpus = value["memory"], value["memory_per_gpu"], value["gpus_per_node"]
    if memory is not None and per_gpu is not None:
        raise ValidationError("memory", "give memory (per job) or memory_per_gpu, not both")
    if memory is not None:
        memory = per_node("memory", memory, value["nodes"])
        field, said = "memory", f"{memory} bytes per node"
    elif per_gpu is not None:
        memory = gpus * per_gpu
        field, said = "memory_per_gpu", f"{per_gpu} bytes for each of {gpus} GPUs"
    if memory is not None and memory > MAX_MEMORY_BYTES:
        raise ValidationError(field, f"{said} is more than {MAX_MEMORY_BYTES // 2**40} TiB per node")
    return memory


def gpu_request_style(style: str | None, styles: Sequence[str]) -> str:
    """The GPU request style given, one of the batch system's ``styles``; its first where none is given."""
    style = styles[0] if style is None else style
    if style not in styles:
        raise ValidationError(
            "gpu_request",
            f"{style!r} is not a GPU request style of this batch system; use one of {', '.join(styles)}",
        )
    return style
