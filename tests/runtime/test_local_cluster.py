"""LocalGPUCluster: the same script as a local process group, with devices handed out per job."""

from __future__ import annotations

import asyncio
import os
import signal

import dask.array as da
import dask.config
import psutil
import pytest
from conftest import wait_until
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster, ValidationError
from gpujobqueue.machine.gpus import nvidia_gpu_ids

# These tests hand out four devices. Without GPUs the ids are nominal; on a GPU host they
# must exist, since a worker told CUDA_VISIBLE_DEVICES=3 on a 2-GPU host fails at start.
needs_four_devices = pytest.mark.skipif(
    0 < len(nvidia_gpu_ids()) < 4,
    reason=f"needs four devices; this host has {len(nvidia_gpu_ids())} GPU(s) (tests/runtime/test_gpu.py: real GPUs)",
)

SMALL = dict(worker_mode="per-device", memory_per_gpu="512MiB", death_timeout=20)


def worker_facts(dask_worker):
    return {"name": dask_worker.name, "devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


@pytest.fixture
def counted_jobs(monkeypatch):
    """Counts local job starts and cancellations."""
    counts = {"start": 0, "close": 0}
    job_cls = LocalGPUCluster.job_cls
    real_start, real_close = job_cls.start, job_cls.close

    async def start(self):
        counts["start"] += 1
        await real_start(self)

    async def close(self):
        if self.handle is not None and self.handle.running:
            counts["close"] += 1
        await real_close(self)

    monkeypatch.setattr(job_cls, "start", start)
    monkeypatch.setattr(job_cls, "close", close)
    return counts


@needs_four_devices
def test_local_workers_get_disjoint_devices_and_leave_nothing(counted_jobs):
    with LocalGPUCluster(gpus_per_node=2, devices=[0, 1, 2, 3], **SMALL) as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        client.wait_for_workers(4, timeout=60)
        jobs = dict(cluster.workers)
        pids = [int(job.job_id) for job in jobs.values()]
        facts = list(client.run(worker_facts).values())
        assert sorted(f["name"] for f in facts) == sorted(f"{name}-{i}" for name in jobs for i in (0, 1))
        for name, job in jobs.items():
            assert {f["devices"] for f in facts if f["name"].startswith(name + "-")} == set(job.handle.devices)
        assert sorted(f["devices"] for f in facts) == ["0", "1", "2", "3"]

        x = da.ones((2000, 2000), chunks=500)
        assert client.compute((x + 1).sum(), resources={"GPU": 1}).result() == 2 * 2000 * 2000

        cluster.scale(0)
        assert not cluster.workers
        assert wait_until(
            lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids),
            20,
            what="job process groups to end",
        )
    assert counted_jobs == {"start": 2, "close": 2}


def test_no_free_device_is_a_clear_error():
    with LocalGPUCluster(gpus_per_node=2, devices=[0, 1], **SMALL) as cluster:
        with pytest.raises(Exception, match="needs 2 devices but only 0 of"):
            cluster.scale(jobs=2)
        assert len(cluster.workers) == 1


def test_more_gpus_than_the_pool_is_refused_before_anything_starts():
    with pytest.raises(ValidationError, match="gpus_per_node=3 but this machine's pool has 2 devices"):
        LocalGPUCluster(gpus_per_node=3, devices=[0, 1], **SMALL)


def test_local_directory_variables_expand_in_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUJOBQUEUE_TEST_SCRATCH", str(tmp_path))
    options = {**SMALL, "local_directory": "$GPUJOBQUEUE_TEST_SCRATCH/dask"}
    with LocalGPUCluster(gpus_per_node=1, devices=[0], **options) as cluster, Client(cluster) as client:
        assert '--local-directory "$GPUJOBQUEUE_TEST_SCRATCH/dask"' in cluster.job_script()
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        (directory,) = client.run(lambda dask_worker: dask_worker.local_directory).values()
        assert directory.startswith(str(tmp_path / "dask"))


async def _identify(address, connection_args):
    from distributed.comm import connect

    comm = await connect(address, timeout=3, **connection_args)
    try:
        await comm.write({"op": "identity"})
        return await comm.read()
    finally:
        await comm.close()


def test_scheduler_job_over_tls_keeps_its_keys_private_and_refuses_clients_without_them(tmp_path):
    from distributed.comm.core import CommClosedError
    from distributed.security import Security

    with (
        LocalGPUCluster(
            gpus_per_node=1,
            devices=["0", "1"],
            worker_mode="per-device",
            scheduler="job",
            security=True,
            shared_temp_directory=str(tmp_path),
        ) as cluster,
        Client(cluster) as client,
    ):
        assert cluster.scheduler_address.startswith("tls://")
        folder = os.path.dirname(cluster.scheduler_job.scheduler_file)
        keys = [name for name in os.listdir(folder) if name.endswith(".pem")]
        assert keys and all(os.stat(os.path.join(folder, name)).st_mode & 0o777 == 0o600 for name in keys), keys
        client.wait_for_workers(1, timeout=60)
        assert client.submit(sum, [1, 2, 3]).result() == 6
        # A client with a certificate of its own, not the cluster's, is refused at the handshake.
        stranger = Security.temporary().get_connection_args("client")
        with pytest.raises((OSError, TimeoutError, CommClosedError)):
            asyncio.run(_identify(cluster.scheduler_address, stranger))
        assert (
            asyncio.run(_identify(cluster.scheduler_address, cluster.security.get_connection_args("client")))["type"]
            == "Scheduler"
        )
    assert not os.path.exists(folder)


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"scheduler": "login"}, "scheduler"),
        ({"scheduler": "job", "shared_temp_directory": "/nonexistent/shared"}, "shared_temp_directory"),
    ],
)
def test_scheduler_placement_is_checked_before_anything_starts(keywords, field):
    with pytest.raises(ValidationError) as info:
        LocalGPUCluster(gpus_per_node=1, devices=["0"], **keywords)
    assert info.value.field == field


