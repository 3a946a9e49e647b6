"""Issue 45: ``render SITE --when`` prints each queue's start estimate for the job as the batch system gives it now
(SLURM's ``sbatch --test-only``, nothing submitted), and ``queue="soonest"`` routes to the routed queue that would
start it first, never to one gpujobqueue or the batch system refuses.

Here sbatch is a stand-in answering ``--test-only`` in the real command's words, each partition with its own time
(and a refusal for one); tests/runtime/test_start_estimates_slurm.py asks the real SLURM's backfill scheduler.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import dask
import pytest

from gpujobqueue import SLURMGPUCluster, ValidationError
from gpujobqueue.batch.slurm import SLURM
from gpujobqueue.plan import make_plan

SITE = """\
schema: 1
name: three-queues
description: a SLURM site of three GPU partitions, for the soonest-start tests
centre: none
documentation: https://slurm.schedmd.com/sbatch.html
status: generic
scheduler: slurm
node: {gpus: 4, gpu_vendor: nvidia, gpu_model: unspecified, cpus: 32, memory: 256GB}
gpu_request: {style: gpus-per-node}
account: {required: false}
queues:
  busy: {description: the default partition, max_walltime: "24:00:00"}
  free: {description: a partition with idle nodes, max_walltime: "24:00:00", max_jobs_per_user: {running: 1}}
  short: {description: a partition of short jobs, max_walltime: "01:00:00"}
  closed: {description: a partition this user may not use, max_walltime: "24:00:00"}
  gpu-debug: {description: by request only, max_walltime: "00:30:00"}
default_queue: busy
launcher: {name: srun}
worker: {mode: dask-cuda, visibility_variable: CUDA_VISIBLE_DEVICES}
network: {protocol: tcp}
unconfirmed:
  - "node, gpu_request, account, default_queue, launcher, worker, network, queues: a test site, not a machine"
"""


def at(minutes: int) -> str:
    """A time ``minutes`` from now (a few seconds ahead: the time the answer is read comes later)."""
    later = datetime.datetime.now() + datetime.timedelta(minutes=minutes, seconds=20)
    return later.strftime("%Y-%m-%dT%H:%M:%S")


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """sbatch --test-only: busy starts in 3 h, free in 2 min, short and gpu-debug now; closed is refused as SLURM
    refuses a partition the user may not use. A real submission fails the test (logged)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    times = {"busy": at(180), "free": at(2), "short": at(0), "gpu-debug": at(0)}
    cases = "\n".join(f"  {name}) when={value};;" for name, value in times.items())
    (folder / "sbatch").write_text(
        "#!/bin/bash\n"
        f'echo "sbatch $* TIME_FORMAT=$SLURM_TIME_FORMAT" >> {log}\n'
        '[ "$1" = "--test-only" ] || { echo "submitted" >> ' + str(log) + "; exit 9; }\n"
        'part=$(sed -n "s/^#SBATCH --partition=//p" "$2")\n'
        f'case "$part" in\n{cases}\n'
        '  *) echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination '
        'specified" >&2; exit 1;;\nesac\n'
        'echo "sbatch: Job 9 to start at $when using 8 processors on nodes n1 in partition $part" >&2\n'
    )
    (folder / "squeue").write_text("#!/bin/sh\nexit 0\n")  # answers: a refusal is a refusal
    for command in ("sbatch", "squeue"):
        (folder / command).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "three-queues.yaml").write_text(SITE)
    return tmp_path


def test_sbatch_test_onlys_start_is_read_in_its_words():
    when = at(11)
    said = f"sbatch: Job 1234 to start at {when} using 4 processors on nodes n1 in partition gpu"
    assert SLURM.trial_start(said) == datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%S").timestamp()
    assert SLURM.trial_start("sbatch: error: Requested time limit is invalid") is None


def test_soonest_routes_to_the_queue_that_starts_first_never_a_refused_one(stand_in):
    site = str(stand_in / "three-queues.yaml")
    plan = make_plan(SLURMGPUCluster, {"site": site, "queue": "soonest", "walltime": "02:00:00"})
    # short would start now, but takes 1 h at most: a fixed choice of it would be refused, so it is not asked
    assert plan.request.queue == "free" and "soonest start: queue free, expected" in plan.request.queue_choice
    asked = (stand_in / "calls.log").read_text()
    assert "--partition=short" not in asked and "submitted" not in asked
    assert "TIME_FORMAT=standard" in asked  # the time in the form the parser reads, whatever the user's own
    assert plan.jobs_per_user.running == 1  # the chosen queue's per-user limit holds the cluster's jobs there
    short = make_plan(SLURMGPUCluster, {"site": site, "queue": "soonest", "walltime": "00:20:00"})
    assert short.request.queue == "short"  # now, and routed; gpu-debug (now too) is by request only


def test_soonest_as_the_configured_default_queue(stand_in):
    with dask.config.set({"gpujobqueue.slurm.queue": "soonest"}):
        plan = make_plan(SLURMGPUCluster, {"site": str(stand_in / "three-queues.yaml"), "walltime": "02:00:00"})
    assert plan.request.queue == "free"


def test_soonest_without_a_site_is_refused_naming_queue():
    with pytest.raises(ValidationError, match="queue.*soonest.*site"):
        make_plan(SLURMGPUCluster, {"queue": "soonest", "cores": 8, "memory": "64GB", "gpus_per_node": 1})


def test_soonest_where_the_batch_system_cannot_be_asked_warns_and_routes_by_size(stand_in):
    (stand_in / "bin" / "sbatch").write_text(
        "#!/bin/sh\necho 'sbatch: error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    (stand_in / "bin" / "squeue").write_text("#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact' >&2\nexit 1\n")
    with pytest.warns(UserWarning, match="soonest.*does not answer.*chooses by the job's nodes and walltime"):
        plan = make_plan(SLURMGPUCluster, {"site": str(stand_in / "three-queues.yaml"), "queue": "soonest"})
    assert plan.request.queue == "busy"


def test_render_when_prints_each_queues_estimate_and_submits_nothing(stand_in):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpujobqueue.cli",
            "render",
            str(stand_in / "three-queues.yaml"),
            "--when",
            "--walltime",
            "00:20:00",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=stand_in,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("When the job would start on three-queues, if submitted now (SLURM backfill estimate")
    rows = {line.split()[0]: line for line in lines[2:] if line and not line.startswith("*")}
    assert "in 3 h 0 min" in rows["busy"] and "in 2 min" in rows["free"] and "expected now" in rows["short"]
    assert "refused" in rows["closed"] and "Invalid account or account/partition" in rows["closed"]
    assert rows["gpu-debug"].startswith("gpu-debug *") and lines[-1].startswith("* only by request")
    assert "submitted" not in (stand_in / "calls.log").read_text()


def test_render_when_refuses_a_batch_system_name():
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "slurm", "--when"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--when asks a SITE's queues" in done.stderr
