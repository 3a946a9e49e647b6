"""Does counting GPU-hours slow the work? The 2 TB sum with the usage sampling off and on.

One LocalGPUCluster (default protocol and threads) on ``--gpus`` GPUs; after one warm-up sum,
``--rounds`` rounds each run the seed's sum ``(x + 1)[::2, ::2].sum()`` of a ``--size`` square
normal(10, 1) cupy array three times: with sampling off, at gpujobqueue's default interval
(2 s) and at 0.2 s, the order rotating from round to round. Sampling is switched on the same
cluster between sums, so the three share workers, warm kernels and memory pools. The figure
is the median of each setting's seconds and its ratio to "off".

The busy fraction of each sum is what ``cluster.usage()`` measured during it: the busy
GPU-seconds it added over the sum's GPUs x seconds (NVML's utilisation from the workers'
heartbeats; the "tasks" fallback where NVML is missing). A transfer-bound run follows: numpy
chunks made on the host, copied to the GPU and summed (``map_blocks(cupy.asarray)``), whose
GPUs wait on copies; its busy fraction should be far below the sum's.

Writes ``usage-sampling.json`` to ``--out`` (default ``$OUT``); prints a table last.
``--smoke`` runs tiny numpy sums on CPU workers (fake device ids), to check the script here::

    python3 benchmarks/usage_sampling.py --smoke
    python3 benchmarks/usage_sampling.py --gpus 1 --rounds 3        # on the device machine
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import dask
import dask.array as da
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster

SETTINGS = {"off": None, "2 s": 2.0, "0.2 s": 0.2}


def busy_seconds(cluster: LocalGPUCluster) -> tuple[float, str | None]:
    report = cluster.usage()
    measured = {job.measured_by for job in report.jobs if job.measured_by}
    return sum(job.busy_gpu_seconds for job in report.jobs), ",".join(sorted(measured)) or None


def sampled_run(cluster: LocalGPUCluster, setting: str, gpus: int, compute: Any) -> dict[str, Any]:
    """One computation with the usage watch's interval set to ``setting``; its seconds and busy share."""
    watch = cluster._usage
    watch.interval = SETTINGS[setting]
    cluster.sync(watch.sample)  # the busy count starts from here
    before, _ = busy_seconds(cluster)
    window_start = watch.meter._last_sample
    start = time.perf_counter()
    value = compute()
    seconds = time.perf_counter() - start
    busy = how = None
    if watch.interval is not None:
        cluster.sync(watch.sample)  # ... and ends here: the busy seconds between the two samples
        after, how = busy_seconds(cluster)
        busy = (after - before) / (gpus * (watch.meter._last_sample - window_start))
    return {"setting": setting, "seconds": seconds, "busy_fraction": busy, "measured_by": how, "value": value}


def the_sum(xp: Any, size: int, chunk: int) -> Any:
    def compute() -> float:
        x = da.random.RandomState(RandomState=xp.random.RandomState).normal(10, 1, (size, size), chunks=chunk)
        total = float((x + 1)[::2, ::2].sum().compute())
        expected = 11.0 * math.ceil(size / 2) ** 2
        if abs(total - expected) / expected > 1e-3:
            raise AssertionError(f"sum {total:.6g}, expected about {expected:.6g}")
        return total

    return compute


def the_transfer(xp: Any, size: int, chunk: int) -> Any:
    import numpy

    def compute() -> float:
        x = da.random.RandomState(RandomState=numpy.random.RandomState).random((size, size), chunks=chunk)
        return float(x.map_blocks(xp.asarray, dtype=x.dtype).sum().compute())

    return compute


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=500_000, help="side of the summed array (500000: 2 TB)")
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--transfer-size", type=int, default=60_000, help="side of the transfer-bound array")
    parser.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpujobqueue-usage-bench")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keywords: dict[str, Any] = {"gpus_per_node": args.gpus, "log_directory": str(out / "logs")}
    if args.smoke:
        import numpy as xp

        args.size, args.chunk, args.transfer_size = 4000, 1000, 2000
        keywords.update(devices=list(range(args.gpus)), worker_mode="per-device", memory_per_gpu="1GiB")
    else:
        import cupy as xp

        dask.config.set({"array.backend": "cupy"})
    record: dict[str, Any] = {"args": vars(args), "runs": [], "transfer": []}
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=args.gpus)
        client.wait_for_workers(args.gpus, timeout=300)
        record["scheme"] = cluster.scheduler_address.split("://")[0]
        compute = the_sum(xp, args.size, args.chunk)
        record["warm_up_s"] = sampled_run(cluster, "2 s", args.gpus, compute)["seconds"]
        order = list(SETTINGS)
        for round_number in range(args.rounds):
            for setting in order[round_number % 3 :] + order[: round_number % 3]:
                run = sampled_run(cluster, setting, args.gpus, compute)
                record["runs"].append(run)
                print(f"sum, sampling {setting:5s}: {run['seconds']:.2f} s, busy {run['busy_fraction']}", flush=True)
        transfer = the_transfer(xp, args.transfer_size, args.chunk if not args.smoke else 500)
        for setting in ("2 s", "0.2 s"):
            run = sampled_run(cluster, setting, args.gpus, transfer)
            record["transfer"].append(run)
            print(
                f"transfer-bound, sampling {setting}: {run['seconds']:.2f} s, busy {run['busy_fraction']}", flush=True
            )
        record["usage_summary"] = cluster.usage().summary()
    (out / "usage-sampling.json").write_text(json.dumps(record, indent=1, default=str))
    medians = {s: statistics.median(r["seconds"] for r in record["runs"] if r["setting"] == s) for s in SETTINGS}
    print(
        f"\n{args.gpus} GPU(s), {record['scheme']}, size {args.size}, {args.rounds} rounds "
        f"(warm-up {record['warm_up_s']:.2f} s)"
    )
    print("| sampling | median s | / off | busy (median) | runs |")
    print("|---|---|---|---|---|")
    for setting, seconds in medians.items():
        runs = [r for r in record["runs"] if r["setting"] == setting]
        busy = [r["busy_fraction"] for r in runs if r["busy_fraction"] is not None]
        busy_text = f"{statistics.median(busy):.0%}" if busy else "not measured"
        print(
            f"| {setting} | {seconds:.2f} | {seconds / medians['off']:.3f} | {busy_text} | "
            + " ".join(f"{r['seconds']:.2f}" for r in runs)
            + " |"
        )
    for run in record["transfer"]:
        busy = f"{run['busy_fraction']:.0%}" if run["busy_fraction"] is not None else "not measured"
        print(f"transfer-bound ({run['setting']}): {run['seconds']:.2f} s, busy {busy} ({run['measured_by']})")
    print(f"summary at the end: {record['usage_summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
