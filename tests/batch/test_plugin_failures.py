"""Issue 40, point 7: a batch-system plugin (an entry point of ``gpujobqueue.batch_systems``) that fails
to import, or is not a ``BatchSystem``, is reported on a line of its own naming it and its error, and
everything else works; and plugins are loaded only from installed distributions, never from a
``*.dist-info`` found through the current directory.

Each case runs in a child process, which loads the entry points afresh.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "gpujobqueue.cli"]
BAD_PLUGINS = {
    "missing": "no_such_module_anywhere:System",  # ImportError
    "raising": "gpujobqueue_bad_plugin:Raising",  # its module raises as it is imported
    "notbatch": "json:JSONDecoder",  # a class, not a BatchSystem
    "misnamed": "gpujobqueue.batch.slurm:SLURM",  # a BatchSystem whose name is not the entry point's
}


def distribution(folder: Path, name: str, entry_points: dict[str, str]) -> None:
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{label} = {target}\n" for label, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[gpujobqueue.batch_systems]\n{lines}")


@pytest.fixture
def bad_plugins(tmp_path):
    """An environment whose PYTHONPATH holds a distribution declaring the bad plugins."""
    folder = tmp_path / "installed"
    distribution(folder, "gpujobqueue-bad", BAD_PLUGINS)
    (folder / "gpujobqueue_bad_plugin.py").write_text("raise TypeError('this plugin breaks on import')\n")
    path = os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "HOME": str(tmp_path / "home")}


def _reports(stderr: str) -> dict[str, str]:
    """Entry point name -> the line of stderr that names it as skipped."""
    found = {}
    for line in stderr.splitlines():
        for name in BAD_PLUGINS:
            if f"plugin {name} " in line:
                assert name not in found, stderr
                found[name] = line
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["sites"],
        ["render", "slurm", "--cores", "8", "--memory", "64GB", "--no-tls"],
        ["check", "--batch", "local", "--json"],
    ],
    ids=["sites", "render", "check"],
)
def test_bad_plugins_are_reported_each_on_its_line_and_the_command_works(bad_plugins, args, tmp_path):
    done = subprocess.run([*CLI, *args], env=bad_plugins, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip(), done.stderr
    if args[0] != "check":  # check exits 1 on a machine without GPUs
        assert done.returncode == 0, done.stderr
    reports = _reports(done.stderr)
    assert set(reports) == set(BAD_PLUGINS), done.stderr
    assert "no_such_module_anywhere" in reports["missing"]
    assert "this plugin breaks on import" in reports["raising"]
    assert "BatchSystem" in reports["notbatch"] and "JSONDecoder" in reports["notbatch"]
    assert "'misnamed'" in reports["misnamed"]


def test_a_cluster_starts_its_keywords_beside_bad_plugins(bad_plugins, tmp_path):
    program = textwrap.dedent("""
        from gpujobqueue import SLURMGPUCluster
        from gpujobqueue.batch import names
        print(sorted(names()))
        SLURMGPUCluster.parse_keywords({"cores": 8, "memory": "64GB"})
        print("parsed")
    """)
    done = subprocess.run(
        [sys.executable, "-c", program], env=bad_plugins, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == ["['local', 'lsf', 'pbs', 'sge', 'slurm']", "parsed"], done.stdout
    assert set(_reports(done.stderr)) == set(BAD_PLUGINS), done.stderr


@pytest.mark.parametrize("how", ["-c", "-m"])
def test_a_dist_info_planted_in_the_current_directory_is_not_loaded(tmp_path, how):
    # A world-writable folder the user stands in, where another user planted a plugin that runs code on import.
    planted = tmp_path / "shared"
    planted.mkdir()
    planted.chmod(0o1777)
    distribution(planted, "evil", {"evil": "evil_plugin:Evil"})
    marker = tmp_path / "ran"
    (planted / "evil_plugin.py").write_text(f"open({str(marker)!r}, 'w').close()\nEvil = None\n")
    if how == "-c":
        args = [sys.executable, "-c", "from gpujobqueue.batch import names; print(sorted(names()))"]
    else:
        args = [*CLI, "sites"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=planted)
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the planted plugin's module ran"
    assert "evil" not in done.stdout + done.stderr
