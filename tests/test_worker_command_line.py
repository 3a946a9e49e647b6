"""The worker command lines the templates render parse under the installed CLIs themselves."""

import shlex

import click
import pytest
from distributed.cli import dask_worker

from gpujobqueue.scripts import job_script_for

dask_cuda_cli = pytest.importorskip("dask_cuda.cli", reason="dask-cuda (with cuda-bindings) is needed to parse its command line")

FULL_DASK_CUDA = {
    "gpus_per_node": 4, "python": "python3", "rmm_pool_size": "20GB", "device_memory_limit": "0.8",
    "local_directory": "/tmp/dask", "protocol": "ucx", "interface": "ib0", "death_timeout": 30,
    "nthreads": 2, "memory_per_gpu": "60GiB", "worker_extra_args": ["--dashboard-address", ":0"],
}


def worker_arguments(script: str, module: str) -> list[str]:
    """The arguments after ``python -m <module>`` in a rendered script, continuation lines joined."""
    lines = script.split("\n")
    start = next(i for i, line in enumerate(lines) if f" -m {module} " in line)
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    words = shlex.split(" ".join(command).rstrip("&"))
    return words[words.index(module.split()[0]) + len(module.split()):]


def test_dask_cuda_command_parses_under_dask_cuda():
    script = job_script_for("slurm", FULL_DASK_CUDA, name="job-7", scheduler="tcp://10.0.0.1:8786")
    args = worker_arguments(script, "dask_cuda.cli worker")
    context = dask_cuda_cli.worker.make_context("worker", args)
    params = context.params
    assert params["scheduler"] == "tcp://10.0.0.1:8786"
    assert params["name"] == "job-7"
    assert params["nthreads"] == 2
    assert params["resources"] == "GPU=1"
    assert params["rmm_pool_size"] == str(20 * 10**9)
    assert params["device_memory_limit"] == "0.8"
    assert params["protocol"] == "ucx" and params["interface"] == "ib0"
    assert params["death_timeout"] == "30"
    assert params["memory_limit"] == str(60 * 2**30)


def test_parser_rejects_what_dask_cuda_rejects():
    # The check above can fail: dask-cuda refuses --lifetime, which dask worker takes.
    script = job_script_for("slurm", {**FULL_DASK_CUDA, "worker_extra_args": ["--lifetime", "1h"]}, name="job-7")
    with pytest.raises(click.NoSuchOption):
        dask_cuda_cli.worker.make_context("worker", worker_arguments(script, "dask_cuda.cli worker"))


def test_per_device_command_parses_under_dask_worker():
    script = job_script_for("slurm", {"gpus_per_node": 2, "worker_mode": "per-device", "python": "python3", "death_timeout": 30}, name="job-3", scheduler="tls://10.0.0.1:8786")
    args = worker_arguments(script, "distributed.cli.dask_worker")
    params = dask_worker.main.make_context("dask-worker", args).params
    assert params["name"] == "job-3"  # dask worker names its nannies' workers job-3-0, job-3-1
    assert params["n_workers"] == "2"
    assert params["nanny"] is True
    assert params["preload_nanny"] == ("$pin_device",)  # the script's inline pinning code
    assert params["resources"] == "GPU=1"
    assert params["memory_limit"] == "0.5"


def test_per_device_without_nanny_parses_under_dask_worker():
    script = job_script_for("slurm", {"gpus_per_node": 2, "worker_mode": "per-device", "python": "python3", "nanny": False}, name="job-3")
    params = dask_worker.main.make_context("dask-worker", worker_arguments(script, "distributed.cli.dask_worker")).params
    assert params["name"] == "job-3-$i"  # the script expands $i to the device's index
    assert params["nanny"] is False
