"""Issue 40, point 1: nothing is imported from the directory a job or a cluster starts in. Python puts the
current directory first on the module path of `python -m ...` and `python -`: a `gpujobqueue/` planted in
the submit directory (or /tmp, or a group's project folder) ran as the user in every worker, nanny and
scheduler the package started, and in the scripts' own Python parts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster
from gpujobqueue.plan.scripts import job_script_for

KEYWORDS = {"gpus_per_node": 2, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}


def plant(folder: Path) -> list[Path]:
    """A ``gpujobqueue`` package, a ``json`` module and a ``multiprocessing`` package (what a spawned child
    imports first) in ``folder``, each writing a marker when imported; the markers."""
    markers = [folder.parent / f"{name}-ran" for name in ("gpujobqueue", "json", "multiprocessing")]
    for name in ("gpujobqueue", "multiprocessing"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / "gpujobqueue" / "__init__.py").write_text(f"open({str(markers[0])!r}, 'w').close()\n")
    (folder / "json.py").write_text(f"open({str(markers[1])!r}, 'w').close()\n")
    (folder / "multiprocessing" / "__init__.py").write_text(f"open({str(markers[2])!r}, 'w').close()\n")
    return markers


def test_a_local_cluster_its_scheduler_job_and_workers_import_nothing_from_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")
    markers = plant(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    keywords = dict(
        gpus_per_node=1,
        devices=["0"],
        worker_mode="per-device",  # nannies (their pin_device preload) and their spawned workers
        memory_per_gpu="512MiB",
        death_timeout=20,  # the watchdog preload, in the workers and the job's scheduler
        scheduler="job",
        shared_temp_directory=str(tmp_path),
    )
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=1)
        client.wait_for_workers(1, timeout=120)
        seen = client.run(lambda: (os.getcwd(), sys.path))
        scheduler_path = client.run_on_scheduler(lambda: sys.path)
    for cwd, path in seen.values():
        assert cwd == str(tmp_path / "project"), "the workers still run in the submit directory"
        assert "" not in path and cwd not in path, path
    assert "" not in scheduler_path and str(tmp_path / "project") not in scheduler_path
    assert [marker.name for marker in markers if marker.exists()] == []


def python_lines(script: str) -> list[str]:
    """The lines of ``script`` that start one of the package's pythons (not the user's ``--run`` script)."""
    return [line for line in script.splitlines() if re.search(r"python'? (-P )?(-m|-) ", line)]


@pytest.mark.parametrize(
    "keywords, options",
    [
        ({}, {}),
        ({"worker_mode": "per-device"}, {}),
        ({"worker_mode": "per-device", "nanny": False}, {}),
        ({}, {"scheduler_file": "/shared/scheduler.json"}),
        ({"nodes": 2, "launcher": "srun"}, {}),
        ({"worker_mode": "per-device"}, {"standalone": True}),
    ],
    ids=["dask-cuda", "per-device", "no-nanny", "scheduler-file", "two-nodes", "standalone"],
)
def test_every_python_the_scripts_start_starts_with_the_current_directory_off_its_path(keywords, options):
    script = job_script_for("slurm", {**KEYWORDS, **keywords}, name="w", **options)
    lines = python_lines(script)
    assert lines, script
    assert [line for line in lines if " -P " not in line] == []


def run_script_lines():
    from gpujobqueue.script.run import ClientRun

    script = job_script_for("slurm", KEYWORDS, name="w", run=ClientRun("/somewhere/analysis.py"))
    return python_lines(script)


def test_the_run_scripts_scheduler_credentials_address_and_client_parts_too():
    lines = run_script_lines()
    assert len(lines) >= 5, lines  # credentials, scheduler, its address, workers, the wait for them
    assert [line for line in lines if " -P " not in line] == []


ANALYSIS = """\
import json, os, sys
from distributed import Client
with Client() as client:
    assert client.submit(sum, [1, 2]).result() == 3
    seen = list(client.run(lambda: (os.getcwd(), sys.path)).values())
    seen.append(("scheduler", client.run_on_scheduler(lambda: sys.path)))
with open(sys.argv[1], "w") as out:
    json.dump(seen, out)
"""


def test_python_3_10s_start_keeps_the_directory_off_the_path_of_every_python_and_its_children(tmp_path, monkeypatch):
    # Python 3.10 has no -P: its start file does what -P does. Python 3.11 without -P behaves as 3.10 does.
    from gpujobqueue.script.run import ClientRun

    monkeypatch.setattr("gpujobqueue.script.render.python_version", lambda python: (3, 10))
    markers = plant(tmp_path / "project")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "analysis.py").write_text(ANALYSIS)
    keywords = {"gpus_per_node": 1, "cpus_per_gpu": 1, "memory_per_gpu": "1GiB", "worker_mode": "per-device"}
    script = job_script_for(
        "local", keywords, name="w", run=ClientRun(str(tmp_path / "user" / "analysis.py"), (str(tmp_path / "seen"),))
    )
    starts = [line for line in script.splitlines() if f"{sys.executable} " in line and "analysis.py" not in line]
    assert len(starts) >= 5, script
    assert [line for line in starts if f'{sys.executable} "$private_dir/gpujobqueue_safe_path.py" -' not in line] == []
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0", "DASK_DISTRIBUTED__DIAGNOSTICS__NVML": "False"}
    job = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path / "project", env=env, capture_output=True, text=True, timeout=240
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert [marker.name for marker in markers if marker.exists()] == []
    seen = json.loads((tmp_path / "seen").read_text())
    assert seen[0][0] == str(tmp_path / "project"), "the worker (a nanny's spawned child) runs in the submit directory"
    for _, path in seen:
        assert "" not in path and str(tmp_path / "project") not in path, path


def test_a_run_script_started_in_a_planted_directory_imports_nothing_from_it(tmp_path):
    markers = plant(tmp_path / "project")
    user = tmp_path / "user"
    user.mkdir()
    (user / "analysis.py").write_text(
        "from distributed import Client\nwith Client() as c:\n    assert c.submit(sum, [1, 2]).result() == 3\n"
    )
    render = [sys.executable, "-P", "-m", "gpujobqueue.cli", "render", "local", "--gpus-per-node", "1"]
    render += ["--cores", "1", "--memory", "2GB", "--walltime", "00:10:00", "--worker-mode", "per-device"]
    rendered = subprocess.run(
        [*render, "--run", str(user / "analysis.py")], capture_output=True, text=True, timeout=120, cwd=user
    )
    assert rendered.returncode == 0, rendered.stderr
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0", "DASK_DISTRIBUTED__DIAGNOSTICS__NVML": "False"}
    job = subprocess.run(
        ["bash", "-c", rendered.stdout], cwd=tmp_path / "project", env=env, capture_output=True, text=True, timeout=240
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert [marker.name for marker in markers if marker.exists()] == []


def test_every_template_line_that_starts_the_packages_python_starts_it_safely():
    from gpujobqueue.script.render import package_data_dir

    starts = [
        (path.name, line)
        for path in package_data_dir("templates").rglob("*.j2")
        for line in path.read_text().splitlines()
        if re.search(r"launch\.python(_command| \| shquote) }}", line) and "run.script" not in line
    ]
    assert len(starts) >= 7, starts
    assert [start for start in starts if "{{ safe_path }} -" not in start[1]] == []
