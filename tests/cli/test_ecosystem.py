"""gpujobqueue in the dask world: its defaults in dask config, its commands under ``dask``,
and what a notebook shows of a cluster."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import dask
from dask.distributed import Client

from gpujobqueue import GPUCluster, LocalGPUCluster, SLURMGPUCluster


def run(*args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_the_defaults_are_in_dask_config_and_environment_variables_set_them():
    shown = run("-m", "dask", "config", "get", "gpujobqueue.job-poll-interval")
    assert shown.returncode == 0 and shown.stdout.strip() == "5s", shown.stderr
    overridden = run(
        "-m",
        "dask",
        "config",
        "get",
        "gpujobqueue.slurm.walltime",
        env={"DASK_GPUJOBQUEUE__SLURM__WALLTIME": "02:00:00"},
    )
    assert overridden.stdout.strip() == "02:00:00", overridden.stderr
    listed = run("-m", "dask", "config", "list")
    # Every setting is listed; a batch system's are null (unset), so that a site's facts and the
    # keyword registry's defaults, below dask config in the order, still apply.
    assert "gpujobqueue:" in listed.stdout and "job-poll-interval: 5s" in listed.stdout
    assert "job-array: null" in listed.stdout and "gpus-per-node: null" in listed.stdout


def test_dask_gpujobqueue_is_the_gpujobqueue_command():
    args = [
        "render",
        "slurm",
        "--gpus-per-node",
        "2",
        "--cores",
        "2",
        "--memory",
        "8GB",
        "--queue",
        "gpu",
        "--job-array",
        "4",
    ]
    through_dask = run("-m", "dask", "gpujobqueue", *args)
    alone = run("-m", "gpujobqueue.cli", *args)
    assert through_dask.returncode == 0, through_dask.stderr
    assert through_dask.stdout == alone.stdout and "#SBATCH --array=1-4" in alone.stdout
    assert "render" in run("-m", "dask", "gpujobqueue", "--help").stdout


def test_the_default_site_comes_from_dask_config():
    with dask.config.set({"gpujobqueue.site": "generic-slurm"}):
        cluster = GPUCluster(gpus_per_node=2)
    with cluster:
        assert isinstance(cluster, SLURMGPUCluster) and cluster.site.name == "generic-slurm"


def test_the_notebook_repr_shows_site_batch_system_gpus_jobs_and_dashboard():
    with (
        LocalGPUCluster(
            gpus_per_node=2, devices=["0", "1", "2", "3"], worker_mode="per-device", memory_per_gpu="512MiB"
        ) as cluster,
        Client(cluster) as client,
    ):
        empty = cluster._repr_html_()
        assert "No jobs" in empty and "0 connected of 0 requested" in empty
        cluster.scale(gpus=4)
        client.wait_for_workers(4, timeout=120)
        rows = cluster.jobs  # asks the batch system, as a look at cluster.jobs does
        page = cluster._repr_html_()
        assert "Batch system" in page and "local" in page and "4 connected of 4 requested (2 jobs)" in page
        for row in rows:
            assert row.name in page and str(row.job_id) in page and "RUNNING" in page
        assert cluster.dashboard_link in page


class Terminal(io.StringIO):
    """Standard error as a terminal."""

    def isatty(self):
        return True


def test_waiting_shows_gpus_connected_and_why_on_a_terminal_only(monkeypatch):
    for stderr, on_a_terminal in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stderr)
        # the prologue holds the workers back a few seconds, so there is a wait to show
        with (
            LocalGPUCluster(
                gpus_per_node=2,
                devices=["0", "1", "2", "3"],
                worker_mode="per-device",
                memory_per_gpu="512MiB",
                job_script_prologue=["sleep 3"],
            ) as cluster,
            Client(cluster) as client,
        ):
            cluster.scale(gpus=4)
            client.wait_for_workers(4, timeout=120)
        shown = stderr.getvalue()
        if on_a_terminal:
            assert "GPUs connected: 0/4" in shown, shown[-2000:]
            # the first waiting job, with its state as last asked (submitted until the job watch's first answer)
            assert re.search(r"LocalGPUCluster-0 (submitted|RUNNING) and 1 more", shown), shown[-2000:]
        else:
            assert "GPUs connected" not in shown, shown[-2000:]


def test_the_labextension_factory_in_the_readme_makes_a_cluster():
    import yaml
    from distributed.utils import import_term

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = re.search(r"```yaml\n(# ~/.config/dask/labextension.yaml\n.*?)```", readme, re.S).group(1)
    factory = yaml.safe_load(block)["labextension"]["factory"]
    cluster_factory = import_term(f"{factory['module']}.{factory['class']}")
    # the README's site is Perlmutter's; here the same factory with the local batch system
    with cluster_factory(
        *factory["args"], batch="local", gpus_per_node=1, devices=["0"], worker_mode="per-device"
    ) as cluster:
        assert cluster_factory is GPUCluster and cluster.job_cls.batch == "local"
    plan = SLURMGPUCluster.parse_keywords(dict(factory["kwargs"]))
    request = plan.request
    assert request.gpus_per_node == 4 and request.account == "m1234_g"
