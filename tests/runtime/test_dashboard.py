"""No HTTP page of the cluster can be read without a credential unless a dashboard is opened on
purpose, and one opened on purpose says who can reach it.

The dashboards (the scheduler's worker logs and call stacks, each worker's /status, /profile,
/system, Prometheus' /metrics) take no password: a page on the loopback is read by every user of
the host. These tests start real local clusters and ask the kernel what the cluster's processes
(this test's own process tree) listen on, then GET every page of every socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import psutil
import pytest
from dask.distributed import Client
from fixtures.listeners import http_beyond_loopback, http_status, listening_sockets, pages_served, readable_pages

from gpujobqueue import LocalGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.security.dashboard import OpenDashboardWarning

SMALL = dict(gpus_per_node=1, worker_mode="per-device", memory_per_gpu="512MiB")


def own_tree_pages() -> dict[str, dict[str, int | None]]:
    return pages_served(psutil.Process())


@pytest.mark.parametrize("scheduler", ["local", "job"])
def test_no_process_of_a_cluster_serves_a_page_without_a_credential(tmp_path, scheduler):
    # A GPU worker (per-device, under its nanny) and a CPU pool worker, as the local batch system's
    # jobs run them; the scheduler in this process or in the first job.
    cluster = LocalGPUCluster(
        **SMALL, cpu_pool={"processes": 1}, scheduler=scheduler, shared_temp_directory=str(tmp_path)
    )
    with cluster, Client(cluster) as client:
        cluster.scale(gpus=1, cpu_workers=1)
        client.wait_for_workers(2, timeout=120)
        served = own_tree_pages()
        assert len(served) >= 5, served  # scheduler, nannies and workers all found
        assert readable_pages(served) == {}, served
        assert http_beyond_loopback(served) == [], served
        assert cluster.dashboard_link == ""


def test_a_dashboard_opened_on_purpose_says_who_can_reach_it(tmp_path):
    keywords = dict(
        scheduler_options={"dashboard_address": "127.0.0.1:0"},
        worker_extra_args=["--dashboard-address", "127.0.0.1:0"],
    )
    with pytest.warns(OpenDashboardWarning) as warned:
        cluster = LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), **keywords)
    messages = [str(w.message) for w in warned if issubclass(w.category, OpenDashboardWarning)]
    assert any("scheduler" in m and "every user of this host" in m for m in messages), messages
    assert any("workers" in m and "every user of the job's nodes" in m for m in messages), messages
    with cluster, Client(cluster) as client:
        cluster.scale(1)
        client.wait_for_workers(1, timeout=120)
        port = cluster.scheduler.http_server.port
        assert cluster.dashboard_link == f"http://127.0.0.1:{port}/status"
        assert http_status("127.0.0.1", port, "/status") == 200
        (worker,) = client.scheduler_info()["workers"].values()
        assert http_status("127.0.0.1", worker["services"]["dashboard"], "/status") == 200
        assert http_beyond_loopback(own_tree_pages()) == []


def test_an_open_dashboard_beyond_the_loopback_warns_that_the_network_can_read_it(tmp_path):
    keywords = {"scheduler_options": {"dashboard_address": ":0"}}
    with pytest.warns(OpenDashboardWarning, match="everyone who can reach this host on the network"):
        cluster = LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), **keywords)
    with cluster:
        port = cluster.scheduler.http_server.port
        hosts = {address for _, address, listening in listening_sockets(psutil.Process()) if listening == port}
        assert hosts & {"0.0.0.0", "::"}, hosts
        assert http_status("127.0.0.1", port, "/status") == 200


def test_dashboard_false_keeps_it_closed_whatever_the_address(tmp_path):
    keywords = {"scheduler_options": {"dashboard": False, "dashboard_address": ":0"}}
    with LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), **keywords) as cluster:
        assert cluster.dashboard_link == ""
        served = own_tree_pages()
        assert readable_pages(served) == {} and http_beyond_loopback(served) == [], served


def test_dashboard_address_goes_through_scheduler_options_as_in_dask_jobqueue(tmp_path):
    with pytest.raises(
        ValidationError, match="dashboard_address: pass 'dashboard_address' through 'scheduler_options'"
    ):
        LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path), dashboard_address=":8787")


# The --run script's client: reads every page of every socket its job's processes listen on.
PROBE = textwrap.dedent("""\
    import json, sys
    import psutil
    from distributed import Client
    from fixtures.listeners import http_beyond_loopback, pages_served, readable_pages

    with Client() as client:
        client.wait_for_workers(1)
        served = pages_served(psutil.Process().parent())  # the job script: its scheduler, workers and this client
    report = {"sockets": len(served), "readable": readable_pages(served), "beyond": http_beyond_loopback(served)}
    with open(sys.argv[1], "w") as out:
        json.dump(report, out)
""")


def test_a_run_scripts_scheduler_and_workers_serve_no_page(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    rendered = subprocess.run(
        [
            *(sys.executable, "-m", "gpujobqueue.cli", "render", "local", "--worker-mode", "per-device"),
            *("--python", sys.executable, "--memory-per-gpu", "512MiB", "--cpus-per-gpu", "1"),
            *("--run", str(probe), "--", str(tmp_path / "report.json")),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        ["bash", "-c", rendered.stdout],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": tests, "CUDA_VISIBLE_DEVICES": "0"},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["sockets"] >= 3, report  # the scheduler's, the nanny's and the worker's
    assert report["readable"] == {} and report["beyond"] == [], report
