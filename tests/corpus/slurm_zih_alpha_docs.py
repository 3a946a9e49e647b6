"""TU Dresden ZIH's HPC compendium: dask-jobqueue on the Alpha Centauri GPU partition.

Source: lazariv/hpc-compendium (a mirror of the ZIH compendium), doc.zih.tu-dresden.de/docs/software/
data_analytics_with_python.md at commit 009ed7a3f3e33273f3f9667427c80e2e2d384537, the second
``SLURMCluster`` example ("Please have a look at the `extra` parameter ... for example, GPUs")
(https://github.com/lazariv/hpc-compendium/blob/009ed7a3f3e33273f3f9667427c80e2e2d384537/doc.zih.tu-dresden.de/docs/software/data_analytics_with_python.md).
Date: not shown.
Batch system: SLURM (ZIH, partition ``alpha``: 8 A100 per node).
Meant: two workers per job on the GPU partition, each with a ``gpu=1`` Dask resource; no GPU
directive written.
"""

SOURCE = {
    "repo": "lazariv/hpc-compendium",
    "path": "doc.zih.tu-dresden.de/docs/software/data_analytics_with_python.md",
    "commit": "009ed7a3f3e33273f3f9667427c80e2e2d384537",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": None, "note": "alpha (GPU) partition, processes=2, gpu=1 resource, no GPU directive"}


def make(module):
    cluster = module.SLURMCluster(
        queue="alpha",
        cores=8,
        processes=2,
        project="p_scads",
        memory="80GB",
        walltime="00:30:00",
        extra=["--resources gpu=1"],
    )
    return cluster
