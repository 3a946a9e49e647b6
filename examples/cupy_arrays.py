"""Dask arrays of cupy chunks on GPU workers: the 2 TB random sum, a tall-skinny SVD, and spilling.

What it shows, on a cluster started by gpujobqueue:

1. ``(x + 1)[::2, ::2].sum()`` of a standard normal array, the Dask blog post's workload
   ("GPU Dask Arrays, first steps"): 500000 x 500000 float64 in 10000 x 10000 chunks,
   2 TB, at ``--size large`` in the GPU form. Check: the mean of the sampled
   elements is 1 within six standard errors.
2. ``da.linalg.svd`` of a tall-skinny array (one chunk across the columns).
   Check: ``u @ diag(s) @ v`` gives the array back (relative error below 1e-8).
3. Spilling. The GPU form gives the workers dask-cuda's ``device_memory_limit``. It
   persists an array twice the size of that limit summed over the workers, so chunks
   move from device to host memory. The CPU form does the same with the workers'
   ``memory_limit`` and ``distributed.worker.memory.target``, so chunks move from host
   memory to disk. Checks: some bytes were spilled, and sums over the spilled array
   match their closed forms.

The GPU form (cupy) runs where cupy is importable and there are NVIDIA GPUs. Elsewhere
the CPU form runs the same code with numpy chunks on CPU workers (on this machine a CPU
pool's, which hold no GPU and are counted in core-hours). It prints which form it runs.

Run it:

    python examples/cupy_arrays.py --size small        # this machine (local batch system)
    python examples/cupy_arrays.py --site perlmutter --account m1234_g --walltime 00:30:00 --gpus 8 --size large

The client builds the graph with cupy, so the GPU form needs cupy (and a GPU) where
the script runs. Where the login node has none, run the script inside a job:

    gpujobqueue render perlmutter --account m1234_g --walltime 00:30:00 --device-memory-limit 16GB \\
        --run examples/cupy_arrays.py -- --size large > job.sh && sbatch job.sh

Exit status: 0 all checks passed, 1 a check failed, 3 a package is missing, 4 the
workers lack GPUs for the GPU form.
"""

from __future__ import annotations

import math
import sys
import time

import _common
import dask
import dask.array as da
from dask.utils import format_bytes, parse_bytes
from distributed import Client, wait

from gpujobqueue import GPUCluster

# Per form and size: random sum (side, chunk side); SVD (rows, columns, row chunk); spilling limit per worker.
SIZES = {
    "gpu": {
        "small": {"sum": (20_000, 5_000), "svd": (100_000, 100, 10_000), "device_memory_limit": "1GB"},
        "medium": {"sum": (100_000, 10_000), "svd": (1_000_000, 500, 100_000), "device_memory_limit": "4GB"},
        "large": {"sum": (500_000, 10_000), "svd": (2_000_000, 1_000, 100_000), "device_memory_limit": "16GB"},
    },
    "cpu": {
        "small": {"sum": (4_000, 1_000), "svd": (20_000, 50, 2_000), "memory_limit": "1GiB"},
        "medium": {"sum": (20_000, 2_500), "svd": (200_000, 100, 20_000), "memory_limit": "4GiB"},
        "large": {"sum": (50_000, 5_000), "svd": (2_000_000, 100, 100_000), "memory_limit": "16GiB"},
    },
}
# CPU form: a worker keeps this fraction of its memory_limit of data in memory and spills
# the rest to disk (dask's default is 0.6; lower, so that spilling starts well before the
# worker's process memory nears the limits at which dask pauses or restarts it).
CPU_MEMORY_TARGET = "0.25"


