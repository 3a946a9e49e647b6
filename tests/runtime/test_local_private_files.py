"""Issue 29: what a local job writes and starts is private. Its log goes to a folder the package made
and checked (this user's, 0700, not a link) and is opened without following links; its script, with
the ``environment`` values in it, is in no process's arguments.

The other user is simulated: a folder, file or link planted at the names a local cluster uses, and
chowned to ``nobody`` (uid 65534) where it must belong to someone else. The tests run as root here,
so a root-owned 0600 file stands for a file only the cluster's owner may write.
"""

from __future__ import annotations

import getpass
import os
import stat
import tempfile
from pathlib import Path

import pytest
from dask.distributed import Client
from fixtures.processes import proc_cmdline, processes_running

from gpujobqueue import LocalGPUCluster, ValidationError
from gpujobqueue.batch.local import private_log_directory

STRANGER = 65534  # nobody
LOG_PREFIX = "dask-worker-LocalGPUCluster-"  # a job's log: <job_name>-<the job's name>.out
ONE_JOB = dict(gpus_per_node=1, devices=["0"], worker_mode="per-device", memory_per_gpu="512MiB", death_timeout=20)


@pytest.fixture
def temp_dir(tmp_path, monkeypatch) -> Path:
    """A temporary directory of the session's own, as ``$TMPDIR``: the default log folder's place."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file only its owner may write (root's, mode 0600): what a planted link points at."""
    target = tmp_path / "victim"
    target.write_text("kept\n")
    target.chmod(0o600)
    return target


def planted_logs(folder: Path, victim: Path) -> None:
    """Links at the names the first jobs' logs take, each pointing at ``victim``."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(4):
        (folder / f"{LOG_PREFIX}{number}.out").symlink_to(victim)


def all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def start_one_job(**keywords) -> ValidationError:
    """The error a local cluster of one job gives when it starts the job (failing the test if none)."""
    with LocalGPUCluster(**ONE_JOB, **keywords) as cluster:
        with pytest.raises(ValidationError) as info:
            cluster.scale(1)
        assert not [job for job in cluster.workers.values() if job.handle is not None and job.handle.process], (
            "a job was started"
        )
    return info.value


def test_the_default_log_folder_is_private_to_its_user(temp_dir):
    assert private_log_directory() == str(temp_dir / f"gpujobqueue-{getpass.getuser()}" / "logs")


def test_a_log_folder_made_first_by_another_user_is_refused_and_no_link_in_it_is_followed(temp_dir, victim):
    user_folder = temp_dir / f"gpujobqueue-{getpass.getuser()}"
    planted_logs(user_folder / "logs", victim)
    user_folder.chmod(0o777)
    os.chown(user_folder, STRANGER, STRANGER)
    error = start_one_job()
    assert error.field == "log_directory"
    assert str(user_folder) in str(error) and "another user" in str(error) and "log_directory" in str(error)
    assert victim.read_text() == "kept\n", "the job's log went through the planted link"


@pytest.mark.parametrize("planted", ["file", "link to a folder"])
def test_a_file_or_link_at_the_log_folders_name_is_refused_naming_it(temp_dir, tmp_path, planted):
    user_folder = temp_dir / f"gpujobqueue-{getpass.getuser()}"
    if planted == "file":
        user_folder.write_text("not a folder")
    else:
        elsewhere = tmp_path / "strangers"
        elsewhere.mkdir(mode=0o777)
        os.chown(elsewhere, STRANGER, STRANGER)
        user_folder.symlink_to(elsewhere)
    error = start_one_job()
    assert error.field == "log_directory" and str(user_folder) in str(error)
    assert ("not a folder" if planted == "file" else "a link") in str(error), str(error)
    if planted != "file":
        assert not os.listdir(tmp_path / "strangers"), "the link was followed"


def test_a_link_planted_in_a_log_directory_given_is_not_written_through(tmp_path, victim):
    logs = tmp_path / "logs"
    planted_logs(logs, victim)
    error = start_one_job(log_directory=str(logs))
    assert error.field == "log_directory" and f"{LOG_PREFIX}0.out" in str(error) and "a link" in str(error)
    assert victim.read_text() == "kept\n"


def test_an_older_log_folder_of_this_user_is_made_private_and_its_logs_0600(temp_dir):
    # gpujobqueue made $TMPDIR/gpujobqueue-<user> with the umask's mode (0755): anyone could list it.
    user_folder = temp_dir / f"gpujobqueue-{getpass.getuser()}"
    (user_folder / "logs").mkdir(parents=True)
    user_folder.chmod(0o755)
    (user_folder / "logs" / f"{LOG_PREFIX}0.out").write_text("an older job's log, longer than the new one\n" * 100)
    with LocalGPUCluster(**ONE_JOB) as cluster, Client(cluster) as client:
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        (job,) = cluster.workers.values()
        log = Path(job.handle.log_path)
    assert log.parent == user_folder / "logs"
    for folder in (user_folder, user_folder / "logs"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "an older job's log" not in text and "job script exits with status 0" in text


def test_no_environment_value_or_script_text_is_in_any_process_arguments(temp_dir):
    token = "gpujobqueue-planted-token-5d1f0c"
    with (
        LocalGPUCluster(**ONE_JOB, environment={"GPUJOBQUEUE_TEST_TOKEN": token}) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        (job,) = cluster.workers.values()
        assert list(client.run(lambda: os.environ.get("GPUJOBQUEUE_TEST_TOKEN")).values()) == [token]
        assert job.handle.process.poll() is None, "the job runs while its processes are read"
        assert processes_running(token) == [], "a process's arguments hold the environment value"
        job_processes = [pid for pid in all_pids() if session_of(pid) == job.handle.process.pid]
        assert len(job_processes) >= 2, job_processes  # the script, the worker command
        scripts = [proc_cmdline(pid) for pid in job_processes if "job script exits with status" in proc_cmdline(pid)]
        assert scripts == [], "a process's arguments hold the script"
        on_disk = [path for path in temp_dir.rglob("*") if path.is_file() and token in path.read_text(errors="replace")]
        assert on_disk == [], "the script (with its secret) was written to a file"
