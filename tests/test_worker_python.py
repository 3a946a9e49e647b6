"""A cluster or `render` whose workers' python cannot import dask_cuda says so at once, naming
that python and the install line, instead of the jobs failing after their queue wait."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.install import dask_cuda_import_error
from gpujobqueue.scripts import job_script_for

KEYWORDS = {"gpus_per_node": 2, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}


@pytest.fixture
def python_without_dask_cuda(tmp_path):
    """A Python that runs but has no site-packages (so no dask_cuda); it counts its runs."""
    fake = tmp_path / "env" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        f'#!/bin/sh\necho run >> {fake.parent.parent}/runs\nprintf "%s\\0" "$@" >> {fake.parent.parent}/argv\n'
        f'exec {sys.executable} -I -S "$@"\n'
    )
    fake.chmod(0o755)
    dask_cuda_import_error.cache_clear()
    yield str(fake)
    dask_cuda_import_error.cache_clear()


def runs(python: str) -> int:
    path = python.rsplit("/bin/", 1)[0] + "/runs"
    try:
        return len(open(path).read().split())
    except FileNotFoundError:
        return 0


def test_render_warns_at_once_naming_the_python_and_the_install_line(python_without_dask_cuda):
    with pytest.warns(UserWarning) as caught:
        script = job_script_for(
            "slurm",
            {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **KEYWORDS, "python": python_without_dask_cuda},
            name="w",
        )
    assert f"{python_without_dask_cuda} -m dask_cuda.cli" in script  # the script is still written
    message = str(caught[0].message)
    assert f"the workers' python {python_without_dask_cuda} cannot import dask_cuda (ModuleNotFoundError" in message
    assert f"{python_without_dask_cuda} -m pip install 'gpujobqueue[cuda12]'" in message and "[cuda13]" in message
    # The probe runs once per python, however many scripts are rendered.
    with pytest.warns(UserWarning):
        job_script_for(
            "slurm",
            {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **KEYWORDS, "python": python_without_dask_cuda},
            name="w",
        )
    assert runs(python_without_dask_cuda) == 1
    # The probe's code reaches that python on its standard input, not in its arguments.
    words = open(python_without_dask_cuda.rsplit("/bin/", 1)[0] + "/argv").read().split("\0")[:-1]
    assert words == ["-"], words


def test_a_cluster_warns_when_it_is_made_before_any_job_is_submitted(python_without_dask_cuda, counted):
    with pytest.warns(UserWarning, match="cannot import dask_cuda"):
        cluster = SLURMGPUCluster(**KEYWORDS, python=python_without_dask_cuda)
    try:
        assert counted.count("sbatch") == 0
    finally:
        cluster.close()


def test_the_cli_render_prints_the_warning(python_without_dask_cuda):
    # A subprocess: pytest records the warnings of the test's own process instead of printing them.
    command = [
        sys.executable,
        "-c",
        "from gpujobqueue.cli import main; main()",
        "render",
        "slurm",
        "--gpus-per-node",
        "2",
        "--cores",
        "2",
        "--memory",
        "8GB",
        "--walltime",
        "00:10:00",
        "--python",
        python_without_dask_cuda,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"the workers' python {python_without_dask_cuda} cannot import dask_cuda" in result.stderr
    assert "#SBATCH --gpus-per-node=2" in result.stdout


@pytest.mark.parametrize(
    "keywords",
    [
        {"worker_mode": "per-device"},  # plain dask workers: dask_cuda is not needed
        {"python": sys.executable},  # this python imports dask_cuda
        {"python": "/nonexistent/env/bin/python"},  # a compute node's path: nothing here to ask
        {"python": "false"},  # not a python (tests/test_render.py stands it in for one)
    ],
    ids=["per-device", "python-with-dask-cuda", "python-not-on-this-machine", "not-a-python"],
)
def test_no_warning_where_dask_cuda_is_not_needed_or_cannot_be_probed(python_without_dask_cuda, keywords):
    keywords = {"python": python_without_dask_cuda, **keywords}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **KEYWORDS, **keywords}, name="w")
