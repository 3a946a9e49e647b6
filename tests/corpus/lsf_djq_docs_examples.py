"""dask-jobqueue's own documentation: the LSF deployment example.

Source: dask/dask-jobqueue, docs/source/examples.rst at commit 0148ab1d116fd9f2e02a125d4ee9deccea064007,
section "LSF Deployments"
(https://github.com/dask/dask-jobqueue/blob/0148ab1d116fd9f2e02a125d4ee9deccea064007/docs/source/examples.rst).
Date: not shown.
Batch system: LSF.
Meant: CPU workers, 15 cores and 25GB per job, 30 minutes of walltime written as ``HH:MM``.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/examples.rst",
    "commit": "0148ab1d116fd9f2e02a125d4ee9deccea064007",
    "date": "date not shown",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 0, "note": "CPU workers"}


def make(module):
    cluster = module.LSFCluster(queue="general", project="cpp", walltime="00:30", cores=15, memory="25GB")
    return cluster
