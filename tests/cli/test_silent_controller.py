"""Issue 43, point 4: a batch system whose commands exist but whose controller does not answer (sbatch
installed, no slurm.conf or slurmctld down, as on a workstation or a broken login node). ``check`` asks it
once and says so in its own words; ``check --submit-test`` reports its jobs once as not asked, without
blaming the site file; ``wait_for_workers`` says why nothing comes and raises after a few unanswered asks.

The SLURM here has no daemon: Debian's client commands given a slurm.conf whose controller port has no
listener (auth/none: no munge either), or no slurm.conf at all (as on a workstation); stand-ins that print SLURM's own
words where the commands are not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import dask.config
import pytest
from dask.distributed import Client

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.diagnostics.submit_test import submit_tests
from gpujobqueue.errors import BatchSystemUnreachableError
from gpujobqueue.sites import load_site

# A slurm.conf that SLURM's commands read, naming a controller that is not there.
NO_CONTROLLER = """ClusterName=nowhere
SlurmctldHost=localhost
SlurmctldPort={port}
AuthType=auth/none
MessageTimeout=2
GresTypes=gpu
NodeName=localhost CPUs=2 State=UNKNOWN
PartitionName=gpu Nodes=localhost Default=YES MaxTime=1-00:00:00
PartitionName=debug Nodes=localhost MaxTime=00:30:00
"""
# SLURM 22.05's words when slurmctld cannot be reached, as its commands print them.
UNREACHABLE = "Unable to contact slurm controller (connect failure)"
STAND_INS = {
    "sbatch": (
        '[ "$1" = --version ] && { echo "slurm 22.05.8"; exit 0; }\n'
        f'[ "$1" = --test-only ] && {{ echo "allocation failure: {UNREACHABLE}" >&2; exit 1; }}\n'
        f'echo "sbatch: error: Batch job submission failed: {UNREACHABLE}" >&2; exit 1\n'
    ),
    "squeue": f'echo "slurm_load_jobs error: {UNREACHABLE}" >&2; exit 1\n',
    "scancel": f'echo "scancel: error: Kill job error on job id 1: {UNREACHABLE}" >&2; exit 1\n',
}
KEYWORDS = {"gpus_per_node": 2, "worker_mode": "per-device", "memory_per_gpu": "512MiB", "cpus_per_gpu": 1}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(params=["no controller", "no slurm.conf", "stand-ins"])
def silent_slurm(request, tmp_path, monkeypatch) -> str:
    """SLURM's commands on PATH, its controller silent; the words its error holds."""
    monkeypatch.chdir(tmp_path)
    if request.param == "stand-ins":
        folder = tmp_path / "bin"
        folder.mkdir()
        for name, body in STAND_INS.items():
            (folder / name).write_text("#!/bin/sh\n" + body)
            (folder / name).chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        return UNREACHABLE
    if not (shutil.which("sbatch") and shutil.which("squeue")):
        pytest.skip("SLURM's client commands are not installed")
    if request.param == "no controller":
        conf = tmp_path / "slurm.conf"
        conf.write_text(NO_CONTROLLER.format(port=_free_port()))
        monkeypatch.setenv("SLURM_CONF", str(conf))
        return UNREACHABLE
    if Path("/etc/slurm/slurm.conf").exists():
        pytest.skip("this host has a slurm.conf")
    monkeypatch.delenv("SLURM_CONF", raising=False)  # a workstation's: SLURM looks for its controller in DNS
    return "Could not establish a configuration source"


def _check(*args: str) -> tuple[int, dict[str, list[dict]]]:
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    findings: dict[str, list[dict]] = {}
    for finding in json.loads(done.stdout)["findings"]:
        findings.setdefault(finding["topic"], []).append(finding)
    return done.returncode, findings


def test_check_asks_the_batch_system_and_fails_in_its_words_where_it_does_not_answer(silent_slurm):
    status, found = _check("--batch", "slurm")
    (line,) = found["batch system"]
    assert line["status"] == "fail", line
    assert "does not answer" in line["detail"] and silent_slurm in line["detail"], line
    assert "login node" in line["fix"], line
    assert found["batch commands"][0]["status"] == "ok"  # they are here: the controller is what is missing
    assert status == 1


