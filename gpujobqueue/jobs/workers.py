"""How each node of a job starts its GPU workers: dask-cuda or one ``dask worker`` per device."""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import ValidationError
from ..preloads import NIC_AFFINITY, PIN_DEVICE, WATCHDOG
from ..security.dashboard import worker_dashboard_address
from ..settings import keywords
from ..settings.declaration import read_declared
from ..settings.naming import worker_suffixes
from ..settings.validation import one_line
from ..settings.worker_args import parse_python, read_worker_args
from ..settings.worker_options import (
    UCX_TRANSPORTS,
    check_no_dask_cuda_options,
    check_one_device_per_dask_cuda_worker,
    default_threads,
    normalise_protocol,
    parse_gpu_memory,
    parse_ucx_transports,
)
from .launchers import LAUNCHER_OBJECTS, Launcher

# The third mode, the CPU pool's workers (templates/workers/cpu.sh.j2): no GPU, no device visible.
# Only CPUPool.job_shape sets it; worker_mode refuses it (a GPU job would hold GPUs it leaves idle).
CPU_WORKER_MODE = "cpu"
ALL_WORKER_MODES = keywords.WORKER_MODES + (CPU_WORKER_MODE,)  # every mode a WorkerLaunch may have
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(?: [a-z][a-z0-9-]*)?")
# `python -m dask_cuda.cli` runs dask-cuda's worker command itself (its __main__ calls worker()).
_DEFAULT_MODULES = {"dask-cuda": "dask_cuda.cli", "per-device": "distributed.cli.dask_worker"}


