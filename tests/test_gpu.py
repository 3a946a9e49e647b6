"""The GPU path on real NVIDIA GPUs: dask-cuda workers, one per GPU, each on its own device."""

from __future__ import annotations

import pytest
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster
from gpujobqueue.gpus import nvidia_gpu_ids

GPUS = nvidia_gpu_ids()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPUS, reason="no NVIDIA GPU on this machine (nvidia-smi / NVML found none)")]


def device_facts(dask_worker):
    import os

    import cupy

    # The full PCI id, domain included: on some hosts every GPU sits on bus 0 of its own domain.
    return {"name": dask_worker.name, "visible": os.environ["CUDA_VISIBLE_DEVICES"], "pci": cupy.cuda.Device().pci_bus_id, "resources": dict(dask_worker.state.total_resources)}


def cupy_sum(n):
    import cupy

    return float(cupy.arange(n, dtype=cupy.float64).sum())


def test_dask_cuda_workers_one_per_gpu_each_on_its_own_device():
    pytest.importorskip("cupy")
    pytest.importorskip("dask_cuda")
    with LocalGPUCluster(gpus_per_node=len(GPUS)) as cluster, Client(cluster) as client:
        assert cluster.launch.mode == "dask-cuda"
        cluster.scale(gpus=len(GPUS))
        client.wait_for_workers(len(GPUS), timeout=180)
        facts = list(client.run(device_facts).values())
        (job,) = cluster.workers
        expected = [job] if len(GPUS) == 1 else [f"{job}-{i}" for i in range(len(GPUS))]
        assert sorted(f["name"] for f in facts) == sorted(expected)
        assert len({f["pci"] for f in facts}) == len(GPUS), f"workers share a GPU: {facts}"
        assert sorted(f["visible"].split(",")[0] for f in facts) == sorted(GPUS)  # dask-cuda rotates the list
        assert all(f["resources"] == {"GPU": 1} for f in facts)
        futures = [client.submit(cupy_sum, 10**7, workers=[address], pure=False) for address in client.scheduler_info()["workers"]]
        assert client.gather(futures) == [float(sum(range(10**7)))] * len(GPUS)
