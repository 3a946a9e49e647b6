"""dask-jobqueue's own documentation: low-priority nodes on Berkeley's Savio, QoS written with quotes.

Source: dask/dask-jobqueue, docs/source/examples.rst at commit 0148ab1d116fd9f2e02a125d4ee9deccea064007,
section "SLURM Deployment: Low-priority node usage"
(https://github.com/dask/dask-jobqueue/blob/0148ab1d116fd9f2e02a125d4ee9deccea064007/docs/source/examples.rst).
Date: not shown.
Batch system: SLURM (Savio, UC Berkeley).
Meant: CPU workers, six processes per job, the ``savio_lowprio`` QoS given in ``job_extra`` with
double quotes around the value, locale set in ``job_script_prologue``.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/examples.rst",
    "commit": "0148ab1d116fd9f2e02a125d4ee9deccea064007",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, processes=6, --qos with quotes"}


def make(module):
    cluster = module.SLURMCluster(
        cores=24,
        processes=6,
        memory="16GB",
        project="co_laika",
        queue="savio2_bigmem",
        job_script_prologue=['export LANG="en_US.utf8"', 'export LANGUAGE="en_US.utf8"', 'export LC_ALL="en_US.utf8"'],
        job_extra=['--qos="savio_lowprio"'],
    )
    return cluster
