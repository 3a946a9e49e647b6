"""One plan for the cluster and the script: ``render`` (job_script_for) writes exactly the
script that a cluster made from the same keywords submits, on every batch system and every
shipped site."""

from __future__ import annotations

import difflib
import warnings

import pytest
from site_samples import SAMPLE_ACCOUNTS, SHIPPED, SITE_CONFIGS

from gpujobqueue import GPUCluster
from gpujobqueue.batch import names as batch_names
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import load_site, site_settings

LOOPBACK_SCHEDULER = {"interface": "lo"}
SIZED = {"gpus_per_node": 2, "cpus_per_gpu": 2, "memory_per_gpu": "4GB", "walltime": "00:30:00", "interface": "lo"}


def _differences(rendered: str, submitted: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(rendered.splitlines(), submitted.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]


def _cluster_script(keywords: dict, **extra) -> tuple[str, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP, retired and unconfirmed sites warn; the scripts are the subject
        with GPUCluster(**keywords, **extra, scheduler_options=LOOPBACK_SCHEDULER) as cluster:
            return cluster.job_script(), cluster.scheduler_address, str(cluster._dummy_job.name)


@pytest.mark.parametrize("site", SHIPPED)
def test_render_writes_the_script_a_cluster_of_the_same_keywords_submits_on_every_site(site):
    keywords = {
        "site": site,
        "interface": "lo",
        **({"account": SAMPLE_ACCOUNTS[site]} if site in SAMPLE_ACCOUNTS else {}),
    }
    if (
        site_settings(load_site(site), None).get("protocol") == "ucx"
    ):  # no UCX scheduler can start here (no distributed-ucxx)
        keywords["protocol"] = "tcp"
    submitted, address, name = _cluster_script(keywords, security=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rendered = job_script_for(
            site, {k: v for k, v in keywords.items() if k != "site"}, name=name, scheduler=address, tls=False
        )
    assert _differences(rendered, submitted) == []


@pytest.mark.parametrize("batch", [b for b in batch_names() if b != "local"])
def test_render_and_the_cluster_differ_only_in_where_the_tls_credentials_are(batch):
    submitted, address, name = _cluster_script({"batch": batch, **SIZED})
    rendered = job_script_for(batch, SIZED, name=name, scheduler=address)
    differences = _differences(rendered, submitted)
    # The cluster's own credentials, in its private folder; a rendered script's, in the folder
    # `gpujobqueue credentials` made, checked at the start of the job.
    check_block = rendered[rendered.index("# TLS: ") : rendered.index("\ndone\n") + len("\ndone")].splitlines()
    added = [line for line in differences if line.startswith("+")]
    removed = [line[1:] for line in differences if line.startswith("-")]
    tls = [line for line in added if line.startswith("+    --tls-")]
    assert len(tls) == 3 and all('"$private_dir/' in line for line in tls), added
    # before them, the job's folder on the node and its copy of the cluster's (checked) files, which those lines read
    node_folder = added[: added.index(tls[0])]
    assert node_folder[0].startswith("+# The job's private folder (mode 0700) on this node"), added
    assert node_folder[-1].startswith('+(in_folder "$cluster_dir" "$cluster_dir_id" && cp -- worker-'), added
    assert added == [*node_folder, *tls], added
    assert all(line in check_block or line == "" or line.startswith("    --tls-") for line in removed), removed
    plain, address, name = _cluster_script({"batch": batch, **SIZED}, security=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _differences(job_script_for(batch, SIZED, name=name, scheduler=address, tls=False), plain) == []


def test_another_protocol_on_a_ucx_site_leaves_the_sites_ucx_transports_out(tmp_path):
    # Before, a site's enable_infiniband made protocol="tcp" a refusal:
    # "a UCX transport switch; it needs protocol='ucx'".
    text = (
        (SITE_CONFIGS / "expanse.yaml")
        .read_text()
        .replace("  protocol: ucx\n", "  protocol: ucx\n  ucx: {infiniband: true}\n")
    )
    site = tmp_path / "expanse.yaml"  # a copy that forces a transport, as a centre documenting one would
    site.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        script = job_script_for(str(site), {"account": "abc123", "protocol": "tcp"}, name="w", tls=False)
        assert "--enable-infiniband" in job_script_for(
            str(site), {"account": "abc123"}, name="w"
        )  # the site's UCX as it was
    assert (
        "--protocol tcp" in script and "--enable-infiniband" not in script and "DASK_DISTRIBUTED_UCXX__" not in script
    )


# --- What the cluster's constructor decided before issue 19: now in the Plan ---------------------

CPU_POOL = {"processes": 2, "cores": 4, "memory": "2GiB", "walltime": "00:20:00"}


def _plan(batch: str, keywords: dict, **decisions):
    from gpujobqueue.plan import make_plan
    from gpujobqueue.runtime.factory import cluster_class

    return make_plan(cluster_class(batch), keywords, **decisions)


@pytest.mark.parametrize("batch", [b for b in batch_names() if b != "local"])
def test_the_cluster_takes_its_cpu_pool_array_and_placement_from_the_plan(batch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _plan(batch, dict(SIZED), security=False, cpu_pool=CPU_POOL)
        with GPUCluster(
            batch=batch, **SIZED, security=False, cpu_pool=CPU_POOL, scheduler_options=LOOPBACK_SCHEDULER
        ) as cluster:
            assert (cluster.request, cluster.launch) == (plan.request, plan.launch)
            assert (cluster.cpu_pool, cluster.cpu_request, cluster.cpu_launch) == (
                plan.cpu_pool,
                plan.cpu_request,
                plan.cpu_launch,
            )
            assert cluster.scheduler_placement == plan.scheduler_placement == "local"
            assert plan.security is None and cluster.scheduler_address.startswith("tcp://")
            cpu_script = cluster.cpu_job_script()
    assert plan.cpu_request.gpu_request == "none" and plan.cpu_request.walltime == 20 * 60
    assert "dask_worker" in cpu_script or "dask worker" in cpu_script


def test_the_plan_holds_the_clusters_security():
    from distributed.security import Security

    from gpujobqueue.security.tls import InsecureClusterWarning

    with pytest.warns(InsecureClusterWarning):
        plain = _plan("slurm", dict(SIZED), security=False)
    assert plain.security is None and plain.launch.protocol in (None, "tcp")
    tls = _plan("slurm", dict(SIZED), security=None)
    assert isinstance(tls.security, Security) and tls.launch.protocol == "tls"
    # render's plan leaves the TLS to the script (its own credentials): the protocol is as given.
    assert _plan("slurm", dict(SIZED)).security is None and _plan("slurm", dict(SIZED)).launch.protocol is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GPUCluster(batch="slurm", **SIZED, scheduler_options=LOOPBACK_SCHEDULER) as cluster:
            assert cluster.launch == tls.launch and cluster.scheduler_address.startswith("tls://")


def test_the_plan_holds_job_arrays_and_the_scheduler_placement():
    assert _plan("slurm", dict(SIZED), job_array=True).job_array is True
    assert _plan("slurm", dict(SIZED)).job_array is False
    assert _plan("slurm", dict(SIZED), scheduler="job").scheduler_placement == "job"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GPUCluster(batch="slurm", **SIZED, job_array=True, scheduler_options=LOOPBACK_SCHEDULER) as cluster:
            assert cluster._job_commands.arrays is True
    # A refusal of the plan is the cluster's, before anything starts.
    from gpujobqueue.errors import ValidationError

    lsf = {**SIZED, "nodes": 2, "launcher": "jsrun", "gpu_request": "csm"}
    for make in (lambda: _plan("lsf", lsf, scheduler="job"), lambda: GPUCluster(batch="lsf", **lsf, scheduler="job")):
        with pytest.raises(ValidationError, match="scheduler"):
            make()
    for make in (lambda: _plan("slurm", {**SIZED, "nodes": 2, "launcher": "srun"}, job_array=True),):
        with pytest.raises(ValidationError, match="job_array"):
            make()


@pytest.mark.parametrize(
    "gpu_keywords, cpu_pool, field",
    [
        # 30 minutes before a 10-minute walltime: refused for a GPU job, and for the pool's jobs.
        ({"walltime": "00:10:00", "walltime_margin": "30m"}, None, "walltime_margin"),
        ({"walltime": "01:00:00", "walltime_margin": "30m"}, {"walltime": "00:10:00"}, "walltime_margin"),
        # 10,000 cores on a node: past the bound for a GPU job, and for the pool's jobs.
        ({"cpus_per_gpu": 5000, "gpus_per_node": 2}, None, "cpus_per_gpu"),
        ({}, {"processes": 100, "nthreads": 100}, "cpu_pool.nthreads"),
    ],
)
def test_a_value_refused_for_the_gpu_jobs_is_refused_for_the_cpu_pools_jobs_too(gpu_keywords, cpu_pool, field):
    from gpujobqueue.errors import ValidationError

    keywords = {**SIZED, **gpu_keywords}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValidationError) as raised:
            GPUCluster(batch="slurm", **keywords, cpu_pool=cpu_pool, security=False)
    assert raised.value.field == field


@pytest.mark.parametrize("batch", [b for b in batch_names() if b != "local"])
def test_one_name_a_quantity_the_cpu_pool_says_workers_and_asks_for_no_gpu(batch):
    # The CPU pool's jobs hold no GPU and start `processes` workers: on 9269b18 it wrote its worker count into
    # gpus_per_node (request and launch), the GPU count of the jobs' usage rows and the local pool's device share.
    plan = _plan(batch, dict(SIZED, processes=1), security=False, cpu_pool=CPU_POOL)
    assert (plan.cpu_request.gpus_per_node, plan.cpu_launch.gpus_per_node, plan.cpu_launch.gpus_per_worker) == (0, 0, 0)
    assert (plan.cpu_launch.workers_per_node, plan.cpu_launch.nthreads) == (2, 2)
    assert (plan.launch.gpus_per_node, plan.launch.workers_per_node, plan.launch.gpus_per_worker) == (2, 1, 2)
