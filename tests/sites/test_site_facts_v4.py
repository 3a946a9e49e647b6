"""The site facts issue 44 (sites v4) corrected, each written out by hand from the centre's page named beside it,
not computed from the site files."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import SiteConfigError, load_site


def script(site_name: str, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        return job_script_for(site_name, {"walltime": "01:00:00", **keywords}, name="w")


def test_betzy_accel_jobs_ask_for_their_memory_at_most_what_a_gpu_pays_for():
    # NRIS "Job Scripts on Betzy" (UNINETTSigma2/documentation jobs/job_scripts/betzy_job_scripts.html @7af3f4c4,
    # 2026-06-10 or later): accel jobs "must specify ... the amount of memory memory per cpu or GPU". "Projects and
    # accounting" (@1205b91e): a GPU is 16 billing units and a GiB 0.1294237, so up to 123.6 GiB per GPU costs no more
    # than the GPU; "Job Types on Betzy": 494.5 GiB per node for jobs.
    whole = script("betzy", account="nn9999k")
    assert "#SBATCH --gpus=4\n" in whole and "#SBATCH --mem=492G\n" in whole  # 4 x 123 GiB (Slurm's G is GiB)
    one = script("betzy", account="nn9999k", gpus_per_node=1)
    assert "#SBATCH --gpus=1\n" in one and "#SBATCH --mem=123G\n" in one


def parse(site_name: str, **keywords):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, "walltime": "01:00:00", **keywords})
        return plan.request


ACCOUNTS = {"deltaai": "bbka-dtai-gh", "setonix": "pawsey0001-gpu", "perlmutter": "m1234_g", "bridges2": "abc123456p"}


@pytest.mark.parametrize(
    ("site", "queue", "count", "source", "field"),
    [
        # RCAC queues.md @062d438f: the ai partition "is made up of 20 Gautschi-H nodes"
        ("gautschi", None, 20, "RCAC-Docs/blob/062d438f", "nodes"),
        ("gautschi", "ai-preemptible", 20, "RCAC-Docs/blob/062d438f", "nodes"),
        # NCSA DeltaAI architecture: "Number of nodes 114"
        ("deltaai", None, 114, "deltaai/en/latest/user-guide/architecture.html", "nodes"),
        # Pawsey: gpu 134 nodes, gpu-dev at most 2 per job (a copy of its partition table: unconfirmed); Setonix User
        # Guide v39: "GPU high memory 38" nodes
        ("setonix", None, 134, "unconfirmed: queues.gpu.max_nodes", "nodes"),
        ("setonix", "gpu-highmem", 38, "selectedPageVersions=39", "queue"),
        ("setonix", "gpu-dev", 2, "unconfirmed: queues.gpu.max_nodes, queues.gpu-dev.max_nodes", "queue"),
        # NREL Kestrel Running @1cd92fb7: gpu-h100 65 nodes per user, gpu-h100l 13
        ("kestrel", None, 65, "NREL/HPC/blob/1cd92fb7aa5e", "nodes"),
        ("kestrel", "gpu-h100l", 13, "NREL/HPC/blob/1cd92fb7aa5e", "queue"),
        # NERSC Perlmutter architecture: "1,792 GPU-accelerated nodes"
        ("perlmutter", None, 1792, "docs.nersc.gov/systems/perlmutter/architecture", "nodes"),
        # KU Leuven wICE quick start @04329bff: gpu_a100 / gpu 4 nodes, gpu_h100 5 nodes
        ("wice", None, 4, "wice_quick_start.rst", "queue"),
        ("wice", "gpu_h100", 5, "wice_quick_start.rst", "nodes"),
        # CSCS: Bristen's 32 A100 nodes; Santis' 302 GH200 nodes
        ("bristen", None, 32, "cscs-docs/blob/414e89d47dfb/clusters/bristen", "nodes"),
        ("santis", None, 302, "cscs-docs/blob/414e89d47dfb/clusters/santis", "nodes"),
        # PSC: "24 nodes of 8 x V100-32GB"
        ("bridges2", None, 24, "psc.edu", "nodes"),
        # NCAR Casper node types @664e4b82: V100 nodes 4 (4-way) + 6 (8-way), H100 2 nodes, A100 80GB 8 nodes
        ("casper", None, 10, "casper-node-types.md", "nodes"),
        ("casper", "casper-h100", 2, "casper-node-types.md", "queue"),
        ("casper", "casper-a100-80gb", 8, "casper-node-types.md", "queue"),
    ],
)
def test_a_job_larger_than_the_queue_s_nodes_is_refused_naming_the_count_and_its_source(
    site, queue, count, source, field
):
    named = {"queue": queue} if queue else {}
    account = ACCOUNTS.get(site, "abc123")
    assert parse(site, account=account, nodes=count, **named).nodes == count
    with pytest.raises(ValidationError) as refused:
        parse(site, account=account, nodes=count + 1, **named)
    text = str(refused.value)
    assert f"{count + 1} nodes" in text and f"queue allows {count}" in text
    assert "max_nodes from " in text and source in text
    assert refused.value.field == field


def test_setonix_refuses_193_gpu_nodes_it_has_192():
    with pytest.raises(ValidationError, match="193 nodes per job but the gpu queue allows 134"):
        parse("setonix", account="pawsey0001-gpu", nodes=193)


def test_mindwell_nodes_hold_8000_mib_per_core_as_the_production_pages_say():
    # KU Leuven, mindwell_hardware.rst @0ad5c240 and the version worded for production: "default memory per core is
    # 8000 MiB" on the 192-core GPU nodes (192 x 8000 = 1536000 MiB), "maximum memory per core is 4000 MiB" on the
    # interactive nodes (8 cores x 4000 = 32000 MiB); the 8100 and 3900 MiB were a pre-production draft's (0aacf721)
    account = {"account": "lp_myproject"}
    assert parse("mindwell", memory_per_gpu="192000MiB", **account).memory_per_node == 1536000 * 2**20
    with pytest.raises(SiteConfigError, match=r"1536000MiB") as refused:
        parse("mindwell", memory_per_gpu="194400MiB", **account)  # 24 x 8100: the draft's per-GPU figure
    assert refused.value.field == "memory_per_gpu"
    interactive = {"queue": "interactive", "gpus_per_node": 1, **account}
    assert parse("mindwell", memory="32000MiB", **interactive).memory_per_node == 32000 * 2**20
    with pytest.raises(SiteConfigError, match=r"32000MiB"):
        parse("mindwell", memory="32001MiB", **interactive)
    sources = {source["url"].split("/blob/")[1][:8]: source for source in load_site("mindwell").data["sources"]}
    assert "0aacf721" not in sources and "0ad5c240" in sources


def show(site_name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "show", site_name], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_what_no_centre_page_confirmed_of_leonardo_setonix_and_deltaai_is_printed_by_show():
    # Leonardo: CINECA's QOS table was not readable; users' scripts name boost_qos_lprod, which the file lacks
    assert "boost_qos_lprod" in show("leonardo-booster")
    # Setonix: the partitions and the rule on CPU and memory options come from a copy of Pawsey's pages
    setonix = show("setonix")
    assert "should not indicate" in setonix and "--cpus-per-task" in setonix and "Running Jobs on Setonix" in setonix
    # DeltaAI: its partitions (ghx4, ghx4-interactive) are not on NCSA's pages read
    assert "ghx4-interactive" in show("deltaai")


def test_setonix_holds_jobs_past_its_partitions_per_user_limits():
    # Pawsey "Running Jobs on Setonix" (a copy, listed unconfirmed): gpu 64 running / 1024 submitted per user,
    # gpu-highmem 8 / 256, gpu-dev 1 / 4
    site = load_site("setonix")
    limits = {name: site.queue(name)["max_jobs_per_user"] for name in ("gpu", "gpu-highmem", "gpu-dev")}
    assert limits == {
        "gpu": {"running": 64, "submitted": 1024},
        "gpu-highmem": {"running": 8, "submitted": 256},
        "gpu-dev": {"running": 1, "submitted": 4},
    }
