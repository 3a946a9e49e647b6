"""Issue 34: what UCX costs a scheduler's process when the scheduler talks to its workers over it.

Four sides, each in a fresh process (UCX starts once per process, and its progress mode is read
when it starts), each a scheduler here (``LocalCluster(n_workers=0)``) with two ``dask worker``
processes of one thread:

tcp
    scheduler and workers on TCP;
tls
    scheduler and workers on TLS, with a CA, certificate and key made as gpujobqueue's clusters
    make them (its default for batch clusters);
ucx
    scheduler and workers on UCX (distributed-ucxx), as ``protocol="ucx"`` clusters run;
peers
    scheduler and nannies on TLS, workers listening on UCX for each other's data
    (``--worker-class benchmarks.ucx_peer_worker.UCXPeerWorker``, a trial).

Each side measures the CPU seconds of the scheduler's process (which also holds the client, as a
LocalGPUCluster's does) and of the workers' processes (nannies and workers): over 5 idle seconds
before any result was fetched, again after one (an 80 MB array moved from one worker to the
other, then its sum fetched: the scheduler connects to a worker to fetch it), and over
``--repeats`` rounds of ``--tasks`` tiny tasks (with their wall time). In the scheduler's process
it also counts the calls of ucxx's blocking-mode callback for the UCX worker's epoll descriptor
over the idle seconds after the result ("callbacks idle"). Each side also records its workers'
addresses and where the transfer came from (the receiving worker's own log), so a side that did
not use the protocol it names shows it.

Runs without GPUs: ``UCX_TLS=tcp`` (set here unless given) and no CUDA context
(``distributed-ucxx.create-cuda-context: false``), with distributed-ucxx installed::

    python benchmarks/ucx_control_plane.py                 # the three sides, blocking progress
    UCXPY_PROGRESS_MODE=thread python benchmarks/ucx_control_plane.py --sides ucx,peers

A table of medians comes last; every number goes to ``ucx-control-plane.json`` in ``--out``
(default ``$OUT``, else /tmp/gpujobqueue-bench).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ucx_peer_worker import WORKER_CLASS as PEER_WORKER  # noqa: E402

SIDES = ("tcp", "tls", "ucx", "peers")


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds of processes ``pids`` and their children (a worker's nanny and its worker)."""
    import psutil

    total = 0.0
    for pid in pids:
        parent = psutil.Process(pid)
        for process in [parent, *parent.children(recursive=True)]:
            times = process.cpu_times()
            total += times.user + times.system
    return total


def idle_cpu(worker_pids: list[int], seconds: float = 5.0) -> tuple[float, float]:
    """CPU seconds of this process and of the workers' processes over ``seconds`` idle."""
    start, workers_start = process_cpu(), tree_cpu(worker_pids)
    time.sleep(seconds)
    return process_cpu() - start, tree_cpu(worker_pids) - workers_start


def count_progress_callbacks() -> dict[str, int]:
    """Count, in this process, the calls of ucxx's blocking-mode callback for the UCX worker's
    epoll descriptor (asyncio calls it whenever the descriptor is readable); a measurement only."""
    calls = {"count": 0}
    try:
        from ucxx._lib_async import continuous_ucx_progress
    except ImportError:
        return calls
    original = continuous_ucx_progress.BlockingMode._fd_reader_callback

    def counted(self: Any) -> None:
        calls["count"] += 1
        original(self)

    continuous_ucx_progress.BlockingMode._fd_reader_callback = counted
    return calls


def incoming_peers(dask_worker: Any) -> list[str]:
    return [entry["who"] for entry in dask_worker.transfer_incoming_log]


def identity(i: int) -> int:
    return i


def tls_files(folder: str) -> tuple[Any, list[str]]:
    """A CA, certificate and key made as gpujobqueue makes them for its clusters: the scheduler's
    and client's Security, and the workers' command-line options."""
    from distributed.security import Security

    from gpujobqueue.security.tls import make_credentials

    path, _ = make_credentials(folder)
    ca, cert, key = (str(path / name) for name in ("ca.pem", "cert.pem", "key.pem"))
    security = Security(
        tls_ca_file=ca,
        tls_scheduler_cert=cert,
        tls_scheduler_key=key,
        tls_client_cert=cert,
        tls_client_key=key,
        require_encryption=True,
    )
    return security, ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]