def random_sum(side, chunk, checks, rows):
    x = da.random.RandomState(42).normal(0, 1, size=(side, side), chunks=(chunk, chunk))
    start = time.perf_counter()
    total = float((x + 1)[::2, ::2].sum().compute())
    seconds = time.perf_counter() - start
    count = math.ceil(side / 2) ** 2
    mean = total / count
    rows.append(
        ("(x + 1)[::2, ::2].sum()", f"{side} x {side}", format_bytes(x.nbytes), f"{chunk} x {chunk}", f"{seconds:.2f}")
    )
    # The sampled elements are N(1, 1): their mean is 1 within 6 standard errors (1 in 5e8 chance otherwise).
    checks(
        "random sum: mean of the sampled elements is 1",
        abs(mean - 1) < 6 / math.sqrt(count),
        f"mean {mean:.7f}, {count} elements",
    )


def tall_skinny_svd(n_rows, n_cols, row_chunk, checks, rows):
    x = da.random.RandomState(7).random((n_rows, n_cols), chunks=(row_chunk, n_cols)).persist()
    wait(x)
    start = time.perf_counter()
    u, s, v = dask.persist(*da.linalg.svd(x))
    error = float((da.linalg.norm((u * s) @ v - x) / da.linalg.norm(x)).compute())
    seconds = time.perf_counter() - start
    rows.append(
        (
            "da.linalg.svd (tall-skinny)",
            f"{n_rows} x {n_cols}",
            format_bytes(x.nbytes),
            f"{row_chunk} x {n_cols}",
            f"{seconds:.2f}",
        )
    )
    checks("svd: u @ diag(s) @ v reconstructs x", error < 1e-8, f"relative error {error:.1e}")


def spill_state(dask_worker):
    """On a worker: its spill threshold, and the keys and bytes it has spilled."""
    data = dask_worker.data
    if hasattr(data, "device_keys"):  # dask-cuda's DeviceHostFile: device memory -> host memory (-> disk)
        limit = getattr(data.device_buffer, "n", None)
        spilled = [key for key in data.device_keys if key not in data.device]
        to = "host memory"
    elif hasattr(data, "slow"):  # distributed's SpillBuffer: host memory -> disk
        limit = data.n
        spilled = list(data.slow)
        to = "disk"
    else:
        limit, spilled, to = None, [], "nowhere"
    tasks = dask_worker.state.tasks
    return {
        "limit": limit,
        "host_limit": dask_worker.memory_manager.memory_limit,
        "stored": len(data),
        "spilled": len(spilled),
        "to": to,
        "spilled_bytes": sum(tasks[key].nbytes or 0 for key in spilled if key in tasks),
    }


