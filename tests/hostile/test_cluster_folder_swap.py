"""Issue 40, point 2: the cluster's private folder in ``shared_temp_directory`` (the workers' certificates, the
scheduler file of ``scheduler="job"``) is used by a job only from inside it, once checked to be the one the
cluster made (owner, mode 0700, inode).

The workers read their ``--tls-*`` files and the scheduler file by name: a group member who renamed the folder
in a group-writable shared directory and put his own at its name sent the next job's workers to his scheduler,
with his CA. Here a local cluster's folder is swapped after the cluster made it and before a job's workers
start; the planted folder holds the attacker's CA, certificate and key under the names the cluster wrote, and
the scheduler file of the attacker's own scheduler (owned by uid 65534, or the user's own with another inode).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpujobqueue import LocalGPUCluster

PLANTED_CREDENTIALS = {"ca_file": "worker-ca-file.pem", "cert": "worker-cert.pem", "key": "worker-key.pem"}
REFUSAL = "is not the private folder made for this job"


def plant(folder: Path, owner: int, mode: int) -> subprocess.Popen:
    """The attacker's folder at ``folder``: his CA, certificate and key at the cluster's names, and the
    scheduler file of his own TLS scheduler, which is started here (its log is what it saw)."""
    from distributed.security import Security

    folder.mkdir(mode=0o700)
    theirs = Security.temporary()
    for key, name in PLANTED_CREDENTIALS.items():
        text = getattr(theirs, "tls_ca_file" if key == "ca_file" else f"tls_scheduler_{key}")
        (folder / name).write_text(text)
    tls = [f"--tls-{key.replace('_', '-')}={folder / name}" for key, name in PLANTED_CREDENTIALS.items()]
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--protocol", "tls", "--host", "127.0.0.1"]
        + ["--port", "0", "--no-dashboard", "--scheduler-file", str(folder / "scheduler.json"), *tls],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (folder / "scheduler.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (folder / "scheduler.json").exists(), "the attacker's scheduler did not start"
    for path in (folder, *folder.iterdir()):
        os.chown(path, owner, owner)
    folder.chmod(mode)
    return scheduler


@pytest.mark.parametrize(
    "owner, mode", [(65534, 0o755), (os.getuid(), 0o700)], ids=["another-users-folder", "same-user-another-inode"]
)
def test_no_worker_reads_a_folder_put_at_the_cluster_folders_name(tmp_path, owner, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # group-writable, not sticky
    cluster = LocalGPUCluster(
        gpus_per_node=1,
        devices=["0", "1"],
        worker_mode="per-device",
        memory_per_gpu="512MiB",
        death_timeout=20,
        scheduler="job",
        shared_temp_directory=str(shared),
    )
    attacker = None
    try:
        folder = Path(cluster.scheduler_job.scheduler_file).parent
        folder.rename(folder.with_name(folder.name + ".renamed"))
        attacker = plant(folder, owner, mode)
        cluster.scale(2)  # a second job, whose workers start now
        deadline = time.monotonic() + 90
        job = None
        while time.monotonic() < deadline:
            jobs = [entry for name, entry in cluster.workers.items() if name != cluster.scheduler_job.name]
            job = jobs[0] if jobs else None
            if job is not None and job.log_paths() and REFUSAL in Path(job.log_paths()[0]).read_text():
                break
            time.sleep(0.5)
        jobs = [cluster.scheduler_job, *(entry for entry in cluster.workers.values() if hasattr(entry, "handle"))]
    finally:
        cluster.close(timeout=60)
        if attacker is not None:
            attacker.terminate()
            seen = attacker.communicate(timeout=30)[1]
    assert "Register worker" not in seen, "a worker of the cluster joined the attacker's scheduler:\n" + seen[-3000:]
    assert job is not None
    log = Path(job.log_paths()[0]).read_text()
    assert REFUSAL in log and str(folder) in log, log[-3000:]
    deadline = time.monotonic() + 20  # a cancelled job's processes end on their TERM, then KILL
    while any(each.handle and each.handle.group_alive() for each in jobs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [each.name for each in jobs if each.handle and each.handle.group_alive()], "a job was left running"