@dataclass(frozen=True)
class WorkerLaunch:
    """How the workers of one job are started on its node.

    Parameters
    ----------
    mode : str
        ``"dask-cuda"``: one ``dask cuda worker`` per node, starting one worker per visible GPU.
        ``"per-device"``: one ``dask worker`` per allocated device, its process seeing that one device.
        ``"cpu"`` (:data:`CPU_WORKER_MODE`): the CPU pool's ``dask worker`` processes, which see no device.
    gpus_per_node : int
        GPUs per node, shared by its workers (0 for the CPU pool's).
    workers_per_node : int
        The workers each node starts: one per GPU, or dask-jobqueue's ``processes`` sharing them
        (:attr:`gpus_per_worker` each).
    python : str
        Interpreter that runs the workers.
    python_prefix : tuple of str
        The words before the interpreter in dask-jobqueue's ``python`` (a launcher such as
        ``srun -n 1 -c 8``), which start the worker command as they do there.
    worker_command : str
        Python module (and subcommand) run with ``python -m``.
    nthreads : int
        Threads per worker.
    memory_limit : int or None
        Host memory bytes per worker; None lets each worker take its share of the node.
    device_memory_limit, rmm_pool_size, rmm_maximum_pool_size, rmm_release_threshold : str or None
        Passed to dask-cuda (bytes, or fractions of the device's memory). With UCX and no
        RMM option, ``rmm_pool_size`` defaults to 1 GB; ``rmm_pool_size=False`` says no pool.
    rmm_async, rmm_managed_memory, enable_cudf_spill : bool or None
        dask-cuda's switches; None leaves dask-cuda's default.
    set_rmm_allocator_for_libs : tuple of str
        Libraries (``cupy``, ``torch``) whose allocations go through RMM on the workers.
    ucx_transports : tuple of (str, bool)
        dask-cuda's ``enable_*`` UCX switches that were set (``("enable_nvlink", True)``);
        the ones not given are chosen by UCX.
    visibility_variable : str
        Variable that pins a process to devices (``CUDA_VISIBLE_DEVICES``,
        ``ROCR_VISIBLE_DEVICES``, ``ZE_AFFINITY_MASK``).
    allocation_variable : str
        Variable from which the job reads the devices the batch system allocated;
        when unset in the job, devices ``0 .. gpus_per_node-1`` are used.
    nanny : bool
        Start workers under a nanny (dask-cuda always does).
    death_timeout : int or None
        Seconds a worker waits for an absent scheduler before it exits.
    local_directory : str or None
        Scratch directory for spilling; ``$TMPDIR``-style references are expanded on the
        compute node.
    protocol, interface : str or None
        Comms protocol (``tcp``, ``tls``, ``ucx``) and network interface.
    extra_args : tuple of str
        More worker arguments, one shell word each (``worker_extra_args`` split as dask-jobqueue
        joins them, :func:`~gpujobqueue.settings.worker_args.read_worker_args`), each shell-quoted into the
        script; ``--dashboard`` or ``--dashboard-address`` among them opens the workers' dashboards
        (:attr:`dashboard_address`).
    resources : tuple of (str, str)
        The user's ``--resources`` (``name``, ``amount``), which each worker carries beside ``GPU=1``.
    launcher : str
        ``"direct"``: the batch script runs on the job's one node and starts the workers itself; else a
        launcher (:mod:`gpujobqueue.jobs.launchers`, or a batch system's own) that starts one task per node.
    task_launcher : Launcher
        The :class:`~gpujobqueue.jobs.launchers.Launcher` object of that name.
    launcher_args : tuple of str
        More launcher options (a site's ``launcher.args``), after gpujobqueue's own.
    nodes : int
        Nodes of the job; each runs ``workers_per_node`` workers.
    nic_affinity : bool
        Each worker's nanny sets its ``UCX_NET_DEVICES`` to the network card nearest its GPU
        (:mod:`gpujobqueue.preloads.nic_affinity`); False (the default): UCX chooses.
    """

    mode: str
    gpus_per_node: int
    workers_per_node: int
    python: str
    python_prefix: tuple[str, ...]
    worker_command: str
    nthreads: int
    memory_limit: int | None
    device_memory_limit: str | None
    rmm_pool_size: str | None
    rmm_maximum_pool_size: str | None
    rmm_async: bool | None
    rmm_managed_memory: bool | None
    rmm_release_threshold: str | None
    enable_cudf_spill: bool | None
    set_rmm_allocator_for_libs: tuple[str, ...]
    ucx_transports: tuple[tuple[str, bool], ...]
    visibility_variable: str
    allocation_variable: str
    nanny: bool
    death_timeout: int | None
    local_directory: str | None
    protocol: str | None
    interface: str | None
    extra_args: tuple[str, ...]
    resources: tuple[tuple[str, str], ...]
    launcher: str
    task_launcher: Launcher
    launcher_args: tuple[str, ...]
    nodes: int
    nic_affinity: bool

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, Any],
        *,
        gpus_per_node: int,
        workers_per_node: int | None = None,
        memory_per_node: int | None,
        cpus_per_node: int | None = None,
        nodes: int = 1,
        native_launcher: str | None = None,
        launchers: Sequence[Launcher] = (),
    ) -> "WorkerLaunch":
        """Parse and validate the worker part of resolved settings.

        Parameters
        ----------
        settings : mapping
            Keyword names to values; None means the default.
        gpus_per_node, memory_per_node, cpus_per_node, nodes
            The request's, shared by ``workers_per_node`` (``processes``; None: one per GPU).
        native_launcher : str, optional
            The batch system's launcher of a job of several nodes that names none.
        launchers : sequence of Launcher
            The batch system's own launchers, beside gpujobqueue's (:data:`~gpujobqueue.jobs.launchers.LAUNCHERS`).
        """
        get, value = settings.get, read_declared(keywords.LAUNCH, settings)  # read when asked, as JobRequest's
        nanny, visibility = value["nanny"], value["visibility_variable"]
        workers = gpus_per_node if workers_per_node is None else workers_per_node
        mode = worker_mode(get, nanny, workers, gpus_per_node)
        if mode == "dask-cuda" and visibility != "CUDA_VISIBLE_DEVICES":
            raise ValidationError(
                "visibility_variable",
                "dask-cuda pins NVIDIA GPUs through CUDA_VISIBLE_DEVICES only; use worker_mode='per-device' with "
                f"{visibility}",
            )
        worker_command = worker_module(get("worker_command"), mode)
        memory_limit = value["memory_limit"]
        if memory_limit is None and memory_per_node is not None:
            memory_limit = memory_per_node // workers
        protocol = normalise_protocol("protocol", get("protocol"))
        known = {**LAUNCHER_OBJECTS, **{launcher.name: launcher for launcher in launchers}}
        launcher = task_launcher(get("launcher"), known, nodes, native_launcher)
        worker_args = read_worker_args("worker_extra_args", get("worker_extra_args"), worker_command)
        python_prefix, python = parse_python(sys.executable if get("python") is None else get("python"), launcher)
        return cls(
            mode=mode,
            gpus_per_node=gpus_per_node,
            workers_per_node=workers,
            python=python,
            python_prefix=python_prefix,
            worker_command=worker_command,
            nthreads=value["nthreads"] or default_threads(mode, workers, cpus_per_node),
            memory_limit=memory_limit,
            **parse_gpu_memory(get, mode, protocol),
            ucx_transports=parse_ucx_transports(get, protocol),
            visibility_variable=visibility,
            allocation_variable=value["allocation_variable"] or visibility,
            nanny=nanny,
            death_timeout=value["death_timeout"],
            local_directory=value["local_directory"],
            protocol=protocol,
            interface=value["interface"],
            extra_args=worker_args.args,
            resources=worker_args.resources,
            launcher=launcher,
            task_launcher=known[launcher],
            launcher_args=value["launcher_args"] if launcher != "direct" else (),
            nodes=nodes,
            nic_affinity=nic_affinity(value["nic_affinity"], visibility, nanny),
        )

    @property
    def gpus_per_worker(self) -> int:
        """The GPUs each worker sees: 1, or its share under ``processes`` (per-device mode); 0 for CPU workers."""
        return self.gpus_per_node // self.workers_per_node

    @property
    def dask_cuda_memory_args(self) -> list[str]:
        """dask-cuda's device-memory options, one option (with its value, which needs no quoting) per item."""
        args = []
        for option, value in (
            ("--device-memory-limit", self.device_memory_limit),
            ("--rmm-pool-size", self.rmm_pool_size),
            ("--rmm-maximum-pool-size", self.rmm_maximum_pool_size),
            ("--rmm-release-threshold", self.rmm_release_threshold),
        ):
            if value is not None:
                args.append(f"{option} {value}")
        for name, value in (("rmm-async", self.rmm_async), ("rmm-managed-memory", self.rmm_managed_memory)):
            if value is not None:
                args.append(f"--{name}" if value else f"--no-{name}")
        if self.enable_cudf_spill is not None:
            args.append("--enable-cudf-spill" if self.enable_cudf_spill else "--disable-cudf-spill")
        if self.set_rmm_allocator_for_libs:
            args.append(f"--set-rmm-allocator-for-libs {','.join(self.set_rmm_allocator_for_libs)}")
        return args

    @property
    def ucx_transport_args(self) -> list[str]:
        """dask-cuda's ``--enable-nvlink``-style switches for the transports that were set."""
        return [
            f"--{'enable' if on else 'disable'}-{name.removeprefix('enable_').replace('_', '-')}"
            for name, on in self.ucx_transports
        ]

    @property
    def ucx_environment(self) -> list[tuple[str, str]]:
        """The same transport choices as distributed-ucxx config variables, for plain dask workers."""
        return [(f"DASK_DISTRIBUTED_UCXX__{UCX_TRANSPORTS[name].upper()}", str(on)) for name, on in self.ucx_transports]

    @property
    def dashboard_address(self) -> str | None:
        """Where the workers serve their dashboard, opened on purpose in ``extra_args``; None where they serve
        no page (:mod:`gpujobqueue.security.dashboard`)."""
        return worker_dashboard_address(self.extra_args)

    @property
    def python_command(self) -> str:
        """The interpreter, after the launcher prefix written in ``python``, as shell words."""
        return " ".join(shlex.quote(word) for word in (*self.python_prefix, self.python))

    @property
    def resources_arg(self) -> str:
        """``--resources``' value: the user's resources, and ``GPU=<its devices>`` unless they name ``GPU`` themselves
        (their amount is kept); the CPU pool's workers carry no ``GPU``. Empty for none."""
        pairs = dict(self.resources)
        if self.cpu_workers:
            pairs.pop("GPU", None)  # GPU tasks go to GPU workers only
        else:
            pairs = {"GPU": str(self.gpus_per_worker), **pairs}
        return ",".join(f"{name}={amount}" for name, amount in pairs.items())

    @property
    def preloads(self) -> tuple[str, ...]:
        """The :mod:`gpujobqueue.preloads` these workers load (the watchdog into a job's scheduler too)."""
        pin = self.mode == "per-device" and self.nanny
        return tuple(
            name
            for name, wanted in ((WATCHDOG, self.death_timeout), (PIN_DEVICE, pin), (NIC_AFFINITY, self.nic_affinity))
            if wanted
        )

    @property
    def cpu_workers(self) -> bool:
        """Whether these are the CPU pool's workers (:data:`CPU_WORKER_MODE`), which hold no GPU."""
        return self.mode == CPU_WORKER_MODE

    @property
    def name_suffixes(self) -> list[str]:
        """Suffixes of a job's workers' names (:func:`gpujobqueue.settings.naming.worker_suffixes`)."""
        return worker_suffixes(self.workers_per_node, self.nodes)

    @property
    def rank_expression(self) -> str:
        """Shell expansion of a launched task's rank, which numbers its node (:attr:`Launcher.rank_expression`)."""
        return self.task_launcher.rank_expression

    @property
    def memory_limit_arg(self) -> str:
        """``--memory-limit`` for one worker: bytes, or its share of the node when unknown."""
        if self.memory_limit is not None:
            return str(self.memory_limit)
        if self.mode == "dask-cuda":
            return "auto"  # dask-cuda divides the node's memory among its workers
        return repr(round(1 / self.workers_per_node, 6))  # a fraction of the node's memory for each worker


