"""Issue 40, points 1 and 6: the probe of the workers' python imports nothing from the directory the user
stands in, and reads a bounded answer within a bounded time, saying which python failed it."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

import pytest

import gpujobqueue.machine.install as install
from gpujobqueue.machine.install import probe_imports
from gpujobqueue.plan.scripts import job_script_for

KEYWORDS = {"gpus_per_node": 2, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}


def plant_package(folder, marker):
    """A ``gpujobqueue`` package in ``folder`` that writes ``marker`` when imported."""
    (folder / "gpujobqueue").mkdir()
    (folder / "gpujobqueue" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")


@pytest.fixture
def fresh_probe():
    probe_imports.cache_clear()
    yield
    probe_imports.cache_clear()


def test_render_runs_nothing_planted_in_the_current_directory(tmp_path, fresh_probe):
    planted, marker = tmp_path / "planted", tmp_path / "marker"
    planted.mkdir()
    plant_package(planted, marker)
    result = subprocess.run(
        [sys.executable, "-P", "-c", "from gpujobqueue.cli.main import main; main()", "render", "slurm"]
        + ["--gpus-per-node", "2", "--cores", "2", "--memory", "8GB", "--walltime", "00:10:00"],
        cwd=planted,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "the probe of the workers' python imported the planted gpujobqueue"


def a_python(tmp_path, body: str):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir(exist_ok=True)
    python.write_text(f"#!/bin/sh\n{body}\n")
    python.chmod(0o755)
    return str(python)


def test_a_python_that_prints_without_end_is_read_only_to_the_bound(tmp_path, fresh_probe):
    # `yes` writes without end: the probe stops at its bound, at once, and says so naming the python.
    python = a_python(tmp_path, "exec yes gpujobqueue")
    started = time.monotonic()
    with pytest.warns(UserWarning, match=rf"the workers' python {python} printed more than 1 MiB"):
        job_script_for("slurm", {**KEYWORDS, "python": python}, name="w")
    assert time.monotonic() - started < 10
    assert install.PROBE_OUTPUT_LIMIT == 1 << 20


def test_a_python_that_hangs_costs_the_short_timeout_and_is_named(tmp_path, fresh_probe, monkeypatch):
    monkeypatch.setattr("gpujobqueue.machine.install.PROBE_TIMEOUT", 1.0)
    python = a_python(tmp_path, "exec sleep 600")
    started = time.monotonic()
    with pytest.warns(UserWarning, match=rf"the workers' python {python} did not answer .* within 1 s"):
        job_script_for("slurm", {**KEYWORDS, "python": python}, name="w")
    assert time.monotonic() - started < 5
    assert install.PROBE_TIMEOUT <= 20


def test_a_python_that_answers_is_still_judged_without_a_warning_of_the_probe(fresh_probe):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        job_script_for("slurm", {**KEYWORDS, "python": sys.executable}, name="w")
