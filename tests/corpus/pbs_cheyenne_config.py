"""dask-jobqueue's configuration examples: NCAR Cheyenne's jobqueue.yaml (PBS section).

Source: dask/dask-jobqueue, docs/source/clusters-configuration-examples.rst at commit
3a00196067afabb1438d9c0738ab7fb6562ecaa6, section "Cheyenne"
(https://github.com/dask/dask-jobqueue/blob/3a00196067afabb1438d9c0738ab7fb6562ecaa6/docs/source/clusters-configuration-examples.rst).
Date: not shown.
Batch system: PBS Pro (NCAR Cheyenne).
Meant: nine CPU workers on a 36-core node from the file only, the select line written in
``resource-spec``. The page gives the file only; a configured cluster is built with no argument,
``PBSCluster()``.
"""

SOURCE = {
    "repo": "dask/dask-jobqueue",
    "path": "docs/source/clusters-configuration-examples.rst",
    "commit": "3a00196067afabb1438d9c0738ab7fb6562ecaa6",
    "date": "date not shown",
}
BATCH = "pbs"
MEANT = {"gpus_per_job": 0, "note": "CPU workers from jobqueue.yaml only"}
CONFIG_YAML = """
distributed:
  scheduler:
    bandwidth: 1000000000     # GB MB/s estimated worker-worker bandwidth
  worker:
    memory:
      target: 0.90  # Avoid spilling to disk
      spill: False  # Avoid spilling to disk
      pause: 0.80  # fraction at which we pause worker threads
      terminate: 0.95  # fraction at which we terminate the worker
  comm:
    compression: null

jobqueue:
  pbs:
    name: dask-worker
    cores: 36                   # Total number of cores per job
    memory: '109 GB'            # Total amount of memory per job
    processes: 9                # Number of Python processes per job
    interface: ib0              # Network interface to use like eth0 or ib0

    queue: regular
    walltime: '00:30:00'
    resource-spec: select=1:ncpus=36:mem=109GB

  slurm:
    name: dask-worker

    # Dask worker options
    cores: 1                    # Total number of cores per job
    memory: '25 GB'             # Total amount of memory per job
    processes: 1                # Number of Python processes per job

    interface: ib0

    account: PXYZ123
    walltime: '00:30:00'
    job-extra: {-C geyser}
"""


def make(module):
    return module.PBSCluster()