SITE = """schema: 1
name: silent
description: A SLURM site whose controller does not answer here
centre: gpujobqueue tests
documentation: https://example.org/silent
status: generic
scheduler: slurm
node: {gpus: 2, gpu_model: H200, cpus: 2, memory: 4000MB}
gpu_request: {style: gpus-per-node}
queues:
  gpu: {max_walltime: "1-00:00:00", max_nodes: 1}
  debug: {max_walltime: "00:30:00", max_nodes: 1}
default_queue: gpu
launcher: {name: srun}
worker: {mode: per-device, cpus_per_gpu: 1, memory_per_gpu: 500MB}
network: {protocol: tcp}
"""


def test_the_submit_test_of_a_silent_batch_system_is_could_not_ask_once_never_a_refusal(silent_slurm, tmp_path):
    site = tmp_path / "silent.yaml"
    site.write_text(SITE)
    status, found = _check("--site", str(site), "--submit-test")
    (line,) = found["submit test"]  # nine jobs (three within the limits, six past them), one line
    assert line["status"] == "warn", line
    assert line["detail"].startswith("9 job(s) not asked: slurm does not answer: "), line
    assert silent_slurm in line["detail"], line
    assert "refused" not in line["detail"] and "site file" not in line["fix"], line
    assert "login node" in line["fix"], line
    (listing,) = found["queue listing"]  # not asked either
    assert listing["status"] == "info" and listing["detail"].startswith("not compared: slurm does not answer: ")
    assert status == 1  # the batch system line fails


@pytest.mark.timeout(120)
def test_wait_for_workers_says_the_batch_system_does_not_answer_and_raises_after_bounded_asks(
    silent_slurm, capsys, caplog
):
    config = {"gpujobqueue.job-poll-interval": "1s", "gpujobqueue.progress": True}
    with dask.config.set(config), SLURMGPUCluster(**KEYWORDS) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2)  # deferred: the README's snippet returns
        with pytest.raises(BatchSystemUnreachableError) as raised:
            client.wait_for_workers(2)  # no timeout: it must not wait without end
        message = str(raised.value)
        assert message.startswith("slurm does not answer") and silent_slurm in message, message
        assert "gpujobqueue check" in message and "asked again every 1 s" in message, message
        assert raised.value.batch == "slurm"
    progress = capsys.readouterr().err
    assert "slurm does not answer: " in progress and silent_slurm in progress, progress[-2000:]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "cannot be reached" in r.msg]
    assert warned and silent_slurm in warned[0], caplog.text[-2000:]


def test_a_test_submission_the_batch_system_does_not_answer_is_not_asked_nor_are_the_jobs_after_it(
    silent_slurm, tmp_path
):
    site = tmp_path / "silent.yaml"
    site.write_text(SITE)
    trials = submit_tests(load_site(str(site)))  # not told beforehand that it does not answer
    assert [trial.accepted for trial in trials] == [None] * 9, trials
    assert trials[0].said.startswith("slurm does not answer: ") and silent_slurm in trials[0].said, trials[0]
    assert {trial.said for trial in trials} == {trials[0].said}  # asked once: the others are not


def test_a_refusal_is_still_a_refusal_where_the_batch_system_answers(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    refusal = "sbatch: error: Batch job submission failed: Invalid partition name specified"
    (folder / "sbatch").write_text(f'#!/bin/sh\necho "{refusal}" >&2; exit 1\n')
    (folder / "squeue").write_text("#!/bin/sh\nexit 0\n")
    (folder / "scancel").write_text("#!/bin/sh\nexit 0\n")
    for command in folder.iterdir():
        command.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    site = Path(tmp_path / "silent.yaml")
    site.write_text(SITE)
    status, found = _check("--site", str(site), "--submit-test")
    within = [f for f in found["submit test"] if ", past " not in f["detail"].split(": ")[0]]
    assert [f["status"] for f in within] == ["fail"] * 3, found["submit test"]
    assert all(f"refused: {refusal}" in f["detail"] for f in within)
    assert found["batch system"][0]["status"] == "ok" and status == 1
