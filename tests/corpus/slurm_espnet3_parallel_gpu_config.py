"""ESPnet3's configuration guide: the SLURM ``parallel_gpu`` section, ``walltime: 30:00`` unquoted.

Source: espnet/espnet, doc/espnet3/config_guide.md at commit 1f7641919d1f55b62dd0ca3a6507c04a8ce96b9f,
section "Parallel Execution ("parallel")"
(https://github.com/espnet/espnet/blob/1f7641919d1f55b62dd0ca3a6507c04a8ce96b9f/doc/espnet3/config_guide.md).
The same ``options`` block (``walltime: 30:00``, ``--gres=gpu:1``) is repeated in ESPnet3's docs for
collect-stats and the training config. How ESPnet3 builds the cluster from it:
espnet/espnet, espnet3/parallel/parallel.py at commit 0232b0cd4b6f3f3d45341d36f58133deac5701ed
(``set_parallel`` turns ``config.options`` into a dict, ``_build_client`` calls
``CLUSTER_MAP[config.env](**config.options)`` with ``SLURMCluster`` for ``env: slurm``, then
``cluster.scale(config.n_workers)``).
Date: not shown.
Batch system: SLURM (partition ``gpu``, no site named).
Meant: three jobs (``n_workers: 3``), each one single-process worker on 8 cores and 16GB with one GPU
(``--gres=gpu:1`` in ``job_extra_directives``), "each worker has 8 cpus and 1 gpu" as the guide says; a
30-minute walltime. The recipe config is read by OmegaConf (a YAML 1.1 loader), so the unquoted
``30:00`` reaches ``SLURMCluster`` as the integer 1800 (sexagesimal); dask-jobqueue writes
``#SBATCH -t 1800``, which sbatch reads as 1800 minutes. ``make`` loads the section with
``yaml.safe_load`` (same YAML 1.1 int) and passes its ``options`` as ESPnet3 does; the config is not
a jobqueue.yaml, so it is not merged into dask's configuration. ``cluster.scale(3)`` is left out.
"""

SOURCE = {
    "repo": "espnet/espnet",
    "path": "doc/espnet3/config_guide.md",
    "commit": "1f7641919d1f55b62dd0ca3a6507c04a8ce96b9f",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "walltime: 30:00 unquoted (YAML 1.1 int 1800), --gres=gpu:1, ESPnet3 parallel_gpu"}

# The guide's YAML block, as published (the recipe config that ESPnet3 reads with OmegaConf).
ESPNET3_PARALLEL_YAML = """
parallel_cpu:
  env: slurm
  n_workers: 64
  options:
    queue: cpu
    cores: 16
    processes: 4
    memory: 16GB
    walltime: 30:00

parallel_gpu:
  env: slurm
  n_workers: 3
  options:
    queue: gpu
    cores: 8
    processes: 1
    memory: 16GB
    walltime: 30:00
    job_extra_directives:
      - "--gres=gpu:1"
"""


def make(module):
    import yaml

    config = yaml.safe_load(ESPNET3_PARALLEL_YAML)["parallel_gpu"]
    options = dict(config["options"])  # espnet3.parallel.set_parallel: dict(config.options)
    return module.SLURMCluster(**options)  # espnet3.parallel._build_client: CLUSTER_MAP["slurm"](**config.options)
