"""A mixed pool: GPU workers and CPU-only workers on one scheduler, with work routed by resource annotations.

What it shows, on a cluster started by gpujobqueue:

- ``GPUCluster(..., cpu_pool={...})`` and ``cluster.scale(gpus=G, cpu_workers=C)``. The
  GPU workers carry the ``GPU`` resource. The CPU pool's workers carry none and see no
  device (``CUDA_VISIBLE_DEVICES=""``).
- Pipelines of three steps. ``load`` makes a matrix and may run anywhere. ``singular_values``
  runs under ``dask.annotate(resources={"GPU": 1})``, so it runs on GPU workers only
  (with cupy in the GPU form). ``summarize`` may run anywhere again. More unannotated
  tasks run wherever the scheduler puts them.
- Each task records the worker it ran on (``get_worker().name``), that worker's resources
  and the GPUs it saw, and the example prints where each kind of task ran.

Checks: every GPU-annotated task ran on a GPU-pool worker carrying the ``GPU`` resource
(and, in the GPU form, saw a GPU); the CPU pool's workers carry no ``GPU`` resource and
see no device; the pipelines' answers are right (for every pipeline the squared singular
values add up to the squared Frobenius norm of its matrix, and for the first four they
equal numpy's on this machine); every unannotated task ran.

On a machine without GPUs the local batch system's GPU workers are per-device CPU
workers. They still carry ``GPU=1`` (each stands for one device), so the annotation
routes work to them exactly as on GPUs. The CPU form runs the same code with numpy. It
prints which form it runs.

Run it:

    python examples/mixed_pool.py --size small          # this machine (local batch system)
    python examples/mixed_pool.py --batch slurm --queue gpu --gpus-per-node 4 --account abc123 \\
        --walltime 00:30:00 --gpus 8 --cpu-workers 16 --cpu-queue cpu --size large
    python examples/mixed_pool.py --site perlmutter --account m1234_g --walltime 00:30:00 \\
        --cpu-queue regular --cpu-constraint cpu --cpu-account m1234 --size large

``--cpu-queue``, ``--cpu-account`` and ``--cpu-constraint`` are the CPU pool's ``queue``,
``account`` and ``constraint``; a site's queue name maps to its partition and QoS. The CPU
jobs take everything else from the GPU jobs, including a site's directives: on
Perlmutter, without ``--cpu-constraint cpu`` they would carry the GPU jobs' ``--constraint=gpu``.

Exit status: 0 all checks passed, 1 a check failed, 3 a package is missing, 4 the
workers lack GPUs for the GPU form.
"""

from __future__ import annotations

import collections
import os
import sys
import time

import _common
import dask
import numpy as np
from distributed import Client, get_worker

from gpujobqueue import GPUCluster

# Per form and size: (pipelines, matrix side, unannotated tasks).
SIZES = {
    "gpu": {"small": (16, 1_000, 32), "medium": (64, 1_500, 128), "large": (256, 2_000, 512)},
    "cpu": {"small": (16, 100, 32), "medium": (64, 300, 128), "large": (256, 600, 512)},
}


