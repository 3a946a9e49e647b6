"""spsim (single-particle cryo-EM simulation with parakeet): GPU workers on STFC's SCARF cluster.

Source: alisterburt/spsim, spsim/cli.py at commit 105022f8366093ae7b3d4b3a514828e70d6b9e16, ``SCARF_GPU_CONFIG``
in ``spsim_scarf``
(https://github.com/alisterburt/spsim/blob/105022f8366093ae7b3d4b3a514828e70d6b9e16/spsim/cli.py).
Date: not shown.
Batch system: SLURM (STFC SCARF, partition ``gpu``).
Meant: one GPU per job (``job_extra=['--gres=gpu:1']``), one single-threaded worker, short jobs (30 minutes) whose
workers retire early through dask-jobqueue's old ``extra`` keyword: ``--lifetime 15m --lifetime-stagger 1m`` as four
separate items; ``cluster.adapt(maximum_jobs=n_gpus)``, one GPU per job.
"""

SOURCE = {
    "repo": "alisterburt/spsim",
    "path": "spsim/cli.py",
    "commit": "105022f8366093ae7b3d4b3a514828e70d6b9e16",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, extra --lifetime 15m --lifetime-stagger 1m (old keyword)"}


def make(module):
    # prepare computational resources
    SCARF_GPU_CONFIG = {
        "queue": "gpu",
        "cores": 1,
        "memory": "32GB",
        "job_extra": ["--gres=gpu:1"],
        "walltime": "00:30:00",
        "extra": ["--lifetime", "15m", "--lifetime-stagger", "1m"],
    }

    # create a cluster, connect to it and scale
    cluster = module.SLURMCluster(**SCARF_GPU_CONFIG)
    return cluster
