"""psweep's batch_dask examples: a JAX parameter sweep on GPU workers, one GPU and one worker per job.

Source: elcorto/psweep, examples/batch_dask/run_psweep_jax_gpu.py at commit
501d338faa3774fee799513e6909e2f9bf9e34eb, the ``SLURMCluster`` of ``__main__``
(https://github.com/elcorto/psweep/blob/501d338faa3774fee799513e6909e2f9bf9e34eb/examples/batch_dask/run_psweep_jax_gpu.py).
Date: not shown.
Batch system: SLURM (``queue="some_queue,some_other_queue"``, two partitions, as published).
Meant: one GPU per job (``--gres gpu:1``, the option and its value separated by a space), one single-threaded
worker per job; the example's docstring explains why it keeps to one GPU and one worker per batch job
(several workers on a ``--gres gpu:2`` job did not each see one GPU).
"""

SOURCE = {
    "repo": "elcorto/psweep",
    "path": "examples/batch_dask/run_psweep_jax_gpu.py",
    "commit": "501d338faa3774fee799513e6909e2f9bf9e34eb",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres gpu:1 with a space, two partitions in queue"}


def make(module):
    cluster = module.SLURMCluster(
        queue="some_queue,some_other_queue",
        ##account="some_account",
        processes=1,
        cores=1,
        job_extra_directives=["--gres gpu:1"],
        memory="10GiB",
        walltime="01:00:00",
        local_directory="dask_tmp",
        log_directory="dask_log",
        scheduler_options={"dashboard_address": ":3333"},
    )
    return cluster
