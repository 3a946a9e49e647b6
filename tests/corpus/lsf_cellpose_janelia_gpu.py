"""Cellpose's distributed segmentation on Janelia's LSF cluster: one GPU per worker job.

Source: MouseLand/cellpose, docs/distributed.rst at commit 549126d8787f814bd180d1f123f84f8b12f2351c, example
"Run distributed Cellpose on an LSF cluster with 128 GPUs (e.g. Janelia cluster)"
(https://github.com/MouseLand/cellpose/blob/549126d8787f814bd180d1f123f84f8b12f2351c/docs/distributed.rst), whose
``cluster_kwargs`` go to ``janeliaLSFCluster`` in cellpose/contrib/distributed_segmentation.py at commit
017cbeb2d4ddc55a58ea3ba961a28f08e7c942c9
(https://github.com/MouseLand/cellpose/blob/017cbeb2d4ddc55a58ea3ba961a28f08e7c942c9/cellpose/contrib/distributed_segmentation.py).
Date: not shown.
Batch system: LSF (Janelia, queue ``gpu_l4``).
Meant: one GPU per job (``job_extra_directives=['-gpu "num=1"']``), one single-threaded worker per job on 2 CPUs
(``ncpus``), 15 GB of memory per CPU. ``make`` is the ``LSFCluster.__init__`` call that ``janeliaLSFCluster``
makes with the example's keywords (``min_workers``/``max_workers`` go to ``adapt``, not to the cluster); the
class also passes ``job_cls``, an ``LSFJob`` subclass of dask-jobqueue's whose only change is ``bkill -d`` as the
cancel command, left out here (it is dask-jobqueue's own class, and changes nothing in the job script).
"""

import getpass
import os
import pathlib

SOURCE = {
    "repo": "MouseLand/cellpose",
    "path": "docs/distributed.rst",
    "commit": "549126d8787f814bd180d1f123f84f8b12f2351c",
    "date": "date not shown",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 1, "note": '-gpu "num=1" on gpu_l4, ncpus=2, cores=1'}


def make(module):
    # the docs' cluster_kwargs, less min_workers/max_workers
    ncpus = 2
    kwargs = {"queue": "gpu_l4", "job_extra_directives": ['-gpu "num=1"']}

    # janeliaLSFCluster.__init__
    scratch_dir = f"/scratch/{getpass.getuser()}/"
    job_script_prologue = [
        f"export MKL_NUM_THREADS={2 * ncpus}",
        f"export NUM_MKL_THREADS={2 * ncpus}",
        f"export OPENBLAS_NUM_THREADS={2 * ncpus}",
        f"export OPENMP_NUM_THREADS={2 * ncpus}",
        f"export OMP_NUM_THREADS={2 * ncpus}",
    ]
    if "local_directory" not in kwargs:
        kwargs["local_directory"] = scratch_dir
    if "log_directory" not in kwargs:
        log_dir = f"{os.getcwd()}/dask_worker_logs_{os.getpid()}/"
        pathlib.Path(log_dir).mkdir(parents=False, exist_ok=True)
        kwargs["log_directory"] = log_dir
    return module.LSFCluster(
        ncpus=ncpus,
        processes=1,
        cores=1,
        memory=str(15 * ncpus) + "GB",
        mem=int(15e9 * ncpus),
        job_script_prologue=job_script_prologue,
        **kwargs,
    )
