"""Issue 32, the first hour of a new user: ``check`` says each cause once and exits as it says, a
missing batch command is an error at once, a size without a unit is refused, and the smaller
stumbles of the demo and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import dask.config
import pytest

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.errors import BatchCommandNotFoundError

KEYWORDS = {
    "gpus_per_node": 2,
    "worker_mode": "per-device",
    "memory_per_gpu": "512MiB",
    "cpus_per_gpu": 1,
    "walltime": "00:10:00",
}


@pytest.fixture
def no_dask_cuda(tmp_path):
    """An environment whose python finds a dask_cuda that does not import (as on a machine without it)."""
    shadow = tmp_path / "shadow" / "dask_cuda"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no dask_cuda on this machine')\n")
    return {"PYTHONPATH": str(shadow.parent), "PYTHONWARNINGS": "default"}


def run_check(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("batch", ["local", "slurm"])
def test_check_names_the_missing_dask_cuda_once_and_exits_as_its_verdict_says(no_dask_cuda, batch):
    done = run_check("--batch", batch, env=no_dask_cuda)
    said = done.stdout + done.stderr
    assert "workers' python" not in done.stderr, done.stderr[:2000]  # no warning per site file validated
    assert len(done.stderr) < 2000, done.stderr[:2000]
    verdict = done.stdout.strip().splitlines()[-1]
    failed = [line for line in done.stdout.splitlines() if line.startswith("  FAIL")]
    assert (done.returncode == 1) == bool(failed) == verdict.endswith("each fix is named above"), said
    if batch == "slurm":  # SLURM's workers run dask-cuda by default: a cluster made here would fail
        assert done.returncode == 1, said
        assert [line for line in failed if "dask-cuda" in line], said
        assert said.count("the workers here run dask-cuda") == 1, said


def test_check_json_is_the_same_verdict_and_prints_no_warnings(no_dask_cuda):
    done = run_check("--batch", "slurm", "--json", env=no_dask_cuda)
    result = json.loads(done.stdout)
    failed = [f for f in result["findings"] if f["status"] == "fail"]
    assert done.returncode == 1 and any(f["topic"] == "dask-cuda" for f in failed), done.stdout
    assert "workers' python" not in done.stderr, done.stderr[:2000]


@pytest.fixture
def no_batch_commands(tmp_path, monkeypatch):
    """A PATH with python but no batch command, as on a machine without SLURM."""
    folder = tmp_path / "bin"
    folder.mkdir()
    os.symlink(sys.executable, folder / "python")
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.chdir(tmp_path)
    return folder


@pytest.mark.timeout(60)
def test_a_missing_submit_command_is_an_error_from_scale_naming_it_and_the_fix(no_batch_commands):
    with SLURMGPUCluster(**KEYWORDS) as cluster:
        with pytest.raises(BatchCommandNotFoundError) as raised:
            cluster.scale(gpus=8)
        message = str(raised.value)
        assert "sbatch" in message and "module load" in message and "login node" in message, message
        assert raised.value.command == "sbatch"
        assert len(cluster.worker_spec) == 0  # nothing left to submit later
        assert "when it answers" not in repr(cluster.jobs)


@pytest.mark.timeout(60)
def test_a_missing_submit_command_is_an_error_from_the_constructor_given_workers(no_batch_commands):
    with pytest.raises(BatchCommandNotFoundError, match="sbatch"):
        SLURMGPUCluster(**KEYWORDS, n_workers=2)


def _fake(folder, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


@pytest.mark.timeout(60)
def test_a_missing_query_command_is_an_error_too(no_batch_commands):
    # sbatch here but refusing as in an outage, squeue not on PATH: it will not start answering.
    _fake(no_batch_commands, "sbatch", "echo 'sbatch: error: Unable to contact slurm controller' >&2; exit 1\n")
    with SLURMGPUCluster(**KEYWORDS) as cluster:
        with pytest.raises(BatchCommandNotFoundError, match="squeue"):
            cluster.scale(gpus=2)


@pytest.mark.timeout(60)
def test_an_outage_of_commands_that_exist_is_still_waited_out(no_batch_commands):
    _fake(no_batch_commands, "sbatch", "echo 'sbatch: error: Unable to contact slurm controller' >&2; exit 1\n")
    _fake(no_batch_commands, "squeue", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1\n")
    with dask.config.set({"gpujobqueue.job-poll-interval": "1s"}), SLURMGPUCluster(**KEYWORDS) as cluster:
        cluster.scale(gpus=2)  # deferred, not raised
        assert "1 job(s) to submit when it answers" in repr(cluster.jobs), repr(cluster.jobs)


@pytest.mark.timeout(60)
def test_wait_for_workers_after_a_missing_command_raises_it_instead_of_waiting(no_batch_commands):
    from dask.distributed import Client

    with SLURMGPUCluster(**KEYWORDS) as cluster, Client(cluster) as client:
        with pytest.raises(BatchCommandNotFoundError):
            cluster.scale(gpus=8)
        with pytest.raises(BatchCommandNotFoundError, match="sbatch"):
            client.wait_for_workers(8, timeout=30)


@pytest.mark.parametrize("keywords", [{"memory": "240", "cores": 8}, {"memory_per_gpu": " 240 ", "cpus_per_gpu": 1}])
def test_a_size_without_a_unit_is_refused_naming_the_field_and_the_unit_to_add(keywords):
    from gpujobqueue import ValidationError
    from gpujobqueue.plan.scripts import job_script_for

    field = next(key for key in keywords if key.startswith("memory"))
    with pytest.raises(ValidationError) as refused:
        job_script_for("slurm", {"gpus_per_node": 2, "walltime": "00:10:00", **keywords}, name="w")
    assert refused.value.field == field
    assert "no unit" in str(refused.value) and "'240GB'" in str(refused.value), str(refused.value)


def test_render_refuses_memory_without_a_unit_and_writes_no_script(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "slurm", "--memory", "240", "--cores", "8"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "#SBATCH" not in done.stdout, done.stdout
    assert "--memory" in done.stderr and "no unit" in done.stderr, done.stderr


def test_sizes_with_a_unit_and_python_ints_of_bytes_are_read_as_before():
    from gpujobqueue.settings.validation import parse_size

    assert parse_size("memory", "240GB") == 240 * 10**9
    assert parse_size("memory", "240 GiB") == 240 * 2**30
    assert parse_size("memory", 2**30) == 2**30


def test_the_readmes_login_node_install_is_what_the_workers_python_check_asks_for():
    import re
    from pathlib import Path

    from gpujobqueue.machine.install import install_line, install_source

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| no GPU here (a login node)"))
    advised = re.findall(r"`(pip install [^`]+)`", row)
    # What the warning and check print, from the checkout these tests run: the README's '.' is its top folder.
    asked = re.findall(r"pip install '[^']+'", install_line(None).replace(install_source(), "."))
    assert advised and set(advised) <= set(asked), (advised, asked)


def test_no_line_of_the_docs_installs_gpujobqueue_from_the_package_index():
    """Issue 43, point 2: gpujobqueue is not on the package index; an install line names the checkout or a wheel."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found = [
        f"{page.name}: {line}" for page in pages for line in page.read_text().splitlines() if "'gpujobqueue[" in line
    ]
    assert not found, found


