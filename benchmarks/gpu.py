"""GPU benchmarks: gpujobqueue's LocalGPUCluster beside dask-cuda, side by side in one run.

Four sections, each measured for gpujobqueue and for what users run without it, on the same
GPUs in the same process:

startup
    Seconds from starting the job script to all N GPU workers registered: a
    ``LocalGPUCluster(gpus_per_node=N, protocol="tcp")`` timed from ``scale(gpus=N)`` to
    ``wait_for_workers(N)``, against ``dask cuda worker`` started by hand
    (``python -m dask_cuda.cli ADDRESS --nthreads 1``, CUDA_VISIBLE_DEVICES=0..N-1) timed from
    ``Popen`` to N workers, alternating, ``--repeats`` rounds. Goal: ratio of medians <= 1.10.
transfer
    Worker-to-worker transfer of 256 MiB, 1 GiB and 4 GiB cupy arrays between the two workers
    of a 2-GPU LocalGPUCluster, with TCP, with gpujobqueue's default protocol and (when the
    default is not UCX) with UCX. The bandwidth is the receiving worker's own figure: the entry
    of its ``transfer_incoming_log`` that carries the array's key, ``total`` bytes over
    ``duration`` seconds; the wall time from submitting the consumer to its result is kept
    too. Median of 3 per size. Goal: >= 250 GB/s at 4 GiB with the default.
svd
    ``da.linalg.svd`` of a persisted 100000 x 1000 cupy array (1000 x 1000 chunks) on each GPU
    count of ``--gpus`` from 2, each of ``--svd-configs`` (gpujobqueue's default protocol, TCP,
    ``ucx-peers``; dask-cuda's ``LocalCUDACluster``): seconds to persist u, s and v, median of 3
    after one warm-up, and each over LocalCUDACluster's. Goal: <= 1.0 s with the default on 2 GPUs.
sum
    The seed workload ``(x + 1)[::2, ::2].sum()`` of a 500000 x 500000 normal(10, 1) cupy array
    (2 TB, 10000 x 10000 chunks) on 1, 2 and 4 GPUs, a fresh LocalGPUCluster (default
    config, once per ``--nthreads`` value) and a fresh ``dask_cuda.LocalCUDACluster`` for each
    GPU count; speedup over one GPU and efficiency t1 / (g * tg), and for each tool the least-squares
    fit t = a + b / g over its GPU counts (a: the part more GPUs do not shorten) with issue 34's goals
    for gpujobqueue's default (a <= 1.0 s, efficiency >= 0.90 on the most GPUs, <= 0.70 x
    LocalCUDACluster's time at each count). Each sum is checked against
    11 * ceil(size / 2) ** 2 (within 0.1 %).

Progress goes to stdout as it happens; a table of medians and ratios comes last. Every raw
number goes to ``gpu-benchmarks.json`` in ``--out`` (default ``$OUT``, else
/tmp/gpujobqueue-bench), rewritten after each startup round, each cluster's transfers or
SVDs and each sum row; job logs go to ``--out``/logs. A failing section, cluster or row is
recorded with its error and the run goes on; the exit code is 1 if anything failed (goals
missed do not count as failures: the summary and the JSON's ``goal_met`` say so).

On the device machine (see shared/gpu/README.md for the wheels; one call with
``carry: [".whl"]``, from the repository root)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \\
      --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit; \\
    python3 benchmarks/gpu.py                       # every section, about 6-8 minutes on 4 H200s
    python3 benchmarks/gpu.py --sections transfer,svd --repeats 3
    python3 benchmarks/gpu.py --sections sum --gpus 1,2 --size 200000 --nthreads 1,2

On a machine without GPUs, ``--smoke`` runs every section with numpy arrays, tiny sizes,
CPU workers (LocalGPUCluster with fake device ids), ``distributed.LocalCluster`` in place of
LocalCUDACluster and ``dask worker`` in place of ``dask cuda worker``; UCX is skipped::

    python3 benchmarks/gpu.py --smoke
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
from dask.utils import format_bytes  # noqa: E402
from distributed import Client, LocalCluster, futures_of, wait  # noqa: E402

from benchmarks.ucx_peer_worker import WORKER_CLASS as UCX_PEER_WORKER  # noqa: E402
from gpujobqueue import LocalGPUCluster  # noqa: E402
from gpujobqueue.machine.gpus import nvidia_gpu_ids  # noqa: E402

SECTIONS = ("startup", "transfer", "svd", "sum")
MiB = 2**20
GiB = 2**30
GOALS = {
    "startup_ratio": 1.10,
    "transfer_default_4GiB_GBps": 250.0,
    "svd_default_seconds": 1.0,
    # issue 34's, for the sum: t = a + b/g's a, t1 / (g tg) on the most GPUs, and over LocalCUDACluster's time
    "sum_fixed_part_seconds": 1.0,
    "sum_efficiency_most_gpus": 0.90,
    "sum_versus_reference": 0.70,
    # issue 34's for the SVD: at least twice as fast as LocalCUDACluster on 2 GPUs and more
    "svd_versus_reference": 0.50,
}
T0 = time.perf_counter()


# --------------------------------------------------------------------------------------------
# The machine, the sizes and the report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """What this run works with: devices, array library, sizes and limits.

    Parameters
    ----------
    smoke : bool
        No GPUs: numpy, CPU workers, tiny sizes.
    devices : list of str
        GPU ids (fake ids in smoke mode) that workers may use.
    array_module : str
        ``"cupy"`` or ``"numpy"``.
    timeout : float
        Seconds allowed for any one wait (workers to connect, one computation).
    transfer_sizes : tuple of int
        Bytes of the arrays moved between workers.
    svd_shape, svd_chunks : tuple of int
        The SVD's array and chunk shapes.
    sum_chunk : int
        Chunk side of the sum's array.
    out : str
        Where the JSON and the logs go.
    """

    smoke: bool
    devices: list[str]
    array_module: str
    timeout: float
    transfer_sizes: tuple[int, ...]
    svd_shape: tuple[int, int]
    svd_chunks: tuple[int, int]
    sum_chunk: int
    out: str

    @classmethod
    def detect(cls, smoke: bool, timeout: float | None, out: str) -> "Setup":
        """The GPUs here (or two fake devices in smoke mode) and the sizes that go with them."""
        if smoke:
            return cls(
                True, ["0", "1"], "numpy", timeout or 60.0, (1 * MiB, 8 * MiB), (2000, 100), (200, 100), 1000, out
            )
        devices = nvidia_gpu_ids()
        if not devices:
            raise SystemExit("no NVIDIA GPU here (nvidia-smi / NVML found none); use --smoke on a machine without GPUs")
        return cls(
            False,
            devices,
            "cupy",
            timeout or 300.0,
            (256 * MiB, 1 * GiB, 4 * GiB),
            (100_000, 1_000),
            (1_000, 1_000),
            10_000,
            out,
        )

    def xp(self) -> Any:
        """The array module (cupy or numpy), imported."""
        return importlib.import_module(self.array_module)


@dataclass
class Report:
    """Every raw number of the run, written as JSON after each measurement.

    Parameters
    ----------
    path : Path
        Where the JSON goes.
    meta : dict
        Versions, machine, arguments.
    sections : dict
        Section name to its record (``status``, rows, medians, errors).
    """

    path: Path
    meta: dict[str, Any]
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """The record of a section, created empty (status ``running``) on first use."""
        return self.sections.setdefault(name, {"status": "running"})

    def save(self) -> None:
        """Write the JSON (atomically: a half-written file never replaces a whole one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".json.partial")
        partial.write_text(json.dumps({"meta": self.meta, "sections": self.sections}, indent=2, default=str))
        partial.replace(self.path)

    def failed(self) -> bool:
        """Whether any section or row recorded an error."""
        return any(record.get("status") == "error" or record.get("errors") for record in self.sections.values())


