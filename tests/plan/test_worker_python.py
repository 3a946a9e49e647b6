"""A cluster or `render` whose workers' python cannot import dask_cuda, or gpujobqueue's preloads (which
the workers load by module name), or has another gpujobqueue, says so at once, naming that python and
the install line, instead of the jobs failing after their queue wait."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from gpujobqueue import SLURMGPUCluster, __version__
from gpujobqueue.machine.install import probe_imports, worker_python_problems
from gpujobqueue.plan.scripts import job_script_for

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
    probe_imports.cache_clear()
    yield str(fake)
    probe_imports.cache_clear()


def runs(python: str) -> int:
    path = python.rsplit("/bin/", 1)[0] + "/runs"
    try:
        return len(open(path).read().split())
    except FileNotFoundError:
        return 0


def test_render_warns_at_once_naming_the_python_and_the_install_line(python_without_dask_cuda, monkeypatch):
    monkeypatch.setattr("gpujobqueue.machine.install.install_source", lambda: "gpujobqueue")
    with pytest.warns(UserWarning) as caught:
        script = job_script_for(
            "slurm",
            {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **KEYWORDS, "python": python_without_dask_cuda},
            name="w",
        )
    assert f"{python_without_dask_cuda} -P -m dask_cuda.cli" in script  # the script is still written
    message = str(caught[0].message)
    assert f"the workers' python {python_without_dask_cuda} cannot import dask_cuda (ModuleNotFoundError" in message
    assert "and cannot import gpujobqueue's preloads (ModuleNotFoundError" in message
    assert f"{python_without_dask_cuda} -m pip install 'gpujobqueue[cuda12]'" in message and "[cuda13]" in message
    # The probe runs once per python, however many scripts are rendered.
    with pytest.warns(UserWarning):
        job_script_for(
            "slurm",
            {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **KEYWORDS, "python": python_without_dask_cuda},
            name="w",
        )
    assert runs(python_without_dask_cuda) == 1
    # The probe's code reaches that python on its standard input, not in its arguments: they name modules,
    # dask_cuda to be found, not imported (its import loads the CUDA stack: seconds of every start).
    words = open(python_without_dask_cuda.rsplit("/bin/", 1)[0] + "/argv").read().split("\0")[:-1]
    assert words[0] == "-" and "find:dask_cuda" in words and "gpujobqueue.preloads.watchdog" in words, words
    assert all(word == "-" or word.replace("_", "").replace(".", "").replace(":", "").isalnum() for word in words)


def test_a_clusters_start_finds_dask_cuda_without_importing_it_and_check_imports_it(tmp_path):
    # dask_cuda's import loads the CUDA stack: about 2 s of every cluster's start on a GPU node (issue 34). The
    # start finds it on the workers' python's path; `gpujobqueue check`, a diagnosis, imports it.
    shadow = tmp_path / "site" / "dask_cuda"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={shadow.parent}:$PYTHONPATH exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    probe_imports.cache_clear()
    try:
        assert worker_python_problems(str(python), dask_cuda=True, gpujobqueue=True) == []
        assert not (tmp_path / "imported").exists()
        assert worker_python_problems(str(python), dask_cuda=True, gpujobqueue=True, thorough=True) == []
        assert (tmp_path / "imported").exists()
    finally:
        probe_imports.cache_clear()


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
        "from gpujobqueue.cli.main import main; main()",
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
    "keywords, standalone",
    [
        ({"python": sys.executable}, False),  # this python imports dask_cuda and this gpujobqueue
        ({"python": "/nonexistent/env/bin/python"}, False),  # a compute node's path: nothing here to ask
        ({"python": "false"}, False),  # not a python (tests/script/test_render.py stands it in for one)
        ({"worker_mode": "per-device"}, True),  # the script carries the preloads; dask_cuda is not needed
    ],
    ids=["this-python", "python-not-on-this-machine", "not-a-python", "per-device-standalone"],
)
def test_no_warning_where_nothing_is_missing_or_needed_or_it_cannot_be_probed(
    python_without_dask_cuda, keywords, standalone
):
    keywords = {"python": python_without_dask_cuda, **keywords}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        job_script_for("slurm", {**KEYWORDS, **keywords}, name="w", standalone=standalone)


def test_per_device_workers_need_gpujobqueue_there_not_dask_cuda(python_without_dask_cuda):
    with pytest.warns(UserWarning) as caught:
        job_script_for("slurm", {**KEYWORDS, "worker_mode": "per-device", "python": python_without_dask_cuda}, name="w")
    (message,) = [str(warning.message) for warning in caught]
    assert f"the workers' python {python_without_dask_cuda} cannot import gpujobqueue's preloads" in message
    assert "dask_cuda" not in message
    assert f"{python_without_dask_cuda} -m pip install 'gpujobqueue=={__version__}'" in message
    assert "gpujobqueue render --standalone" in message


def test_another_gpujobqueue_in_the_workers_python_is_named_with_both_versions(tmp_path):
    # A python whose gpujobqueue (its preloads too) is another version: the names it preloads may differ.
    package = tmp_path / "site" / "gpujobqueue"
    (package / "preloads").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.0.1"\n')
    for name in ("__init__", "watchdog", "pin_device", "nic_affinity"):
        (package / "preloads" / f"{name}.py").write_text("")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    # (in its own folder: a python reading code on stdin imports from the current one first)
    python.write_text(f'#!/bin/sh\ncd {tmp_path}\nPYTHONPATH={tmp_path / "site"} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    probe_imports.cache_clear()
    with pytest.warns(UserWarning, match=rf"{python} has gpujobqueue 0\.0\.1, not {__version__} as here"):
        job_script_for("slurm", {**KEYWORDS, "worker_mode": "per-device", "python": str(python)}, name="w")