def test_the_install_line_names_where_this_gpujobqueue_came_from():
    from pathlib import Path

    from gpujobqueue.machine.install import install_line

    checkout = Path(__file__).resolve().parents[2]
    assert install_line("12.8") == f"pip install '{checkout}[cuda12]'"


def _starter_held(holder: str, pid: int) -> bool:
    """The Grid Engine fixture's starter's ``held`` (whether a GPU lock's process still runs its job), run by bash."""
    import re

    from fixtures.sge import STARTER

    function = re.search(r"^held\(\) \{.*?^\}$", STARTER, re.S | re.M).group(0)
    done = subprocess.run(["bash", "-c", f'{function}\nheld "$1" "$2"', "held", holder, str(pid)], timeout=30)
    return done.returncode == 0


def test_the_sge_starter_keeps_a_gpu_whose_holder_shows_no_environment():
    # Mid-exec (the holder's starter exec'ing its job) /proc/PID/environ reads empty: the next job's
    # starter took that GPU as free, and its workers shared it ("workers on ['1', '0'], sge allocated ['0']").
    blank = subprocess.Popen(["env", "-i", "sleep", "30"])
    mine = subprocess.Popen(["sleep", "30"], env={**os.environ, "JOB_ID": "41"})
    other = subprocess.Popen(["sleep", "30"], env={**os.environ, "JOB_ID": "7"})
    try:
        assert _starter_held("41", blank.pid), "a live holder showing no environment still holds its GPU"
        assert _starter_held("41.2", mine.pid)
        assert not _starter_held("41", other.pid), "a pid reused by another job's process frees the GPU"
    finally:
        for process in (blank, mine, other):
            process.kill()
            process.wait()
    assert not _starter_held("41", blank.pid), "a holder that is gone frees the GPU"


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command line into a pipe, with no COLUMNS (as a user's ``gpujobqueue sites | less``)."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_show_prints_sources_and_unconfirmed_once():
    done = cli("show", "perlmutter")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("sources:") or line.startswith("# sources (") for line in lines) == 1, done.stdout
    assert sum(line.startswith("unconfirmed:") or line == "# unconfirmed:" for line in lines) == 1, done.stdout


