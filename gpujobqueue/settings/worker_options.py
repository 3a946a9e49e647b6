"""The values of the worker keywords beside a :class:`~gpujobqueue.jobs.workers.WorkerLaunch`'s shape,
parsed: the protocol, durations, threads per worker, UCX's transport switches, and dask-cuda's
device-memory and RMM options, checked as dask-cuda checks them."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Callable

from ..errors import ValidationError
from .validation import one_line, parse_bool, parse_lines, parse_size

# The protocols gpujobqueue sets up for a batch job's workers; ucxx is distributed-ucxx's name for its
# UCX, which serves ucx:// too. distributed's other comms are refused by name, saying why.
PROTOCOLS = ("tcp", "tls", "ucx")
PROTOCOL_SPELLINGS = {"ucxx": "ucx"}
_OTHER_PROTOCOLS = {
    "inproc": "within one process only; a batch job's workers are other processes, on other nodes",
    "ws": "websockets, which gpujobqueue's scripts and TLS do not set up",
    "wss": "websockets over TLS, which gpujobqueue's scripts and TLS do not set up",
}
RMM_LIBRARIES = ("cupy", "torch")
# dask-cuda's UCX transport switches, and the distributed-ucxx config keys they set.
UCX_TRANSPORTS = {
    "enable_tcp_over_ucx": "tcp",
    "enable_infiniband": "infiniband",
    "enable_nvlink": "nvlink",
    "enable_rdmacm": "rdmacm",
}
# An RMM pool of this initial size (it grows on demand) when UCX is on and the user sets no
# RMM option: UCX receives into RMM buffers, and a pool spares it a cudaMalloc per message.
UCX_DEFAULT_RMM_POOL_SIZE = "1GB"


def normalise_protocol(field_name: str, value: str | None) -> str | None:
    """``"tcp://"`` or ``"tcp"`` -> ``"tcp"``; None stays None."""
    if value is None:
        return None
    name = one_line(field_name, value).removesuffix("://")
    name = PROTOCOL_SPELLINGS.get(name, name)
    if name not in PROTOCOLS:
        why = f" ({_OTHER_PROTOCOLS[name]})" if name in _OTHER_PROTOCOLS else ""
        raise ValidationError(
            field_name, f"{value!r} is not a protocol of batch jobs' workers{why}; use tcp, tls or ucx"
        )
    return name


# Threads per dask-cuda worker unless nthreads is given: more threads overlap one task's
# Python and kernel launches with another's GPU work. The seed's 2 TB sum on H200s ran 28 %
# faster with 4 than with 1 (docs/benchmarks.md); never more threads than the GPU's cores.
DASK_CUDA_DEFAULT_THREADS = 4


def check_one_device_per_dask_cuda_worker(mode: str, workers: int, gpus: int) -> None:
    """Refuse (naming ``worker_mode``) dask-cuda's mode for workers that share a node's ``gpus`` as ``workers``
    (dask-jobqueue's ``processes``): ``dask cuda worker`` starts one worker per visible GPU."""
    if mode == "dask-cuda" and workers != gpus:
        share = gpus // workers
        raise ValidationError(
            "worker_mode",
            f"worker_mode='dask-cuda' with processes={workers} on {gpus} GPUs per node: dask cuda worker starts "
            f"one worker per GPU and cannot give a worker {share} devices; leave worker_mode out (each worker "
            f"of the per-device mode sees its {share}) or give processes={gpus}",
        )


def default_threads(mode: str, gpus: int, cpus_per_node: int | None) -> int:
    """Threads per worker when ``nthreads`` is not given: 1, or for dask-cuda workers up to
    :data:`DASK_CUDA_DEFAULT_THREADS` of each GPU's share of the job's cores."""
    if mode != "dask-cuda" or not cpus_per_node:
        return 1
    return max(1, min(DASK_CUDA_DEFAULT_THREADS, cpus_per_node // gpus))


def threads_of_cores(cores_per_node: int, workers_per_node: int) -> int:
    """Threads per worker when dask-jobqueue's ``cores`` (per job) is given: the node's cores shared evenly by
    its workers, so that none is left idle (else a ValidationError naming ``cores``); a node with fewer cores than
    workers gives each one thread."""
    if cores_per_node <= workers_per_node:
        return 1
    if cores_per_node % workers_per_node:
        threads = cores_per_node // workers_per_node
        idle = cores_per_node - threads * workers_per_node
        raise ValidationError(
            "cores",
            f"{cores_per_node} cores per node cannot be shared evenly by its "
            f"gpus_per_node={workers_per_node} workers (one per GPU): {threads} threads each "
            f"would leave {idle} idle; give cores={threads * workers_per_node} or "
            f"{(threads + 1) * workers_per_node} per node, or nthreads to choose the threads yourself",
        )
    return cores_per_node // workers_per_node


DASK_CUDA_MEMORY_KEYWORDS = (
    "rmm_pool_size",
    "rmm_maximum_pool_size",
    "rmm_async",
    "rmm_managed_memory",
    "rmm_release_threshold",
    "device_memory_limit",
    "enable_cudf_spill",
    "set_rmm_allocator_for_libs",
)
# Those keywords unset, as the workers of a mode other than dask-cuda's have them.
NO_DASK_CUDA_MEMORY = MappingProxyType({**dict.fromkeys(DASK_CUDA_MEMORY_KEYWORDS), "set_rmm_allocator_for_libs": ()})


def parse_device_size(field_name: str, value: Any) -> str | None:
    """A device-memory amount as dask-cuda takes it: bytes (from a size with a unit) or a fraction in (0, 1]."""
    if value is None:
        return None
    if isinstance(value, float) or (isinstance(value, str) and re.fullmatch(r"0?\.[0-9]+|1(\.0*)?", value)):
        fraction = float(value)
        if not 0 < fraction <= 1:  # nan too
            raise ValidationError(field_name, f"{value!r}: a fraction must be in (0, 1]")
        return repr(fraction)
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]*\.[0-9]+\s*", value):
        raise ValidationError(
            field_name, f"{value!r}: give a size with a unit (1.5GB) or a fraction of the device's memory (0 to 1)"
        )
    return str(parse_size(field_name, value))


def parse_ucx_transports(get: Callable[[str], Any], protocol: str | None) -> tuple[tuple[str, bool], ...]:
    """dask-cuda's ``enable_*`` UCX switches that were given, as ``(name, on)``; each needs ``protocol='ucx'``."""
    transports = []
    for name in UCX_TRANSPORTS:
        if get(name) is not None:
            if protocol != "ucx":
                raise ValidationError(
                    name,
                    f"{name} is a UCX transport switch; it needs protocol='ucx' (the protocol is "
                    f"{protocol or 'tcp'!r})",
                )
            transports.append((name, parse_bool(name, get(name))))
    return tuple(transports)


def parse_gpu_memory(get: Callable[[str], Any], mode: str, protocol: str | None) -> dict[str, Any]:
    """dask-cuda's device-memory keywords, checked as dask-cuda checks them, with the UCX pool default."""

    def size_or_fraction(name):
        return parse_device_size(name, get(name))

    if mode != "dask-cuda":
        for name in DASK_CUDA_MEMORY_KEYWORDS:
            value = get(name)  # unset: None, a switch or pool off, no library
            if not (value is None or value is False or (name == "set_rmm_allocator_for_libs" and value in ((), []))):
                raise ValidationError(
                    name, f"{name} is a dask-cuda option; it needs worker_mode='dask-cuda' (the mode is {mode!r})"
                )
        return dict(NO_DASK_CUDA_MEMORY)
    switches = {
        name: None if get(name) is None else parse_bool(name, get(name))
        for name in ("rmm_async", "rmm_managed_memory", "enable_cudf_spill")
    }
    no_pool = get("rmm_pool_size") is False
    pool = None if no_pool else size_or_fraction("rmm_pool_size")
    if (
        pool is None
        and not no_pool
        and protocol == "ucx"
        and not switches["rmm_async"]
        and not switches["rmm_managed_memory"]
    ):
        pool = str(parse_size("rmm_pool_size", UCX_DEFAULT_RMM_POOL_SIZE))
    if switches["rmm_async"] and switches["rmm_managed_memory"]:
        raise ValidationError(
            "rmm_managed_memory", "rmm_managed_memory cannot be used with rmm_async (dask-cuda refuses the pair)"
        )
    maximum, threshold = size_or_fraction("rmm_maximum_pool_size"), size_or_fraction("rmm_release_threshold")
    if maximum is not None and pool is None and not switches["rmm_async"]:
        raise ValidationError(
            "rmm_maximum_pool_size", "rmm_maximum_pool_size limits an RMM pool; set rmm_pool_size (or rmm_async) too"
        )
    if threshold is not None and not switches["rmm_async"]:
        raise ValidationError("rmm_release_threshold", "rmm_release_threshold needs rmm_async=True")
    libraries = get("set_rmm_allocator_for_libs")
    if isinstance(libraries, str):
        libraries = [part.strip() for part in one_line("set_rmm_allocator_for_libs", libraries).split(",")]
    libraries = [part for part in parse_lines("set_rmm_allocator_for_libs", libraries) if part]
    for library in libraries:
        if library not in RMM_LIBRARIES:
            raise ValidationError(
                "set_rmm_allocator_for_libs", f"{library!r}: RMM can allocate for {', '.join(RMM_LIBRARIES)}"
            )
    return {
        "device_memory_limit": size_or_fraction("device_memory_limit"),
        "rmm_pool_size": pool,
        "rmm_maximum_pool_size": maximum,
        "rmm_release_threshold": threshold,
        "set_rmm_allocator_for_libs": tuple(libraries),
        **switches,
    }


def check_no_dask_cuda_options(get: Any) -> None:
    """Refuse dask-cuda's options beside ``nanny=False``, which starts distributed's workers."""
    for name in DASK_CUDA_MEMORY_KEYWORDS:
        value = get(name)
        if not (value is None or value is False or value in ((), [])):
            raise ValidationError(
                "nanny",
                f"nanny=False starts one dask worker per GPU without a nanny, which takes no dask-cuda option "
                f"such as {name}; leave nanny out to keep {name} (dask-cuda's workers always have nannies)",
            )
