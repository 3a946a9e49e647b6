"""dask-jobqueue's own documentation: workers told their lifetime so that walltime does not kill them.

Source: dask/dask-jobqueue, docs/source/clusters-advanced-tips-and-tricks.rst at commit
3a00196067afabb1438d9c0738ab7fb6562ecaa6, "How to handle job queueing system walltime killing workers"
(https://github.com/dask/dask-jobqueue/blob/3a00196067afabb1438d9c0738ab7fb6562ecaa6/docs/source/clusters-advanced-tips-and-tricks.rst).
Date: not shown.
Batch system: PBS (the section's first block calls the class ``Cluster``; its second block, the
worked example, imports ``from dask_jobqueue import PBSCluster as Cluster``).
Meant: CPU workers that retire after 55 minutes, staggered by 4 minutes, in one-hour jobs
(``worker_extra_args`` as four words).
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/clusters-advanced-tips-and-tricks.rst",
    "commit": "3a00196067afabb1438d9c0738ab7fb6562ecaa6",
    "date": "date not shown",
}
BATCH = "pbs"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, --lifetime 55m --lifetime-stagger 4m"}


def make(module):
    Cluster = module.PBSCluster
    cluster = Cluster(
        walltime="01:00:00",
        cores=4,
        memory="16gb",
        worker_extra_args=["--lifetime", "55m", "--lifetime-stagger", "4m"],
    )
    return cluster
