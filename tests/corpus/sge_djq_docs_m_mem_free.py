"""dask-jobqueue's own documentation: the Grid Engine example, memory asked through resource_spec.

Source: dask/dask-jobqueue, docs/source/examples.rst at commit 0148ab1d116fd9f2e02a125d4ee9deccea064007,
section "SGE Deployments"
(https://github.com/dask/dask-jobqueue/blob/0148ab1d116fd9f2e02a125d4ee9deccea064007/docs/source/examples.rst).
Date: not shown.
Batch system: Grid Engine (Univa/Altair style ``m_mem_free``).
Meant: ten CPU worker processes per job ("we request 10 processes per worker"), the memory the
batch system sees given as ``m_mem_free=20G``, walltime in seconds. The example gives no ``cores``.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/examples.rst",
    "commit": "0148ab1d116fd9f2e02a125d4ee9deccea064007",
    "date": "date not shown",
}
BATCH = "sge"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, processes=10, m_mem_free, no cores"}


def make(module):
    cluster = module.SGECluster(
        queue="default.q",
        walltime="1500000",
        processes=10,  # we request 10 processes per worker
        memory="20GB",  # for memory requests, this must be specified
        resource_spec="m_mem_free=20G",  # for memory requests, this also needs to be specified
    )
    return cluster