def log(message: str) -> None:
    """Print a progress line at once, stamped with seconds since the start."""
    print(f"[{time.perf_counter() - T0:7.1f} s] {message}", flush=True)


def error_record(error: BaseException) -> dict[str, str]:
    """An exception as JSON: its type, message and the end of its traceback."""
    return {
        "error": f"{type(error).__name__}: {error}",
        "traceback": "".join(traceback.format_exception(error))[-4000:],
    }


def median(values: list[float]) -> float | None:
    """The median, or None for no values."""
    return statistics.median(values) if values else None


def versions() -> dict[str, str]:
    """Installed versions of the packages that take part, from their metadata (nothing is imported)."""
    wanted = (
        "dask",
        "distributed",
        "dask-cuda",
        "distributed-ucxx",
        "ucxx",
        "libucx",
        "rmm",
        "cupy",
        "numpy",
        "gpujobqueue",
        "dask-jobqueue",
    )
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if any(name == w or name.startswith(w + "-") for w in wanted):
            found[name] = dist.version
    return dict(sorted(found.items()))


def nvidia_smi(*options: str) -> list[str]:
    """The lines ``nvidia-smi`` prints with ``options``, or none where it cannot run."""
    try:
        return subprocess.run(["nvidia-smi", *options], capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return []


# --------------------------------------------------------------------------------------------
# Clusters and workers
# --------------------------------------------------------------------------------------------


def gpujobqueue_cluster(setup: Setup, tag: str, gpus: int, **keywords: Any) -> LocalGPUCluster:
    """A LocalGPUCluster of ``gpus`` GPUs per job; in smoke mode its pool is the fake devices.

    Its jobs write their output under ``<out>/logs/<tag>`` (one folder per cluster: every
    cluster names its first job alike); nothing else differs from the keywords given.
    """
    keywords["log_directory"] = str(Path(setup.out) / "logs" / tag.replace(" ", "-"))
    if setup.smoke:
        keywords["devices"] = setup.devices[:gpus]
    return LocalGPUCluster(gpus_per_node=gpus, **keywords)


def reference_cluster(setup: Setup, gpus: int) -> Any:
    """dask-cuda's LocalCUDACluster on the first ``gpus`` devices (a LocalCluster in smoke mode)."""
    if setup.smoke:
        return LocalCluster(n_workers=gpus, threads_per_worker=1, processes=True)
    from dask_cuda import LocalCUDACluster

    return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(setup.devices[:gpus]))


def scheme(address: str) -> str:
    """``"ucx"`` of ``"ucx://10.0.0.1:8786"``."""
    return address.split("://", 1)[0]


def worker_schemes(client: Client) -> list[str]:
    """The protocols the client's workers listen on: ``["ucx"]``, ``["tls"]``."""
    return sorted({scheme(address) for address in client.scheduler_info()["workers"]})


def job_log_tails(cluster: LocalGPUCluster, lines: int = 20) -> str:
    """The ends of the logs of a LocalGPUCluster's jobs, for a startup that failed."""
    tails = []
    for job in cluster.workers.values():
        path = getattr(job, "log_path", None)
        try:
            text = (
                "".join(Path(path).read_text(errors="replace").splitlines(keepends=True)[-lines:])
                if path
                else "(no log)"
            )
        except OSError:
            text = "(no log)"
        tails.append(f"--- job {job.name} ({path}):\n{text}")
    return "\n".join(tails)


def start_gpu_workers(cluster: LocalGPUCluster, client: Client, gpus: int, timeout: float) -> float:
    """``scale(gpus=gpus)`` and wait for the workers; return the seconds it took."""
    start = time.perf_counter()
    cluster.scale(gpus=gpus)
    try:
        client.wait_for_workers(gpus, timeout=timeout)
    except Exception as error:
        raise RuntimeError(
            f"{gpus} worker(s) did not connect within {timeout} s: {error}\n{job_log_tails(cluster)}"
        ) from error
    return time.perf_counter() - start


def wait_for_worker_count(client: Client, count: int, timeout: float) -> float:
    """Wait until exactly ``count`` workers are registered; return the seconds it took."""
    start = time.perf_counter()
    while len(client.nthreads()) != count:
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"{len(client.nthreads())} workers registered after {timeout} s, waiting for {count}")
        time.sleep(0.05)
    return time.perf_counter() - start


