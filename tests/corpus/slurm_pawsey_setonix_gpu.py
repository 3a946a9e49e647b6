"""Pawsey's vQPU hybrid workflow: the "gpu" cluster of Setonix, written with no GPU request.

Source: PawseySC/vqpu-hybrid-workflow, workflow/clusters/setonix_clusters.py at commit
49846d63a44e1322df85b22c0b545fec0432522e, ``gpu_kwargs``
(https://github.com/PawseySC/vqpu-hybrid-workflow/blob/49846d63a44e1322df85b22c0b545fec0432522e/workflow/clusters/setonix_clusters.py).
Date: not shown.
Batch system: SLURM (Pawsey Setonix, AMD MI250X GPU nodes).
Meant: workers on Setonix's ``gpu`` partition with the ``-gpu`` account; the kwargs name no GPU
(``job_extra_directives=[]``), so the GPUs the author wanted are left to the partition.
"""

SOURCE = {
    "repo": "PawseySC/vqpu-hybrid-workflow",
    "path": "workflow/clusters/setonix_clusters.py",
    "commit": "49846d63a44e1322df85b22c0b545fec0432522e",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": None, "note": "gpu partition and -gpu account, no GPU directive written"}


def make(module):
    gpu_kwargs = {
        "queue": "gpu",
        "cores": 64,
        "memory": "256 GB",
        "shebang": "#!/bin/bash",
        "account": "pawsey0001-gpu",
        "walltime": "24:00:00",
        "job_mem": "0",
        "job_script_prologue": ["source ~/.bashrc"],
        "job_directives_skip": [],
        "job_extra_directives": [],
    }
    return module.SLURMCluster(**gpu_kwargs)
