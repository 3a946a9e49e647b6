"""dask-jobqueue's configuration examples: NERSC Cori's jobqueue.yaml (Haswell nodes).

Source: dask/dask-jobqueue, docs/source/clusters-configuration-examples.rst at commit
3a00196067afabb1438d9c0738ab7fb6562ecaa6, section "NERSC Cori"
(https://github.com/dask/dask-jobqueue/blob/3a00196067afabb1438d9c0738ab7fb6562ecaa6/docs/source/clusters-configuration-examples.rst).
Date: not shown.
Batch system: SLURM (NERSC Cori).
Meant: CPU workers configured entirely from the file (four processes on a 64-core Haswell node,
``-C haswell`` and a licence line in ``job-extra``). The page gives the file only; a configured
cluster is built with no argument, ``SLURMCluster()``.
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
distributed:
  worker:
    memory:
      target: False  # Avoid spilling to disk
      spill: False  # Avoid spilling to disk
      pause: 0.80  # fraction at which we pause worker threads
      terminate: 0.95  # fraction at which we terminate the worker

jobqueue:
    slurm:
        cores: 64
        memory: 115GB
        processes: 4
        queue: debug
        walltime: '00:10:00'
        job-extra: ['-C haswell', '-L project, SCRATCH, cscratch1']
"""


def make(module):
    return module.SLURMCluster()