def worker_addresses(client: Client) -> list[str]:
    """The workers' addresses, sorted by worker name (so device order)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return sorted(workers, key=lambda address: str(workers[address]["name"]))


def hand_worker_command(setup: Setup, address: str, workers: int) -> list[str]:
    """The command line a user types: ``dask cuda worker`` (``dask worker --nworkers`` in smoke mode)."""
    if setup.smoke:
        return [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            address,
            "--nthreads",
            "1",
            "--nworkers",
            str(workers),
        ]
    return [sys.executable, "-m", "dask_cuda.cli", address, "--nthreads", "1"]


@contextlib.contextmanager
def hand_started_workers(setup: Setup, address: str, workers: int, log_path: Path) -> Iterator[subprocess.Popen]:
    """Start workers by hand in their own process group; terminate the group on leaving.

    Parameters
    ----------
    setup : Setup
    address : str
        The scheduler's address.
    workers : int
        GPU workers (= GPUs, CUDA_VISIBLE_DEVICES=first ``workers`` devices).
    log_path : Path
        The processes' output is appended here.
    """
    env = dict(os.environ)
    if not setup.smoke:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(setup.devices[:workers])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as output:
        process = subprocess.Popen(
            hand_worker_command(setup, address, workers),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop_process_group(process)


def stop_process_group(process: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM the group this benchmark started, SIGKILL it after ``grace`` seconds."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --------------------------------------------------------------------------------------------
# startup
# --------------------------------------------------------------------------------------------


def time_gpujobqueue_startup(setup: Setup, cluster: LocalGPUCluster, client: Client, gpus: int) -> dict[str, float]:
    """One round of gpujobqueue: ``scale(gpus=N)`` to N workers, then ``scale(0)`` to none."""
    seconds = start_gpu_workers(cluster, client, gpus, setup.timeout)
    start = time.perf_counter()
    cluster.scale(0)
    wait_for_worker_count(client, 0, setup.timeout)
    return {"seconds": seconds, "stop_seconds": time.perf_counter() - start}


def time_hand_startup(setup: Setup, address: str, client: Client, gpus: int, log_path: Path) -> dict[str, float]:
    """One round by hand: ``Popen`` of the worker command to N workers, then terminate it."""
    start = time.perf_counter()
    with hand_started_workers(setup, address, gpus, log_path) as process:
        try:
            client.wait_for_workers(gpus, timeout=setup.timeout)
        except Exception as error:
            raise RuntimeError(
                f"the hand-started workers did not connect within {setup.timeout} s (exit code {process.poll()}); "
                f"see {log_path}"
            ) from error
        seconds = time.perf_counter() - start
        stopping = time.perf_counter()
    wait_for_worker_count(client, 0, setup.timeout)
    return {"seconds": seconds, "stop_seconds": time.perf_counter() - stopping}


def run_startup(setup: Setup, args: argparse.Namespace, record: dict[str, Any], report: Report) -> None:
    """Alternate gpujobqueue and the hand-started workers on all N devices, ``--repeats`` rounds."""
    gpus = len(setup.devices)
    record.update(
        gpus=gpus,
        gpujobqueue=[],
        by_hand=[],
        hand_command=hand_worker_command(setup, "ADDRESS", gpus),
        gpujobqueue_cluster=f"LocalGPUCluster(gpus_per_node={gpus}, protocol='tcp'); scale(gpus={gpus})",
    )
    log_path = Path(args.out) / "logs" / "startup-by-hand.log"
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(gpujobqueue_cluster(setup, "startup", gpus, protocol="tcp"))
        client = stack.enter_context(Client(cluster))
        scheduler = stack.enter_context(LocalCluster(n_workers=0, protocol="tcp://", dashboard_address=":0"))
        hand_client = stack.enter_context(Client(scheduler))
        sides: dict[str, Callable[[], dict[str, float]]] = {
            "gpujobqueue": lambda: time_gpujobqueue_startup(setup, cluster, client, gpus),
            "by_hand": lambda: time_hand_startup(setup, scheduler.scheduler_address, hand_client, gpus, log_path),
        }
        # One untimed start by hand first, so that no timed round pays for a cold file cache alone.
        record["warmup_by_hand"] = time_hand_startup(setup, scheduler.scheduler_address, hand_client, gpus, log_path)
        log(f"startup warm-up by hand {record['warmup_by_hand']['seconds']:.2f} s (not counted)")
        try:
            for round_number in range(args.repeats):
                order = list(sides) if round_number % 2 == 0 else list(reversed(sides))
                for side in order:
                    result = sides[side]()
                    record[side].append(result)
                    log(
                        f"startup round {round_number + 1}/{args.repeats} {side:11s} {result['seconds']:.2f} s "
                        f"to {gpus} workers (stopped in {result['stop_seconds']:.2f} s)"
                    )
                    report.save()
        finally:  # the rounds done so far still give medians if a later one fails
            if record["gpujobqueue"] and record["by_hand"]:
                medians = {side: median([r["seconds"] for r in record[side]]) for side in sides}
                record.update(medians=medians, ratio=medians["gpujobqueue"] / medians["by_hand"])


# --------------------------------------------------------------------------------------------
# transfer
# --------------------------------------------------------------------------------------------


def make_filled(module: str, nbytes: int, value: float) -> Any:
    """A float32 array of ``nbytes`` bytes, every element ``value`` (runs on the sending worker)."""
    import importlib

    xp = importlib.import_module(module)
    return xp.full(nbytes // 4, value, dtype=xp.float32)


def last_element(array: Any) -> float:
    """The array's last element as a float (runs on the receiving worker)."""
    return float(array[-1])


def incoming_transfers_of(key: Any, dask_worker: Any = None) -> list[dict[str, Any]]:
    """The entries of this worker's ``transfer_incoming_log`` that carried ``key``."""
    return [
        {name: entry.get(name) for name in ("total", "duration", "bandwidth", "who", "start", "stop")}
        | {"keys": len(entry.get("keys", {}))}
        for entry in list(dask_worker.transfer_incoming_log)
        if key in entry.get("keys", {})
    ]


def worker_devices(dask_worker: Any = None) -> dict[str, Any]:
    """A worker's CUDA_VISIBLE_DEVICES and, where cupy runs, its GPU's PCI id."""
    import os

    facts: dict[str, Any] = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
    with contextlib.suppress(Exception):
        import cupy

        facts["pci"] = cupy.cuda.Device().pci_bus_id
    return facts


