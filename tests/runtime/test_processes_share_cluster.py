"""Issue 31 point 6: a local cluster with dask-jobqueue's ``processes=2`` on 4 devices per job starts
2 workers per job, each seeing its 2 devices and carrying GPU=2 (no GPU needed: the ids are nominal)."""

from __future__ import annotations

import os

import pytest
from dask.distributed import Client
from test_local_cluster import needs_four_devices

from gpujobqueue import LocalGPUCluster


def seen(dask_worker):
    return {
        "devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "resources": dict(dask_worker.state.total_resources),
    }


@needs_four_devices
@pytest.mark.parametrize("nanny", [True, False])
def test_two_workers_of_a_four_device_job_each_see_two_devices(monkeypatch, nanny):
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")  # the stand-in ids are no GPUs
    keywords = dict(gpus_per_node=4, processes=2, devices=["0", "1", "2", "3"], memory_per_gpu="256MiB", nanny=nanny)
    with LocalGPUCluster(death_timeout=20, **keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        client.wait_for_workers(2, timeout=120)
        facts = client.run(seen)
        assert len(cluster.worker_spec) == 1, "4 GPUs are one job of 4 devices"
    assert sorted(fact["devices"] for fact in facts.values()) == ["0,1", "2,3"]
    assert [fact["resources"] for fact in facts.values()] == [{"GPU": 2.0}] * 2
