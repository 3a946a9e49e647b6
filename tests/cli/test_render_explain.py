"""``gpujobqueue render --explain`` says where each setting came from: keyword > gpujobqueue.<batch>.*
> dask-jobqueue's jobqueue.<batch>.* (a centre's jobqueue.yaml) > site > default (issue 31, point 8)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """
jobqueue:
  {batch}:
    cores: 8
    memory: 32GB
    walltime: '00:30:00'
    queue: jobqueue-q
    job-script-prologue: ["module load cuda"]
gpujobqueue:
  {batch}:
    queue: own-q
"""


def _explained(tmp_path: Path, *arguments: str, batch: str = "slurm") -> tuple[dict[str, tuple[str, str]], str]:
    folder = tmp_path / "dask"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(CONFIG.format(batch=batch))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", *arguments, "--no-tls", "--explain"],
        env={**clean, "DASK_CONFIG": str(folder)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = re.findall(r"^gpujobqueue: (\w+) = (.*)  \((.*)\)$", result.stderr, re.MULTILINE)
    return {name: (value, source) for name, value, source in lines}, result.stdout


def test_each_setting_says_its_source_in_the_order_keyword_config_jobqueue(tmp_path):
    seen, script = _explained(tmp_path, "slurm", "--walltime", "01:00:00")
    assert seen["walltime"] == ("'01:00:00'", "keyword")
    assert seen["queue"] == ("'own-q'", "gpujobqueue.slurm.queue")
    assert seen["cores"] == ("8", "jobqueue.slurm.cores")
    assert seen["memory"] == ("'32GB'", "jobqueue.slurm.memory")
    assert seen["job_script_prologue"][1] == "jobqueue.slurm.job-script-prologue"
    assert "#SBATCH --partition=own-q\n" in script and "module load cuda\n" in script
    assert "--explain" not in script and "jobqueue.slurm" not in script  # stdout stays the script


@pytest.mark.parametrize("site", ["alps"])
def test_a_sites_values_are_named_as_the_sites_under_the_users_config(tmp_path, site):
    seen, _ = _explained(tmp_path, site, "--account", "g123", batch="nosuchbatch")  # no config of its batch system
    assert seen["account"] == ("'g123'", "keyword")
    assert seen["queue"][1] == f"site {site}"
    assert any(source == f"site {site}" for name, (_, source) in seen.items() if name != "queue"), seen