def one_transfer(setup: Setup, client: Client, source: str, target: str, nbytes: int, value: float) -> dict[str, Any]:
    """Make an array on ``source``, use it on ``target``; the target's log gives the bandwidth."""
    made = client.submit(
        make_filled, setup.array_module, nbytes, value, workers=[source], allow_other_workers=False, pure=False
    )
    wait(made, timeout=setup.timeout)
    start = time.perf_counter()
    used = client.submit(last_element, made, workers=[target], allow_other_workers=False, pure=False)
    got = used.result(timeout=setup.timeout)
    wall = time.perf_counter() - start
    entries = client.run(incoming_transfers_of, made.key, workers=[target])[target]
    client.cancel([made, used])
    if got != value:
        raise AssertionError(f"the receiving worker read {got}, the sender wrote {value}")
    if not entries:
        raise RuntimeError(
            f"no entry in {target}'s transfer_incoming_log carries {made.key}: the array did not move between workers"
        )
    total = sum(e["total"] for e in entries)
    duration = sum(e["duration"] for e in entries)
    return {
        "bytes": nbytes,
        "log_total_bytes": total,
        "log_duration_s": duration,
        "log_GBps": total / duration / 1e9,
        "wall_s": wall,
        "wall_GBps": nbytes / wall / 1e9,
        "source": source,
        "target": target,
        "entries": entries,
    }


