"""Many small model fits with dask.delayed on GPU workers: ridge regressions over data slices and penalties.

What it shows, on a cluster started by gpujobqueue:

- ``dask.delayed`` for work that is not an array or a data frame: a loop of many
  independent fits. The data slices are made by delayed tasks on the workers, so no
  GPU is needed where the script runs. Each fit depends on one slice, and Dask moves
  the slice to whichever worker runs the fit.
- Each fit solves the ridge normal equations ``(X'X + lambda I) b = X'y``. It uses cupy
  on the GPU workers and numpy in the CPU form. There is one fit per (data slice,
  lambda) pair: 200 at ``--size small``.
- The data are made from known coefficients, ``y = X @ beta + noise``, so every fit
  can be checked.

Checks, on the gathered results:

- Every coefficient is within its bound of the true one: the ridge shrinkage
  ``lambda / (n + lambda) * |beta_j|``, plus seven standard errors of the noise.
- The OLS fits (lambda = 0) averaged over the slices are within seven standard errors.
- On every slice the norm of the coefficients does not grow as lambda grows, as ridge
  guarantees.

The GPU form (cupy) runs where cupy is importable and there are NVIDIA GPUs. Elsewhere
the CPU form uses numpy on CPU workers (on this machine a CPU pool's, which hold no GPU and
are counted in core-hours). It prints which form it runs.

Run it:

    python examples/delayed_model_fits.py --size small      # this machine (local batch system)
    python examples/delayed_model_fits.py --site perlmutter --account m1234_g --walltime 00:30:00 --gpus 8 --size large

Exit status: 0 all checks passed, 1 a check failed, 3 a package is missing, 4 the
workers lack GPUs for the GPU form.
"""

from __future__ import annotations

import collections
import math
import sys
import time

import _common
import dask
import numpy as np
from dask import delayed
from distributed import Client, get_worker

from gpujobqueue import GPUCluster

# Per form and size: (data slices, rows per slice, features, lambdas per slice).
SIZES = {
    "gpu": {"small": (8, 20_000, 50, 25), "medium": (16, 200_000, 200, 50), "large": (16, 1_000_000, 256, 100)},
    "cpu": {"small": (8, 2_000, 20, 25), "medium": (8, 20_000, 50, 50), "large": (16, 200_000, 100, 100)},
}
NOISE = 0.5  # standard deviation of the noise added to y
BOUND_SIGMAS = 7  # 7 standard errors: a true fit lands outside about once in 4e11 coefficients


def array_module(gpu):
    if gpu:
        import cupy

        return cupy
    return np


def make_slice(index, rows, beta, gpu):
    """On a worker: one data slice (X, y) with y = X @ beta + noise, in device memory for the GPU form."""
    xp = array_module(gpu)
    random = xp.random.RandomState(index)
    x = random.standard_normal((rows, len(beta)))
    y = x @ xp.asarray(beta) + NOISE * random.standard_normal(rows)
    return x, y


def fit_ridge(data, lam, index, gpu):
    """On a worker: the ridge coefficients of one slice; returned as numpy, with where the fit ran."""
    xp = array_module(gpu)
    x, y = data
    gram = x.T @ x + lam * xp.eye(x.shape[1])
    coef = xp.linalg.solve(gram, x.T @ y)
    if gpu:
        coef = coef.get()
    return {"slice": index, "lambda": lam, "coef": coef, "worker": get_worker().name}


