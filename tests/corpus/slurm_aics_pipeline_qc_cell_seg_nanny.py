"""Allen Institute for Cell Science pipeline_qc: distributed single-cell segmentation on GTX 1080 GPUs.

Source: aics-int/pipeline_qc, pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed.py at commit
18af7ad3e439da00323221c81aa890c355454d13, ``batch_cell_segmentations``
(https://github.com/aics-int/pipeline_qc/blob/18af7ad3e439da00323221c81aa890c355454d13/pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed.py).
Date: not shown.
Batch system: SLURM (partition ``aics_gpu_general``).
Meant: one GTX 1080 per job (``--gres=gpu:gtx1080:1``, a typed GRES, through the old ``job_extra``), one
worker without a nanny (``nanny=False``) and a ``GPU=1`` resource given through the old ``extra`` keyword
as one item, ``"--resources GPU=1,nthreads4"`` (sic: the second resource has no ``=``).
"""

SOURCE = {
    "repo": "aics-int/pipeline_qc",
    "path": "pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed.py",
    "commit": "18af7ad3e439da00323221c81aa890c355454d13",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:gtx1080:1, nanny=False, extra=['--resources GPU=1,nthreads4']"}


def make(module):
    cluster = module.SLURMCluster(
        cores=1,
        memory="60G",
        queue="aics_gpu_general",
        nanny=False,
        walltime="00:30:00",
        extra=["--resources GPU=1,nthreads4"],
        job_extra=["--gres=gpu:gtx1080:1"],
    )
    return cluster
