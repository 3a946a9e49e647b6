"""BANIS (Structural Neurobiology Lab): patched affinity inference for neuron segmentation on SLURM GPUs.

Source: StructuralNeurobiologyLab/banis, inference.py at commit 03dc9776bf9e46beb1c4235c1f8af856916455e0,
``AffinityPredictor.img_to_aff`` with ``compute_backend == "slurm"``
(https://github.com/StructuralNeurobiologyLab/banis/blob/03dc9776bf9e46beb1c4235c1f8af856916455e0/inference.py).
Date: not shown.
Batch system: SLURM (the cluster is not named in the file).
Meant: one GPU per job (``--gres=gpu:1``), one worker per job held to one thread by the user's own
``--nthreads=1`` in ``worker_extra_args`` (after dask-jobqueue's ``--nthreads 8``), a ``processes=1``
resource, 400GB, one day written ``1-00:00:00``; adaptive between 1 and 32 jobs.
"""

SOURCE = {
    "repo": "StructuralNeurobiologyLab/banis",
    "path": "inference.py",
    "commit": "03dc9776bf9e46beb1c4235c1f8af856916455e0",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, --nthreads=1 and --resources processes=1 in worker_extra_args"}


def make(module):
    cluster = module.SLURMCluster(
        cores=8,
        memory="400GB",
        processes=1,
        worker_extra_args=["--resources processes=1", "--nthreads=1"],
        job_extra_directives=["--gres=gpu:1"],
        walltime="1-00:00:00",
    )
    return cluster
