"""The names of a cluster's jobs and workers: made here, and read back here, nowhere else.

A cluster named ``<cluster>`` numbers its jobs (never reusing a number):

- its GPU jobs ``<cluster>-<i>``; a job array's element ``k`` is the job ``<cluster>-<offset + k>``;
- its CPU-pool jobs ``<cluster>-cpu-<i>``.

A job's workers carry its name: a lone worker the job's name itself, the workers of one node
``<job>-<gpu>``, those of a job of several nodes ``<job>-<node>-<gpu>`` (``<job>-<node>`` with one
worker per node), the node numbered by the launcher's rank. CPU-pool workers are named as GPU
workers are, ``<gpu>`` numbering the worker in its job. Job names may hold ``-`` themselves
(``my-job``): a worker's job is found by the suffixes its job's shape gives, not by splitting.

Workers take their names in the job script, so the script's shell text that spells these names
comes from here too, as values the templates print (the per-device nannies' preload reads them there).
"""

from __future__ import annotations

import shlex
from typing import Any

SEPARATOR = "-"
CPU_JOB_INFIX = "-cpu-"  # CPU jobs are <cluster>-cpu-<i>; their workers add their own suffixes
CPU_BATCH_JOB_NAME_SUFFIX = "-cpu"  # the batch system's job name of CPU jobs, after the GPU jobs' one


def gpu_job_name(cluster: str, number: int) -> str:
    """The name of the cluster's GPU job number ``number``: ``<cluster>-<number>`` (also a job
    array's element, whose number is the array's offset plus its index)."""
    return f"{cluster}{SEPARATOR}{number}"


def array_job_name_text(prefix: str) -> str:
    """How a job array's script names its elements' jobs in its comments: ``<prefix>-<element's number>``."""
    return f"{prefix}{SEPARATOR}<element's number>"


def cpu_job_name(cluster: str, number: int) -> str:
    """The name of the cluster's CPU-pool job number ``number``: ``<cluster>-cpu-<number>``."""
    return f"{cluster}{CPU_JOB_INFIX}{number}"


def cpu_batch_job_name(gpu_batch_job_name: str) -> str:
    """The batch system's job name (``#SBATCH -J``) of CPU-pool jobs, unless the pool names its own."""
    return f"{gpu_batch_job_name}{CPU_BATCH_JOB_NAME_SUFFIX}"


def job_number(job_name: str) -> tuple[str, int] | None:
    """``("cluster", 7)`` for the job ``cluster-7``; None for a name without a number."""
    prefix, _, number = job_name.rpartition(SEPARATOR)
    return (prefix, int(number)) if prefix and number.isdigit() else None


def worker_suffixes(gpus: int, nodes: int) -> list[str]:
    """Suffixes that turn the name of a job of ``nodes`` nodes and ``gpus`` workers per node into its workers'
    names, in node then device order: none for a lone worker, ``-<gpu>`` on one node, ``-<node>-<gpu>`` on several."""
    per_node = [""] if gpus == 1 else [f"{SEPARATOR}{i}" for i in range(gpus)]
    if nodes == 1:
        return per_node
    return [f"{SEPARATOR}{node}{suffix}" for node in range(nodes) for suffix in per_node]


def worker_names(job_name: str, gpus: int, nodes: int) -> list[str]:
    """The names of a job's workers, in node then device order."""
    return [job_name + suffix for suffix in worker_suffixes(gpus, nodes)]


def gpu_index(worker_name: str) -> int:
    """The device number that ``dask worker --nworkers`` (or dask-cuda) gave a worker: the last
    number of its name."""
    return int(worker_name.rpartition(SEPARATOR)[2])


class WorkerJobKey:
    """Maps a scheduler's worker to the job that runs it, so whole jobs are retired together. Picklable: adapt
    sends it to the scheduler as the ``key`` of ``workers_to_close``. ``suffixes``: those that worker names add to
    their job's name (:func:`worker_suffixes`); ``cpu_suffixes``: the same for the CPU pool's jobs."""

    def __init__(self, suffixes: list[str], cpu_suffixes: list[str] | None = None):
        self.suffixes = sorted(suffixes, key=len, reverse=True)
        self.cpu_suffixes = sorted(cpu_suffixes or [], key=len, reverse=True)

    def job_of(self, worker_name: str) -> str:
        """The job name of a worker name (the name itself when no suffix fits)."""
        if self.cpu_suffixes and CPU_JOB_INFIX in worker_name:
            for suffix in self.cpu_suffixes:
                job = worker_name[: len(worker_name) - len(suffix)]
                if worker_name.endswith(suffix) and job.rpartition(CPU_JOB_INFIX)[2].isdigit():
                    return job
        for suffix in self.suffixes:
            if suffix and worker_name.endswith(suffix):
                return worker_name[: -len(suffix)]
        return worker_name

    def __call__(self, worker_state: Any) -> str:
        return self.job_of(str(worker_state.name))


# The job script's spelling of the names: shell words the templates print as they are.


def shell_worker_name(job_name: str, nodes: int) -> str:
    """The ``--name`` of a job's worker command on its node, as a shell word: the job's name, and
    on several nodes ``-<node>`` from the launched task's ``$node_rank``; the worker command adds
    ``-<gpu>`` to it for each of its workers."""
    return shlex.quote(job_name) + ('-"$node_rank"' if nodes > 1 else "")


def shell_device_worker_name(worker_name: str, gpus: int, index_variable: str = "i") -> str:
    """One worker process's ``--name`` when the script starts one process per device in a loop
    over ``$<index_variable>``: ``<worker_name>-<i>``, or ``worker_name`` alone for one device."""
    return worker_name + (f'{SEPARATOR}"${index_variable}"' if gpus > 1 else "")


def shell_array_job_name(prefix: str, number_expression: str) -> str:
    """A job array element's job name, worked out in the job: ``<prefix>-$(( <number> ))`` where
    ``number_expression`` is shell arithmetic for the element's job number."""
    return f"{shlex.quote(prefix)}{SEPARATOR}$(( {number_expression} ))"


SHELL_ARRAY_JOB_NAME = '"$job_in_cluster"'  # the variable the array script sets to shell_array_job_name()
