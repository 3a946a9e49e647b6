"""The queues the 2026-11-24 research added (/work/notes/issue20-facts.md) and issue 33 corrected: Kestrel's
short and long H100 partitions chosen by walltime, Aurora's capacity queue (1-16 nodes) and prod (256 nodes
or more), wICE's and Casper's per-GPU-model queues used when named and never chosen, each rendering what
its centre documents.

Edges written out by hand from the centres' tables, not computed from the site files."""

from __future__ import annotations

import warnings

import pytest

from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import QueueRefusedError, load_site

ACCOUNT = "abc123"


def parse(site_name: str, **keywords):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, "account": ACCOUNT, **keywords})
        return plan.settings, plan.request, plan.launch


def script(site_name: str, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return job_script_for(site_name, {"account": ACCOUNT, **keywords}, name="w")


@pytest.mark.parametrize(
    ("nodes", "walltime", "queue"),
    [
        # NREL: gpu-h100 up to 2 days, gpu-h100s up to 4 h (the same nodes), gpu-h100l over 2 days (10 at most)
        (1, "48:00:00", "gpu-h100"),
        (1, "48:01:00", "gpu-h100l"),
        (4, "10-00:00:00", "gpu-h100l"),
    ],
)
def test_kestrel_sends_a_job_past_two_days_to_gpu_h100l(nodes, walltime, queue):
    _, request, _ = parse("kestrel", nodes=nodes, walltime=walltime)
    assert request.queue == queue


def test_kestrel_refuses_a_job_past_ten_days_and_takes_a_short_one_in_gpu_h100s_when_named():
    with pytest.raises(QueueRefusedError, match="10-00:00:00"):
        parse("kestrel", walltime="10-00:01:00")
    assert parse("kestrel", queue="gpu-h100s", walltime="04:00:00")[1].queue == "gpu-h100s"
    with pytest.raises(QueueRefusedError, match="over the gpu-h100s queue's limit of 04:00:00"):
        parse("kestrel", queue="gpu-h100s", walltime="04:01:00")


def test_aurora_sends_jobs_of_1_to_16_nodes_to_capacity_and_of_256_or_more_to_prod():
    # ALCF's queue table since 2026-02-17/18 (issue 33; argonne-lcf/user-guides 11dbfa65, 2026-06-29 or later):
    # prod 256 nodes or more, capacity 1-16 nodes for 168 h, 5 jobs queued or running and 2 running per user;
    # tiny removed ("removing tiny")
    assert parse("aurora", nodes=1, walltime="01:00:00")[1].queue == "capacity"
    assert parse("aurora", nodes=16, walltime="168:00:00")[1].queue == "capacity"
    with pytest.raises(QueueRefusedError, match="the capacity queue allows 16"):
        parse("aurora", queue="capacity", nodes=17, walltime="01:00:00")
    assert parse("aurora", nodes=256, walltime="12:00:00")[1].queue == "prod"
    with pytest.raises(
        QueueRefusedError, match="the prod queue takes jobs of 256 nodes or more; queue 'debug-scaling'"
    ):
        parse("aurora", queue="prod", nodes=255, walltime="01:00:00")
    with pytest.raises(QueueRefusedError, match="the centre withdrew the tiny queue \\(2026-02-17\\): 'removing tiny'"):
        parse("aurora", queue="tiny", walltime="01:00:00")


def test_wice_s_a100_and_h100_partitions_ask_for_their_per_gpu_cores_and_memory():
    a100 = script("wice", queue="gpu_a100", walltime="01:00:00", gpus_per_node=2)
    assert "#SBATCH --partition=gpu_a100\n" in a100 and "#SBATCH --cpus-per-task=36\n" in a100
    assert "#SBATCH --mem=252000M\n" in a100  # KU Leuven's own example for 2 A100s: --mem=252000m
    h100 = script("wice", queue="gpu_h100", walltime="01:00:00", gpus_per_node=1)
    assert "#SBATCH --partition=gpu_h100\n" in h100 and "#SBATCH --cpus-per-task=16\n" in h100
    assert "#SBATCH --partition=gpu\n" in script("wice", walltime="01:00:00")  # the default is unchanged


@pytest.mark.parametrize(
    ("queue", "gpu_type", "cpus"), [("casper-h100", "h100", 64), ("casper-a100-80gb", "a100_80gb", 128)]
)
def test_casper_s_node_types_go_to_the_casper_queue_with_their_gpu_type(queue, gpu_type, cpus):
    text = script("casper", queue=queue, walltime="01:00:00")
    assert "#PBS -q casper\n" in text
    assert f":ncpus={cpus}:ngpus=4:" in text and f":gpu_type={gpu_type}\n" in text
    assert parse("casper", walltime="01:00:00")[1].queue == "casper"  # never chosen over the V100 default


def test_sophia_refuses_bigmem_with_alcf_s_words_and_takes_24_hours_in_by_node_and_by_gpu():
    # ALCF (user-guides 11dbfa65): by-gpu and by-node 5 min to 24 hr; "bigmem is unavailable until further notice"
    with pytest.raises(QueueRefusedError, match="'bigmem is unavailable until further notice'") as refused:
        parse("sophia", queue="bigmem", walltime="01:00:00")
    assert refused.value.field == "queue"
    assert parse("sophia", walltime="24:00:00")[1].queue == "by-node"
    assert parse("sophia", queue="by-gpu", walltime="24:00:00")[1].queue == "by-gpu"


def test_andes_gpu_partition_takes_3_to_8_nodes_for_6_hours():
    # OLCF's Andes guide since PR 764 (2024-01-22): gpu bin A 1-2 nodes 48 h, bin B 3-8 nodes 6 h
    assert parse("andes", nodes=8, walltime="06:00:00")[1].queue == "gpu"
    assert parse("andes", nodes=2, walltime="48:00:00")[1].queue == "gpu"
    with pytest.raises(QueueRefusedError, match="limit of 06:00:00 for jobs of 3-8 nodes"):
        parse("andes", nodes=3, walltime="06:01:00")
    with pytest.raises(QueueRefusedError, match="the gpu queue allows 8"):
        parse("andes", nodes=9, walltime="01:00:00")


@pytest.mark.parametrize(
    ("site_name", "queue", "submitted", "running"),
    [
        # TACC's Table 5 and qlimits of 10/20/2025 (Lonestar6): gpu-a100 8 running / 32 submitted, gpu-a100-small 3 / 12
        ("lonestar6", "gpu-a100", 32, 8),
        ("lonestar6", "gpu-a100-small", 12, 3),
        # TACC's Table 6 of 2026 (Frontera): rtx 12 jobs per user / 36 submitted, rtx-dev 1 / 2
        ("frontera", "rtx", 36, 12),
        ("frontera", "rtx-dev", 2, 1),
    ],
)
def test_tacc_queues_hold_jobs_past_the_per_user_limits_tacc_states_now(site_name, queue, submitted, running):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = make_plan(cluster_class(site.scheduler), {"site": site, "queue": queue, "walltime": "01:00:00"})
    assert (plan.jobs_per_user.submitted, plan.jobs_per_user.running) == (submitted, running)