def worker_mode(get: Any, nanny: bool, workers_per_node: int, gpus_per_node: int) -> str:
    """The workers' mode given, else dask-cuda's where a nanny starts one worker per GPU, else per-device;
    :class:`ValidationError` for a mode that is none, or dask-cuda on several GPUs or without a nanny."""
    mode = get("worker_mode")
    if mode is None:
        # dask-jobqueue's nanny=False: dask-cuda always has nannies, so one `dask worker` per GPU without one.
        mode = keywords.default_of("worker_mode") if nanny and workers_per_node == gpus_per_node else "per-device"
        if not nanny:
            check_no_dask_cuda_options(get)
    if mode not in keywords.WORKER_MODES:
        raise ValidationError(
            "worker_mode", f"{mode!r} is not a worker mode; use one of {', '.join(keywords.WORKER_MODES)}"
        )
    check_one_device_per_dask_cuda_worker(mode, workers_per_node, gpus_per_node)
    if mode == "dask-cuda" and not nanny:
        raise ValidationError(
            "nanny",
            "dask-cuda always starts its workers under a nanny; leave worker_mode out (or 'per-device') for "
            "nanny=False: one dask worker per GPU, without a nanny",
        )
    return mode


def worker_module(given: Any, mode: str) -> str:
    """The module the workers run with ``python -m``: the one given (dask-cuda's for its mode only), else the mode's."""
    module = _DEFAULT_MODULES[mode] if given is None else given
    if module == "distributed.cli.dask_worker" and mode == "dask-cuda":
        module = _DEFAULT_MODULES[mode]  # dask-jobqueue's default keeps its meaning: a worker
    if module == _DEFAULT_MODULES["dask-cuda"] and mode != "dask-cuda":
        raise ValidationError(
            "worker_command",
            f"{module!r} is dask-cuda's worker, which starts one worker per GPU itself and takes none of the {mode} "
            "mode's options (--nworkers, --nanny); give worker_mode='dask-cuda'",
        )
    if not _MODULE.fullmatch(one_line("worker_command", module)):
        raise ValidationError(
            "worker_command", f"{module!r} is not a python module (optionally followed by a subcommand)"
        )
    return module