def here(step):
    """Where this task runs: the worker's name, its resources, and the devices it sees."""
    from gpujobqueue.machine.gpus import nvidia_gpu_ids

    worker = get_worker()
    return {
        "step": step,
        "worker": str(worker.name),
        "resources": dict(worker.state.total_resources),
        "gpus": nvidia_gpu_ids(),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def load(i, side):
    """Anywhere: the i-th input matrix."""
    matrix = np.random.default_rng(i).standard_normal((side, side))
    return {"i": i, "matrix": matrix, "frobenius2": float((matrix * matrix).sum()), "trail": [here("load")]}


def singular_values(item, gpu):
    """GPU workers only (annotated): the matrix's singular values, with cupy in the GPU form."""
    if gpu:
        import cupy

        values = cupy.linalg.svd(cupy.asarray(item["matrix"]), compute_uv=False).get()
    else:
        values = np.linalg.svd(item["matrix"], compute_uv=False)
    return {
        "i": item["i"],
        "values": values,
        "frobenius2": item["frobenius2"],
        "trail": item["trail"] + [here("singular_values")],
    }


def summarize(item):
    """Anywhere: the largest singular value, their sum (the nuclear norm) and the sum of their squares."""
    values = item["values"]
    return {
        "i": item["i"],
        "largest": float(values[0]),
        "nuclear": float(values.sum()),
        "squares": float((values * values).sum()),
        "frobenius2": item["frobenius2"],
        "trail": item["trail"] + [here("summarize")],
    }


def visible_devices(variable):
    """On a worker: the devices its visibility variable (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ...) names."""
    return os.environ.get(variable)


def anywhere(i):
    """Anywhere: a little work with no annotation."""
    return {"value": float(np.sqrt(np.arange(i * 1000, (i + 1) * 1000)).sum()), "trail": [here("anywhere")]}


def main(argv=None):
    p = _common.parser(__doc__)
    p.add_argument("--cpu-workers", type=int, default=2, help="CPU-only workers beside the GPU workers (default 2)")
    p.add_argument("--cpu-queue", help="queue for the CPU jobs (default: the GPU jobs' queue)")
    p.add_argument("--cpu-account", help="account for the CPU jobs (default: the GPU jobs' account)")
    p.add_argument("--cpu-constraint", help="SLURM --constraint for the CPU jobs (default: the GPU jobs' constraint)")
    args = _common.parse(p, argv)
    if args.cpu_workers < 1:
        p.error("--cpu-workers must be 1 or more")
    form, why = _common.choose_form(args, "cupy")
    if form == "gpu" and not _common.importable("cupy"):
        return _common.missing_package("cupy", "pip install cupy-cuda12x (or cupy-cuda13x)", "the GPU step uses cupy")
    if _common.inside_job():
        print("this example starts its own cluster with a CPU pool; run it outside `gpujobqueue render --run`")
        return _common.EXIT_WRONG_WORKERS
    gpu_workers = (
        "cupy on dask-cuda GPU workers"
        if form == "gpu"
        else "numpy; without GPUs, the GPU workers are per-device CPU workers"
    )
    print(f"form: {form.upper()} ({gpu_workers} + {args.cpu_workers} CPU-only workers): {why}")
    gpu = form == "gpu"

    # One CPU job holding every CPU worker, one thread each; the rest (account, walltime) is the GPU jobs'.
    cpu_pool = {
        "processes": args.cpu_workers,
        "cores": args.cpu_workers,
        "queue": args.cpu_queue,
        "account": args.cpu_account,
        "constraint": args.cpu_constraint,
    }
    with GPUCluster(site=args.site, batch=args.batch, cpu_pool=cpu_pool, **_common.cluster_keywords(args)) as cluster:
        gpus = args.gpus or cluster.workers_per_job
        cluster.scale(gpus=gpus, cpu_workers=args.cpu_workers)
        with Client(cluster) as client:
            client.wait_for_workers(gpus + args.cpu_workers, timeout=args.timeout)
            print(
                f"{gpus} GPU worker(s) and {args.cpu_workers} CPU worker(s) connected; "
                f"dashboard: {cluster.dashboard_link or 'none'}"
            )
            cpu_jobs = [job for job, spec in cluster.worker_spec.items() if spec.get("pool") == "cpu"]

            def pool(name):  # a worker's name starts with its job's name
                return "cpu" if any(name == job or name.startswith(job + "-") for job in cpu_jobs) else "gpu"

            code = _common.check_workers(client, form, gpu_worker=lambda name: pool(name) == "gpu")
            if code:
                return code
            info = _common.workers_info(client)
            names = {address: str(w["name"]) for address, w in info.items()}
            workers = {names[address]: w for address, w in info.items()}
            devices = {names[address]: d for address, d in client.run(_common.worker_devices).items()}
            variable = cluster.launch.visibility_variable  # CUDA_VISIBLE_DEVICES unless the site says otherwise
            visible = {names[address]: v for address, v in client.run(visible_devices, variable).items()}

            n_pipelines, side, n_anywhere = SIZES[form][args.size]
            start = time.perf_counter()
            loaded = [client.submit(load, i, side, pure=False) for i in range(n_pipelines)]
            with dask.annotate(resources={"GPU": 1}):
                decomposed = [client.submit(singular_values, item, gpu, pure=False) for item in loaded]
            summaries = [client.submit(summarize, item, pure=False) for item in decomposed]
            others = [client.submit(anywhere, i, pure=False) for i in range(n_anywhere)]
            summaries, others = client.gather(summaries), client.gather(others)
            seconds = time.perf_counter() - start

            records = [record for s in summaries for record in s["trail"]] + [
                record for o in others for record in o["trail"]
            ]
            placed = collections.Counter((r["step"], r["worker"]) for r in records)
            _common.print_table(
                f"where the tasks ran ({n_pipelines} pipelines of {side} x {side}, "
                f"{n_anywhere} unannotated tasks; {seconds:.2f} s)",
                ("worker", "pool", "resources", "load", "singular_values (GPU)", "summarize", "anywhere"),
                [
                    (
                        name,
                        pool(name),
                        ",".join(f"{k}={v:g}" for k, v in sorted(workers[name]["resources"].items())) or "-",
                        *(placed[(step, name)] for step in ("load", "singular_values", "summarize", "anywhere")),
                    )
                    for name in sorted(workers)
                ],
            )

            checks = _common.Checks()
            gpu_steps = [r for r in records if r["step"] == "singular_values"]
            wrong = sorted(
                {r["worker"] for r in gpu_steps if pool(r["worker"]) != "gpu" or r["resources"].get("GPU", 0) < 1}
            )
            checks(
                "GPU-annotated tasks ran only on GPU-pool workers carrying the GPU resource",
                not wrong and len(gpu_steps) == n_pipelines,
                f"{len(gpu_steps)} tasks on {', '.join(sorted({r['worker'] for r in gpu_steps}))}"
                + (f"; wrongly on {', '.join(wrong)}" if wrong else ""),
            )
            if gpu:
                blind = sorted({r["worker"] for r in gpu_steps if not r["gpus"]})
                checks(
                    "GPU-annotated tasks saw a GPU",
                    not blind,
                    "every one" if not blind else f"none seen on {', '.join(blind)}",
                )
            cpu_workers = [name for name in workers if pool(name) == "cpu"]
            bad = [
                name
                for name in cpu_workers
                if workers[name]["resources"].get("GPU") or devices[name] or visible[name] != ""
            ]
            checks(
                "the CPU pool's workers carry no GPU resource and see no device",
                len(cpu_workers) == args.cpu_workers and not bad,
                f"{len(cpu_workers)} CPU workers" + (f"; wrong: {', '.join(bad)}" if bad else f', {variable}=""'),
            )
            # Every pipeline: the squares of the singular values add up to the squared Frobenius norm
            # of its input; the first few: the same singular values as numpy's here.
            identity = max(abs(s["squares"] - s["frobenius2"]) / s["frobenius2"] for s in summaries)
            worst = 0.0
            for s in summaries[:4]:
                want = np.linalg.svd(np.random.default_rng(s["i"]).standard_normal((side, side)), compute_uv=False)
                worst = max(worst, abs(s["largest"] - want[0]) / want[0], abs(s["nuclear"] - want.sum()) / want.sum())
            checks(
                "pipelines' answers are right",
                identity < 1e-10 and worst < 1e-10,
                f"sum of squared singular values vs squared Frobenius norm: {identity:.1e}; "
                f"vs numpy here (4 pipelines): {worst:.1e}",
            )
            wanted = [float(np.sqrt(np.arange(i * 1000, (i + 1) * 1000)).sum()) for i in range(n_anywhere)]
            ran_on = collections.Counter(pool(o["trail"][0]["worker"]) for o in others)
            checks(
                "every unannotated task ran, wherever the scheduler put it",
                [o["value"] for o in others] == wanted,
                f"{ran_on['gpu']} on GPU workers, {ran_on['cpu']} on CPU workers",
            )
            return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
