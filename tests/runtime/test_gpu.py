"""The GPU path on real NVIDIA GPUs: dask-cuda workers, one per GPU, each on its own device."""

from __future__ import annotations

import os

import pytest
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster
from gpujobqueue.machine.gpus import nvidia_gpu_ids

GPUS = nvidia_gpu_ids()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not GPUS, reason="no NVIDIA GPU on this machine (nvidia-smi / NVML found none)"),
]


def device_facts(dask_worker):
    import os

    import cupy

    # The full PCI id, domain included: on some hosts every GPU sits on bus 0 of its own domain.
    return {
        "name": dask_worker.name,
        "visible": os.environ["CUDA_VISIBLE_DEVICES"],
        "pci": cupy.cuda.Device().pci_bus_id,
        "resources": dict(dask_worker.state.total_resources),
    }


def cupy_sum(n):
    import cupy

    return float(cupy.arange(n, dtype=cupy.float64).sum())


def test_dask_cuda_workers_one_per_gpu_each_on_its_own_device():
    pytest.importorskip("cupy")
    pytest.importorskip("dask_cuda")
    with LocalGPUCluster(gpus_per_node=len(GPUS)) as cluster, Client(cluster) as client:
        assert cluster.launch.mode == "dask-cuda"
        threads = min(4, (os.cpu_count() or 1) // len(GPUS))  # each GPU's share of this machine's cores, at most 4
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        facts = list(client.run(device_facts).values())
        (job,) = cluster.workers
        expected = [job] if len(GPUS) == 1 else [f"{job}-{i}" for i in range(len(GPUS))]
        assert sorted(f["name"] for f in facts) == sorted(expected)
        assert len({f["pci"] for f in facts}) == len(GPUS), f"workers share a GPU: {facts}"
        assert sorted(f["visible"].split(",")[0] for f in facts) == sorted(GPUS)  # dask-cuda rotates the list
        assert all(f["resources"] == {"GPU": 1} for f in facts)
        assert {w["nthreads"] for w in client.scheduler_info()["workers"].values()} == {max(1, threads)}
        futures = [
            client.submit(cupy_sum, 10**7, workers=[address], pure=False)
            for address in client.scheduler_info()["workers"]
        ]
        assert client.gather(futures) == [float(sum(range(10**7)))] * len(GPUS)


def memory_facts(dask_worker):
    import cupy
    import rmm

    return {
        "address": dask_worker.address,
        "resource": type(rmm.mr.get_current_device_resource()).__name__,
        "cupy_allocator": getattr(cupy.cuda.get_allocator(), "__name__", repr(cupy.cuda.get_allocator())),
    }


def random_block(seed, n):
    import cupy

    return cupy.random.default_rng(seed).standard_normal(n)


def test_ucx_workers_get_an_rmm_pool_and_move_cupy_arrays_between_gpus():
    pytest.importorskip("distributed_ucxx")
    pytest.importorskip("rmm")
    if len(GPUS) < 2:
        pytest.skip("needs two GPUs to move data between them")
    with LocalGPUCluster(gpus_per_node=2, protocol="ucx") as cluster, Client(cluster) as client:
        assert cluster.scheduler_address.startswith("ucx://")
        cluster.scale(gpus=2)
        client.wait_for_workers(2, timeout=180)
        facts = list(client.run(memory_facts).values())
        assert all(f["address"].startswith("ucx://") for f in facts), facts
        assert all("Pool" in f["resource"] for f in facts), f"no RMM pool under UCX: {facts}"
        first, second = sorted(client.scheduler_info()["workers"])
        block = client.submit(random_block, 1, 2**27, workers=[first], pure=False)  # 1 GiB of float64
        total = client.submit(lambda b: float(b.sum()), block, workers=[second], pure=False)
        assert abs(total.result() - float(random_block(1, 2**27).sum())) < 1e-6 * 2**27


def test_rmm_keywords_reach_the_workers_with_dask_cudas_names():
    pytest.importorskip("rmm")
    with (
        LocalGPUCluster(gpus_per_node=1, rmm_pool_size="2GB", set_rmm_allocator_for_libs="cupy") as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(gpus=1)
        client.wait_for_workers(1, timeout=180)
        (facts,) = client.run(memory_facts).values()
        assert "Pool" in facts["resource"] and "rmm" in facts["cupy_allocator"], facts


def spilled_keys(dask_worker):
    """Keys dask-cuda moved off the device (its DeviceHostFile's host and disk stores)."""
    data = dask_worker.data
    return len(getattr(data, "host", {}) or {}) + len(getattr(data, "disk", None) or {})


def test_spilling_lets_an_svd_larger_than_the_device_limit_finish_right():
    # The seed's "RAPIDS Dask overview" workload: a 300000 x 1000 cupy array (2.24 GiB) and its
    # SVD persisted, with each worker allowed 0.5 GB on its device before spilling to host memory.
    cupy = pytest.importorskip("cupy")
    import dask
    import dask.array as da
    from distributed import wait

    with LocalGPUCluster(gpus_per_node=len(GPUS), device_memory_limit="500MB") as cluster, Client(cluster) as client:
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        rs = da.random.RandomState(RandomState=cupy.random.RandomState, seed=12)
        x = rs.random((300_000, 1_000), chunks=(1_000, 1_000)).persist()
        u, s, v = dask.persist(*da.linalg.svd(x))
        wait(u)
        assert sum(client.run(spilled_keys).values()) > 0, "nothing was spilled: the test proves nothing"
        s, gram, utu = client.compute([s, x.T @ x, u.T @ u], sync=True)
        expected = cupy.sqrt(cupy.sort(cupy.linalg.eigvalsh(cupy.asarray(gram)))[::-1])
        assert float(cupy.max(cupy.abs(cupy.asarray(s) - expected) / expected)) < 1e-6
        assert float(cupy.max(cupy.abs(cupy.asarray(utu) - cupy.eye(1_000)))) < 1e-8


def test_a_run_script_with_ucx_runs_the_client_on_a_cluster_of_the_jobs_gpus(tmp_path):
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("distributed_ucxx")
    analysis = tmp_path / "analysis.py"
    analysis.write_text(
        "import json, os, sys\n"
        "from distributed import Client\n"
        "client = Client()\n"
        "workers = client.scheduler_info()['workers']\n"
        "pci = client.run(lambda: __import__('cupy').cuda.Device().pci_bus_id)\n"
        "json.dump({'scheduler': client.scheduler.address, 'workers': sorted(workers), 'pci': sorted(pci.values())}, "
        "open(sys.argv[1], 'w'))\n"
    )
    script = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpujobqueue.cli",
            "render",
            "local",
            "--gpus-per-node",
            str(len(GPUS)),
            "--protocol",
            "ucx",
            "--python",
            sys.executable,
            "--run",
            str(analysis),
            "--",
            str(tmp_path / "report.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "job.sh").write_text(script)
    result = subprocess.run(
        ["bash", str(tmp_path / "job.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(GPUS)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["scheduler"].startswith("ucx://") and all(w.startswith("ucx://") for w in report["workers"])
    assert len(report["workers"]) == len(GPUS) and len(set(report["pci"])) == len(GPUS)


def scheduler_process_group(dask_scheduler):
    import os

    return os.getpgid(0)


def test_scheduler_job_over_ucx_runs_the_scheduler_in_the_first_job():
    pytest.importorskip("distributed_ucxx")
    if len(GPUS) < 2:
        pytest.skip("needs two GPUs")
    with LocalGPUCluster(gpus_per_node=2, protocol="ucx", scheduler="job") as cluster, Client(cluster) as client:
        job = cluster.scheduler_job
        assert cluster.scheduler_address.startswith("ucx://")
        assert client.run_on_scheduler(scheduler_process_group) == int(job.job_id), (
            "the scheduler is not a process of the first job"
        )
        client.wait_for_workers(2, timeout=180)
        facts = list(client.run(device_facts).values())
        assert len({f["pci"] for f in facts}) == 2 and all(f["resources"] == {"GPU": 1} for f in facts), facts
        assert all(a.startswith("ucx://") for a in client.scheduler_info()["workers"])
        first, second = sorted(client.scheduler_info()["workers"])
        block = client.submit(random_block, 2, 2**27, workers=[first], pure=False)
        total = client.submit(lambda b: float(b.sum()), block, workers=[second], pure=False)
        assert abs(total.result() - float(random_block(2, 2**27).sum())) < 1e-6 * 2**27


def sees_a_gpu(_=None):
    import cupy

    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


def cupy_block_on(seed):
    import cupy
    from distributed import get_worker

    return get_worker().name, float(cupy.random.default_rng(seed).standard_normal(10**6).sum())


def test_mixed_pool_annotated_cupy_tasks_run_only_on_gpu_workers():
    import dask

    pytest.importorskip("cupy")
    if len(GPUS) < 2:
        pytest.skip("needs two GPUs")
    with LocalGPUCluster(gpus_per_node=2, cpu_pool={"processes": 2}) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2, cpu_workers=2)
        client.wait_for_workers(4, timeout=180)
        workers = client.scheduler_info()["workers"].values()
        gpu_workers = {w["name"] for w in workers if w["resources"] == {"GPU": 1}}
        cpu_workers = {w["name"] for w in workers} - gpu_workers
        assert len(gpu_workers) == 2 and len(cpu_workers) == 2, workers
        sees = client.run(sees_a_gpu)
        by_name = {w["name"]: address for address, w in client.scheduler_info()["workers"].items()}
        assert not any(sees[by_name[name]] for name in cpu_workers), "CPU workers must not see a GPU"
        assert all(sees[by_name[name]] for name in gpu_workers)
        with dask.annotate(resources={"GPU": 1}):  # the seeds' pattern
            parts = [dask.delayed(cupy_block_on, pure=False)(seed) for seed in range(40)]
        results = client.gather(client.compute(parts, optimize_graph=False))
        assert {name for name, _ in results} <= gpu_workers
        import cupy

        assert [total for _, total in results] == pytest.approx(
            [float(cupy.random.default_rng(s).standard_normal(10**6).sum()) for s in range(40)]
        )


def test_dask_cuda_job_on_a_node_without_its_interface_is_reported_back():
    pytest.importorskip("dask_cuda")
    from gpujobqueue import JobFailedError

    # The scheduler here listens on loopback; the job is told to use an interface the node lacks.
    with (
        LocalGPUCluster(
            gpus_per_node=len(GPUS), interface="nosuchif0", scheduler_options={"interface": "lo"}
        ) as cluster,
        Client(cluster) as client,
    ):
        assert cluster.launch.mode == "dask-cuda"
        cluster.scale(gpus=len(GPUS))
        with pytest.raises(JobFailedError) as info:
            client.wait_for_workers(len(GPUS), timeout=60)
        assert info.value.exit_code == 3
        assert "network interface nosuchif0 does not exist" in info.value.log_tail
        assert not cluster.workers


def tls_and_lifetime_facts(dask_worker):
    import dask

    return {
        "address": dask_worker.address,
        "lifetime": dask_worker.lifetime,
        "configured": dask.config.get("distributed.worker.lifetime.duration"),
        "restart": dask.config.get("distributed.worker.lifetime.restart"),
    }


def test_dask_cuda_workers_talk_tls_by_default_and_retire_before_the_walltime():
    pytest.importorskip("cupy")
    pytest.importorskip("dask_cuda")
    # TCP asked for: TLS by default. A one-hour walltime: workers retire 3 minutes before it,
    # told through dask config, as `dask cuda worker` takes no --lifetime.
    with (
        LocalGPUCluster(gpus_per_node=len(GPUS), protocol="tcp", walltime="01:00:00") as cluster,
        Client(cluster) as client,
    ):
        assert cluster.launch.mode == "dask-cuda" and cluster.scheduler_address.startswith("tls://")
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        facts = list(client.run(tls_and_lifetime_facts).values())
        assert all(f["address"].startswith("tls://") for f in facts), facts
        assert all(f["configured"] == "3420s" and f["restart"] is False for f in facts), facts
        # each worker's own lifetime: 3420 s moved at random by at most the stagger (45 s)
        assert all(3420 - 45 <= f["lifetime"] <= 3420 + 45 for f in facts), facts
        futures = [
            client.submit(cupy_sum, 10**6, workers=[address], pure=False)
            for address in client.scheduler_info()["workers"]
        ]
        assert client.gather(futures) == [float(sum(range(10**6)))] * len(GPUS)


STOPPED_CLIENT = """
import sys, time
from dask.distributed import Client
from gpujobqueue import LocalGPUCluster

gpus = int(sys.argv[1])
cluster = LocalGPUCluster(gpus_per_node=gpus, death_timeout=15)
client = Client(cluster)
cluster.scale(gpus=gpus)
client.wait_for_workers(gpus, timeout=180)
# TLS, or UCX where the GPUs share NVLink and distributed-ucxx is installed (the default picks it)
assert cluster.launch.mode == "dask-cuda" and cluster.scheduler_address.split("://")[0] in ("tls", "ucx")
print("READY " + " ".join(str(job.job_id) for job in cluster.workers.values()), flush=True)
time.sleep(600)
"""


def test_dask_cuda_workers_of_a_stopped_client_exit_within_death_timeout(tmp_path):
    """`dask cuda worker` preloads the watchdog into the workers its nannies start: with the
    client stopped (SIGSTOP), they close and the job ends, within death_timeout + a minute."""
    import signal
    import subprocess
    import sys
    import time

    from test_reliability import local_jobs_alive

    pytest.importorskip("dask_cuda")
    script = tmp_path / "client.py"
    script.write_text(STOPPED_CLIENT)
    process = subprocess.Popen(
        [sys.executable, str(script), str(min(2, len(GPUS)))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("READY"), line + process.stderr.read()
        jobs = line.split()[1:]
        assert local_jobs_alive(jobs) == jobs
        process.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        while local_jobs_alive(jobs):
            assert time.monotonic() - stopped < 15 + 60, (
                f"dask-cuda jobs {local_jobs_alive(jobs)} of a stopped client still run"
            )
            time.sleep(0.5)
        print(
            f"\ndask-cuda: {len(jobs)} job(s) ended {time.monotonic() - stopped:.1f} s after SIGSTOP (death_timeout=15)"
        )
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("nic_affinity", [False, True])
def test_dask_cuda_nannies_set_each_worker_s_card_only_when_asked(tmp_path, nic_affinity):
    """`dask cuda worker` has no --preload-nanny: with nic_affinity=True its nannies take
    gpujobqueue.preloads.nic_affinity from DASK_DISTRIBUTED__NANNY__PRELOAD and log one line per
    worker; by default UCX chooses and no worker has UCX_NET_DEVICES."""
    from gpujobqueue.preloads import nic_affinity as nic

    pytest.importorskip("dask_cuda")
    if os.environ.get("UCX_NET_DEVICES"):
        pytest.skip("UCX_NET_DEVICES is set here, and would be kept")
    logs = tmp_path / "logs"
    keywords = dict(gpus_per_node=len(GPUS), log_directory=str(logs), nic_affinity=nic_affinity)
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        assert cluster.launch.mode == "dask-cuda"
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        seen = client.run(lambda dask_worker: (dask_worker.name, os.environ.get("UCX_NET_DEVICES")))
    text = "".join(path.read_text() for path in logs.iterdir())
    lines = [line for line in text.splitlines() if line.startswith("gpujobqueue: worker ")]
    if not nic_affinity:
        assert [card for _, card in seen.values()] == [None] * len(GPUS) and lines == []
        return
    # one line per worker, under its name; a card where this node has two or more (as check's map says)
    assert sorted(line.split()[2].rstrip(":") for line in lines) == sorted(name for name, _ in seen.values()), text
    print("\n" + "\n".join(lines) + "\nmap: " + "; ".join(nic.map_lines()))
    cards = dict(seen.values())
    for line in lines:  # "gpujobqueue: worker NAME (GPU BUS) -> CARD, same PCIe switch", or "..., UCX left to choose"
        name = line.split()[2].rstrip(":")
        chosen = line.split(" -> ")[1].split(",")[0] if " -> " in line else None
        assert cards[name] == chosen, (line, cards)


def test_dask_cuda_workers_serve_no_page_without_a_credential():
    """dask-cuda's workers (`dask cuda worker`, one nanny and worker per GPU) open no dashboard:
    no page of any socket of the cluster's processes answers without a credential."""
    import psutil
    from fixtures.listeners import http_beyond_loopback, pages_served, readable_pages

    pytest.importorskip("dask_cuda")
    with LocalGPUCluster(gpus_per_node=len(GPUS)) as cluster, Client(cluster) as client:
        assert cluster.launch.mode == "dask-cuda"
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        served = pages_served(psutil.Process())
        assert len(served) >= 1 + 2 * len(GPUS), served  # the scheduler, each GPU's nanny and worker
        assert readable_pages(served) == {}, served
        assert http_beyond_loopback(served) == [], served


@pytest.mark.skipif(len(GPUS) < 4, reason="processes=2 sharing 4 GPUs needs 4 GPUs")
def test_processes_sharing_the_gpus_gives_each_worker_its_two_devices():
    # Issue 31 point 6: processes=2 on 4 GPUs per job, each worker seeing its 2 devices.
    with LocalGPUCluster(gpus_per_node=4, processes=2, devices=GPUS[:4]) as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        client.wait_for_workers(2, timeout=180)
        facts = client.run(lambda: os.environ["CUDA_VISIBLE_DEVICES"])
        counts = client.run(lambda: __import__("cupy").cuda.runtime.getDeviceCount())
    assert sorted(facts.values()) == [f"{GPUS[0]},{GPUS[1]}", f"{GPUS[2]},{GPUS[3]}"]
    assert list(counts.values()) == [2, 2]