def run(client, args, form):
    code = _common.check_workers(client, form)
    if code:
        return code
    gpu = form == "gpu"
    slices, rows, features, n_lambdas = SIZES[form][args.size]
    beta = np.linspace(-2, 2, features)
    lambdas = np.linspace(0, 0.05 * rows, n_lambdas)  # up to 5 % shrinkage

    start = time.perf_counter()
    data = [delayed(make_slice)(i, rows, beta, gpu) for i in range(slices)]
    fits = [delayed(fit_ridge)(data[i], float(lam), i, gpu) for i in range(slices) for lam in lambdas]
    results = dask.compute(*fits)
    seconds = time.perf_counter() - start
    print(f"\n{len(results)} fits ({slices} slices of {rows} x {features}, {n_lambdas} lambdas) in {seconds:.2f} s")

    checks = _common.Checks()
    standard_error = NOISE / math.sqrt(rows)
    worst, per_lambda = -math.inf, collections.defaultdict(list)
    for r in results:
        error = np.abs(r["coef"] - beta)
        bound = 1.2 * r["lambda"] / (rows + r["lambda"]) * np.abs(beta) + BOUND_SIGMAS * standard_error
        worst = max(worst, float(np.max(error / bound)))
        per_lambda[r["lambda"]].append(r)

    _common.print_table(
        f"fits by lambda ({'cupy' if gpu else 'numpy'}, --size {args.size}; "
        f"true coefficients linspace(-2, 2, {features}))",
        ("lambda", "fits", "mean |b - beta|", "max |b - beta|", "mean |b|"),
        [
            (
                f"{lam:.1f}",
                len(rs),
                f"{np.mean([np.abs(r['coef'] - beta).mean() for r in rs]):.5f}",
                f"{max(np.abs(r['coef'] - beta).max() for r in rs):.5f}",
                f"{np.mean([np.linalg.norm(r['coef']) for r in rs]):.5f}",
            )
            for lam, rs in sorted(per_lambda.items())
            if lam in (lambdas[0], lambdas[len(lambdas) // 2], lambdas[-1])
        ],
    )
    by_worker = collections.Counter(r["worker"] for r in results)
    _common.print_table("fits by worker", ("worker", "fits"), sorted(by_worker.items()))

    checks("all fits returned", len(results) == slices * n_lambdas, f"{len(results)} of {slices * n_lambdas}")
    checks(
        "every coefficient within shrinkage + 7 standard errors of the truth",
        worst <= 1,
        f"largest error is {worst:.2f} of its bound; standard error {standard_error:.4f}",
    )
    ols = np.mean([r["coef"] for r in per_lambda[lambdas[0]]], axis=0)
    ols_error = float(np.max(np.abs(ols - beta)))
    checks(
        "OLS averaged over slices recovers beta",
        ols_error <= BOUND_SIGMAS * standard_error / math.sqrt(slices),
        f"max |mean b - beta| = {ols_error:.5f}",
    )
    monotone = True
    for i in range(slices):
        norms = [
            np.linalg.norm(r["coef"])
            for r in sorted((r for r in results if r["slice"] == i), key=lambda r: r["lambda"])
        ]
        monotone &= all(b <= a * (1 + 1e-12) for a, b in zip(norms, norms[1:]))
    checks("ridge shrinks: |b| does not grow with lambda on any slice", monotone)
    return checks.exit_code()


def main(argv=None):
    args = _common.parse(_common.parser(__doc__), argv)
    form, why = _common.choose_form(args, "cupy")
    if form == "gpu" and not _common.importable("cupy"):
        return _common.missing_package(
            "cupy", "pip install cupy-cuda12x (or cupy-cuda13x)", "the GPU form fits with cupy"
        )
    print(
        f"form: {form.upper()} "
        f"({'cupy fits on dask-cuda workers' if form == 'gpu' else 'numpy fits on CPU workers'}): {why}"
    )

    if _common.inside_job():  # gpujobqueue render ... --run: the job's workers are already up
        with Client() as client:
            return run(client, args, form)

    cpu_pool = _common.cpu_pool(args, form)  # no GPU to hold: CPU workers, counted in core-hours
    with GPUCluster(site=args.site, batch=args.batch, cpu_pool=cpu_pool, **_common.cluster_keywords(args)) as cluster:
        workers = args.gpus or cluster.workers_per_job
        cluster.scale(cpu_workers=workers) if cpu_pool else cluster.scale(gpus=workers)
        with Client(cluster) as client:
            client.wait_for_workers(workers, timeout=args.timeout)
            kind = "CPU" if cpu_pool else "GPU"
            print(f"{workers} {kind} worker(s) connected; dashboard: {cluster.dashboard_link or 'none'}")
            return run(client, args, form)


if __name__ == "__main__":
    sys.exit(main())
