"""Allen Institute for Cell Science pipeline_qc: GPU segmentation workers without a nanny, GTX 1080 per job.

Source: aics-int/pipeline_qc, pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed3.py at commit
291f6784f7a169f7384ebd262c1981729cb19335, ``CellSegmentationDistributedWrapper3.batch_cell_segmentations``,
"Segment (GPU)"
(https://github.com/aics-int/pipeline_qc/blob/291f6784f7a169f7384ebd262c1981729cb19335/pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed3.py).
Date: not shown.
Batch system: SLURM (partition ``aics_gpu_general``).
Meant: one GTX 1080 per job (``--gres=gpu:gtx1080:1``, a typed GRES, through the old ``job_extra``), one
single-threaded worker per job run without a nanny (``nanny=False``) and given a ``GPU=1`` resource through the
old ``extra`` keyword, well formed this time (``"--resources GPU=1"``; cell_seg_wrapper_distributed.py's
``"--resources GPU=1,nthreads4"`` is slurm_aics_pipeline_qc_cell_seg_nanny); ``cluster.scale(3)``.
"""

SOURCE = {
    "repo": "aics-int/pipeline_qc",
    "path": "pipeline_qc/image_qc_methods/cell_seg_wrapper_distributed3.py",
    "commit": "291f6784f7a169f7384ebd262c1981729cb19335",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:gtx1080:1, nanny=False, extra=['--resources GPU=1']"}


def make(module):
    cluster = module.SLURMCluster(
        cores=1,
        memory="60G",
        queue="aics_gpu_general",
        nanny=False,
        walltime="00:30:00",
        extra=["--resources GPU=1"],
        job_extra=["--gres=gpu:gtx1080:1"],
    )
    return cluster
