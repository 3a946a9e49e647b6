"""dask-jobqueue's own documentation: the first PBS deployment example.

Source: dask/dask-jobqueue, docs/source/examples.rst at commit 0148ab1d116fd9f2e02a125d4ee9deccea064007,
section "PBS Deployments"
(https://github.com/dask/dask-jobqueue/blob/0148ab1d116fd9f2e02a125d4ee9deccea064007/docs/source/examples.rst).
Date: not shown.
Batch system: PBS Pro.
Meant: six CPU workers per 24-core job, the select line in ``resource_spec`` (which asks for
100GB while the workers share 16GB), ``$TMPDIR`` as local directory.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/examples.rst",
    "commit": "0148ab1d116fd9f2e02a125d4ee9deccea064007",
    "date": "date not shown",
}
BATCH = "pbs"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, processes=6"}


def make(module):
    cluster = module.PBSCluster(
        queue="regular",
        project="DaskOnPBS",
        local_directory="$TMPDIR",
        cores=24,
        processes=6,
        memory="16GB",
        resource_spec="select=1:ncpus=24:mem=100GB",
    )
    return cluster