def test_a_site_name_typo_exits_2_in_show_as_in_render():
    shown, rendered = cli("show", "perlmuter"), cli("render", "perlmuter")
    assert (shown.returncode, rendered.returncode) == (2, 2), (shown.stderr, rendered.stderr)
    assert "did you mean 'perlmutter'" in shown.stderr, shown.stderr


def test_sites_into_a_pipe_prints_every_column_whole():
    from gpujobqueue.sites import site_table

    done = cli("sites")
    assert done.returncode == 0 and "…" not in done.stdout, done.stdout
    for row in site_table():
        line = next(line for line in done.stdout.splitlines() if line.split()[0] == row["name"])
        assert str(row["centre"]) in line and str(row["gpu"]) in line, (row, line)


def test_help_shows_no_rst_markup():
    done = cli("--help")
    assert done.returncode == 0 and "``" not in done.stdout, done.stdout


@pytest.fixture
def workers_python_without_dask_cuda(tmp_path, no_dask_cuda):
    """Another interpreter for the workers (a wrapper of this one whose dask_cuda does not import)."""
    python = tmp_path / "workers-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={no_dask_cuda["PYTHONPATH"]} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return str(python)


def test_check_probes_the_workers_python_set_in_config(workers_python_without_dask_cuda):
    # Before: check judged only its own python (which has dask_cuda here), said nothing of the one
    # gpujobqueue.slurm.python names, and passed; the workers would fail after their queue wait.
    python = workers_python_without_dask_cuda
    done = run_check("--batch", "slurm", "--json", env={"DASK_GPUJOBQUEUE__SLURM__PYTHON": python})
    findings = json.loads(done.stdout)["findings"]
    about = [f for f in findings if f["topic"] == "workers' python"]
    assert len(about) == 1 and about[0]["status"] == "fail", findings
    assert python in about[0]["detail"] and "cannot import dask_cuda" in about[0]["detail"], about
    assert "gpujobqueue.slurm.python" in about[0]["detail"] and python in about[0]["fix"], about
    assert done.returncode == 1


def test_check_says_nothing_more_of_a_workers_python_that_is_its_own():
    done = run_check("--batch", "slurm", "--json", env={"DASK_GPUJOBQUEUE__SLURM__PYTHON": sys.executable})
    findings = json.loads(done.stdout)["findings"]
    assert not [f for f in findings if f["topic"] == "workers' python"], findings
