"""``gpujobqueue demo``: a LocalGPUCluster on this machine running the seed workloads."""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import dask
import dask.array as da
from dask.utils import format_bytes
from distributed import Client

from ..errors import GPUJobQueueError
from ..jobs.job_status import read_log_tail
from ..jobs.usage import text_table
from ..machine.gpus import machine_gpus, nvidia_gpu_ids
from ..machine.install import install_line
from ..runtime.factory import LocalGPUCluster
from ..runtime.job import GPUJob
from ..security.dashboard import DEFAULT_DASHBOARD_ADDRESS, OpenDashboardWarning, who_can_reach
from ..security.tls import make_private_folder, replace_private_file
from .demo_sizes import DemoSizes, demo_sizes


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
    check = f"mean {total / count:.6f} (want 1)"
    return Outcome("(x + 1)[::2, ::2].sum()", (side, side), x.nbytes, (chunk, chunk), seconds, check, ok)


def _tall_skinny_svd(rows: int, cols: int, row_chunk: int) -> Outcome:
    """``da.linalg.svd`` of a tall-skinny array; ``u @ diag(s) @ v`` must give it back."""
    x = da.random.RandomState(7).random((rows, cols), chunks=(row_chunk, cols))
    start = time.perf_counter()
    u, s, v = da.linalg.svd(x)
    u, s, v = dask.persist(u, s, v)
    error = float((da.linalg.norm((u * s) @ v - x) / da.linalg.norm(x)).compute())
    seconds = time.perf_counter() - start
    check = f"relative error {error:.1e}"
    return Outcome(
        "da.linalg.svd (tall-skinny)", (rows, cols), x.nbytes, (row_chunk, cols), seconds, check, error < 1e-8
    )


def _print_table(outcomes: list[Outcome], backend: str) -> None:
    rows = [
        [o.workload, " x ".join(map(str, o.shape)), format_bytes(o.nbytes), " x ".join(map(str, o.chunks))]
        + [f"{o.seconds:.2f}", ("ok: " if o.ok else "FAILED: ") + o.check]
        for o in outcomes
    ]
    print(f"\nworkloads ({backend} arrays):")
    print(textwrap.indent(text_table(("workload", "shape", "size", "chunks", "seconds", "check"), rows), "  "))


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__


def gpu_memories(gpu_ids: list[str]) -> list[int]:
    """Each of these GPUs' memory in bytes (NVML, else nvidia-smi, else cupy); one not read is left out."""
    by_index = {str(gpu.index): gpu.memory_bytes for gpu in machine_gpus().gpus}
    memories = []
    for position, gpu_id in enumerate(gpu_ids):
        memory = by_index.get(gpu_id)
        if memory is None:
            with contextlib.suppress(Exception):  # no cupy, or no device of that number
                import cupy

                memory = int(cupy.cuda.runtime.getDeviceProperties(position)["totalGlobalMem"])
        if memory:
            memories.append(memory)
    return memories


def _log_path(job: GPUJob) -> str | None:
    """The log of a local job (its batch system's handle of it), once started."""
    return job.handle.log_path if job.handle is not None else None


def _save_job_script(job: GPUJob) -> str | None:
    """Keep a copy of the script the job ran next to its log (mode 0600), for the user to read."""
    if not _log_path(job):
        return None
    path = os.path.splitext(_log_path(job))[0] + ".sh"
    try:
        replace_private_file(path, job.job_script())
    except OSError:
        return None  # said as "no copy" in the summary
    return path


def _print_job_files(jobs: list[GPUJob], scripts: dict[str, str | None]) -> None:
    for job in jobs:
        process = job.handle.process if job.handle is not None else None
        ended = "" if process is None or process.returncode is None else f", exit status {process.returncode}"
        print(f"job {job.name} (process {job.job_id}{ended}):")
        script = scripts.get(str(job.name))
        if script:
            print(
                f"  job script: {script} (the local batch system ran it from memory, in no file and no "
                "process's arguments; the demo saved this copy, kept)"
            )
        log = _log_path(job)
        kept = "kept, in this run's folder" if log and os.path.exists(log) else "removed"
        print(f"  log:        {log} ({kept})")


def _dashboard_line(link: str) -> str:
    """What the demo says of its dashboard: none, or where it is and who can read it."""
    readers = who_can_reach(DEFAULT_DASHBOARD_ADDRESS, "this host")
    if not link:
        return f"no dashboard (--dashboard opens one, which {readers} can read)"
    return f"dashboard: {link} ({readers} can read it, with no password)"


