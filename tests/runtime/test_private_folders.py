"""A SIGKILLed client's private folder (its TLS key inside) does not stay: the next cluster
start on the host, or ``gpujobqueue clean``, removes it; a live process's folder, and one of
another host, stay."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from gpujobqueue import LocalGPUCluster
from gpujobqueue.security.owned_folders import PREFIX, this_host

OWNER = textwrap.dedent("""
    import sys, time
    from gpujobqueue import LocalGPUCluster

    cluster = LocalGPUCluster(gpus_per_node=1, worker_mode="per-device", shared_temp_directory=sys.argv[1])
    print(cluster._private_directory, flush=True)
    time.sleep(600)
""")


def start_owner(directory: Path) -> tuple[subprocess.Popen, Path]:
    """A client process whose cluster (TLS by default) made its private folder in ``directory``."""
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(directory)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = process.stdout.readline().strip()
    if not line or line == "None":
        process.kill()
        raise AssertionError(f"the client made no private folder: {line!r} {process.stderr.read()}")
    return process, Path(line)


def folders(directory: Path) -> set[Path]:
    return {path for path in directory.iterdir() if path.name.startswith(PREFIX)}


def test_a_killed_clients_folder_goes_at_the_next_cluster_start_and_a_live_ones_stays(tmp_path):
    killed, killed_folder = start_owner(tmp_path)
    live, live_folder = start_owner(tmp_path)
    try:
        assert any("key" in name for name in os.listdir(killed_folder)), "the folder holds the TLS key"
        killed.kill()
        killed.wait()
        assert killed_folder.is_dir(), "SIGKILL leaves the folder (nothing can run in the process)"
        with LocalGPUCluster(gpus_per_node=1, worker_mode="per-device", shared_temp_directory=str(tmp_path)) as cluster:
            own = Path(cluster._private_directory)
            assert folders(tmp_path) == {live_folder, own}, "the dead owner's folder went; the others stay"
        assert folders(tmp_path) == {live_folder}
    finally:
        live.kill()
        live.wait()


def clean(directory: Path) -> subprocess.CompletedProcess:
    """``gpujobqueue clean DIRECTORY``, run as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "clean", str(directory)], capture_output=True, text=True, timeout=120
    )


def test_gpujobqueue_clean_removes_folders_of_ended_processes_only(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    ended_pid = int(ended.stdout)
    me = psutil.Process()
    host = this_host()
    dead = tmp_path / f"{PREFIX}p{ended_pid}-t{int(me.create_time()) - 100}-h{host}-abcd1234"
    reused = tmp_path / f"{PREFIX}p{me.pid}-t{int(me.create_time()) - 1000}-h{host}-efgh5678"  # my pid, older process
    mine = tmp_path / f"{PREFIX}p{me.pid}-t{int(me.create_time())}-h{host}-ijkl9012"
    elsewhere = tmp_path / f"{PREFIX}p{ended_pid}-t{int(me.create_time())}-hother-node-7-mnop3456"
    unnamed = tmp_path / f"{PREFIX}qrst7890"
    for folder in (dead, reused, mine, elsewhere, unnamed):
        folder.mkdir(mode=0o700)
        (folder / "worker-key.pem").write_text("secret")
    result = clean(tmp_path)
    assert result.returncode == 0, result.stderr
    assert folders(tmp_path) == {mine, elsewhere, unnamed}
    assert f"removed {dead}" in result.stdout and f"removed {reused}" in result.stdout, result.stdout
    assert f"left {elsewhere}: its owner is process {ended_pid} on another host, other-node-7" in result.stdout
    again = clean(tmp_path)
    assert "nothing to remove" in again.stdout and folders(tmp_path) == {mine, elsewhere, unnamed}
