"""Weecology's BOEM pipeline: GPU workers on HiPerGator without a nanny.

Source: weecology/BOEM, src/cluster.py at commit 3c7188fc80a293025474ebb48ad8ab3fb3a21466, the
``gpus`` branch of ``start()`` with its default ``mem_size="50GB"``
(https://github.com/weecology/BOEM/blob/3c7188fc80a293025474ebb48ad8ab3fb3a21466/src/cluster.py).
Date: not shown.
Batch system: SLURM (HiPerGator, University of Florida).
Meant: one GPU per job (``--partition=gpu``, ``--gpus=1``), one worker of two threads with a
``gpu=1`` resource, ``nanny=False``, a very long ``death_timeout``.
"""

SOURCE = {
    "repo": "weecology/BOEM",
    "path": "src/cluster.py",
    "commit": "3c7188fc80a293025474ebb48ad8ab3fb3a21466",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gpus=1 on the gpu partition, nanny=False"}


def make(module):
    mem_size = "50GB"
    # job args
    extra_args = [
        "--error=/home/b.weinstein/logs/dask-worker-%j.err",
        "--account=ewhite",
        "--output=/home/b.weinstein/logs/dask-worker-%j.out",
        "--partition=gpu",
        "--gpus=1",
    ]

    cluster = module.SLURMCluster(
        processes=1,
        cores=2,
        memory=mem_size,
        walltime="24:00:00",
        job_extra=extra_args,
        extra=["--resources gpu=1"],
        nanny=False,
        scheduler_options={"dashboard_address": ":8787"},
        local_directory="/orange/idtrees-collab/tmp/",
        death_timeout=10000,
    )
    return cluster