def run_demo(size: str = "medium", gpus: int | None = None, dashboard: bool = False) -> int:
    """Start a LocalGPUCluster of ``gpus`` workers, run the seed workloads at ``size`` and print a table; the exit
    code. A failure (cupy's OutOfMemoryError, a worker that died) is one line and 1, never a traceback."""
    gpu_ids = nvidia_gpu_ids()
    workers, mode, backend, memories = _demo_workers(gpu_ids, gpus)
    sizes = demo_sizes(size, memories)
    if sizes.fitted:
        print(f"sizes: {sizes.fitted}")

    # A folder of this run's own (mode 0700, a new name each run): the next run cannot overwrite the
    # job log and script this one says it keeps.
    run_folder = make_private_folder(f"gpujobqueue-demo-{time.strftime('%Y%m%d-%H%M%S')}-")
    print(f"this run's job files: {run_folder} (kept after the run; remove the folder when done)")
    jobs: list[GPUJob] = []
    scripts: dict[str, str | None] = {}
    outcomes: list[Outcome] = []
    failure = None
    started = time.perf_counter()
    try:
        with contextlib.ExitStack() as stack:
            cluster = stack.enter_context(_demo_cluster(gpu_ids, workers, mode, run_folder, dashboard))
            cluster.scale(gpus=workers) if gpu_ids else cluster.scale(cpu_workers=workers)
            jobs = list(cluster.workers.values())
            scripts = {str(job.name): _save_job_script(job) for job in jobs}
            client = stack.enter_context(Client(cluster))
            _wait_for_workers(client, cluster, workers)
            print(
                f"{workers} worker(s) up in {time.perf_counter() - started:.1f} s; "
                f"{_dashboard_line(cluster.dashboard_link)}"
            )
            stack.enter_context(dask.config.set({"array.backend": backend}))
            outcomes, failure = _run_workloads(sizes)
            if outcomes:
                _print_table(outcomes, backend)
    except GPUJobQueueError:
        raise
    except Exception as error:  # the cluster itself failed (start, close): one line too
        failure = f"the local cluster failed: {one_line(error)}"
    if jobs:
        running = [str(job.name) for job in jobs if job.handle is not None and job.handle.running]
        print(f"\ncluster closed; {'jobs still running: ' + ', '.join(running) if running else 'no job left running'}")
    _print_job_files(jobs, scripts)
    if failure:
        print(f"\ngpujobqueue demo: {failure} (sizes: {_describe(sizes)}; the job log above has the workers' side)")
        return 1
    return 0 if all(o.ok for o in outcomes) else 1


def _demo_workers(gpu_ids: list[int], gpus: int | None) -> tuple[int, str, str, list[int]]:
    """The workers (one dask-cuda worker per GPU, else 2 CPU workers), their mode, backend and GPUs' memories."""
    if not gpu_ids:
        workers = gpus or 2
        print(f"gpujobqueue demo: no NVIDIA GPU here; starting {workers} CPU worker(s) (numpy arrays) in their place")
        return workers, "per-device", "numpy", []
    try:
        import cupy  # noqa: F401
        import dask_cuda  # noqa: F401
    except ImportError as error:
        raise GPUJobQueueError(
            f"this machine has {len(gpu_ids)} NVIDIA GPU(s) but {error.name} is missing: "
            f"{install_line(machine_gpus().cuda_driver_version)}"
        ) from error
    workers = gpus or len(gpu_ids)
    print(f"gpujobqueue demo: {len(gpu_ids)} NVIDIA GPU(s) found; starting {workers} dask-cuda worker(s), one per GPU")
    memories = gpu_memories(gpu_ids[:workers]) or [0]
    if memories == [0]:
        raise GPUJobQueueError("could not read the GPUs' memory (NVML, nvidia-smi, cupy) to size the demo's arrays")
    print(f"GPU memory: {', '.join(format_bytes(m) for m in memories)}")
    return workers, "dask-cuda", "cupy", memories


def _demo_cluster(gpu_ids: list[int], workers: int, mode: str, run_folder: str, dashboard: bool) -> LocalGPUCluster:
    """The demo's local cluster; without GPUs its workers are the CPU pool's (the usage summary counts no GPU)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OpenDashboardWarning)  # the demo's own line says who can read it
        return LocalGPUCluster(
            gpus_per_node=workers,
            worker_mode=mode,
            devices=gpu_ids[:workers] or list(range(workers)),
            log_directory=run_folder,
            cpu_pool=None if gpu_ids else {"processes": workers},
            scheduler_options={"dashboard_address": DEFAULT_DASHBOARD_ADDRESS} if dashboard else None,
        )


def _wait_for_workers(client: Client, cluster: LocalGPUCluster, workers: int) -> None:
    """Wait up to 120 s for the workers; where they do not come, print each job's log and raise."""
    try:
        client.wait_for_workers(workers, timeout=120)
    except TimeoutError:
        for job in cluster.workers.values():  # the last 25 lines of each log (its last 64 KiB read)
            found, tail = read_log_tail([_log_path(job)], 25) if _log_path(job) else (None, "")
            print(f"--- end of the log of job {job.name} ({_log_path(job)}):\n{tail if found else '(no log)'}")
        raise GPUJobQueueError(f"{workers} worker(s) did not connect within 120 s; the job logs are above") from None


def _run_workloads(sizes: DemoSizes) -> tuple[list[Outcome], str | None]:
    """The seed workloads' outcomes, and the first failure as one line, after which none runs."""
    outcomes: list[Outcome] = []
    workloads: list[tuple[str, Callable[[], Outcome]]] = [
        ("the sum", lambda: _random_sum(sizes.side, sizes.chunk)),
        ("the SVD", lambda: _tall_skinny_svd(sizes.rows, sizes.cols, sizes.row_chunk)),
    ]
    for what, workload in workloads:
        try:
            outcomes.append(workload())
        except Exception as error:  # one line, not a traceback
            return outcomes, f"{what} failed: {one_line(error)}"
    return outcomes, None


def _describe(sizes: DemoSizes) -> str:
    return (
        f"sum {sizes.side}² in chunks of {sizes.chunk}², "
        f"SVD {sizes.rows} x {sizes.cols} in row chunks of {sizes.row_chunk}"
    )
