"""What the examples share: command-line options, the GPU/CPU choice, result tables and checks.

Nothing here starts a cluster: each example starts its own, in plain sight.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import cloudpickle

from gpujobqueue.machine.gpus import nvidia_gpu_ids

# Functions of this module run on the workers (worker_devices); the workers cannot import
# examples/_common.py, so it travels with the task, as functions of __main__ do.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SIZES = ("small", "medium", "large")

# Exit codes: 0 every check passed; 1 a check failed; 2 bad command line (argparse);
# 3 a package the example needs is missing; 4 the workers lack what the chosen form needs.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_MISSING_PACKAGE = 3
EXIT_WRONG_WORKERS = 4


def parser(doc: str) -> argparse.ArgumentParser:
    """The options every example takes; each mirrors a cluster keyword or says what it sizes."""
    p = argparse.ArgumentParser(
        description=doc.strip().splitlines()[0],
        epilog="See examples/README.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--size",
        choices=SIZES,
        default="small",
        help="problem size (default: small); examples/README.md lists what each size means",
    )
    p.add_argument(
        "--form",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="gpu: cupy/cudf/CUDA torch on the GPU workers; cpu: numpy/pandas/CPU torch; "
        "auto (default): gpu where the GPU library is importable here and there are GPUs to use",
    )
    cluster = p.add_argument_group("cluster (gpujobqueue.GPUCluster keywords)")
    cluster.add_argument("--site", help="a site config, e.g. perlmutter (see `gpujobqueue sites`)")
    cluster.add_argument(
        "--batch",
        choices=("slurm", "pbs", "lsf", "sge", "local"),
        help="batch system (default: the site's, else local: the job script runs on this machine)",
    )
    cluster.add_argument(
        "--gpus",
        type=int,
        help="GPU workers to start (default: every GPU here, or 2 CPU workers without "
        "GPUs, for local; one job's worth on a batch system)",
    )
    cluster.add_argument(
        "--gpus-per-node", type=int, help="GPUs each job asks for (default: the site's; local: --gpus)"
    )
    cluster.add_argument(
        "--cores", type=int, help="cores of each job (with --memory: needed with --batch and no --site)"
    )
    cluster.add_argument("--memory", help="memory of each job, e.g. 64GB")
    cluster.add_argument("--cpus-per-gpu", type=int, help="cores for each GPU, in place of --cores")
    cluster.add_argument("--memory-per-gpu", help="memory for each GPU, in place of --memory")
    cluster.add_argument("--account", help="account (project) charged")
    cluster.add_argument("--queue", help="queue, or the site's queue name")
    cluster.add_argument("--walltime", help="walltime of each job, HH:MM:SS")
    cluster.add_argument(
        "--timeout",
        type=float,
        help="seconds to wait for the workers (default: 120 for local, no limit on a batch system, "
        "where jobs may queue; a job that fails is reported at once)",
    )
    return p


def parse(p: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse, then fill in the defaults that depend on where the cluster runs."""
    args = p.parse_args(argv)
    if args.site is None and args.batch is None:
        args.batch = "local"  # rather than a site guessed from this host's name
    args.local = args.site is None and args.batch == "local"
    if args.local:
        args.gpus = args.gpus or len(nvidia_gpu_ids()) or 2
        args.gpus_per_node = args.gpus_per_node or args.gpus  # one local job holding every worker
        args.timeout = args.timeout or 120
    if args.gpus is not None and args.gpus < 1:
        p.error("--gpus must be 1 or more")
    return args


def cluster_keywords(args: argparse.Namespace) -> dict:
    """The GPUCluster keywords given on the command line (the others come from the site or the defaults)."""
    given = {
        "gpus_per_node": args.gpus_per_node,
        "cores": args.cores,
        "memory": args.memory,
        "cpus_per_gpu": args.cpus_per_gpu,
        "memory_per_gpu": args.memory_per_gpu,
        "account": args.account,
        "queue": args.queue,
        "walltime": args.walltime,
    }
    return {key: value for key, value in given.items() if value is not None}


def cpu_pool(args: argparse.Namespace, form: str, **pool) -> dict | None:
    """The ``cpu_pool`` keyword of the CPU form on this machine (local batch system), else None.

    Such a run holds no GPU, so its workers are a CPU pool's (``--gpus`` of them, ``pool`` adds keys), as
    `gpujobqueue demo` starts them without GPUs: they carry no ``GPU`` resource and the usage summary counts them
    in cores and core-hours. On a batch system the CPU form runs on the GPU jobs' workers: those hold, and are
    charged for, their GPUs."""
    if form != "cpu" or not args.local:
        return None
    return {"processes": args.gpus, **pool}


