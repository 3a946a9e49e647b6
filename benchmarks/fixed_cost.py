"""Issue 34: start-up split into phases, and what the 2 TB sum's fixed part is made of; one run.

startup
    On all N GPUs here, ``--startup-repeats`` rounds of each, alternating: gpujobqueue's
    ``LocalGPUCluster(gpus_per_node=N)`` with its default protocol and with ``protocol="tcp"``
    (a fresh cluster per round, the probe's cache of the workers' python cleared, as in a fresh
    process); ``dask cuda worker`` by hand over TCP against a scheduler started here
    (``LocalCluster(n_workers=0)``); dask-cuda's ``LocalCUDACluster``. Ours is split from
    timestamps: the plan (``make_plan``), the scheduler's start (distributed's cluster start),
    the probe of the workers' python (its thread, beside the start), the wait for the probe
    after the start, ``scale()`` to the first worker process made (the job starting), worker
    process made to registered, and first to last worker registered. Worker processes' start
    times are their ``/proc`` start times (psutil); registrations are the scheduler's own
    ``add-worker`` events. With ``--startup-peers``, also ``ucx-peers`` (below) as a fifth side.
sum
    On 1 and N GPUs (``--gpus``), a fresh default LocalGPUCluster, one untimed warm-up sum, then
    ``--sum-repeats`` sums of ``(x + 1)[::2, ::2].sum()`` (2 TB, 10000² chunks), each inside
    ``distributed.get_task_stream``: graph building on the client, ``client.compute`` (the
    graph sent), compute to the first task starting on a worker, the chunk tasks (the last one
    ending), the reduction's tail (last chunk task ending to the result here), the GPUs' busy
    share (union of each worker's compute intervals over the wall), and the CPU seconds of the
    event loop's thread, which runs the scheduler and the client's comms in this process, and
    the mean over the workers of their event loops' threads (UCX progresses there). Then
    the same graph with 1 x 1 chunks (the same 2500 chunks and task count, no GPU work to
    speak of): the per-task cost of scheduling, messages and the workers alone.
variants
    With ``--variants``, the sum on N GPUs (``--sum-repeats`` warm sums each, after a warm-up)
    with the scheduler in a job of its own (``scheduler="job"``, its own process) and with
    ``distributed.scheduler.work-stealing: false``, beside the default rows. ``--try NAMES``
    adds other rows on each GPU count, by name: ``tls`` (``protocol="tcp"``), ``saturation-2`` and
    ``saturation-inf`` (``distributed.scheduler.worker-saturation``), ``job``, ``no-stealing``,
    ``ucx-peers`` (a trial: the scheduler and nannies on TLS, the workers listening on UCX for each
    other's data; benchmarks/ucx_peer_worker.py). Each row records its workers' protocol.
    A setting that must reach ucxx before its first use in this process (e.g.
    ``UCXPY_PROGRESS_MODE``) is set in the environment of a separate run; it is recorded.

Each row of the sum also records the scheduler's own profile (distributed's sampling of its
event loop) as the functions with the most samples at the top of the stack.

Progress goes to stdout; a table comes last; every number goes to ``fixed-cost.json`` in
``--out`` (default ``$OUT``). On the device machine (see shared/gpu/README.md; carry ``.whl``
and ``gpujobqueue.egg-info``)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \\
      --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD; \\
    python3 benchmarks/fixed_cost.py --gpus 1,4 --variants

``--smoke`` runs it without GPUs (numpy, CPU workers, tiny sizes, no LocalCUDACluster).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dask  # noqa: E402
import gpu as bench  # noqa: E402
import psutil  # noqa: E402
from distributed import Client, LocalCluster, get_task_stream  # noqa: E402

from gpujobqueue.machine import install  # noqa: E402
from gpujobqueue.runtime import cluster as runtime_cluster  # noqa: E402

SUM_SIZE = 500_000
REDUCTION_MARKS = ("-partial", "-aggregate")


# --------------------------------------------------------------------------------------------
# Timestamps of ours: wrappers that record when a step began and ended
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def recorded(marks: dict[str, float], owner: Any, attribute: str, label: str):
    """While inside, ``owner.attribute`` (a callable) records ``label``'s start and end in ``marks``."""
    original = getattr(owner, attribute)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        marks.setdefault(label + "_start", time.time())
        try:
            return original(*args, **kwargs)
        finally:
            marks.setdefault(label + "_end", time.time())  # the first call: warn() probes again, cached

    setattr(owner, attribute, wrapper)
    try:
        yield
    finally:
        setattr(owner, attribute, original)