def measure_side(side: str, tasks: int, repeats: int) -> dict[str, Any]:
    """One side, in this process: the scheduler here, two worker processes."""
    import tempfile

    import dask
    import numpy as np
    from distributed import Client, LocalCluster

    protocol = {"tcp": "tcp", "ucx": "ucxx"}.get(side, "tls")
    extra = ["--worker-class", PEER_WORKER] if side == "peers" else []
    folder = tempfile.mkdtemp(prefix="ucx-control-plane-")
    security, tls_options = tls_files(folder) if protocol == "tls" else (None, [])
    result: dict[str, Any] = {"side": side, "progress_mode": os.environ.get("UCXPY_PROGRESS_MODE", "blocking")}
    callbacks = count_progress_callbacks()
    with (
        dask.config.set({"distributed-ucxx.create-cuda-context": False}),
        LocalCluster(n_workers=0, protocol=protocol, security=security, dashboard_address=":0") as cluster,
        Client(cluster, security=security) as client,
    ):
        command = [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address]
        command += ["--nthreads", "1", "--no-dashboard", *tls_options, *extra]
        workers = [subprocess.Popen(command, stderr=subprocess.DEVNULL) for _ in range(2)]
        try:
            client.wait_for_workers(2, timeout=120)
            first, second = addresses = list(client.scheduler_info()["workers"])
            result["scheduler"] = cluster.scheduler_address
            result["workers"] = addresses
            pids = [worker.pid for worker in workers]
            result["idle_cpu_before_result"], result["workers_idle_cpu_before_result"] = idle_cpu(pids)
            array = client.submit(np.ones, 10_000_000, workers=[first])
            total = client.submit(np.sum, array, workers=[second])
            assert total.result() == 10_000_000
            result["transfer_from"] = client.run(incoming_peers, workers=[second])[second]
            before = callbacks["count"]
            result["idle_cpu_after_result"], result["workers_idle_cpu_after_result"] = idle_cpu(pids)
            result["progress_callbacks_idle_after_result"] = callbacks["count"] - before
            result["rounds"] = []
            for _ in range(repeats):
                start, cpu, workers_cpu = time.perf_counter(), process_cpu(), tree_cpu(pids)
                assert client.gather(client.map(identity, range(tasks), pure=False)) == list(range(tasks))
                result["rounds"].append(
                    {
                        "wall": time.perf_counter() - start,
                        "cpu": process_cpu() - cpu,
                        "workers_cpu": tree_cpu(pids) - workers_cpu,
                    }
                )
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(60)
            shutil.rmtree(folder, ignore_errors=True)
    result["tasks"] = tasks
    result["median_wall"] = statistics.median(r["wall"] for r in result["rounds"])
    result["median_cpu"] = statistics.median(r["cpu"] for r in result["rounds"])
    result["median_workers_cpu"] = statistics.median(r["workers_cpu"] for r in result["rounds"])
    return result


def run_side_process(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """``side`` in a fresh python; its record, or the error it printed."""
    environment = dict(os.environ)
    environment.setdefault("UCX_TLS", "tcp")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--one-side", side, "--tasks", str(args.tasks), "--repeats", str(args.repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"side": side, "error": done.stderr[-3000:]}
    return json.loads(lines[-1])


def table(records: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"{'side':6} {'mode':9} {'workers':8} {'idle CPU before':>15} {'idle CPU after':>14} {'callbacks idle':>14} "
        f"{'tasks wall s':>12} {'tasks CPU s':>11} {'workers idle CPU after':>22} {'workers tasks CPU':>17}"
    ]
    for record in records:
        if "error" in record:
            lines.append(f"{record['side']:6} FAILED: {record['error'].strip().splitlines()[-1:]}")
            continue
        scheme = record["workers"][0].split("://")[0]
        lines.append(
            f"{record['side']:6} {record['progress_mode']:9} {scheme:8} {record['idle_cpu_before_result']:15.2f} "
            f"{record['idle_cpu_after_result']:14.2f} {record['progress_callbacks_idle_after_result']:14d} "
            f"{record['median_wall']:12.2f} {record['median_cpu']:11.2f} "
            f"{record['workers_idle_cpu_after_result']:22.2f} {record['median_workers_cpu']:17.2f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sides", default=",".join(SIDES), help=f"comma-separated, from {','.join(SIDES)}")
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpujobqueue-bench")
    parser.add_argument("--one-side", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_side:
        print(json.dumps(measure_side(args.one_side, args.tasks, args.repeats)))
        return 0
    records = []
    for side in args.sides.split(","):
        records.append(run_side_process(side, args))
        print(table(records)[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ucx-control-plane.json").write_text(json.dumps(records, indent=1))
    print(
        f"{args.tasks} tiny tasks per round, median of {args.repeats}; CPU seconds of the scheduler's process "
        "(idle: over 5 s) and of the two workers' processes (nannies and workers)"
    )
    print("\n".join(table(records)))
    return 1 if any("error" in record for record in records) else 0


if __name__ == "__main__":
    sys.exit(main())
