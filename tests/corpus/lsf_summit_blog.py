"""The Dask blog, "Dask on HPC: a case study" (Summit, OLCF): the LSFCluster that worked.

Source: dask/dask-blog, _posts/2019-08-28-dask-on-summit.md at commit 6aa03de9b95eb713693501b61f45ff3a87a781b1
(https://github.com/dask/dask-blog/blob/6aa03de9b95eb713693501b61f45ff3a87a781b1/_posts/2019-08-28-dask-on-summit.md),
published as https://blog.dask.org/2019/08/28/dask-on-summit.
Date: 2019-08-28.
Batch system: LSF with CSM (Summit: 6 V100 per node).
Meant: whole Summit nodes (``-nnodes 1``) with the ``-R``, ``-n`` and ``-M`` lines removed
(``header_skip``), CPU workers on ``ib0`` (the post's last section: "Future work: GPUs").
"""

SOURCE = {
    "repo": "dask/dask-blog",
    "path": "_posts/2019-08-28-dask-on-summit.md",
    "commit": "6aa03de9b95eb713693501b61f45ff3a87a781b1",
    "date": "2019-08-28",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 0, "note": "whole node via -nnodes 1, CPU workers (GPUs left for later)"}


def make(module):
    cluster = module.LSFCluster(
        cores=128,
        memory="500 GB",
        project="GEN119",
        walltime="00:30",
        job_extra=["-nnodes 1"],
        header_skip=["-R", "-n ", "-M"],
        interface="ib0",  # <--- new!
    )
    return cluster
