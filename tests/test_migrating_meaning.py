"""docs/migrating.md's "What keeps its meaning" held item by item (issue 42).

Each bullet of that section is checked here against the script or the plan the package makes for the keywords
the bullet names; a bullet with no check fails `test_every_item_of_the_list_is_checked`, so the list cannot grow
past what is tested.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import dask
import pytest

from gpujobqueue import LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster, ValidationError
from gpujobqueue.plan.scripts import job_script_for

MIGRATING = Path(__file__).resolve().parents[1] / "docs" / "migrating.md"
JOB = {"cores": 8, "memory": "64GB", "gpus_per_node": 4}


def script(keywords, batch="slurm"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return job_script_for(batch, {**JOB, **keywords}, name="w", scheduler="tls://10.0.0.1:8786")


def plan(cls, keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.parse_keywords({**JOB, **keywords})


def items() -> list[str]:
    section = MIGRATING.read_text().split("## What keeps its meaning", 1)[1].split("\n## ", 1)[0]
    return [item for item in re.split(r"\n(?=- )", section.strip()) if item.startswith("- ")]


def first_name(item: str) -> str:
    return re.search(r"`([^`]+)`", item).group(1)


def check_cores_and_memory():
    text = script({"cores": 8, "memory": "64GB", "gpus_per_node": 2})
    assert "--cpus-per-task=8" in text and "--memory-limit 32000000000" in text
    two_nodes = plan(SLURMGPUCluster, {"cores": 8, "memory": "64GB", "gpus_per_node": 2, "nodes": 2})
    assert two_nodes.launch.memory_limit == 16_000_000_000
    with pytest.raises(ValidationError, match="memory_per_gpu"):
        plan(SLURMGPUCluster, {"memory_per_gpu": "16GB"})


def check_processes():
    alone = plan(SLURMGPUCluster, {"gpus_per_node": None, "processes": 2})
    assert alone.request.gpus_per_node == 2
    text = script({"processes": 2, "gpus_per_node": None, "job_extra_directives": ["--gres gpu:4"]})
    assert "--nworkers 2" in text and 'share=("${devices[@]:i*2:2}")' in text and "--resources GPU=2" in text
    assert plan(SLURMGPUCluster, {"processes": 2}).launch.memory_limit == 32_000_000_000
    with pytest.raises(ValidationError, match=r"processes.*(1, 2, 4|1, 2 or 4)"):
        plan(SLURMGPUCluster, {"processes": 3})
    with pytest.raises(ValidationError, match="worker_mode"):
        plan(SLURMGPUCluster, {"processes": 2, "worker_mode": "dask-cuda"})


def check_worker_extra_args():
    assert "--resources GPU=1,ssdGB=200" in script({"worker_extra_args": ["--resources ssdGB=200"]})
    assert "--resources GPU=2" in script({"gpus_per_node": None, "worker_extra_args": ["--resources GPU=2"]})
    resource_only = plan(
        SLURMGPUCluster, {"gpus_per_node": None, "processes": 1, "worker_extra_args": ["--resources ssdGB=200,GPU=2"]}
    )
    assert resource_only.request.gpus_per_node == 2
    text = script({"walltime": "01:00:00", "worker_extra_args": ["--lifetime", "55m", "--lifetime-stagger", "4m"]})
    assert "LIFETIME__DURATION=3300s" in text and "LIFETIME__STAGGER=240s" in text
    with pytest.raises(ValidationError, match="walltime_margin"):
        plan(SLURMGPUCluster, {"worker_extra_args": ["--lifetime", "55m"], "walltime_margin": "5m"})
    assert plan(SLURMGPUCluster, {"worker_extra_args": ["--no-nanny"]}).launch.nanny is False
    with pytest.raises(ValidationError, match="nanny"):
        plan(SLURMGPUCluster, {"worker_extra_args": ["--no-nanny"], "nanny": True})
    with pytest.raises(ValidationError, match="job_extra_directives"):
        plan(SLURMGPUCluster, {"worker_extra_args": ["--gres=gpu:1"]})
    with pytest.raises(ValidationError, match="worker_extra_args"):
        plan(SLURMGPUCluster, {"worker_extra_args": ["--nworkers", "2"]})
    assert "'$HOME'" in script({"worker_extra_args": ["--local-directory", "$HOME"]})


def check_python():
    text = script({"python": "srun -n 1 -c 8 python"})
    assert re.search(r"^srun -n 1 -c 8 python -P -m ", text, flags=re.MULTILINE)
    with pytest.raises(ValidationError, match="python"):
        plan(SLURMGPUCluster, {"python": "srun; rm -rf ~ python"})
    with pytest.raises(ValidationError, match="python"):
        plan(SLURMGPUCluster, {"python": "srun python", "nodes": 2})


def check_nanny():
    text = script({"nanny": False})
    assert text.count("--no-nanny") == 1 and "distributed.cli.dask_worker" in text
    with pytest.raises(ValidationError, match="rmm_pool_size"):
        plan(SLURMGPUCluster, {"nanny": False, "rmm_pool_size": "10GB"})
    with pytest.raises(ValidationError, match="worker_mode"):
        plan(SLURMGPUCluster, {"nanny": False, "worker_mode": "dask-cuda"})


def check_worker_command():
    assert "dask_cuda.cli" in script({"worker_command": "dask_cuda.cli"})
    assert "dask_cuda.cli" in script({"worker_command": "distributed.cli.dask_worker"})
    with pytest.raises(ValidationError, match="worker_command"):
        plan(SLURMGPUCluster, {"worker_command": "dask_cuda.cli", "worker_mode": "per-device"})


def check_queue_account_and_the_others():
    text = script(
        {
            "queue": "gpu",
            "account": 123456,
            "walltime": "01:00:00",
            "job_name": "mine",
            "job_extra_directives": ["--exclusive"],
            "job_script_prologue": ["module load cuda"],
            "death_timeout": 120,
        }
    )
    for line in ["--partition=gpu", "--account=123456", "--time=01:00:00", "--job-name=mine", "#SBATCH --exclusive"]:
        assert line in text
    assert "module load cuda" in text and "--death-timeout 120" in text
    assert "--mem" not in script({"job_directives_skip": ["--mem"]}).split("# Generated")[0]
    assert plan(PBSGPUCluster, {"walltime": 1800}).request.walltime == 1800
    assert plan(SLURMGPUCluster, {"walltime": 30}).request.walltime == 1800


def check_job_script_prologue():
    text = script({"job_script_prologue": ["module load cuda/99", "echo a\necho b"]})
    assert "set -e" not in text and "prologue command failed with status" in text
    assert "echo a\necho b" in text
    assert "set -e" in script({"job_script_prologue": ["false"], "prologue_errors": "stop"})


def check_memory():
    assert plan(SLURMGPUCluster, {"memory": 2**30 * 4, "gpus_per_node": 1}).launch.memory_limit == 2**32
    for value in [240, "240"]:
        with pytest.raises(ValidationError, match=r"memory.*240GB"):
            plan(SLURMGPUCluster, {"memory": value})


def check_queue_lists():
    assert "--partition=some_queue,some_other_queue" in script({"queue": "some_queue,some_other_queue"})
    assert '-q "short long"' in script({"queue": "short long"}, "lsf")
    assert "-q short,long" in script({"queue": "short,long"}, "sge")
    for batch, value in [("pbs", "a,b"), ("slurm", "a b"), ("slurm", "a,,b")]:
        with pytest.raises(ValidationError, match="queue"):
            script({"queue": value}, batch)


def check_sets_of_lines():
    with dask.config.set({"jobqueue.slurm.job_extra_directives": {"-C h20": None}}):
        assert "#SBATCH -C h20" in script({})
    assert script({"job_extra_directives": {"--b", "--a"}}).index("--a") < script(
        {"job_extra_directives": {"--b", "--a"}}
    ).index("--b")
    with pytest.raises(ValidationError, match="job_extra_directives"):
        plan(SLURMGPUCluster, {"job_extra_directives": {"new_param": "2"}})


def check_batch_systems_own_keywords():
    assert "--cpus-per-task=6" in script({"job_cpu": 6})
    for value in ["4000", "60G", "120GB", "64g"]:
        assert f"--mem={value}" in script({"job_mem": value})
    spec = "select=1:ncpus=8:ngpus=4:mem=64gb:host=x"
    assert f"-l {spec}" in script({"resource_spec": spec}, "pbs")
    assert "-n 4" in script({"ncpus": 4}, "lsf")
    assert "-l h_vmem=8G" in script({"resource_spec": "h_vmem=8G"}, "sge")


def check_lsf_memory_limit():
    text = script({"memory": "25GB", "gpus_per_node": 1}, "lsf")
    assert "#BSUB -M 25000000" in text and "rusage[mem" not in text


def check_renamed_keywords():
    for cls, old, new in [
        (SLURMGPUCluster, "project", "account"),
        (PBSGPUCluster, "project", "account"),
        (SLURMGPUCluster, "job_extra", "job_extra_directives"),
        (SLURMGPUCluster, "header_skip", "job_directives_skip"),
        (SLURMGPUCluster, "env_extra", "job_script_prologue"),
        (SLURMGPUCluster, "extra", "worker_extra_args"),
    ]:
        value = {"project": "p1", "job_extra": ["--exclusive"], "header_skip": ["--mem"]}.get(old, ["echo"])
        if old == "extra":
            value = ["--resources", "x=1"]
        with pytest.warns(FutureWarning, match=old):
            cls.parse_keywords({**JOB, old: value})
    for cls in [LSFGPUCluster, SGEGPUCluster]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            cls.parse_keywords({**JOB, "project": "p1"})


def check_job_script_and_the_methods():
    for method in ["job_script", "close", "wait_for_workers", "get_logs"]:
        assert callable(getattr(SLURMGPUCluster, method))
    from dask_jobqueue.core import JobQueueCluster

    assert issubclass(SLURMGPUCluster, JobQueueCluster)


CHECKS = {
    "cores": check_cores_and_memory,
    "processes": check_processes,
    "worker_extra_args": check_worker_extra_args,
    "python": check_python,
    "nanny=False": check_nanny,
    'worker_command="dask_cuda.cli"': check_worker_command,
    "queue": check_queue_account_and_the_others,
    "job_script_prologue": check_job_script_prologue,
    "memory": check_memory,
    "job_extra_directives": check_sets_of_lines,
    "job_cpu": check_batch_systems_own_keywords,
    "project": check_renamed_keywords,
    "worker_command": check_worker_command,
    "cluster.job_script()": check_job_script_and_the_methods,
}


def test_every_item_of_the_list_is_checked():
    names = [first_name(item) for item in items()]
    assert len(names) >= 14
    unchecked = [name for name in names if name not in CHECKS and not name.startswith("LSF")]
    assert not unchecked, f"items of 'What keeps its meaning' with no check here: {unchecked}"


@pytest.mark.parametrize("item", items(), ids=first_name)
def test_the_item_holds(item):
    name = first_name(item)
    if item.startswith("- `queue` takes a list"):
        check_queue_lists()
    elif item.startswith("- LSF's memory limit"):
        check_lsf_memory_limit()
    else:
        CHECKS[name]()