def task_launcher(given: Any, known: Mapping[str, Launcher], nodes: int, native: str | None) -> str:
    """The launcher's name: ``direct`` for a one-node job (unless its launcher runs on a launch node), the one
    given, else the batch system's ``native`` one for a job of several nodes (refused where there is none)."""
    launcher = "direct" if given is None else given
    if not isinstance(launcher, str) or launcher not in known:
        raise ValidationError("launcher", f"{launcher!r} is not a launcher; use one of {', '.join(known)}")
    if nodes == 1 and not known[launcher].runs_on_launch_node:
        return "direct"  # the script runs on the job's one node
    if nodes > 1 and given is None and native is not None:
        return native  # the batch system's own (a site's launcher came in the settings)
    if nodes > 1 and launcher == "direct":
        raise ValidationError(
            "launcher",
            f"a job of {nodes} nodes needs a launcher that starts the workers of every node: "
            f"{', '.join(name for name in known if name != 'direct')} (a site config names its own)",
        )
    return launcher


def nic_affinity(wanted: bool, visibility: str, nanny: bool) -> bool:
    """The ``nic_affinity`` keyword: off unless given; NVIDIA GPU workers under nannies only."""
    if not wanted:
        return False
    if visibility != "CUDA_VISIBLE_DEVICES":
        raise ValidationError(
            "nic_affinity",
            f"the card nearest each GPU is chosen for NVIDIA GPU workers (CUDA_VISIBLE_DEVICES), not {visibility}; "
            "leave nic_affinity off and UCX chooses",
        )
    if not nanny:
        raise ValidationError(
            "nic_affinity",
            "each worker's nanny chooses its card before it starts the worker, and nanny=False gives none; "
            "leave nic_affinity off (UCX chooses) or keep the nannies",
        )
    return True
