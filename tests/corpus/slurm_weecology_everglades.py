"""Weecology's Everglades tools: GPU prediction workers on HiPerGator, dashboard through scheduler_options.

Source: weecology/EvergladesTools, Zooniverse/start_cluster.py at commit
21bf334158f66a9a14b10ebf63d98122fa48b684, the ``gpus`` branch of ``start()`` with its default
``mem_size="10GB"``
(https://github.com/weecology/EvergladesTools/blob/21bf334158f66a9a14b10ebf63d98122fa48b684/Zooniverse/start_cluster.py).
Date: not shown.
Batch system: SLURM (HiPerGator, University of Florida).
Meant: one GPU per job (``--partition=gpu``, ``--gpus=1`` in ``job_extra``), one worker with a
``gpu=1`` resource, the scheduler's dashboard on 8787.
"""

SOURCE = {
    "repo": "weecology/EvergladesTools",
    "path": "Zooniverse/start_cluster.py",
    "commit": "21bf334158f66a9a14b10ebf63d98122fa48b684",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gpus=1 on the gpu partition, one worker with gpu=1"}


def make(module):
    mem_size = "10GB"
    # job args
    extra_args = [
        "--error=/orange/idtrees-collab/logs/dask-worker-%j.err",
        "--account=ewhite",
        "--output=/orange/idtrees-collab/logs/dask-worker-%j.out",
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
        scheduler_options={"dashboard_address": ":8787"},
        local_directory="/orange/idtrees-collab/tmp/",
        death_timeout=300,
    )
    return cluster
