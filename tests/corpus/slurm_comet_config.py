"""dask-jobqueue's configuration examples: SDSC Comet's jobqueue.yaml.

Source: dask/dask-jobqueue, docs/source/clusters-configuration-examples.rst at commit
3a00196067afabb1438d9c0738ab7fb6562ecaa6, section "SDSC Comet"
(https://github.com/dask/dask-jobqueue/blob/3a00196067afabb1438d9c0738ab7fb6562ecaa6/docs/source/clusters-configuration-examples.rst).
Date: not shown.
Batch system: SLURM (SDSC Comet).
Meant: one CPU worker of 24 threads per node, the node-local SSD as local directory, ``job-mem``
for SLURM's ``--mem``, ``ib0``. The page gives the file only; a configured cluster is built with
no argument, ``SLURMCluster()``.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/clusters-configuration-examples.rst",
    "commit": "3a00196067afabb1438d9c0738ab7fb6562ecaa6",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 0, "note": "CPU workers from jobqueue.yaml only"}
CONFIG_YAML = """
jobqueue:
  slurm:
    name: dask-worker

    # Dask worker options
    cores: 24                   # Total number of cores per job
    memory: 120GB               # Total amount of memory per job (total 128GB per node)
    processes: 1                # Number of Python processes per job

    interface: ib0              # Network interface to use like eth0 or ib0
    death-timeout: 60           # Number of seconds to wait if a worker can not find a scheduler
    local-directory: /scratch/$USER/$SLURM_JOB_ID # local SSD

    # SLURM resource manager options
    queue: compute
    # account: xxxxxxx # choose account other than default
    walltime: '00:30:00'
    job-mem: 120GB              # Max memory that can be requested to SLURM
"""


def make(module):
    return module.SLURMCluster()
