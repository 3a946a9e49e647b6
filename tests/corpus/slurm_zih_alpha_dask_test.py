"""TU Dresden ZIH's HPC compendium: the Monte-Carlo Pi example on the Alpha Centauri GPU partition.

Source: lazariv/hpc-compendium (a mirror of the ZIH compendium), doc.zih.tu-dresden.de/docs/software/
misc/dask_test.py at commit 43ec04ef2e2ea76a477428d27e235cd3cbaf3527
(https://github.com/lazariv/hpc-compendium/blob/43ec04ef2e2ea76a477428d27e235cd3cbaf3527/doc.zih.tu-dresden.de/docs/software/misc/dask_test.py).
Date: not shown.
Batch system: SLURM (ZIH, partition ``alpha``).
Meant: one worker per job with a ``gpu=1`` Dask resource on the GPU partition, the dashboard on a
port derived from the user id; no GPU directive written.
"""

import subprocess as sp

SOURCE = {
    "repo": "lazariv/hpc-compendium",
    "path": "doc.zih.tu-dresden.de/docs/software/misc/dask_test.py",
    "commit": "43ec04ef2e2ea76a477428d27e235cd3cbaf3527",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": None, "note": "alpha (GPU) partition, gpu=1 resource, no GPU directive"}


def make(module):
    # setting up the dashboard
    uid = int(sp.check_output("id -u", shell=True).decode("utf-8").replace("\n", ""))
    portdash = 10001 + uid

    # create a slurm cluster, please specify your project
    cluster = module.SLURMCluster(
        queue="alpha",
        cores=2,
        project="p_scads",
        memory="8GB",
        walltime="00:30:00",
        extra=["--resources gpu=1"],
        scheduler_options={"dashboard_address": f":{portdash}"},
    )
    return cluster