def inside_job() -> bool:
    """True inside `gpujobqueue render ... --run examples/X.py`: the job started the scheduler and
    the GPU workers, and `Client()` finds them through DASK_SCHEDULER_ADDRESS."""
    return bool(os.environ.get("DASK_SCHEDULER_ADDRESS"))


def importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_package(name: str, install: str, why: str) -> int:
    """Say which package is missing and how to install it; return the exit code for it."""
    print(
        f"MISSING PACKAGE: {name} is not importable with {sys.executable}: {why}.\n    Install it with: {install}",
        file=sys.stderr,
    )
    print(f"RESULT: not run ({name} missing)")
    return EXIT_MISSING_PACKAGE


def choose_form(args: argparse.Namespace, library: str) -> tuple[str, str]:
    """``("gpu" | "cpu", why)``. The GPU form needs ``library`` here (the client builds the
    graph with it) and GPUs to run on: this machine's for the local batch system, the GPU
    nodes' for a site or batch system (checked on the workers once they connect)."""
    if args.form == "cpu":
        return "cpu", "--form cpu"
    if args.form == "gpu":
        return "gpu", "--form gpu"
    if not importable(library):
        return "cpu", f"{library} is not importable here"
    gpus_here = nvidia_gpu_ids()
    if gpus_here:
        return "gpu", f"{len(gpus_here)} NVIDIA GPU(s) here and {library} importable"
    if inside_job():
        return "cpu", "no NVIDIA GPU visible in this job"
    if not args.local:
        return "gpu", f"{library} importable; the workers run on the GPU nodes of {args.site or args.batch}"
    return "cpu", "no NVIDIA GPU on this machine"


def worker_devices() -> list[str]:
    """On a worker: the NVIDIA GPUs it sees."""
    from gpujobqueue.machine.gpus import nvidia_gpu_ids

    return nvidia_gpu_ids()


def workers_info(client) -> dict:
    """The scheduler's view of every worker, by address."""
    try:
        return client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:  # distributed before n_workers= existed returned every worker
        return client.scheduler_info()["workers"]


def check_workers(client, form: str, gpu_worker=lambda name: True) -> int:
    """Print the workers; return EXIT_OK, or EXIT_WRONG_WORKERS when the GPU form has a GPU
    worker (every worker, unless ``gpu_worker(name)`` says otherwise) that sees no GPU."""
    info = workers_info(client)
    devices = client.run(worker_devices)
    rows = []
    for address, worker in sorted(info.items(), key=lambda item: str(item[1]["name"])):
        rows.append(
            (
                str(worker["name"]),
                ",".join(f"{k}={v:g}" for k, v in sorted(worker["resources"].items())) or "-",
                str(worker["nthreads"]),
                ",".join(devices.get(address, [])) or "none",
            )
        )
    print_table("workers", ("worker", "resources", "threads", "GPUs visible (its own first)"), rows)
    blind = [row[0] for row in rows if row[3] == "none" and gpu_worker(row[0])]
    if form == "gpu" and blind:
        print(
            f"FAILED: the GPU form needs a GPU on every GPU worker; {', '.join(blind)} see(s) none. "
            "Use --form cpu, or a site/queue whose nodes have GPUs."
        )
        print("RESULT: not run (workers without GPUs)")
        return EXIT_WRONG_WORKERS
    if form == "cpu" and any(row[3] != "none" for row in rows):
        print("note: the workers have GPUs, but this run uses the CPU form (see the form line above)")
    return EXIT_OK


def print_table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    rows = [tuple(map(str, header))] + [tuple(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(f"\n{title}:")
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


class Checks:
    """Each check prints ``ok: ...`` or ``FAILED: ...``; the example exits with :meth:`exit_code`."""

    def __init__(self) -> None:
        self.results: list[tuple[str, bool]] = []

    def __call__(self, name: str, passed: bool, detail: str = "") -> bool:
        passed = bool(passed)
        self.results.append((name, passed))
        print(f"{'ok' if passed else 'FAILED'}: {name}" + (f" ({detail})" if detail else ""))
        return passed

    def exit_code(self) -> int:
        failed = [name for name, passed in self.results if not passed]
        if not self.results:
            print("RESULT: FAILED (no check ran)")
            return EXIT_CHECK_FAILED
        if failed:
            print(f"RESULT: FAILED ({len(failed)} of {len(self.results)} checks failed: {', '.join(failed)})")
            return EXIT_CHECK_FAILED
        print(f"RESULT: ok ({len(self.results)} checks passed)")
        return EXIT_OK
