"""Job arrays: jobs started together go as one array; scaling down cancels single elements.

On the real SLURM and Grid Engine and the PBS Pro and LSF emulators: one submission for four
jobs, each element's workers named after its job in the cluster, a right computation,
scale-down cancelling exactly the elements asked, a failing element reported with its own
log, and nothing left after close.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import dask.config
import pytest
from conftest import wait_until
from dask.distributed import Client
from emulators.common import JobStore
from test_conformance import BATCH, Backend, _backend, tmp_path_cwd  # noqa: F401  (fixture)

from gpujobqueue import JobFailedError, LocalGPUCluster, SLURMGPUCluster, ValidationError
from gpujobqueue.jobs.job_commands import consecutive_runs

SIZE = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}  # off a site, a job says its cores and memory
TASK_VARIABLE = {"slurm": "SLURM_ARRAY_TASK_ID", "sge": "SGE_TASK_ID", "pbs": "PBS_ARRAY_INDEX", "lsf": "LSB_JOBINDEX"}
# An element's id: its array's id and its index, as each batch system writes them.
ELEMENT_ID = {
    "slurm": re.compile(r"(?P<array>\d+)_(?P<index>\d+)"),
    "sge": re.compile(r"(?P<array>\d+)\.(?P<index>\d+)"),
    "pbs": re.compile(r"(?P<array>\d+)\[(?P<index>\d+)\]\.\S+"),
    "lsf": re.compile(r"(?P<array>\d+)\[(?P<index>\d+)\]"),
}


@pytest.fixture(params=BATCH)
def array_backend(request) -> Backend:
    return _backend(request, request.param)


def unfinished_elements(backend: Backend) -> set[str]:
    """The array elements the batch system still runs or queues, by its own commands."""
    if backend.name == "slurm":
        out = subprocess.run(
            ["squeue", "--array", "--noheader", "--format=%i"], capture_output=True, text=True, check=True
        ).stdout
        return {line.strip() for line in out.splitlines() if "_" in line}
    if backend.name == "sge":
        out = subprocess.run(["qstat", "-u", "*"], capture_output=True, text=True, check=True).stdout
        elements = set()
        for fields in (line.split() for line in out.splitlines()):
            if len(fields) > 8 and fields[0].isdigit() and "@" in fields[7]:
                elements.add(f"{fields[0]}.{fields[9]}" if len(fields) > 9 else fields[0])
            elif len(fields) > 8 and fields[0].isdigit():  # pending tasks share a line: 1-4:1
                first, _, rest = fields[8].partition("-")
                last = rest.partition(":")[0] or first
                elements.update(f"{fields[0]}.{i}" for i in range(int(first), int(last) + 1))
        return elements
    if backend.name == "lsf":
        return {job_id for job_id in backend.queue_ids() if "[" in job_id}
    if backend.name == "pbs":
        home = backend.queue_ids.__self__.home  # the emulator's own record of its subjobs
        return {job.key for job in JobStore(home).jobs() if job.array_index is not None and job.active}
    raise AssertionError(backend.name)


def element_key(backend: Backend, job_id: str) -> str:
    """The id as :func:`unfinished_elements` lists it (PBS: without the server)."""
    return job_id.split(".")[0] if backend.name == "pbs" else job_id


def element_facts(job_variable, dask_worker):
    return {"name": dask_worker.name, "index": os.environ.get(job_variable)}


def test_four_jobs_go_as_one_array_and_scale_down_cancels_exactly_two_elements(array_backend):
    backend = array_backend
    cluster = backend.cluster(job_array=True, gpus_per_node=1)
    try:
        cluster.scale(gpus=4)
        jobs = dict(cluster.workers)
        assert cluster._job_commands.commands_run == 1
        if backend.commands is not None:
            assert backend.commands.count("sbatch") == 1
        parsed = {name: ELEMENT_ID[backend.name].fullmatch(str(job.job_id)) for name, job in jobs.items()}
        assert all(parsed.values()), f"not array element ids: {[job.job_id for job in jobs.values()]}"
        assert len({match.group("array") for match in parsed.values()}) == 1, "one array"
        # Element k is the cluster's job number k - 1 (jobs are numbered from 0).
        assert {name: int(match.group("index")) for name, match in parsed.items()} == {
            f"{cluster._name}-{k - 1}": k for k in range(1, 5)
        }

        with Client(cluster) as client:
            client.wait_for_workers(4, timeout=120)
            facts = client.run(element_facts, TASK_VARIABLE[backend.name])
            for fact in facts.values():
                job_name = cluster._worker_to_job.job_of(fact["name"])
                assert int(fact["index"]) == int(parsed[job_name].group("index")), (
                    f"worker {fact['name']} runs in element {fact['index']}"
                )
            assert sorted(cluster._worker_to_job.job_of(fact["name"]) for fact in facts.values()) == sorted(jobs)
            assert client.submit(sum, range(101)).result() == 5050
            assert {element_key(backend, str(job.job_id)) for job in jobs.values()} <= unfinished_elements(backend)

            cluster.scale(gpus=2)
            kept = set(cluster.workers)
            assert len(kept) == 2
            gone = {element_key(backend, str(jobs[name].job_id)) for name in set(jobs) - kept}
            stay = {element_key(backend, str(jobs[name].job_id)) for name in kept}
            wait_until(
                lambda: not (unfinished_elements(backend) & gone),
                60,
                what=lambda: f"elements {gone} cancelled; queue {unfinished_elements(backend)}",
            )
            assert stay <= unfinished_elements(backend), "the other elements still run"
            if backend.commands is not None:
                assert backend.commands.count("scancel") == 1, "the two elements go in one scancel"
            wait_until(lambda: len(client.scheduler_info()["workers"]) == 2, 60, what="two workers left")
            assert client.submit(sum, range(11)).result() == 55
    finally:
        cluster.close()
    wait_until(lambda: not unfinished_elements(backend) and not backend.queue_ids(), 60, what="the queue to empty")


def test_an_array_element_that_fails_is_reported_with_its_own_log(array_backend):
    backend = array_backend
    # max-failures 1: the first element's failure is raised, and nothing replaced (a replacement is no element)
    with (
        dask.config.set({"gpujobqueue.replace.max-failures": 1}),
        backend.cluster(
            job_array=True, gpus_per_node=1, job_script_prologue=["module load cuda/99"], prologue_errors="stop"
        ) as cluster,
    ):
        cluster.scale(gpus=2)
        with Client(cluster) as client, pytest.raises(JobFailedError) as raised:
            client.wait_for_workers(2, timeout=120)
        failure = raised.value
        assert ELEMENT_ID[backend.name].fullmatch(failure.job_id), failure.job_id
        assert failure.exit_code == 127, str(failure)
        assert "prologue command failed with status 127: module load cuda/99" in failure.log_tail, str(failure)
        assert failure.log_path and os.path.isfile(failure.log_path)
    wait_until(lambda: not unfinished_elements(backend) and not backend.queue_ids(), 60, what="the queue to empty")


def test_consecutive_runs_split_at_gaps_and_at_the_size_limit():
    class Job:
        def __init__(self, name):
            self.name = name

    jobs = [Job(f"c-{i}") for i in (5, 0, 1, 2, 7, 8, 3)]
    assert [[job.name for job in run] for run in consecutive_runs(jobs, 3)] == [
        ["c-0", "c-1", "c-2"],
        ["c-3"],
        ["c-5"],
        ["c-7", "c-8"],
    ]


@pytest.mark.parametrize(
    "cluster_cls, keywords, refusal",
    [
        (LocalGPUCluster, {"devices": ["0"]}, "local jobs cannot be submitted as job arrays"),
        (SLURMGPUCluster, {"nodes": 2, "launcher": "srun"}, "one-node jobs"),
    ],
)
def test_job_arrays_are_refused_where_there_are_none(cluster_cls, keywords, refusal):
    with pytest.raises(ValidationError, match="job_array") as raised:
        cluster_cls(gpus_per_node=1, job_array=True, **keywords, **({} if cluster_cls is LocalGPUCluster else SIZE))
    assert refusal in str(raised.value)


@pytest.mark.parametrize(
    "batch, jobs, directive",
    [
        ("slurm", 3, "#SBATCH --array=1-3\n"),
        ("pbs", 3, "#PBS -J 1-3\n"),
        ("pbs", 1, None),  # PBS Pro's -J needs two elements or more: one job goes as a plain job
        ("lsf", 3, "#BSUB -J dask-worker[1-3]\n"),
        ("sge", 3, "#$ -t 1-3\n"),
    ],
)
def test_the_cli_renders_the_array_a_cluster_submits(batch, jobs, directive):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpujobqueue.cli",
            "render",
            batch,
            "--cores",
            "1",
            "--memory",
            "1GB",
            "--name",
            "gpujobqueue",
            "--job-array",
            str(jobs),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    if directive is None:
        assert "job_in_cluster" not in result.stdout and "--name gpujobqueue-0" in result.stdout
    else:
        assert directive in result.stdout
        assert f"job_in_cluster=gpujobqueue-$(( {TASK_VARIABLE[batch]} - 1 ))\n" in result.stdout


def test_the_cli_refuses_an_array_where_there_is_none():
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "local", "--job-array", "2"], capture_output=True, text=True
    )
    assert result.returncode != 0 and "--job-array: " in result.stderr and not result.stdout
