"""NOMELT (Beck lab, University of Washington): the repository's jobqueue.yaml for Hyak's A40 partition.

Source: BeckResearchLab/nomelt, .config/dask/jobqueue.yaml at commit 6a5a3368749988ebb91e822d70865ae8e28bf587
(https://github.com/BeckResearchLab/nomelt/blob/6a5a3368749988ebb91e822d70865ae8e28bf587/.config/dask/jobqueue.yaml).
Date: not shown.
Batch system: SLURM (partition ``gpu-a40``, account ``escience``).
Meant: GPU workers configured entirely from the file: one GPU per job (``--gpus=1`` among the
``job_extra_directives``, with ``--nodes=1 --ntasks-per-node=1 --hint=multithread --export=all``), one
single-threaded worker per job on 6 CPUs (``job_cpu: 6``) and 40G, 16 hours, ``--lifetime 85m
--lifetime-stagger 5m`` in ``worker_extra_args``, conda activated in ``job_script_prologue``. The file mixes
underscore keys (``job_cpu``, ``job_extra_directives``, ``worker_extra_args``) with hyphenated ones, as dask's
configuration allows. Trailing blanks and the comment after ``local-directory`` are left out (line
length). The repository ships the file only; a configured cluster is built with no argument,
``SLURMCluster()``.
"""

SOURCE = {
    "repo": "BeckResearchLab/nomelt",
    "path": ".config/dask/jobqueue.yaml",
    "commit": "6a5a3368749988ebb91e822d70865ae8e28bf587",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "GPU workers from jobqueue.yaml only (--gpus=1, job_cpu 6, --lifetime 85m)"}
CONFIG_YAML = """
jobqueue:

  slurm:
    name: nomelt-workker

    # Dask worker options
    cores: 1                 # Total number of cores per job
    job_cpu: 6
    memory: '40G'                # Total amount of memory per job
    processes: 1                # Number of Python processes per job

    interface: null             # Network interface to use like eth0 or ib0
    death-timeout: 60           # Number of seconds to wait if a worker can not find a scheduler
    local-directory: /mmfs1/gscratch/cheme/usr/evankomp/repos/nomelt/

    # SLURM resource manager options
    shebang: "#!/usr/bin/env bash"
    queue: gpu-a40
    account: escience
    walltime: '16:00:00'
    job-mem: null
    log-directory: './logs/dask/'

    job_extra_directives: ['--nodes=1', '--ntasks-per-node=1', '--hint=multithread', '--export=all', '--gpus=1']
    worker_extra_args: ["--lifetime", "85m", "--lifetime-stagger", "5m"]
    job_script_prologue: ["source ~/.bashrc", "mamba activate nomelt2"]

    # Scheduler options
    scheduler-options: {}
"""


def make(module):
    return module.SLURMCluster()
