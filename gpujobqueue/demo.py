"""``gpujobqueue demo``: a LocalGPUCluster on this machine running the seed workloads."""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

import dask
import dask.array as da
from dask.utils import format_bytes
from distributed import Client

from .batch.local import LocalGPUCluster
from .errors import GPUJobQueueError
from .gpus import machine_gpus, nvidia_gpu_ids
from .install import install_line

# (random array side, its chunk side, SVD rows, SVD columns, SVD row chunk)
SIZES = {
    "gpu": {
        "small": (20_000, 5_000, 100_000, 100, 10_000),
        "medium": (100_000, 10_000, 1_000_000, 1_000, 100_000),
        "large": (500_000, 10_000, 10_000_000, 1_000, 100_000),
    },
    "cpu": {
        "small": (4_000, 1_000, 20_000, 50, 2_000),
        "medium": (20_000, 2_500, 200_000, 100, 20_000),
        "large": (50_000, 5_000, 2_000_000, 100, 100_000),
    },
}


@dataclass
class Outcome:
    """One workload's line in the demo's table."""

    workload: str
    shape: tuple[int, ...]
    nbytes: int
    chunks: tuple[int, ...]
    seconds: float
    check: str
    ok: bool


def _random_sum(side: int, chunk: int) -> Outcome:
    """``(x + 1)[::2, ::2].sum()`` of a standard normal array: the mean must be 1."""
    x = da.random.RandomState(42).normal(0, 1, size=(side, side), chunks=(chunk, chunk))
    start = time.perf_counter()
    total = float((x + 1)[::2, ::2].sum().compute())
    seconds = time.perf_counter() - start
    count = math.ceil(side / 2) ** 2
    mean_error = abs(total / count - 1)
    ok = mean_error < 6 / math.sqrt(count)  # six standard errors of a normal mean
    return Outcome("(x + 1)[::2, ::2].sum()", (side, side), x.nbytes, (chunk, chunk), seconds, f"mean {total / count:.6f} (want 1)", ok)


def _tall_skinny_svd(rows: int, cols: int, row_chunk: int) -> Outcome:
    """``da.linalg.svd`` of a tall-skinny array; ``u @ diag(s) @ v`` must give it back."""
    x = da.random.RandomState(7).random((rows, cols), chunks=(row_chunk, cols))
    start = time.perf_counter()
    u, s, v = da.linalg.svd(x)
    u, s, v = dask.persist(u, s, v)
    error = float((da.linalg.norm((u * s) @ v - x) / da.linalg.norm(x)).compute())
    seconds = time.perf_counter() - start
    return Outcome("da.linalg.svd (tall-skinny)", (rows, cols), x.nbytes, (row_chunk, cols), seconds, f"relative error {error:.1e}", error < 1e-8)


def _print_table(outcomes: list[Outcome], backend: str) -> None:
    header = ("workload", "shape", "size", "chunks", "seconds", "check")
    rows = [header] + [
        (o.workload, " x ".join(map(str, o.shape)), format_bytes(o.nbytes), " x ".join(map(str, o.chunks)), f"{o.seconds:.2f}", ("ok: " if o.ok else "FAILED: ") + o.check)
        for o in outcomes
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(f"\nworkloads ({backend} arrays):")
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)))


def _tail(path: str | None, lines: int = 25) -> str:
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except (OSError, TypeError):
        return "(no log)"


def run_demo(size: str = "medium", gpus: int | None = None) -> int:
    """Start a LocalGPUCluster, run the seed workloads, print a table; return an exit code.

    Parameters
    ----------
    size : {"small", "medium", "large"}
        Problem sizes (scaled for GPUs or CPUs).
    gpus : int, optional
        Workers to start; default every GPU here, or two CPU workers without GPUs.
    """
    gpu_ids = nvidia_gpu_ids()
    if gpu_ids:
        try:
            import cupy  # noqa: F401
            import dask_cuda  # noqa: F401
        except ImportError as error:
            raise GPUJobQueueError(f"this machine has {len(gpu_ids)} NVIDIA GPU(s) but {error.name} is missing: "
                                   f"{install_line(machine_gpus().cuda_driver_version)}") from error
        workers, mode, backend = gpus or len(gpu_ids), "dask-cuda", "cupy"
        print(f"gpujobqueue demo: {len(gpu_ids)} NVIDIA GPU(s) found; starting {workers} dask-cuda worker(s), one per GPU")
        kinds = SIZES["gpu"]
    else:
        workers, mode, backend = gpus or 2, "per-device", "numpy"
        print(f"gpujobqueue demo: no NVIDIA GPU here; starting {workers} per-device CPU worker(s) (numpy arrays) in their place")
        kinds = SIZES["cpu"]
    side, chunk, rows, cols, row_chunk = kinds[size]

    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(LocalGPUCluster(gpus_per_node=workers, worker_mode=mode, devices=gpu_ids[:workers] or None))
        cluster.scale(gpus=workers)
        client = stack.enter_context(Client(cluster))
        try:
            client.wait_for_workers(workers, timeout=120)
        except TimeoutError:
            for job in cluster.workers.values():
                print(f"--- end of the log of job {job.name} ({job.log_path}):\n{_tail(job.log_path)}")
            raise GPUJobQueueError(f"{workers} worker(s) did not connect within 120 s; the job logs are above") from None
        print(f"{workers} worker(s) up in {time.perf_counter() - started:.1f} s; dashboard: {cluster.dashboard_link}")
        stack.enter_context(dask.config.set({"array.backend": backend}))
        outcomes = [_random_sum(side, chunk), _tall_skinny_svd(rows, cols, row_chunk)]
        _print_table(outcomes, backend)
    print("cluster closed; no job left running")
    return 0 if all(o.ok for o in outcomes) else 1
