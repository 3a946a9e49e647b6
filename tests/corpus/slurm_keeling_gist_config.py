"""A researcher's jobqueue.yaml for the Keeling cluster (UIUC), shared as a gist.

Source: https://gist.github.com/swnesbitt/cf46a2b7e9c9888cec3c521fef15007a
Date: created 2020-02-26 (as the gist shows).
Batch system: SLURM (Keeling, University of Illinois).
Meant: CPU workers from the file only, five processes per job, a week's walltime, a node feature
given as a YAML flow mapping (``job-extra: {'-C h20'}``). The gist gives the file only; a configured
cluster is built with no argument, ``SLURMCluster()``. The gist page shows the file as a table;
its lines are given here with the nesting of a jobqueue.yaml.
"""

SOURCE = {"url": "https://gist.github.com/swnesbitt/cf46a2b7e9c9888cec3c521fef15007a", "date": "2020-02-26"}
BATCH = "slurm"
MEANT = {"gpus_per_job": 0, "note": "CPU workers from jobqueue.yaml only"}
CONFIG_YAML = """
jobqueue:
  slurm:
    name: dask-worker
    # Dask worker options
    cores: 5 # Total number of cores per job
    memory: "200 GB" # Total amount of memory per job
    processes: 5 # Number of Python processes per job
    # interface: ib0 #use for g partition
    # interface: eth0 #use for h partition
    death-timeout: 60 # Number of seconds to wait if a worker can not find a scheduler
    local-directory: /tmp # Location of fast local storage like /scratch or $TMPDIR
    # SLURM resource manager options
    queue: "node"
    project: "snesbitt-group"
    walltime: '7-00:00:00'
    extra: []
    env-extra: []
    job-cpu: null
    job-mem: null
    # job-extra: {'-C g20'} #use for g partition
    # job-extra: {'-C g256'} #use for g partition-large memory nodes
    job-extra: {'-C h20'} #use for h partition
    log-directory: null
"""


def make(module):
    return module.SLURMCluster()
