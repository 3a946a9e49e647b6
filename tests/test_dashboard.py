"""The dashboard (worker logs, no password) listens on the loopback unless asked otherwise."""

from __future__ import annotations

import psutil
import pytest
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster

SMALL = dict(gpus_per_node=1, worker_mode="per-device")


def listening_hosts(port: int, connections=None) -> set[str]:
    """The addresses listening at TCP ``port``, among ``connections`` (default: this process's)."""
    if connections is None:
        connections = psutil.Process().net_connections(kind="tcp")
    return {c.laddr.ip for c in connections if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


def dashboard_port(cluster) -> int:
    return cluster.scheduler.http_server.port


def test_the_dashboard_listens_on_the_loopback_only_by_default(tmp_path):
    with LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path)) as cluster:
        hosts = listening_hosts(dashboard_port(cluster))
        assert hosts == {"127.0.0.1"}, hosts
        assert "127.0.0.1" in cluster.dashboard_link


def test_an_open_dashboard_must_be_asked_for_and_warns(tmp_path):
    from gpujobqueue.cluster import OpenDashboardWarning

    keywords = {"scheduler_options": {"dashboard_address": ":0"}}
    with pytest.warns(OpenDashboardWarning, match="without authentication"):
        cluster = LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), **keywords)
    with cluster:
        hosts = listening_hosts(dashboard_port(cluster))
        assert hosts & {"0.0.0.0", "::"}, hosts


def test_the_scheduler_jobs_dashboard_is_on_its_nodes_loopback(tmp_path):
    cluster = LocalGPUCluster(**SMALL, scheduler="job", shared_temp_directory=str(tmp_path))
    with cluster, Client(cluster) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        hosts = listening_hosts(port, psutil.net_connections(kind="tcp"))  # the scheduler's own process
        assert hosts == {"127.0.0.1"}, hosts


def test_dashboard_address_goes_through_scheduler_options_as_in_dask_jobqueue(tmp_path):
    from gpujobqueue.errors import ValidationError

    with pytest.raises(
        ValidationError, match="dashboard_address: pass 'dashboard_address' through 'scheduler_options'"
    ):
        LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), dashboard_address=":8787")
