"""The Dask blog, "Dask on HPC: a case study" (Summit): the configuration file, used by dask-labextension.

Source: dask/dask-blog, _posts/2019-08-28-dask-on-summit.md at commit 6aa03de9b95eb713693501b61f45ff3a87a781b1,
the last configuration file of "Slow worker startup"
(https://github.com/dask/dask-blog/blob/6aa03de9b95eb713693501b61f45ff3a87a781b1/_posts/2019-08-28-dask-on-summit.md).
Date: 2019-08-28.
Batch system: LSF with CSM (Summit).
Meant: the cluster the JupyterLab "new cluster" button makes: ``dask_jobqueue.LSFCluster`` with the
factory's kwargs (``project``) and everything else from ``jobqueue.lsf`` (8 CPU workers per node,
``-nnodes 1``, ``header-skip``); file locking off for the workers.
"""

SOURCE = {
    "repo": "dask/dask-blog",
    "path": "_posts/2019-08-28-dask-on-summit.md",
    "commit": "6aa03de9b95eb713693501b61f45ff3a87a781b1",
    "date": "2019-08-28",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 0, "note": "jobqueue.yaml + labextension factory kwargs"}
CONFIG_YAML = """
distributed:
  worker:
    multiprocessing-method: spawn
    use-file-locking: False

jobqueue:
  lsf:
    cores: 128
    processes: 8
    memory: 500 GB
    job-extra:
      - "-nnodes 1"
    interface: ib0
    header-skip:
    - "-R"
    - "-n "
    - "-M"

labextension:
  factory:
     module: 'dask_jobqueue'
     class: 'LSFCluster'
     args: []
     kwargs:
       project: your-project-id
"""


def make(module):
    return module.LSFCluster(project="your-project-id")
