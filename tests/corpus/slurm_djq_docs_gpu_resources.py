"""dask-jobqueue's own documentation: GPUs declared to Dask as an abstract worker resource.

Source: dask/dask-jobqueue, docs/source/examples.rst at commit 0148ab1d116fd9f2e02a125d4ee9deccea064007,
section "SLURM Deployment: Providing additional arguments to the dask-workers"
(https://github.com/dask/dask-jobqueue/blob/0148ab1d116fd9f2e02a125d4ee9deccea064007/docs/source/examples.rst).
Date: not shown.
Batch system: SLURM (no site named).
Meant: each job's single worker advertises ``GPU=2`` (and ``ssdGB=200``) so that tasks annotated with
``resources={"GPU": 1}`` run there; the SLURM request itself names no GPU (the page says the scheduler
"is not aware of" the hardware). ``worker_extra_args`` holds one string with a space in it.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/examples.rst",
    "commit": "0148ab1d116fd9f2e02a125d4ee9deccea064007",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 2, "note": "GPU=2 as a Dask resource only; no GPU asked of SLURM"}


def make(module):
    return module.SLURMCluster(memory="8g", processes=1, cores=2, worker_extra_args=["--resources ssdGB=200,GPU=2"])