def measure_transfers(setup: Setup, label: str, keywords: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Start a 2-GPU LocalGPUCluster with ``keywords`` and time every transfer size ``repeats`` times."""
    result: dict[str, Any] = {"keywords": keywords, "sizes": {}}
    with gpujobqueue_cluster(setup, f"transfer-{label}", 2, **keywords) as cluster, Client(cluster) as client:
        result["scheme"] = scheme(cluster.scheduler_address)
        log(
            f"transfer {label}: LocalGPUCluster(gpus_per_node=2{''.join(f', {k}={v!r}' for k, v in keywords.items())}) "
            f"scheduler at {cluster.scheduler_address}"
        )
        result["startup_s"] = start_gpu_workers(cluster, client, 2, setup.timeout)
        source, target = worker_addresses(client)[:2]
        result["workers"] = {address: facts for address, facts in client.run(worker_devices).items()}
        result["warmup"] = one_transfer(setup, client, source, target, 1 * MiB, 1.0)  # connects the two workers
        for nbytes in setup.transfer_sizes:
            rows = [one_transfer(setup, client, source, target, nbytes, float(i + 2)) for i in range(repeats)]
            size = size_label(nbytes)
            result["sizes"][size] = {
                "rows": rows,
                "median_log_GBps": median([r["log_GBps"] for r in rows]),
                "median_wall_s": median([r["wall_s"] for r in rows]),
            }
            log(
                f"transfer {label} ({result['scheme']}) {size:>7s}: {result['sizes'][size]['median_log_GBps']:.2f} "
                f"GB/s (worker log, median of {repeats}), wall {result['sizes'][size]['median_wall_s']:.3f} s"
            )
    return result


def size_label(nbytes: int) -> str:
    """``"256 MiB"``, ``"4 GiB"``."""
    return f"{nbytes // GiB} GiB" if nbytes >= GiB and nbytes % GiB == 0 else f"{nbytes / MiB:g} MiB"


def ucx_unavailable(setup: Setup) -> str | None:
    """Why UCX cannot be measured here, or None when it can."""
    if setup.smoke:
        return "smoke mode: UCX needs a GPU for the scheduler's CUDA context"
    if importlib.util.find_spec("distributed_ucxx") is None:
        return "distributed-ucxx is not installed"
    return None


def run_transfer(setup: Setup, args: argparse.Namespace, record: dict[str, Any], report: Report) -> None:
    """TCP, the default protocol, and UCX where the default is not UCX."""
    if len(setup.devices) < 2:
        record["status"] = "skipped"
        record["reason"] = f"needs two GPUs, this machine has {len(setup.devices)}"
        return
    record.update(
        sizes=[size_label(n) for n in setup.transfer_sizes], repeats=args.transfer_repeats, configs={}, errors={}
    )
    plans = [("tcp", {"protocol": "tcp"}), ("default", {})]
    for label, keywords in plans:
        run_recorded(record, label, lambda: measure_transfers(setup, label, keywords, args.transfer_repeats), report)
    default_scheme = record["configs"].get("default", {}).get("scheme")
    log(
        "transfer: gpujobqueue's default protocol here is "
        f"{default_scheme + '://' if default_scheme else 'unknown (its cluster failed)'}"
    )
    record["default_scheme"] = default_scheme
    reason = "the default is UCX already" if default_scheme == "ucx" else ucx_unavailable(setup)
    if reason:
        record["ucx_skipped"] = reason
        log(f"transfer ucx: skipped ({reason})")
    else:
        run_recorded(
            record, "ucx", lambda: measure_transfers(setup, "ucx", {"protocol": "ucx"}, args.transfer_repeats), report
        )


def run_recorded(record: dict[str, Any], label: str, measure: Callable[[], dict[str, Any]], report: Report) -> None:
    """Run one measurement into ``record["configs"][label]``; on error record it and go on."""
    try:
        record["configs"][label] = measure()
    except Exception as error:
        record["errors"][label] = error_record(error)
        log(f"{label}: FAILED {type(error).__name__}: {error}")
    report.save()


# --------------------------------------------------------------------------------------------
# svd
# --------------------------------------------------------------------------------------------


def random_state(setup: Setup, seed: int | None = None) -> Any:
    """A dask RandomState whose blocks are cupy (or numpy) arrays."""
    return da.random.RandomState(seed, RandomState=setup.xp().random.RandomState)


def persisted_svd(setup: Setup, client: Client, x: Any) -> tuple[float, list[Any], Any]:
    """Persist u, s and v of ``x``; return the seconds, the keys of u, s and v, and s."""
    start = time.perf_counter()
    u, s, v = client.persist(list(da.linalg.svd(x)))
    wait([u, s, v], timeout=setup.timeout)
    seconds = time.perf_counter() - start
    return seconds, [future.key for future in futures_of([u, s, v])], s.compute()


def scheduler_holds(keys: list[Any], dask_scheduler: Any = None) -> int:
    """How many of ``keys`` the scheduler still knows (runs on the scheduler)."""
    return sum(key in dask_scheduler.tasks for key in keys)


def wait_until_forgotten(client: Client, keys: list[Any], timeout: float) -> None:
    """Wait until the scheduler has forgotten ``keys``, so that asking for them again recomputes them."""
    deadline = time.perf_counter() + timeout
    while client.run_on_scheduler(scheduler_holds, keys):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the scheduler still holds results of the previous SVD after {timeout} s")
        time.sleep(0.02)


def timed_svd(setup: Setup, client: Client, x: Any, frobenius2: float) -> dict[str, float]:
    """One SVD of ``x`` timed; checks sum(s**2) = ||x||_F**2 and waits until its results are released."""
    seconds, keys, singular = persisted_svd(setup, client, x)  # the futures die with that call's frame
    wait_until_forgotten(client, keys, setup.timeout)
    error = abs(float((singular**2).sum()) - frobenius2) / frobenius2
    if error > 1e-8:
        raise AssertionError(f"sum of squared singular values is off ||x||_F^2 by {error:.1e} (relative)")
    return {"seconds": seconds, "relative_error": error}


# A trial (benchmarks/ucx_peer_worker.py): the scheduler and nannies on TLS, the workers listening on UCX.
UCX_PEERS_KEYWORDS: dict[str, Any] = {"protocol": "tcp", "worker_extra_args": ["--worker-class", UCX_PEER_WORKER]}

# The SVD's configurations by name: gpujobqueue's keywords, or None for dask-cuda's LocalCUDACluster.
SVD_CONFIGS: dict[str, dict[str, Any] | None] = {
    "default": {},
    "tcp": {"protocol": "tcp"},
    "ucx-peers": UCX_PEERS_KEYWORDS,
    "LocalCUDACluster": None,
}


def measure_svd(setup: Setup, label: str, keywords: dict[str, Any] | None, gpus: int, repeats: int) -> dict[str, Any]:
    """A LocalGPUCluster with ``keywords`` (LocalCUDACluster for None): the input persisted, one
    warm-up SVD, ``repeats`` timed."""
    result: dict[str, Any] = {"keywords": keywords, "gpus": gpus, "rows": []}
    with contextlib.ExitStack() as stack:
        if keywords is None:
            cluster = stack.enter_context(reference_cluster(setup, gpus))
            client = stack.enter_context(Client(cluster))
            start = time.perf_counter()
            client.wait_for_workers(gpus, timeout=setup.timeout)
            result["startup_s"] = time.perf_counter() - start
        else:
            cluster = stack.enter_context(gpujobqueue_cluster(setup, f"svd-{label}-{gpus}", gpus, **keywords))
            client = stack.enter_context(Client(cluster))
            result["startup_s"] = start_gpu_workers(cluster, client, gpus, setup.timeout)
        result["scheme"] = scheme(cluster.scheduler_address)
        result["worker_schemes"] = worker_schemes(client)
        x = random_state(setup, 42).random_sample(setup.svd_shape, chunks=setup.svd_chunks).persist()
        wait(x, timeout=setup.timeout)
        frobenius2 = float((x**2).sum().compute())
        result["warmup"] = timed_svd(setup, client, x, frobenius2)
        log(f"svd {label} {gpus} GPU(s) ({result['scheme']}): warm-up {result['warmup']['seconds']:.3f} s")
        for i in range(repeats):
            result["rows"].append(timed_svd(setup, client, x, frobenius2))
            seconds = result["rows"][-1]["seconds"]
            log(f"svd {label} {gpus} GPU(s) ({result['scheme']}) {i + 1}/{repeats}: {seconds:.3f} s")
    result["median_s"] = median([r["seconds"] for r in result["rows"]])
    return result


def run_svd(setup: Setup, args: argparse.Namespace, record: dict[str, Any], report: Report) -> None:
    """Each of ``--svd-configs`` on each GPU count of ``--gpus`` from two (two, or one where the
    machine has one, when none is)."""
    counts = [g for g in args.gpus if 2 <= g <= len(setup.devices)] or [min(2, len(setup.devices))]
    record.update(shape=setup.svd_shape, chunks=setup.svd_chunks, gpu_counts=counts, configs={}, errors={})
    for gpus in counts:
        for label in args.svd_configs:
            keywords = SVD_CONFIGS[label]
            if setup.smoke and label == "ucx-peers":
                continue  # no UCX in smoke runs
            run_recorded(
                record, f"{label} {gpus}", lambda: measure_svd(setup, label, keywords, gpus, args.svd_repeats), report
            )


# --------------------------------------------------------------------------------------------
# sum
# --------------------------------------------------------------------------------------------


def timed_sum(setup: Setup, size: int, chunk: int) -> dict[str, float]:
    """``(x + 1)[::2, ::2].sum()`` of normal(10, 1): seconds, and the sum checked to 0.1 %."""
    x = random_state(setup).normal(10, 1, size=(size, size), chunks=(chunk, chunk))
    start = time.perf_counter()
    total = float((x + 1)[::2, ::2].sum().compute())
    seconds = time.perf_counter() - start
    expected = 11.0 * math.ceil(size / 2) ** 2
    error = abs(total - expected) / expected
    if error > 1e-3:
        raise AssertionError(f"sum {total:.6g}, expected about {expected:.6g} (off by {error:.2%})")
    return {"seconds": seconds, "sum": total, "relative_error": error}


# CuPy's per-thread default stream: each worker thread's kernels on a stream of its own.
PTDS_ENVIRONMENT = {"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}


def measure_sum(
    setup: Setup, tool: str, gpus: int, nthreads: int, size: int, repeats: int, ptds: bool = False
) -> dict[str, Any]:
    """A fresh cluster of ``gpus`` workers (gpujobqueue or LocalCUDACluster) and ``repeats`` sums;
    ``ptds`` runs gpujobqueue's workers with CuPy's per-thread default stream."""
    chunk = min(setup.sum_chunk, size)
    row: dict[str, Any] = {
        "tool": tool + (" ptds" if ptds else ""),
        "gpus": gpus,
        "nthreads": nthreads,
        "default_threads": nthreads == 0,
        "size": size,
        "chunk": chunk,
        "runs": [],
    }
    start = time.perf_counter()
    if tool == "gpujobqueue":
        extra = {"environment": PTDS_ENVIRONMENT} if ptds else {}
        if nthreads:  # 0: gpujobqueue's default
            extra["nthreads"] = nthreads
        cluster = gpujobqueue_cluster(
            setup, f"sum-{gpus}gpus-{nthreads or 'default'}threads{'-ptds' if ptds else ''}", gpus, **extra
        )
        row["nthreads"] = cluster.launch.nthreads
    else:
        cluster = reference_cluster(setup, gpus)
    with cluster, Client(cluster) as client:
        if tool == "gpujobqueue":
            start_gpu_workers(cluster, client, gpus, setup.timeout)
        else:
            client.wait_for_workers(gpus, timeout=setup.timeout)
        row["startup_s"] = time.perf_counter() - start
        row["scheme"] = scheme(cluster.scheduler_address)
        for _ in range(repeats):
            row["runs"].append(timed_sum(setup, size, chunk))
            log(
                f"sum {row['tool']:16s} {gpus} GPU(s) nthreads={row['nthreads']} ({row['scheme']}): "
                f"{row['runs'][-1]['seconds']:.2f} s"
            )
    # With --sum-repeats above 1 the first sum also pays each fresh worker's first use of its
    # kernels; the figure is then the median of the later (warm) sums, the first kept apart.
    seconds = [r["seconds"] for r in row["runs"]]
    row["first_s"] = seconds[0]
    row["seconds"] = median(seconds[1:] if len(seconds) > 1 else seconds)
    return row


def add_scaling(rows: list[dict[str, Any]]) -> None:
    """Speedup t1/tg and efficiency t1/(g tg), each against the same tool and nthreads on one GPU."""
    one_gpu = {(r["tool"], r["nthreads"]): r["seconds"] for r in rows if r["gpus"] == 1 and r.get("seconds")}
    for row in rows:
        t1 = one_gpu.get((row["tool"], row["nthreads"]))
        if t1 and row.get("seconds"):
            row["speedup"] = t1 / row["seconds"]
            row["efficiency"] = t1 / (row["gpus"] * row["seconds"])


def run_sum(setup: Setup, args: argparse.Namespace, record: dict[str, Any], report: Report) -> None:
    """For each GPU count: gpujobqueue for each ``--nthreads`` and LocalCUDACluster, alternating which goes first."""
    counts = [g for g in args.gpus if g <= len(setup.devices)]
    left_out = [g for g in args.gpus if g > len(setup.devices)]
    if left_out:
        log(f"sum: GPU counts {left_out} left out, this machine has {len(setup.devices)}")
    record.update(size=args.size, gpu_counts=counts, left_out=left_out, rows=[], errors={})
    for index, gpus in enumerate(counts):
        plans = [("gpujobqueue", n, False) for n in args.nthreads] + [
            ("gpujobqueue", n, True) for n in args.nthreads if args.ptds
        ]
        plans.append(("LocalCUDACluster" if not setup.smoke else "LocalCluster", 1, False))
        if index % 2:
            plans.reverse()  # alternate which tool goes first
        for tool, nthreads, ptds in plans:
            label = f"{tool}{' ptds' if ptds else ''} {gpus} GPU(s) nthreads={nthreads}"
            try:
                record["rows"].append(measure_sum(setup, tool, gpus, nthreads, args.size, args.sum_repeats, ptds))
            except Exception as error:
                record["errors"][label] = error_record(error)
                log(f"sum {label}: FAILED {type(error).__name__}: {error}")
            add_scaling(record["rows"])
            report.save()


# --------------------------------------------------------------------------------------------
# The summary table
# --------------------------------------------------------------------------------------------


def goal_mark(met: bool | None, smoke: bool) -> str:
    """``met`` / ``NOT met``, or ``n/a`` (smoke mode, or nothing measured)."""
    if smoke or met is None:
        return "n/a"
    return "met" if met else "NOT met"


def table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Rows of cells as aligned lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    return [
        indent
        + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]


def number(value: float | None, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or ``-``."""
    return "-" if value is None else f"{value:.{digits}f}"


def summarise_startup(record: dict[str, Any], smoke: bool) -> list[str]:
    """Lines for the startup section."""
    medians = record.get("medians")
    if not medians:
        return []
    record["goal_met"] = None if smoke else record["ratio"] <= GOALS["startup_ratio"]
    rounds = len(record["gpujobqueue"])
    return [f"startup: {record['gpus']} GPU workers registered, median of {rounds} rounds (s)"] + table(
        [
            ["", "median", "all rounds"],
            [
                "gpujobqueue LocalGPUCluster (tcp)",
                number(medians["gpujobqueue"]),
                " ".join(number(r["seconds"]) for r in record["gpujobqueue"]),
            ],
            [
                "by hand: " + record["hand_command"][2],
                number(medians["by_hand"]),
                " ".join(number(r["seconds"]) for r in record["by_hand"]),
            ],
            [
                "ratio gpujobqueue / by hand",
                number(record["ratio"]),
                f"goal <= {GOALS['startup_ratio']}: {goal_mark(record['goal_met'], smoke)}",
            ],
        ]
    )


def summarise_transfer(record: dict[str, Any], smoke: bool) -> list[str]:
    """Lines for the transfer section: GB/s from the receiving worker's log per size and config."""
    configs = record.get("configs") or {}
    if not configs:
        return []
    sizes = list(next(iter(configs.values()))["sizes"])
    rows = [["config"] + [f"{s} GB/s" for s in sizes] + [f"{sizes[-1]} wall s"]]
    for label, result in configs.items():
        got = result["sizes"]
        rows.append(
            [f"{label} ({result['scheme']})"]
            + [number(got.get(s, {}).get("median_log_GBps")) for s in sizes]
            + [number(got.get(sizes[-1], {}).get("median_wall_s"), 3)]
        )
    if "tcp" in configs and "default" in configs:
        tcp, default = configs["tcp"]["sizes"], configs["default"]["sizes"]
        rows.append(
            ["default / tcp"]
            + [
                number(default[s]["median_log_GBps"] / tcp[s]["median_log_GBps"], 1) + "x"
                if s in tcp and s in default
                else "-"
                for s in sizes
            ]
        )
    at_4 = configs.get("default", {}).get("sizes", {}).get("4 GiB", {}).get("median_log_GBps")
    record["goal_met"] = None if smoke or at_4 is None else at_4 >= GOALS["transfer_default_4GiB_GBps"]
    lines = [
        "transfer: worker to worker, bandwidth from the receiving worker's transfer_incoming_log "
        f"(total / duration), median of {record.get('repeats', '?')}"
    ]
    lines += table(rows)
    if record.get("ucx_skipped"):
        lines.append(f"  ucx skipped: {record['ucx_skipped']}")
    lines.append(
        f"  goal >= {GOALS['transfer_default_4GiB_GBps']:g} GB/s at 4 GiB with the default: "
        f"{goal_mark(record['goal_met'], smoke)}"
    )
    return lines


def summarise_svd(record: dict[str, Any], smoke: bool) -> list[str]:
    """Lines for the svd section: each configuration per GPU count, and its time over LocalCUDACluster's."""
    configs = record.get("configs") or {}
    if not configs:
        return []
    rows = [["config", "GPUs", "median s", "all s", "warm-up s", "/ LocalCUDACluster"]]
    for key, result in configs.items():
        label = key.rsplit(" ", 1)[0]
        reference = configs.get(f"LocalCUDACluster {result['gpus']}", {}).get("median_s")
        rows.append(
            [
                f"{label} ({result['scheme']}, workers {'/'.join(result.get('worker_schemes', []))})",
                str(result["gpus"]),
                number(result["median_s"], 3),
                " ".join(number(r["seconds"], 3) for r in result["rows"]),
                number(result["warmup"]["seconds"], 3),
                number(result["median_s"] / reference) if reference else "",
            ]
        )
    smallest = min(record["gpu_counts"])
    default = configs.get(f"default {smallest}", {}).get("median_s")
    record["goal_met"] = None if smoke or default is None else default <= GOALS["svd_default_seconds"]
    ratios = [
        configs[f"default {g}"]["median_s"] / configs[f"LocalCUDACluster {g}"]["median_s"]
        for g in record["gpu_counts"]
        if g >= 2 and f"default {g}" in configs and f"LocalCUDACluster {g}" in configs
    ]
    record["versus_reference_goal_met"] = None if smoke or not ratios else max(ratios) <= GOALS["svd_versus_reference"]
    shape, chunks = record["shape"], record["chunks"]
    return (
        [f"svd: da.linalg.svd of {shape[0]} x {shape[1]} ({chunks[0]} x {chunks[1]} chunks), u, s, v persisted"]
        + table(rows)
        + [
            f"  goal <= {GOALS['svd_default_seconds']} s with the default on {smallest} GPU(s): "
            f"{goal_mark(record['goal_met'], smoke)}; the default <= {GOALS['svd_versus_reference']} x "
            f"LocalCUDACluster's time on each count from 2 GPUs: "
            f"{goal_mark(record['versus_reference_goal_met'], smoke)}"
        ]
    )


def fixed_part(points: dict[int, float]) -> tuple[float, float, float]:
    """Least squares of t = a + b / g through ``points`` ({GPUs: seconds}, two counts or more):
    a (the part that more GPUs do not shorten), b, and the largest residual."""
    import numpy

    inverse = numpy.array([1 / g for g in points])
    seconds = numpy.array(list(points.values()))
    slope, intercept = numpy.polyfit(inverse, seconds, 1)
    residual = numpy.abs(seconds - (intercept + slope * inverse)).max()
    return float(intercept), float(slope), float(residual)


def sum_fits_and_goals(rows: list[dict[str, Any]], reference: dict[int, float], smoke: bool) -> tuple[list[str], dict]:
    """The fitted fixed part of each tool and nthreads over its GPU counts, and issue 34's goals for
    gpujobqueue's default row: fixed part, efficiency on the most GPUs, and time over the reference's."""
    groups: dict[tuple[str, int, bool], dict[int, float]] = {}
    for r in rows:
        if r.get("seconds"):
            groups.setdefault((r["tool"], r["nthreads"], r.get("default_threads", False)), {})[r["gpus"]] = r["seconds"]
    lines, goals = [], {}
    for (tool, nthreads, default_threads), points in groups.items():
        if len(points) < 2:
            continue
        a, b, residual = fixed_part(points)
        lines.append(
            f"  fit t = a + b/g over {','.join(map(str, sorted(points)))} GPUs, {tool} nthreads={nthreads}: "
            f"a = {a:.2f} s, b = {b:.2f} s, largest residual {residual:.2f} s"
        )
        if tool == "gpujobqueue" and default_threads:
            most = max(points)
            ones = [r for r in rows if r["tool"] == tool and r.get("default_threads") and r["gpus"] == most]
            goals["fixed_part"] = a <= GOALS["sum_fixed_part_seconds"]
            if 1 in points and ones and ones[0].get("efficiency") is not None:
                goals["efficiency"] = ones[0]["efficiency"] >= GOALS["sum_efficiency_most_gpus"]
            if all(g in reference for g in points):
                goals["versus_reference"] = all(
                    points[g] / reference[g] <= GOALS["sum_versus_reference"] for g in points
                )
    if goals:
        lines.append(
            f"  goals (gpujobqueue, default threads): fixed part <= {GOALS['sum_fixed_part_seconds']} s: "
            f"{goal_mark(goals.get('fixed_part'), smoke)}; efficiency >= {GOALS['sum_efficiency_most_gpus']} on "
            f"the most GPUs: {goal_mark(goals.get('efficiency'), smoke)}; <= {GOALS['sum_versus_reference']} x "
            f"the reference's time at each count: {goal_mark(goals.get('versus_reference'), smoke)}"
        )
    return lines, goals


def summarise_sum(record: dict[str, Any], smoke: bool) -> list[str]:
    """Lines for the sum section: seconds, speedup and efficiency per tool, GPU count and nthreads."""
    rows = record.get("rows") or []
    if not rows:
        return []
    reference = {r["gpus"]: r["seconds"] for r in rows if not r["tool"].startswith("gpujobqueue")}
    warm = any(len(r["runs"]) > 1 for r in rows)
    cells = [
        [
            "tool",
            "GPUs",
            "nthreads",
            "protocol",
            "warm s" if warm else "seconds",
            "first s",
            "speedup",
            "efficiency",
            "/ reference",
        ]
    ]
    for r in sorted(rows, key=lambda r: (not r["tool"].startswith("gpujobqueue"), r["tool"], r["nthreads"], r["gpus"])):
        versus = (
            number(r["seconds"] / reference[r["gpus"]])
            if r["tool"].startswith("gpujobqueue") and r["gpus"] in reference
            else ""
        )
        cells.append(
            [
                r["tool"],
                str(r["gpus"]),
                str(r["nthreads"]),
                r["scheme"],
                number(r["seconds"]),
                number(r.get("first_s")),
                number(r.get("speedup")),
                number(r.get("efficiency")),
                versus,
            ]
        )
    size = record["size"]
    nbytes = size * size * 8
    amount = f"{nbytes / 1e12:.2f} TB" if nbytes >= 1e11 else format_bytes(nbytes)
    fits, goals = sum_fits_and_goals(rows, reference, smoke)
    record["goal_met"] = None if smoke or not goals else all(goals.values())
    record["goals"] = goals
    return (
        [f"sum: (x + 1)[::2, ::2].sum() of {size} x {size} normal(10, 1) ({amount}), fresh cluster per row"]
        + table(cells)
        + fits
    )


SUMMARIES = {"startup": summarise_startup, "transfer": summarise_transfer, "svd": summarise_svd, "sum": summarise_sum}
RUNNERS = {"startup": run_startup, "transfer": run_transfer, "svd": run_svd, "sum": run_sum}


def print_summary(report: Report, smoke: bool) -> None:
    """The table printed last: medians, ratios and goals of every section run."""
    print("\n== summary" + (" (smoke mode: numpy on CPU workers; goals not judged)" if smoke else ""), flush=True)
    for name, record in report.sections.items():
        try:
            lines = SUMMARIES[name](record, smoke)
        except Exception as error:  # a summary must never hide the numbers already saved
            lines = [f"{name}: could not summarise ({type(error).__name__}: {error})"]
        if record.get("status") == "error":
            lines.append(f"{name}: FAILED {record['error']}")
        if record.get("status") == "skipped":
            lines.append(f"{name}: skipped ({record.get('reason')})")
        for label, error in (record.get("errors") or {}).items():
            lines.append(f"{name} {label}: FAILED {error['error'].splitlines()[0]}")
        for line in lines:
            print(line)
    print(f"raw numbers: {report.path}", flush=True)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def int_list(text: str, minimum: int = 1) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``."""
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or any(v < minimum for v in values):
        raise argparse.ArgumentTypeError(f"expected integers of {minimum} or more separated by commas, got {text!r}")
    return values


def section_list(text: str) -> list[str]:
    """``"startup,sum"`` -> ``["startup", "sum"]``, in the given order."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {unknown}; choose from {','.join(SECTIONS)}")
    return names


