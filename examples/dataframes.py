"""Dask DataFrames of cuDF partitions on GPU workers: read Parquet files, group, map_partitions.

What it shows, on a cluster started by gpujobqueue:

1. A dataset of Parquet files (``id``, ``name``, ``x``, ``y``), written to a temporary
   folder and read back with ``dask.dataframe.read_parquet``. In the GPU form the
   ``cudf`` backend is set (``dask.config.set({"dataframe.backend": "cudf"})``, provided
   by dask_cudf), so every partition is a cuDF DataFrame on a GPU.
2. A groupby aggregation: ``ddf.groupby("name").agg({"x": ["count", "sum", "mean"], "y": "max"})``.
3. ``map_partitions`` with a function of our own, run on each partition: the distance of
   ``(x, y)`` from the origin and its quadrant. Its output is then grouped by quadrant.

Checks: the row count, both tables against pandas answers computed straight from the
files (file by file, without Dask), to a relative 1e-9.

The GPU form (dask_cudf) runs where dask_cudf is importable and there are NVIDIA GPUs.
Elsewhere the CPU form runs the same code with pandas partitions. It prints which form it runs.

Run it:

    python examples/dataframes.py --size small         # this machine (local batch system)
    python examples/dataframes.py --site perlmutter --account m1234_g --walltime 00:30:00 --gpus 8 --size large

The files go to a temporary folder in ``--data-dir`` (default: the current directory),
which must be on a file system the workers' nodes share. The folder is removed at the end.

Needs pyarrow (dask.dataframe and Parquet); the GPU form needs cudf and dask_cudf on the
client and the workers. Exit status: 0 all checks passed, 1 a check failed, 3 a package is
missing, 4 the workers lack GPUs for the GPU form.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import _common
import numpy as np
import pandas as pd
from distributed import Client

from gpujobqueue import GPUCluster

# (files, rows per file) by size; the same for both forms, so their answers can be compared.
SIZES = {"small": (8, 50_000), "medium": (16, 1_000_000), "large": (32, 4_000_000)}
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def write_dataset(folder, files, rows):
    """Parquet files part-000.parquet ... with columns id, name, x, y; returns their paths."""
    paths = []
    for i in range(files):
        rng = np.random.default_rng(1000 + i)
        part = pd.DataFrame(
            {
                "id": rng.integers(0, 1_000, rows),
                "name": np.asarray(NAMES, dtype=object)[rng.integers(0, len(NAMES), rows)],
                "x": rng.normal(0, 1, rows),
                "y": rng.normal(0.5, 2, rows),
            }
        )
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        part.to_parquet(path, index=False)
        paths.append(path)
    return paths


def add_features(df):
    """One partition, pandas or cuDF: the distance r of (x, y) from the origin and its quadrant (0-3)."""
    df = df.assign(r=(df.x * df.x + df.y * df.y) ** 0.5)
    df["quadrant"] = (df.x >= 0).astype("int8") * 2 + (df.y >= 0).astype("int8")
    return df


def pandas_answers(paths):
    """The same tables from the files with pandas alone, one file at a time (partial sums combined)."""
    parts_by_name, parts_by_quadrant, rows = [], [], 0
    for path in paths:
        df = add_features(pd.read_parquet(path))
        rows += len(df)
        parts_by_name.append(df.groupby("name").agg(count=("x", "count"), sum=("x", "sum"), max=("y", "max")))
        parts_by_quadrant.append(df.groupby("quadrant").agg(count=("r", "count"), sum=("r", "sum")))
    by_name = pd.concat(parts_by_name).groupby(level=0).agg({"count": "sum", "sum": "sum", "max": "max"})
    by_name["mean"] = by_name["sum"] / by_name["count"]
    by_quadrant = pd.concat(parts_by_quadrant).groupby(level=0).sum()
    by_quadrant["mean"] = by_quadrant["sum"] / by_quadrant["count"]
    return rows, by_name[["count", "sum", "mean", "max"]], by_quadrant[["count", "mean"]]


def to_pandas(frame):
    return frame.to_pandas() if hasattr(frame, "to_pandas") else frame  # cuDF results come back as cuDF


def same_table(got, want):
    """Same index (any order) and the same values to a relative 1e-9; returns (equal, detail)."""
    got, want = got.sort_index(), want.sort_index()
    if [str(i) for i in got.index] != [str(i) for i in want.index] or got.shape != want.shape:
        return False, f"index {list(got.index)} / shape {got.shape}, want {list(want.index)} / {want.shape}"
    a, b = got.to_numpy(dtype="float64"), want.to_numpy(dtype="float64")
    worst = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
    return bool(np.allclose(a, b, rtol=1e-9, atol=0)), f"{got.shape[0]} rows, largest relative difference {worst:.1e}"


def run(client, args, form):
    import dask
    import dask.dataframe as dd

    code = _common.check_workers(client, form)
    if code:
        return code
    files, rows_per_file = SIZES[args.size]
    checks = _common.Checks()
    with tempfile.TemporaryDirectory(prefix="gpujobqueue-example-", dir=args.data_dir or os.getcwd()) as folder:
        start = time.perf_counter()
        paths = write_dataset(folder, files, rows_per_file)
        print(
            f"\nwrote {files} Parquet files of {rows_per_file} rows to {folder} in {time.perf_counter() - start:.1f} s"
        )
        timings = []
        with dask.config.set({"dataframe.backend": "cudf" if form == "gpu" else "pandas"}):
            ddf = dd.read_parquet(folder)
            print(f"partitions: {ddf.npartitions} of {type(ddf._meta).__module__}.{type(ddf._meta).__name__}")

            start = time.perf_counter()
            ddf = ddf.persist()
            rows = len(ddf)
            timings.append(("read_parquet, persist, len", time.perf_counter() - start))

            start = time.perf_counter()
            by_name = to_pandas(ddf.groupby("name").agg({"x": ["count", "sum", "mean"], "y": "max"}).compute())
            timings.append(('groupby("name").agg(...)', time.perf_counter() - start))

            start = time.perf_counter()
            features = ddf.map_partitions(add_features)
            by_quadrant = to_pandas(features.groupby("quadrant").r.agg(["count", "mean"]).compute())
            timings.append(("map_partitions(add_features), groupby", time.perf_counter() - start))

        start = time.perf_counter()
        want_rows, want_by_name, want_by_quadrant = pandas_answers(paths)
        timings.append(("pandas answers, file by file", time.perf_counter() - start))

    by_name.columns = ["count", "sum", "mean", "max"]  # from ("x", "count"), ("x", "sum"), ...
    _common.print_table(
        'groupby("name"): x count, sum, mean; y max',
        ("name", "count", "sum", "mean", "max"),
        [
            (name, int(r["count"]), f"{r['sum']:.4f}", f"{r['mean']:.6f}", f"{r['max']:.4f}")
            for name, r in by_name.sort_index().iterrows()
        ],
    )
    _common.print_table(
        "map_partitions(add_features): r by quadrant",
        ("quadrant", "count", "mean r"),
        [(q, int(r["count"]), f"{r['mean']:.6f}") for q, r in by_quadrant.sort_index().iterrows()],
    )
    _common.print_table(
        f"timings ({'cudf' if form == 'gpu' else 'pandas'} partitions, --size {args.size})",
        ("step", "seconds"),
        [(step, f"{seconds:.2f}") for step, seconds in timings],
    )
    checks("rows read", rows == want_rows == files * rows_per_file, f"{rows} rows, want {files * rows_per_file}")
    checks("groupby aggregation equals pandas", *same_table(by_name, want_by_name))
    checks("map_partitions + groupby equals pandas", *same_table(by_quadrant, want_by_quadrant))
    return checks.exit_code()


def main(argv=None):
    p = _common.parser(__doc__)
    p.add_argument(
        "--data-dir", help="where the temporary folder of Parquet files goes (default: the current directory)"
    )
    args = _common.parse(p, argv)
    if not _common.importable("pyarrow"):
        return _common.missing_package(
            "pyarrow", f"{sys.executable} -m pip install pyarrow", "dask.dataframe and Parquet need it"
        )
    form, why = _common.choose_form(args, "dask_cudf")
    if form == "gpu" and not _common.importable("dask_cudf"):
        return _common.missing_package(
            "dask_cudf",
            "pip install cudf-cu12 dask-cudf-cu12 (or the -cu13 builds)",
            "the GPU form reads cuDF partitions",
        )
    print(
        f"form: {form.upper()} "
        f"({'cuDF partitions on dask-cuda workers' if form == 'gpu' else 'pandas partitions on CPU workers'}): {why}"
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