def worker_process_start() -> float:
    """The start time of this worker's process (runs on the worker)."""
    return psutil.Process().create_time()


def registrations(client: Client) -> dict[str, float]:
    """Worker address to the time the scheduler added it (its ``add-worker`` event)."""
    events = client.get_events("all")
    return {
        event["worker"]: stamp
        for stamp, event in events
        if isinstance(event, dict) and event.get("action") == "add-worker"
    }


def worker_times(client: Client, since: float) -> dict[str, float]:
    """First and last worker process start and registration, in seconds after ``since``."""
    started = client.run(worker_process_start).values()
    added = [stamp for stamp in registrations(client).values() if stamp >= since]
    return {
        "first_process": min(started) - since,
        "last_process": max(started) - since,
        "first_registered": min(added) - since,
        "last_registered": max(added) - since,
    }


def ours_startup(setup: bench.Setup, gpus: int, tag: str, **keywords: Any) -> dict[str, float]:
    """One fresh LocalGPUCluster to N workers, split into phases (seconds)."""
    install.probe_imports.cache_clear()  # as in a fresh process: the probe runs again
    marks: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(recorded(marks, runtime_cluster, "make_plan", "plan"))
        stack.enter_context(recorded(marks, install, "worker_python_problems", "probe"))
        stack.enter_context(recorded(marks, runtime_cluster.GPUJobQueueCluster, "_init_job_queue_cluster", "scheduler"))
        begin = time.time()
        cluster = bench.gpujobqueue_cluster(setup, tag, gpus, **keywords)
        made = time.time()
    with cluster, Client(cluster) as client:
        scale = time.time()
        cluster.scale(gpus=gpus)
        client.wait_for_workers(gpus, timeout=setup.timeout)
        connected = time.time()
        workers = worker_times(client, scale)
        protocol = bench.scheme(cluster.scheduler_address)
        worker_protocols = bench.worker_schemes(client)
    return {
        "protocol": protocol,
        "worker_protocols": worker_protocols,
        "total": connected - begin,
        "constructor": made - begin,
        "plan": marks["plan_end"] - marks["plan_start"],
        "scheduler_start": marks["scheduler_end"] - marks["scheduler_start"],
        "probe": marks["probe_end"] - marks["probe_start"],
        "probe_wait_after_start": max(0.0, marks["probe_end"] - marks["scheduler_end"]),
        "scale_to_connected": connected - scale,
        "scale_to_first_worker_process": workers["first_process"],
        "worker_process_to_registered": workers["last_registered"] - workers["last_process"],
        "first_to_last_registered": workers["last_registered"] - workers["first_registered"],
    }


def hand_startup(setup: bench.Setup, gpus: int, log_path: Path) -> dict[str, float]:
    """A scheduler here over TCP and ``dask cuda worker`` by hand: both timed, and its workers' phases."""
    begin = time.time()
    with LocalCluster(n_workers=0, protocol="tcp://", dashboard_address=":0") as scheduler:
        scheduler_up = time.time()
        with Client(scheduler) as client:
            popen = time.time()
            with bench.hand_started_workers(setup, scheduler.scheduler_address, gpus, log_path):
                client.wait_for_workers(gpus, timeout=setup.timeout)
                connected = time.time()
                workers = worker_times(client, popen)
            bench.wait_for_worker_count(client, 0, setup.timeout)
    return {
        "protocol": "tcp",
        "total": connected - begin,
        "scheduler_start": scheduler_up - begin,
        "popen_to_connected": connected - popen,
        "popen_to_first_worker_process": workers["first_process"],
        "worker_process_to_registered": workers["last_registered"] - workers["last_process"],
        "first_to_last_registered": workers["last_registered"] - workers["first_registered"],
    }


