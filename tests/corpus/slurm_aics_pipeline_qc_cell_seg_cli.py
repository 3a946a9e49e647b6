"""Allen Institute for Cell Science pipeline_qc: the cell segmentation command line, one GTX 1080 per job.

Source: aics-int/pipeline_qc, pipeline_qc/bin/cell_seg_dask_cli.py at commit
4d05272d92624caff756d5403767156144d9c397, ``main()``, "Run distributed"
(https://github.com/aics-int/pipeline_qc/blob/4d05272d92624caff756d5403767156144d9c397/pipeline_qc/bin/cell_seg_dask_cli.py).
Date: not shown.
Batch system: SLURM (partition ``aics_gpu_general``).
Meant: one GTX 1080 per job (``--gres=gpu:gtx1080:1`` through the old ``job_extra``), one single-threaded
worker per job, four jobs.
"""

SOURCE = {
    "repo": "aics-int/pipeline_qc",
    "path": "pipeline_qc/bin/cell_seg_dask_cli.py",
    "commit": "4d05272d92624caff756d5403767156144d9c397",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:gtx1080:1 through job_extra, cores=1"}


def make(module):
    cluster = module.SLURMCluster(
        cores=1,
        memory="50GB",
        queue="aics_gpu_general",
        walltime="00:20:00",
        job_extra=["--gres=gpu:gtx1080:1"],
    )
    return cluster