def _lifetime(dask_worker):
    return dask_worker.lifetime


@pytest.mark.parametrize("walltime, lifetime", [(None, None), ("00:10:00", (570 - 7, 570 + 7))])
def test_local_workers_retire_only_before_a_walltime_given(walltime, lifetime):
    # The local batch system ends no job at a walltime: without one given its workers must not retire
    # (they did after 57 minutes, a batch system's default hour less the margin).
    options = {**SMALL, **({"walltime": walltime} if walltime else {})}
    with LocalGPUCluster(gpus_per_node=1, devices=["0"], **options) as cluster, Client(cluster) as client:
        script = cluster.job_script()
        assert cluster.request.walltime == (None if walltime is None else 600)
        assert ("LIFETIME__DURATION=570s" in script) == (walltime is not None)
        if walltime is None:
            assert "LIFETIME" not in script and "walltime" not in script
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        (seen,) = client.run(_lifetime).values()
        if lifetime is None:
            assert seen is None
        else:
            assert lifetime[0] <= seen <= lifetime[1]


def test_a_walltime_margin_without_a_walltime_is_refused():
    with pytest.raises(ValidationError) as info:
        LocalGPUCluster(gpus_per_node=1, devices=["0"], walltime_margin="5m", **SMALL)
    assert info.value.field == "walltime_margin"


def test_scale_replaces_a_local_job_that_ended():
    with (
        dask.config.set({"gpujobqueue.job-poll-interval": "1s"}),
        LocalGPUCluster(gpus_per_node=1, devices=["0", "1"], **SMALL) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        ((name, job),) = cluster.workers.items()
        os.killpg(int(job.job_id), signal.SIGKILL)  # ended from outside, as a failed node would end it
        wait_until(
            lambda: set(cluster.worker_spec) - {name},
            30,
            what=lambda: f"a replacement for {name}: {list(cluster.worker_spec)}",
        )
        wait_until(
            lambda: [w["name"] for w in client.scheduler_info()["workers"].values()] not in ([], [name]),
            60,
            what="the replacement's worker",
        )
        assert client.submit(sum, [1, 2, 3]).result() == 6
        assert len(cluster.worker_spec) == 1 and not cluster.job_failures


def _group_members(pgid: int) -> set[int]:
    return {p.pid for p in psutil.process_iter() if _pgid(p.pid) == pgid}


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_normal_close_leaves_quiet_logs_and_no_process(tmp_path):
    # The close used to SIGTERM the whole process group at once: the worker processes died under their
    # nannies (12 leaked semaphores in the log) and the script's wait, cut short by its trap, ended it with 143.
    with (
        LocalGPUCluster(gpus_per_node=2, devices=["0", "1"], log_directory=str(tmp_path), **SMALL) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(2)
        client.wait_for_workers(2, timeout=60)
        x = da.ones((2000, 2000), chunks=500)
        assert client.compute((x + 1).sum(), resources={"GPU": 1}).result() == 2 * 2000 * 2000
        (job,) = cluster.workers.values()
        members = _group_members(int(job.job_id))
        assert len(members) >= 4, members  # the script, the worker command, two worker processes
    assert job.handle.process.returncode == 0
    (log,) = tmp_path.glob("*.out")
    text = log.read_text()
    assert "job script exits with status 0" in text
    for noise in ("status 143", "leaked semaphore", "Traceback"):
        assert noise not in text, text[-3000:]
    assert not [pid for pid in members if _alive(pid)]


def test_gpucluster_without_a_site_warns_that_it_falls_back_to_this_machine(monkeypatch):
    from gpujobqueue import GPUCluster, LocalFallbackWarning, sites

    monkeypatch.setattr(sites.registry, "detect_site", lambda: None)  # whatever this host is called
    with dask.config.set({"gpujobqueue.site": None, "gpujobqueue.batch": "local"}):
        with pytest.warns(
            LocalFallbackWarning,
            match=r"no site matches this host name.*local batch system.*site=.*"
            r"DASK_GPUJOBQUEUE__SITE.*batch='local'",
        ) as record:
            cluster = GPUCluster(gpus_per_node=1, devices=["0"], **SMALL)
        with cluster:
            assert isinstance(cluster, LocalGPUCluster)
        assert len([w for w in record if issubclass(w.category, LocalFallbackWarning)]) == 1
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error", LocalFallbackWarning)
            with GPUCluster("local", gpus_per_node=1, devices=["0"], **SMALL) as chosen:  # asked for: no warning
                assert isinstance(chosen, LocalGPUCluster)
