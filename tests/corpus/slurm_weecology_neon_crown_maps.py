"""Weecology's NEON crown maps: GPU prediction workers on HiPerGator (the code behind dask-jobqueue issue 379).

Source: weecology/NEON_crown_maps, start_cluster.py at commit 0212d1a90409a072e5f44efe8a0e2985d31e96ae,
the ``gpus`` branch of ``start()`` with its default ``mem_size="10GB"``
(https://github.com/weecology/NEON_crown_maps/blob/0212d1a90409a072e5f44efe8a0e2985d31e96ae/start_cluster.py).
Date: not shown (the job script it produced is quoted in https://github.com/dask/dask-jobqueue/issues/379).
Batch system: SLURM (HiPerGator, University of Florida).
Meant: one GPU per job (``--partition=gpu``, ``--gpus=1`` in ``job_extra``), one worker with a
``gpu=1`` resource (``extra`` with a space), the dashboard on 8787 given as ``dashboard_address``.
"""

SOURCE = {
    "repo": "weecology/NEON_crown_maps",
    "path": "start_cluster.py",
    "commit": "0212d1a90409a072e5f44efe8a0e2985d31e96ae",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gpus=1 on the gpu partition, one worker with gpu=1"}


def make(module):
    mem_size = "10GB"
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
        cores=1,
        memory=mem_size,
        walltime="24:00:00",
        job_extra=extra_args,
        extra=["--resources gpu=1"],
        dashboard_address="8787",
        local_directory="/orange/ewhite/b.weinstein/NEON/logs/dask/",
        death_timeout=300,
    )
    return cluster
