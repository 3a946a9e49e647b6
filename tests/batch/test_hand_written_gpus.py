"""GPU requests written by hand, as dask-jobqueue users write them, are read and taken over.

Each batch system's forms (``--gres=gpu:2``, ``--gpus=4``, ``-G 4``, PBS ``ngpus=`` in
``resource_spec`` or ``-l select``, LSF ``-gpu "num=2"``, Grid Engine ``-l gpu=2``): with no
``gpus_per_node`` the count is adopted (one worker per GPU), the script carries exactly one
GPU request, and a count that contradicts ``gpus_per_node``, ``processes`` or the site's node
is refused naming both, with nothing submitted. Two clusters really run: on the PBS emulator
and on the real SLURM (whose fake GPUs are gres).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys

import pytest
from conftest import wait_until
from dask.distributed import Client
from fixtures.emulators import pbs  # noqa: F401
from fixtures.sizes import with_job_size

from gpujobqueue import LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster, ValidationError
from gpujobqueue.plan.scripts import job_script_for

CLASSES = {"slurm": SLURMGPUCluster, "pbs": PBSGPUCluster, "lsf": LSFGPUCluster, "sge": SGEGPUCluster}
GPU_REQUEST_LINE = {
    "slurm": re.compile(r"^#SBATCH (--gres=\S*gpu|--gpus|-G)", re.M),
    "pbs": re.compile(r"^#PBS -l (select=\S*ngpus=|nodes=\S*gpus=)", re.M),
    "lsf": re.compile(r"^#BSUB -gpu\b", re.M),
    "sge": re.compile(r"^#\$ -l \S*\bgpu\w*=", re.M),
}
pytestmark = pytest.mark.filterwarnings("ignore:plain TCP")  # render's --no-tls, on purpose
SUBMIT = {"slurm": "sbatch", "pbs": "qsub", "lsf": "bsub", "sge": "qsub"}

# batch, keywords, GPU workers per job, the one GPU request line the script carries
ADOPTED = [
    ("slurm", {"job_extra_directives": ["--gres=gpu:1"]}, 1, "#SBATCH --gres=gpu:1"),
    ("slurm", {"job_extra_directives": ["--gres=gpu:a100:2"]}, 2, "#SBATCH --gres=gpu:a100:2"),
    ("slurm", {"job_extra_directives": ["--gres gpu:3"]}, 3, "#SBATCH --gres=gpu:3"),
    ("slurm", {"job_extra_directives": ["--gpus=4"]}, 4, "#SBATCH --gpus-per-node=4"),
    ("slurm", {"job_extra_directives": ["--gpus=h100:4"]}, 4, "#SBATCH --gpus-per-node=h100:4"),
    ("slurm", {"job_extra_directives": ["-G 4"]}, 4, "#SBATCH --gpus-per-node=4"),
    ("slurm", {"job_extra_directives": ["-G4"]}, 4, "#SBATCH --gpus-per-node=4"),
    ("slurm", {"job_extra_directives": ["--exclusive", "--gpus-per-node=4"]}, 4, "#SBATCH --gpus-per-node=4"),
    ("slurm", {"job_extra_directives": ["--gpus-per-task=2"]}, 2, "#SBATCH --gpus-per-node=2"),
    ("slurm", {"job_extra_directives": ["--gres=gpu:2,nvme:1"]}, 2, "#SBATCH --gres=gpu:2,nvme:1"),
    ("slurm", {"job_extra": ["--gres=gpu:2"]}, 2, "#SBATCH --gres=gpu:2"),  # dask-jobqueue's old name
    (
        "slurm",
        {"job_extra_directives": ["--gres=gpu:2"], "gpu_request": "gpus-per-node"},
        2,
        "#SBATCH --gpus-per-node=2",
    ),
    ("pbs", {"resource_spec": "select=1:ncpus=32:ngpus=4"}, 4, "#PBS -l select=1:ncpus=32:ngpus=4"),
    ("pbs", {"job_extra_directives": ["-l select=1:ncpus=8:ngpus=2"]}, 2, "#PBS -l select=1:ncpus=8:ngpus=2"),
    ("pbs", {"job_extra_directives": ["-l nodes=1:ppn=8:gpus=2"]}, 2, "#PBS -l nodes=1:ppn=8:gpus=2"),
    ("pbs", {"job_extra_directives": ["-l ngpus=2"]}, 2, "#PBS -l select=1:ncpus=2:ngpus=2:mem=1gb"),
    ("lsf", {"job_extra_directives": ['-gpu "num=2"']}, 2, '#BSUB -gpu "num=2:mode=exclusive_process"'),
    ("lsf", {"job_extra_directives": ["-gpu num=2:mode=shared"]}, 2, '#BSUB -gpu "num=2:mode=shared"'),
    (
        "lsf",
        {"job_extra_directives": ['-gpu "num=4:gmodel=TeslaV100"']},
        4,
        '#BSUB -gpu "num=4:mode=exclusive_process:gmodel=TeslaV100"',
    ),
    ("lsf", {"job_extra_directives": ["-gpu -"]}, 1, '#BSUB -gpu "num=1:mode=exclusive_process"'),
    ("lsf", {"job_extra_directives": ['-gpu "num=2:mps=yes"'], "gpu_request": "none"}, 2, '#BSUB -gpu "num=2:mps=yes"'),
    ("sge", {"job_extra_directives": ["-l gpu=2"]}, 2, "#$ -l gpu=2"),
    ("sge", {"job_extra_directives": ["-l gpus=3"]}, 3, "#$ -l gpus=3"),
    ("sge", {"job_extra_directives": ["-l gpu=2,h_vmem=8G"]}, 2, "#$ -l gpu=2"),
    ("sge", {"resource_spec": "gpu=2,h_vmem=8G"}, 2, "#$ -l gpu=2"),
    ("sge", {"job_extra_directives": ["-l gpu_a=2"], "gpu_complex": "gpu_a"}, 2, "#$ -l gpu_a=2"),
]


def _one_gpu_request(batch: str, script: str) -> str:
    lines = [script[m.start() : script.index("\n", m.start())] for m in GPU_REQUEST_LINE[batch].finditer(script)]
    assert len(lines) == 1, f"the script must carry exactly one GPU request, it carries {lines}"
    return lines[0]


def _ids(table):
    return [f"{row[0]}-{i}" for i, row in enumerate(table)]


@pytest.mark.parametrize("batch, keywords, workers, line", ADOPTED, ids=_ids(ADOPTED))
def test_a_hand_written_gpu_request_is_adopted_one_worker_per_gpu(batch, keywords, workers, line, caplog):
    with caplog.at_level(logging.INFO, logger="gpujobqueue.handwritten.gpus"):
        plan = CLASSES[batch].parse_keywords(with_job_size(keywords))
        request, launch = plan.request, plan.launch
    assert (request.gpus_per_node, launch.gpus_per_node) == (workers, workers)
    assert f"starting {workers} GPU workers per job" in caplog.text
    script = job_script_for(batch, {**with_job_size(keywords), "python": "python3"}, name="w", tls=False)
    assert _one_gpu_request(batch, script) == line
    assert f"# Generated by gpujobqueue: {workers} GPU worker(s) for w, dask-cuda mode." in script


def test_the_issues_sbatch_form_is_logged_as_the_issue_says(caplog):
    with caplog.at_level(logging.INFO, logger="gpujobqueue.handwritten.gpus"):
        SLURMGPUCluster.parse_keywords(with_job_size({"job_extra_directives": ["--gpus=4"]}))
    assert "job_extra_directives asks for 4 GPUs per node (--gpus=4): starting 4 GPU workers per job" in caplog.text


def test_the_other_resources_of_a_line_stay_in_place():
    for keywords in ({"job_extra_directives": ["-l gpu=2,h_vmem=8G"]}, {"resource_spec": "gpu=2,h_vmem=8G"}):
        script = job_script_for(
            "sge", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **keywords, "python": "python3"}, name="w", tls=False
        )
        assert "#$ -l h_vmem=8G\n" in script


def test_a_line_written_where_the_generated_one_is_skipped_stays():
    # tests/batch/test_multi_node.py's stand-in skips the generated --gpus-per-node and writes --gpus-per-task itself
    keywords = {"job_directives_skip": ["--gpus-per-node"], "job_extra_directives": ["--gpus-per-task=2"]}
    script = job_script_for(
        "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **keywords, "python": "python3"}, name="w", tls=False
    )
    assert _one_gpu_request("slurm", script) == "#SBATCH --gpus-per-task=2"
    assert "Generated by gpujobqueue: 2 GPU worker(s)" in script


def test_pbs_resource_spec_gives_its_cores_and_memory_to_the_workers():
    keywords = {"resource_spec": "select=1:ncpus=32:ngpus=4:mem=100gb", "python": "python3"}
    script = job_script_for("pbs", keywords, name="w", tls=False)
    assert "--nthreads 8 \\" in script, "32 cores for 4 workers: 8 threads each, none idle"
    assert f"--memory-limit {100 * 2**30 // 4} \\" in script, "PBS's gb is binary"


def test_a_cluster_object_writes_the_adopted_request_once():
    keywords = dict(cores=24, memory="100GB", processes=4, job_extra_directives=["--gres=gpu:4"], python="python3")
    with SLURMGPUCluster(**keywords) as cluster:
        script = cluster.job_script()
    assert _one_gpu_request("slurm", script) == "#SBATCH --gres=gpu:4"
    assert "--nthreads 6 \\" in script and "--memory-limit 25000000000 \\" in script
    assert cluster.workers_per_job == 4


# keywords, what the error must name (both fields, both values)
CONFLICTS = [
    (
        "slurm",
        {"cores": 24, "memory": "100GB", "processes": 4, "job_extra_directives": ["--gres=gpu:1"]},
        ["processes=4", "'--gres=gpu:1'", "1 GPU"],
    ),
    (
        "slurm",
        {"gpus_per_node": 4, "job_extra_directives": ["--gres=gpu:2"]},
        ["gpus_per_node=4", "job_extra_directives[0] '--gres=gpu:2'"],
    ),
    ("slurm", {"gpus_per_node": 2, "job_extra_directives": ["--gpus=4"]}, ["gpus_per_node=2", "'--gpus=4'"]),
    ("slurm", {"gpu_type": "v100", "job_extra_directives": ["--gres=gpu:a100:2"]}, ["gpu_type='v100'", "'a100'"]),
    (
        "slurm",
        {"job_extra_directives": ["--gres=gpu:2", "-G 2"]},
        ["job_extra_directives[0] '--gres=gpu:2'", "job_extra_directives[1] '-G 2'"],
    ),
    ("slurm", {"nodes": 2, "launcher": "srun", "job_extra_directives": ["--gpus=3"]}, ["'--gpus=3'", "2 nodes"]),
    (
        "pbs",
        {"gpus_per_node": 2, "resource_spec": "select=1:ncpus=32:ngpus=4"},
        ["gpus_per_node=2", "resource_spec 'select=1:ncpus=32:ngpus=4'"],
    ),
    ("pbs", {"cores": 16, "resource_spec": "select=1:ncpus=32:ngpus=4"}, ["cores=16", "resource_spec", "32"]),
    (
        "pbs",
        {"resource_spec": "select=1:ncpus=8", "job_extra_directives": ["-l select=1:ncpus=8:ngpus=2"]},
        ["resource_spec", "-l select=1:ncpus=8:ngpus=2"],
    ),
    ("lsf", {"gpus_per_node": 1, "job_extra_directives": ['-gpu "num=2"']}, ["gpus_per_node=1", "'-gpu \"num=2\"'"]),
    (
        "lsf",
        {"gpu_mode": "shared", "job_extra_directives": ["-gpu num=2:mode=exclusive_process"]},
        ["gpu_mode='shared'", "exclusive_process"],
    ),
    ("sge", {"gpus_per_node": 4, "job_extra_directives": ["-l gpu=2"]}, ["gpus_per_node=4", "'-l gpu=2'"]),
    ("sge", {"processes": 3, "resource_spec": "gpu=2"}, ["processes=3", "resource_spec 'gpu=2'"]),
    (
        "sge",
        {"parallel_environment": "smp", "cores": 2, "job_extra_directives": ["-l gpu=2"]},
        ["parallel_environment='smp'", "'-l gpu=2'", "gpus_per_node"],
    ),
    (
        "lsf",
        {"gpu_request": "csm", "job_extra_directives": ['-gpu "num=2"']},
        ["gpu_request='csm'", "'-gpu \"num=2\"'"],
    ),
    ("pbs", {"nodes": 1, "resource_spec": "select=2:ncpus=8:ngpus=2"}, ["nodes=1", "'select=2:ncpus=8:ngpus=2'"]),
    (
        "slurm",
        {"job_extra_directives": ["--gres=gpu:2 --exclusive"]},
        ["'--gres=gpu:2 --exclusive'", "line of its own"],
    ),
]


@pytest.fixture
def submissions(tmp_path, monkeypatch):
    """Every batch system's submit command on PATH records its call and refuses: the list of calls."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "submitted.log"
    for command in set(SUBMIT.values()):
        path = folder / command
        path.write_text(f'#!/bin/sh\necho "{command} $*" >> {log}\nexit 1\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    return lambda: log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("batch, keywords, named", CONFLICTS, ids=_ids(CONFLICTS))
def test_a_contradicting_request_is_refused_naming_both_and_nothing_is_submitted(batch, keywords, named, submissions):
    with pytest.raises(ValidationError) as info:
        CLASSES[batch](n_workers=1, python="python3", **keywords)
    for text in named:
        assert text in str(info.value), f"{text!r} not named in: {info.value}"
    assert submissions() == []


def test_more_gpus_than_the_sites_node_is_refused_naming_both():
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster.parse_keywords({"site": "perlmutter", "account": "m1234", "job_extra_directives": ["--gpus=8"]})
    assert "'--gpus=8'" in str(info.value) and "gpus_per_node=4" in str(info.value) and "perlmutter" in str(info.value)


def test_the_sites_count_gives_way_to_a_smaller_hand_written_one():
    keywords = {"site": "perlmutter", "account": "m1234_g", "job_extra_directives": ["--gpus=2"]}
    plan = SLURMGPUCluster.parse_keywords(keywords)
    request = plan.request
    assert request.gpus_per_node == 2 and request.job_extra_directives == ()


def render(*args):
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", *args, "--no-tls", "--python", "python3"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_render_adopts_the_hand_written_request_and_refuses_a_contradiction():
    out = render("slurm", "--cores", "8", "--memory", "16GB", "--job-extra-directives=--gres=gpu:2")
    assert out.returncode == 0, out.stderr
    assert _one_gpu_request("slurm", out.stdout) == "#SBATCH --gres=gpu:2"
    assert "Generated by gpujobqueue: 2 GPU worker(s)" in out.stdout and "--nthreads 4 \\" in out.stdout
    out = render("pbs", "--memory", "16GB", "--resource-spec", "select=1:ncpus=8:ngpus=2")
    assert out.returncode == 0, out.stderr
    assert _one_gpu_request("pbs", out.stdout) == "#PBS -l select=1:ncpus=8:ngpus=2"
    assert "Generated by gpujobqueue: 2 GPU worker(s)" in out.stdout
    out = render("slurm", "--gpus-per-node", "4", "--job-extra-directives=--gres=gpu:2")
    assert out.returncode != 0 and out.stdout == ""
    assert "--gpus-per-node 4" in out.stderr and "'--gres=gpu:2'" in out.stderr


def _devices(dask_worker):
    return os.environ.get("CUDA_VISIBLE_DEVICES")


RUN = dict(
    worker_mode="per-device",
    memory_per_gpu="512MiB",
    walltime="00:10:00",
    death_timeout=20,
    environment={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
)


def test_pbs_resource_spec_with_two_gpus_starts_two_workers_on_the_emulator(pbs, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # PBS copies job output back to the submit directory
    cluster = PBSGPUCluster(queue="workq", resource_spec="select=1:ncpus=8:ngpus=2", **RUN)
    with cluster, Client(cluster) as client:
        assert "#PBS -l select=1:ncpus=8:ngpus=2\n" in cluster.job_script()
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=120)
        devices = sorted(client.run(_devices).values())
        (job,) = cluster.workers.values()
        assert len(pbs.job_ids()) == 1
        assert devices == sorted(map(str, pbs.allocated_devices(job.job_id))) and len(set(devices)) == 2
    wait_until(lambda: not pbs.job_ids(), 60, what="the PBS queue to empty after close()")


@pytest.mark.slurm
def test_slurm_gres_by_hand_gets_two_workers_on_two_devices(slurm, counted):
    cluster = SLURMGPUCluster(queue="gpu", job_extra_directives=["--gres=gpu:2"], cpus_per_gpu=1, **RUN)
    with cluster, Client(cluster) as client:
        assert _one_gpu_request("slurm", cluster.job_script()) == "#SBATCH --gres=gpu:2"
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=120)
        devices = sorted(client.run(_devices).values())
        (job,) = cluster.workers.values()
        out = subprocess.run(
            ["scontrol", "show", "job", "-d", str(job.job_id)], capture_output=True, text=True, check=True
        ).stdout
        match = re.search(r"GRES=\S*?gpu\S*?\(IDX:([0-9,\-]+)\)", out)
        allocated = set()
        for part in match.group(1).split(","):
            low, _, high = part.partition("-")
            allocated.update(str(i) for i in range(int(low), int(high or low) + 1))
        assert counted.count("sbatch") == 1
        assert len(set(devices)) == 2 and set(devices) == allocated
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the SLURM queue to empty after close()")


@pytest.mark.parametrize(
    "cls, keywords, bound",
    [
        (SLURMGPUCluster, {"job_extra_directives": ["--gres=gpu:a100:99999999999999999999"]}, "more than the 64"),
        (SLURMGPUCluster, {"job_extra_directives": ["--gpus=99999999999999999999999"]}, "more than the 1048576"),
        (
            PBSGPUCluster,
            {"resource_spec": "select=1:ncpus=99999999999999999:ngpus=2"},
            "cores per chunk is more than the 4096",
        ),
        (PBSGPUCluster, {"resource_spec": "select=99999:ncpus=8:ngpus=2"}, "chunks (nodes) is more than the 16384"),
        (SGEGPUCluster, {"job_extra_directives": ["-l gpu=9999999999999999"]}, "more than the 64"),
    ],
)
def test_a_huge_count_in_a_hand_written_line_is_refused_naming_the_bound(cls, keywords, bound):
    # Before: the counts were read as at most four digits and called "not a number of GPUs",
    # whatever they counted (cores, chunks).
    with pytest.raises(ValidationError, match=re.escape(bound)):
        cls(**keywords)
