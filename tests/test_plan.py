"""One plan for the cluster and the script: ``render`` (job_script_for) writes exactly the
script that a cluster made from the same keywords submits, on every batch system and every
shipped site."""

from __future__ import annotations

import difflib
import warnings

import pytest
from site_samples import SAMPLE_ACCOUNTS, SHIPPED, SITE_CONFIGS

from gpujobqueue import GPUCluster
from gpujobqueue.batch import BATCH_SYSTEMS
from gpujobqueue.scripts import job_script_for
from gpujobqueue.sites import load_site, site_settings

QUIET_SCHEDULER = {"dashboard_address": "127.0.0.1:0", "interface": "lo"}
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
        with GPUCluster(**keywords, **extra, scheduler_options=QUIET_SCHEDULER) as cluster:
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


@pytest.mark.parametrize("batch", [b for b in BATCH_SYSTEMS if b != "local"])
def test_render_and_the_cluster_differ_only_in_where_the_tls_credentials_are(batch):
    submitted, address, name = _cluster_script({"batch": batch, **SIZED})
    rendered = job_script_for(batch, SIZED, name=name, scheduler=address)
    differences = _differences(rendered, submitted)
    # The cluster's own credentials, in its private folder; a rendered script's, in the folder
    # `gpujobqueue credentials` made, checked at the start of the job.
    check_block = rendered[rendered.index("# TLS: ") : rendered.index("\ndone\n") + len("\ndone")].splitlines()
    added = [line for line in differences if line.startswith("+")]
    removed = [line[1:] for line in differences if line.startswith("-")]
    assert len(added) == 3 and all(line.startswith("+    --tls-") for line in added), added
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