def reference_startup(setup: bench.Setup, gpus: int) -> dict[str, float]:
    """dask-cuda's LocalCUDACluster: its constructor (which waits for its workers) to N workers."""
    begin = time.time()
    with bench.reference_cluster(setup, gpus) as cluster, Client(cluster) as client:
        client.wait_for_workers(gpus, timeout=setup.timeout)
        connected = time.time()
        protocol = bench.scheme(cluster.scheduler_address)
    return {"protocol": protocol, "total": connected - begin}


def run_startup(setup: bench.Setup, args: argparse.Namespace, record: dict[str, Any], save: Callable) -> None:
    """Alternate the four sides ``--startup-repeats`` rounds on all GPUs here; keep every round."""
    gpus = len(setup.devices)
    log_path = Path(args.out) / "logs" / "startup-by-hand.log"
    sides: dict[str, Callable[[int], dict[str, float]]] = {
        "ours default": lambda n: ours_startup(setup, gpus, f"startup-default-{n}"),
        "ours tcp": lambda n: ours_startup(setup, gpus, f"startup-tcp-{n}", protocol="tcp"),
        "dask cuda worker by hand (tcp)": lambda n: hand_startup(setup, gpus, log_path),
    }
    if args.startup_peers:
        sides["ours ucx-peers"] = lambda n: ours_startup(setup, gpus, f"startup-peers-{n}", **TRIES["ucx-peers"])
    if not setup.smoke:
        sides["LocalCUDACluster"] = lambda n: reference_startup(setup, gpus)
    record.update(gpus=gpus, rounds={side: [] for side in sides})
    hand_startup(setup, gpus, log_path)  # untimed: no timed round pays for a cold file cache alone
    for round_number in range(args.startup_repeats):
        order = list(sides) if round_number % 2 == 0 else list(reversed(sides))
        for side in order:
            result = sides[side](round_number)
            record["rounds"][side].append(result)
            bench.log(f"startup {round_number + 1} {side}: {result['total']:.2f} s ({result['protocol']})")
            save()
    record["medians"] = {
        side: {key: bench.median([r[key] for r in rounds]) for key in rounds[0] if "protocol" not in key}
        for side, rounds in record["rounds"].items()
    }


# --------------------------------------------------------------------------------------------
# The sum, taken apart
# --------------------------------------------------------------------------------------------


def loop_thread_cpu() -> float:
    """CPU seconds of the thread this runs on (the event loop's, when run through run_on_scheduler)."""
    return time.thread_time()


def busy_share(stream: list[dict[str, Any]], start: float, end: float) -> float:
    """Mean over workers of the share of [start, end] in which at least one of its threads computed."""
    per_worker: dict[str, list[tuple[float, float]]] = {}
    for task in stream:
        for part in task["startstops"]:
            if part["action"] == "compute":
                per_worker.setdefault(task["worker"], []).append((part["start"], part["stop"]))
    shares = []
    for intervals in per_worker.values():
        covered, reach = 0.0, start
        for low, high in sorted(intervals):
            low, high = max(low, reach), min(high, end)
            if high > low:
                covered += high - low
                reach = high
        shares.append(covered / (end - start))
    return sum(shares) / len(shares) if shares else 0.0


def is_reduction(key: Any) -> bool:
    """Whether a task key is one of the sum's tree-reduction steps (not a per-chunk task)."""
    name = key[0] if isinstance(key, tuple) else key
    return any(mark in str(name) for mark in REDUCTION_MARKS)