def spilling(client, checks, rows):
    """Persist twice what the workers hold before spilling; the sums over it must stay exact."""
    state = client.run(spill_state)
    limits = [s["limit"] for s in state.values()]
    hosts = [s["host_limit"] for s in state.values()]
    if _common.inside_job() and (
        None in limits or any(host and limit > host / 2 for limit, host in zip(limits, hosts))
    ):
        # The job's workers were started without a device memory limit small enough to show spilling.
        print("\nspilling: not run; render the job with --device-memory-limit (e.g. 16GB) to see it")
        return
    if not checks(
        "spilling: the workers have a spill threshold",
        None not in limits,
        ", ".join("none" if limit is None else format_bytes(limit) for limit in limits),
    ):
        return
    chunk = max(1, min(limits) // 8 // 8)  # elements of float64: an eighth of the smallest threshold
    n = chunk * 16 * len(limits)  # twice the thresholds summed over the workers
    start = time.perf_counter()
    x = da.arange(n, chunks=chunk, dtype="float64").persist()
    wait(x)
    state = client.run(spill_state)
    names = {address: w["name"] for address, w in _common.workers_info(client).items()}
    spilled = sum(s["spilled_bytes"] for s in state.values())
    total, squares = (float(v) for v in dask.compute(x.sum(), (x * x).sum()))
    seconds = time.perf_counter() - start
    del x
    _common.print_table(
        "spilling, per worker",
        ("worker", "spill threshold", "chunks held", "spilled", "spilled to"),
        [
            (
                names.get(a, a),
                format_bytes(s["limit"]),
                s["stored"],
                f"{s['spilled']} ({format_bytes(s['spilled_bytes'])})",
                s["to"],
            )
            for a, s in sorted(state.items(), key=lambda item: str(names.get(item[0])))
        ],
    )
    rows.append(("spill: arange, persisted, summed", f"{n}", format_bytes(n * 8), f"{chunk}", f"{seconds:.2f}"))
    checks(
        "spilling: the working set exceeded the workers' thresholds and was spilled",
        spilled > 0,
        f"{format_bytes(n * 8)} persisted over {len(limits)} worker(s) of {format_bytes(min(limits))}; "
        f"{format_bytes(spilled)} spilled",
    )
    want_total, want_squares = n * (n - 1) / 2, (n - 1) * n * (2 * n - 1) / 6
    checks(
        "spilling: sum over the spilled array is n(n-1)/2",
        math.isclose(total, want_total, rel_tol=1e-12),
        f"{total:.0f}, want {want_total:.0f}",
    )
    checks(
        "spilling: sum of squares over the spilled array is (n-1)n(2n-1)/6",
        math.isclose(squares, want_squares, rel_tol=1e-9),
        f"{squares:.9e}, want {want_squares:.9e}",
    )


def run(client, args, form):
    code = _common.check_workers(client, form)
    if code:
        return code
    sizes = SIZES[form][args.size]
    checks, rows = _common.Checks(), []
    with dask.config.set({"array.backend": "cupy" if form == "gpu" else "numpy"}):
        random_sum(*sizes["sum"], checks, rows)
        tall_skinny_svd(*sizes["svd"], checks, rows)
        spilling(client, checks, rows)
    _common.print_table(
        f"workloads ({'cupy' if form == 'gpu' else 'numpy'} chunks, --size {args.size})",
        ("workload", "shape", "size", "chunks", "seconds"),
        rows,
    )
    return checks.exit_code()


def main(argv=None):
    args = _common.parse(_common.parser(__doc__), argv)
    form, why = _common.choose_form(args, "cupy")
    if form == "gpu" and not _common.importable("cupy"):
        return _common.missing_package(
            "cupy", "pip install cupy-cuda12x (or cupy-cuda13x)", "the GPU form builds cupy arrays"
        )
    print(
        f"form: {form.upper()} "
        f"({'cupy arrays on dask-cuda workers' if form == 'gpu' else 'numpy arrays on CPU workers'}): {why}"
    )

    if _common.inside_job():  # gpujobqueue render ... --run: the job's workers are already up
        with Client() as client:
            return run(client, args, form)

    sizes = SIZES[form][args.size]
    cpu_pool = None
    if form == "gpu":
        # dask-cuda moves device memory to host memory past this limit, per worker.
        spill_keywords = {"device_memory_limit": sizes["device_memory_limit"]}
    else:
        # Plain dask workers: dask moves their host memory to disk past memory_limit x
        # distributed.worker.memory.target. On this machine they are a CPU pool's, which hold no GPU
        # (the pool's memory is shared among its workers); on a batch system, per-device workers of the GPU jobs.
        environment = {"DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": CPU_MEMORY_TARGET}
        cpu_pool = _common.cpu_pool(args, form, memory=parse_bytes(sizes["memory_limit"]) * (args.gpus or 1))
        spill_keywords = {"environment": environment}
        if cpu_pool is None:
            spill_keywords.update(worker_mode="per-device", memory_limit=sizes["memory_limit"])
    keywords = {**_common.cluster_keywords(args), **spill_keywords}
    with GPUCluster(site=args.site, batch=args.batch, cpu_pool=cpu_pool, **keywords) as cluster:
        workers = args.gpus or cluster.workers_per_job
        cluster.scale(cpu_workers=workers) if cpu_pool else cluster.scale(gpus=workers)
        with Client(cluster) as client:
            client.wait_for_workers(workers, timeout=args.timeout)
            kind = "CPU" if cpu_pool else "GPU"
            print(f"{workers} {kind} worker(s) connected; dashboard: {cluster.dashboard_link or 'none'}")
            return run(client, args, form)


if __name__ == "__main__":
    sys.exit(main())
