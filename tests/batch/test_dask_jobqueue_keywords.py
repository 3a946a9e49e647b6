"""What dask-jobqueue accepts is accepted, with the same meaning on GPUs (issue 31): a launcher prefix
in ``python``, ``nanny=False``, ``worker_command='dask_cuda.cli'``; each worker line parses under the
worker CLI that runs it."""

import shlex

import pytest
from fixtures.sizes import with_job_size
from test_worker_command_line import command_environment
from test_worker_line_cli import parsed, resources

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings.worker_args import DASK_CUDA_WORKER, DASK_WORKER


def script_for(batch: str = "slurm", **keywords) -> str:
    return job_script_for(batch, with_job_size(keywords), name="job-7", scheduler="tls://10.0.0.1:8786")


def words_before(script: str, module: str) -> list[str]:
    """The shell words of the worker line before ``-m <module>``, less its ``VAR=value`` assignments."""
    line = next(line for line in script.split("\n") if f" -m {module} " in line)
    words = shlex.split(line.split(f" -m {module} ")[0])
    return [word for word in words if "=" not in word.split("/")[0]]


@pytest.mark.parametrize("mode, module", [("dask-cuda", DASK_CUDA_WORKER), ("per-device", DASK_WORKER)])
def test_a_launcher_prefix_in_python_starts_the_workers_as_in_dask_jobqueue(mode, module):
    # scaling-python-with-dask: python="srun -n 1 -c 1 python"; dask-jobqueue writes it before -m.
    script = script_for(python="srun -n 1 -c 8 python3", worker_mode=mode, gpus_per_node=2)
    assert words_before(script, module) == [
        "srun",
        "-n",
        "1",
        "-c",
        "8",
        "python3",
        "-P",
    ]  # -P: no module of the current directory
    assert resources(parsed(script, module)["resources"]) == {"GPU": 1.0}


def test_the_workers_python_is_the_interpreter_after_the_prefix():
    plan = make_plan(cluster_class("slurm"), with_job_size({"python": "srun -n 1 /opt/env/bin/python"}))
    assert (plan.launch.python_prefix, plan.launch.python) == (("srun", "-n", "1"), "/opt/env/bin/python")


@pytest.mark.parametrize(
    "python, says",
    [
        ("srun -n 1 python; rm -rf ~", "python"),
        ("srun $(whoami) python", "python"),
        ("srun 'python", "cannot be read as shell words"),
    ],
)
def test_a_prefix_with_shell_characters_is_refused(python, says):
    with pytest.raises(ValidationError, match=says) as refused:
        make_plan(cluster_class("slurm"), with_job_size({"python": python}))
    assert refused.value.field == "python"


def test_a_prefix_beside_a_launcher_of_the_jobs_nodes_is_refused():
    keywords = with_job_size({"python": "srun -n 1 python", "nodes": 2})
    with pytest.raises(ValidationError, match="launcher") as refused:
        make_plan(cluster_class("slurm"), keywords)
    assert refused.value.field == "python"


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge", "local"])
def test_nanny_false_starts_one_worker_per_gpu_without_a_nanny(batch):
    # dask-jobqueue's nanny=False (SMAC3's docs, weecology's BOEM): dask-cuda always has nannies, so each
    # GPU gets a `dask worker --no-nanny` that sees that GPU alone.
    script = script_for(batch, nanny=False, gpus_per_node=2)
    params = parsed(script, DASK_WORKER)
    assert params["nanny"] is False and resources(params["resources"]) == {"GPU": 1.0}
    assert f"-m {DASK_CUDA_WORKER}" not in script
    assert 'CUDA_VISIBLE_DEVICES="${devices[$i]}"' in script


def test_nanny_false_with_dask_cuda_named_is_refused_saying_why():
    keywords = with_job_size({"nanny": False, "worker_mode": "dask-cuda"})
    with pytest.raises(ValidationError, match="nanny") as refused:
        make_plan(cluster_class("slurm"), keywords)
    assert refused.value.field == "nanny"


def test_nanny_false_with_a_dask_cuda_option_is_refused_naming_both():
    keywords = with_job_size({"nanny": False, "rmm_pool_size": "1GB"})
    with pytest.raises(ValidationError, match="rmm_pool_size") as refused:
        make_plan(cluster_class("slurm"), keywords)
    assert refused.value.field == "nanny"


def test_worker_command_dask_cuda_runs_dask_cuda_workers_on_a_machine_without_gpus():
    # dask-jobqueue PR 606: LocalCluster(worker_command="dask_cuda.cli"); this machine may have no GPU.
    plan = make_plan(cluster_class("local"), {"worker_command": "dask_cuda.cli", "cores": 2, "memory": "2GB"})
    assert (plan.launch.mode, plan.launch.worker_command) == ("dask-cuda", DASK_CUDA_WORKER)


def test_worker_command_dask_cuda_in_the_per_device_mode_is_refused():
    keywords = with_job_size({"worker_command": "dask_cuda.cli", "worker_mode": "per-device"})
    with pytest.raises(ValidationError, match="worker_mode='dask-cuda'") as refused:
        make_plan(cluster_class("slurm"), keywords)
    assert refused.value.field == "worker_command"


def test_no_nanny_workers_keep_the_lifetime_config():
    script = script_for(nanny=False, walltime="01:00:00", worker_extra_args=["--lifetime", "50m"])
    assert "export DASK_DISTRIBUTED__WORKER__LIFETIME__DURATION=3000s" in script
    assert command_environment(script, DASK_WORKER)["DASK_DISTRIBUTED__WORKER__HTTP__ROUTES"] == "[]"


@pytest.mark.parametrize(
    "line, gpus",
    [
        ('-gpu "num=1:j_exclusive=yes:mode=shared:mps=no"', 1),
        ("-gpu num=2:mps=yes:aff=no", 2),
        ('-gpu "num=4:gmodel=TeslaV100_SXM2_32GB:gmem=16G"', 4),
    ],
)
def test_an_lsf_gpu_line_with_options_gpujobqueue_does_not_write_is_the_jobs_request(line, gpus):
    # The common LSF spelling (j_exclusive, mps, aff, gmem): kept as written, its count adopted, never doubled.
    keywords = with_job_size({"job_extra_directives": [line]})
    plan = make_plan(cluster_class("lsf"), keywords)
    assert plan.request.gpus_per_node == gpus == plan.launch.gpus_per_node
    script = job_script_for("lsf", keywords, name="job-7")
    assert [row for row in script.split("\n") if "-gpu" in row] == [f"#BSUB {line}"]


def test_python_m_gpujobqueue_is_the_gpujobqueue_command():
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpujobqueue",
            "render",
            "slurm",
            "--gpus-per-node",
            "1",
            "--cores",
            "1",
            "--memory",
            "1GB",
            "--python",
            "python3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("#!") and "#SBATCH --gpus-per-node=1" in out.stdout
    usage = subprocess.run([sys.executable, "-m", "gpujobqueue", "--help"], capture_output=True, text=True, timeout=60)
    assert usage.stdout.startswith("Usage: gpujobqueue ")