def taken_apart_sum(setup: bench.Setup, client: Client, size: int, chunk: int) -> dict[str, float]:
    """One sum with its parts timed from the client's clock and the workers' task stream."""
    graph_start = time.time()
    x = bench.random_state(setup).normal(10, 1, size=(size, size), chunks=(chunk, chunk))
    total = (x + 1)[::2, ::2].sum()
    cpu_before = client.run_on_scheduler(loop_thread_cpu)
    workers_before = client.run(loop_thread_cpu)  # client.run calls a function on each worker's event loop
    with get_task_stream(client) as stream:
        submit = time.time()
        future = client.compute(total)
        submitted = time.time()
        value = float(future.result())
        done = time.time()
    cpu_after = client.run_on_scheduler(loop_thread_cpu)
    workers_after = client.run(loop_thread_cpu)
    workers_loop = [workers_after[address] - workers_before[address] for address in workers_before]
    tasks = stream.data
    compute_parts = [
        (task["key"], part) for task in tasks for part in task["startstops"] if part["action"] == "compute"
    ]
    chunk_stops = [part["stop"] for key, part in compute_parts if not is_reduction(key)]
    expected = 11.0 * ((size + 1) // 2) ** 2
    if chunk > 1 and abs(value - expected) > 1e-3 * expected:  # 1x1 chunks: too few samples
        raise AssertionError(f"sum {value:.6g}, expected about {expected:.6g}")
    return {
        "seconds": done - submit,
        "tasks": len(tasks),
        "graph_build": submit - graph_start,
        "compute_call": submitted - submit,
        "to_first_task": min(part["start"] for _, part in compute_parts) - submit,
        "chunk_tasks_end": max(chunk_stops) - submit,
        "tail": done - max(chunk_stops),
        "reduction_compute": sum(part["stop"] - part["start"] for key, part in compute_parts if is_reduction(key)),
        "gpu_busy": busy_share(tasks, submit, done),
        "transfers": sum(1 for task in tasks for part in task["startstops"] if part["action"] == "transfer"),
        "loop_thread_cpu": cpu_after - cpu_before,
        "workers_loop_thread_cpu": sum(workers_loop) / len(workers_loop),
    }


def profile_top(tree: dict[str, Any], count: int = 12) -> list[tuple[str, int]]:
    """The functions with the most samples at the top of the stack, from a distributed profile tree."""
    own: dict[str, int] = {}

    def walk(node: dict[str, Any]) -> None:
        children = node.get("children", {})
        below = sum(child["count"] for child in children.values())
        if node.get("description") and node["count"] > below:
            where = node["description"]
            name = f"{Path(where.get('filename', '?')).name}:{where.get('name', '?')}"
            own[name] = own.get(name, 0) + node["count"] - below
        for child in children.values():
            walk(child)

    walk(tree)
    return sorted(own.items(), key=lambda item: -item[1])[:count]


def measure_sums(
    setup: bench.Setup, label: str, gpus: int, repeats: int, tiny: bool, **keywords: Any
) -> dict[str, Any]:
    """A fresh LocalGPUCluster: a warm-up sum, ``repeats`` sums taken apart, and (``tiny``) 1 x 1 chunks."""
    size = SUM_SIZE if not setup.smoke else 2000
    chunk = min(setup.sum_chunk, size) if not setup.smoke else 40
    grid = size // chunk
    row: dict[str, Any] = {"label": label, "gpus": gpus, "runs": [], "tiny_runs": []}
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(bench.gpujobqueue_cluster(setup, f"sum-{label}-{gpus}", gpus, **keywords))
        client = stack.enter_context(Client(cluster))
        bench.start_gpu_workers(cluster, client, gpus, setup.timeout)
        row["protocol"] = bench.scheme(cluster.scheduler_address)
        row["worker_protocols"] = bench.worker_schemes(client)
        row["nthreads"] = sum(client.nthreads().values())
        row["first_s"] = taken_apart_sum(setup, client, size, chunk)["seconds"]
        for _ in range(repeats):
            row["runs"].append(taken_apart_sum(setup, client, size, chunk))
            bench.log(f"sum {label} {gpus} GPU(s): {row['runs'][-1]['seconds']:.2f} s ({row['runs'][-1]})")
        if tiny:
            taken_apart_sum(setup, client, grid, 1)
            for _ in range(repeats):
                row["tiny_runs"].append(taken_apart_sum(setup, client, grid, 1))
                bench.log(f"tiny sum {label} {gpus} GPU(s): {row['tiny_runs'][-1]['seconds']:.3f} s")
        row["scheduler_profile"] = profile_top(client.profile(scheduler=True))
        bench.log(f"scheduler profile {label} {gpus}: {row['scheduler_profile']}")
    for name in ("runs", "tiny_runs"):
        if row[name]:
            row[name.replace("runs", "median")] = {
                key: bench.median([run[key] for run in row[name]]) for key in row[name][0]
            }
    return row


TRIES: dict[str, dict[str, Any]] = {
    "default": {},
    "tls": {"protocol": "tcp"},
    "ucx-peers": bench.UCX_PEERS_KEYWORDS,
    "job": {"scheduler": "job"},
    "no-stealing": {"config": {"distributed.scheduler.work-stealing": False}},
    "saturation-2": {"config": {"distributed.scheduler.worker-saturation": 2.0}},
    "saturation-inf": {"config": {"distributed.scheduler.worker-saturation": float("inf")}},
}


def run_sums(setup: bench.Setup, args: argparse.Namespace, record: dict[str, Any], save: Callable) -> None:
    """The default cluster on each GPU count; then (``--variants``) the other placements on the most GPUs."""
    counts = [g for g in args.gpus if g <= len(setup.devices)]
    record["rows"] = []
    tiny = not args.no_tiny
    plans: list[tuple[str, int, bool, dict[str, Any]]] = [("default", g, tiny, {}) for g in counts]
    most = max(counts)
    names = [name for name in args.try_.split(",") if name]
    if args.variants:
        names = ["job", "default", "no-stealing"] + names
    for name in names:
        for gpus in counts if name in args.try_.split(",") else [most]:
            plans.append((name, gpus, False, dict(TRIES[name])))
    for label, gpus, tiny, keywords in plans:
        settings = keywords.pop("config", {})
        try:
            with dask.config.set(settings):
                record["rows"].append(measure_sums(setup, label, gpus, args.sum_repeats, tiny, **keywords))
        except Exception as error:
            record.setdefault("errors", {})[f"{label} {gpus}"] = bench.error_record(error)
            bench.log(f"sum {label} {gpus}: FAILED {type(error).__name__}: {error}")
        save()


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def summary(record: dict[str, Any]) -> list[str]:
    """The short table of medians."""
    lines = []
    startup = record.get("startup", {})
    for side, values in startup.get("medians", {}).items():
        protocol = startup["rounds"][side][0]["protocol"]
        lines.append(f"startup {side} ({protocol}): " + ", ".join(f"{k} {v:.2f}" for k, v in values.items()))
    for row in record.get("sum", {}).get("rows", []):
        for name in ("median", "tiny_median"):
            if name in row:
                values = ", ".join(f"{k} {v:.3f}" for k, v in row[name].items())
                kind = "sum 1x1 chunks" if name == "tiny_median" else "sum"
                lines.append(f"{kind} {row['label']} {row['gpus']} GPU(s) ({row['protocol']}): {values}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the sections asked for; write the JSON after each step; print the table last."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default="startup,sum")
    parser.add_argument("--gpus", type=bench.int_list, default=[1, 4])
    parser.add_argument("--startup-repeats", type=int, default=3)
    parser.add_argument("--sum-repeats", type=int, default=2)
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--startup-peers", action="store_true", help="start-up of ucx-peers too")
    parser.add_argument("--try", dest="try_", default="", help="comma-separated rows: " + ", ".join(TRIES))
    parser.add_argument("--no-tiny", action="store_true", help="leave out the 1 x 1 chunk sums")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpujobqueue-bench")
    args = parser.parse_args(argv)
    setup = bench.Setup.detect(args.smoke, None, args.out)
    record: dict[str, Any] = {"versions": bench.versions(), "gpus_here": setup.devices, "args": vars(args)}
    record["environment"] = {name: os.environ.get(name) for name in ("UCXPY_PROGRESS_MODE", "UCX_TLS")}
    path = Path(args.out) / "fixed-cost.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def save() -> None:
        with lock:
            path.write_text(json.dumps(record, indent=2, default=str))

    if "startup" in args.sections:
        run_startup(setup, args, record.setdefault("startup", {}), save)
    if "sum" in args.sections:
        run_sums(setup, args, record.setdefault("sum", {}), save)
    save()
    print("\n".join(summary(record)), flush=True)
    return 1 if record.get("sum", {}).get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