def svd_config_list(text: str) -> list[str]:
    """``default,LocalCUDACluster``: names of SVD_CONFIGS."""
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in SVD_CONFIGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"not an SVD configuration: {','.join(unknown)} (from {','.join(SVD_CONFIGS)})"
        )
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sections",
        type=section_list,
        default=list(SECTIONS),
        help=f"comma-separated, from {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--out",
        default=os.environ.get("OUT") or "/tmp/gpujobqueue-bench",
        help="directory for gpu-benchmarks.json (default $OUT, else /tmp/gpujobqueue-bench)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="startup rounds, each side once per round (default 5)")
    parser.add_argument("--transfer-repeats", type=int, default=3, help="transfers per size (default 3)")
    parser.add_argument("--svd-repeats", type=int, default=3, help="timed SVDs after the warm-up (default 3)")
    parser.add_argument(
        "--svd-configs",
        type=svd_config_list,
        default=["default", "tcp", "LocalCUDACluster"],
        help=f"SVD configurations, from {','.join(SVD_CONFIGS)} (default: default,tcp,LocalCUDACluster)",
    )
    parser.add_argument(
        "--gpus",
        type=int_list,
        default=[1, 2, 4],
        help="GPU counts for the sum (default 1,2,4; those above the machine's are left out)",
    )
    parser.add_argument(
        "--size", type=int, default=None, help="side of the sum's square array (default 500000; 4000 with --smoke)"
    )
    parser.add_argument("--sum-repeats", type=int, default=1, help="sums per cluster (default 1)")
    parser.add_argument(
        "--nthreads",
        type=lambda text: int_list(text, minimum=0),
        default=[0],
        help="threads per gpujobqueue worker in the sum, one row each; 0 is gpujobqueue's default (default 0)",
    )
    parser.add_argument(
        "--ptds",
        action="store_true",
        help=(
            "also run each --nthreads row with CuPy's per-thread default stream (CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1)"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds for any one wait or computation (default 300; 60 with --smoke)",
    )
    parser.add_argument("--smoke", action="store_true", help="no GPUs: numpy, CPU workers, tiny sizes, UCX skipped")
    args = parser.parse_args(argv)
    if args.size is None:
        args.size = 4000 if args.smoke else 500_000
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections, print the summary, return 1 if anything failed."""
    args = parse_args(argv)
    setup = Setup.detect(args.smoke, args.timeout, args.out)
    meta = {
        "started": datetime.datetime.now().astimezone().isoformat(),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "versions": versions(),
        "gpus": nvidia_smi("-L"),
        "topology": nvidia_smi("topo", "-m"),
        "setup": asdict(setup),
        "args": vars(args),
    }
    report = Report(Path(args.out) / "gpu-benchmarks.json", meta)
    log(
        f"gpujobqueue GPU benchmarks: sections {','.join(args.sections)}; devices {setup.devices} "
        f"({'smoke, numpy on CPU' if setup.smoke else 'cupy'}); "
        f"dask {dask.__version__}, distributed {distributed.__version__}; JSON to {report.path}"
    )
    for line in meta["gpus"]:
        log(line)
    for name in args.sections:
        record = report.section(name)
        log(f"== {name}")
        started = time.perf_counter()
        try:
            RUNNERS[name](setup, args, record, report)
            if record["status"] == "running":
                record["status"] = "ok"
        except Exception as error:
            record.update(status="error", **error_record(error))
            log(f"{name}: FAILED {type(error).__name__}: {error}")
        record["section_seconds"] = time.perf_counter() - started
        report.save()
    report.meta["finished"] = datetime.datetime.now().astimezone().isoformat()
    print_summary(report, setup.smoke)
    report.save()
    return 1 if report.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
