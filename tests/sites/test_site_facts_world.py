"""Facts the centres changed after the sites were written (issue 33), each as the job it decides:
CSCS's mandatory -A and Clariden's new partition limits, UAntwerp's mandatory project accounts and
second A100 node, LUMI's dev-g running-job limit, wICE's H100 nodes and Isambard-AI's request form.

Each expected value is written out from the centre's page or pull request named beside it, not
computed from the site files."""

from __future__ import annotations

import warnings

import pytest

from gpujobqueue.errors import GPUJobQueueError, ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import QueueRefusedError, load_site


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")


def parse(site_name: str, **keywords):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, **keywords})
        return plan.settings, plan.request, plan.launch


def script(site_name: str, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return job_script_for(site_name, {"walltime": "01:00:00", **keywords}, name="w")


# CSCS removed "If no job is specified, the primary project is used as the default" from its Slurm
# page: "`-A` is always mandatory" (eth-cscs/cscs-docs PR 382, 2026-04-22).
@pytest.mark.parametrize("name", ["alps", "clariden", "santis", "bristen", "besso", "beverin"])
def test_a_cscs_job_without_a_project_is_refused_before_submission(name):
    with pytest.raises(GPUJobQueueError, match="account"):
        parse(name, walltime="00:10:00")
    assert "#SBATCH --account=g123\n" in script(name, account="g123", walltime="00:10:00")


def test_clariden_s_normal_partition_takes_twelve_hours_not_twenty_four():
    # cscs-docs PR 274 "Update clariden job time limit" (2025-10-08): normal "12 hours"
    assert parse("clariden", account="g123", walltime="12:00:00")[1].queue == "normal"
    with pytest.raises(QueueRefusedError, match="12:00:00"):
        parse("clariden", account="g123", queue="normal", walltime="12:01:00")


@pytest.mark.parametrize(
    ("nodes", "longest", "too_long"),
    # cscs-docs PR 408 (2026-06-09): debug "max nodes per job raised to 4", "90 node·minutes per job"
    [(1, "01:30:00", "01:31:00"), (2, "00:45:00", "00:46:00"), (4, "00:22:30", "00:23:00")],
)
def test_clariden_s_debug_partition_gives_each_job_ninety_node_minutes(nodes, longest, too_long):
    assert parse("clariden", account="g123", queue="debug", nodes=nodes, walltime=longest)[1].queue == "debug"
    with pytest.raises(QueueRefusedError):
        parse("clariden", account="g123", queue="debug", nodes=nodes, walltime=too_long)
    with pytest.raises(QueueRefusedError, match="allows 4"):
        parse("clariden", account="g123", queue="debug", nodes=5, walltime="00:10:00")


def test_clariden_s_debug_partition_allows_one_running_and_two_submitted_jobs_per_user():
    # cscs-docs PR 408: "the per-user QoS limits on debug (1 running job, 2 submitted ...)"
    assert load_site("clariden").data["queues"]["debug"]["max_jobs_per_user"] == {"submitted": 2, "running": 1}


@pytest.mark.parametrize("name", ["leibniz", "vaughan"])
def test_uantwerp_refuses_a_job_without_an_ap_project_account(name):
    # VscDocumentation source/antwerp/uantwerp_accounting.rst: "Since 1 March 2024 ... Project accounts are
    # mandatory when submitting jobs"; "Every project account starts with ap_"
    with pytest.raises(GPUJobQueueError, match="account"):
        parse(name, walltime="01:00:00")
    with pytest.raises(GPUJobQueueError, match="ap_"):
        parse(name, account="lp_myproject", walltime="01:00:00")
    text = script(name, account="ap_medchem")
    # the site-specific Slurm page asks GPUs with sbatch -p <partition> --gpus-per-node=1
    assert "#SBATCH --account=ap_medchem\n" in text and "#SBATCH --gpus-per-node=" in text


def test_vaughan_s_ampere_gpu_partition_takes_two_nodes():
    # uantwerp_slurm_specifics.rst: ampere_gpu "2 nodes with 4 NVIDIA Tesla A100 (Ampere) 40 GB SXM4"
    assert parse("vaughan", account="ap_medchem", nodes=2, walltime="01:00:00")[1].queue == "ampere_gpu"


def test_lumi_dev_g_runs_two_jobs_per_user_at_once():
    # lumi-userguide PR 195 (2024-12-18): "Correct the number of running jobs to 2 for dev-g"
    assert load_site("lumi-g").data["queues"]["dev-g"]["max_jobs_per_user"] == {"submitted": 2, "running": 2}


def test_wice_s_h100_nodes_are_their_own_node_type():
    # wice_hardware.rst (extension of early 2024): 4 x H100 SXM5 80 GiB, 2 x 32-core EPYC 9334, 768 GiB;
    # slurm_specifics.rst: gpu_h100 at most 16 cores and 187200 MiB per GPU
    text = script("wice", account="lp_myproject", queue="gpu_h100", gpus_per_node=4)
    assert "#SBATCH --gpus-per-node=4\n" in text and "#SBATCH --cpus-per-task=64\n" in text
    assert "#SBATCH --mem=748800M\n" in text
    with pytest.raises(ValidationError):
        parse("wice", account="lp_myproject", queue="gpu_h100", gpus_per_node=4, cores=65, walltime="01:00:00")


def test_isambard_ai_asks_gpus_as_bricss_guide_does():
    # isambard-sc/skills.isambard.ac.uk slurm guide: Isambard-AI "--gpus=<n>" with --nodes=1; several
    # nodes "--gpus-per-node=4"
    assert "#SBATCH --gpus=4\n" in script("isambard-ai")
    assert "#SBATCH --gpus-per-node=4\n" in script("isambard-ai", nodes=2)


# docs.cscs.ch as published, build 414e89d47dfb (its newest change-log entry 2026-09-17),
# clusters/santis: since 2026-08-26 "All GH200 partitions on Santis use node sharing"; "By default MPI
# ranks on Santis are given a single CPU core and no GPUs"; one requested GPU is "a whole Grace-Hopper
# super-chip: 72 CPU cores, one GPU (96 GB HBM), and 115 GB host memory by default".
def test_santis_jobs_ask_for_their_gpus_since_node_sharing():
    text = script("santis", account="g123")
    assert "#SBATCH --gpus-per-node=4\n" in text and "#SBATCH --cpus-per-task=288\n" in text
    one = script("santis", account="g123", gpus_per_node=1)
    assert "#SBATCH --gpus-per-node=1\n" in one and "#SBATCH --cpus-per-task=72\n" in one


def test_santis_low_partition_is_used_only_when_named():
    # same page: low, 24 hours, "overflow / quota-exhausted projects"; QoS slowdown: 10 running, 20 submitted
    data = load_site("santis").data
    assert data["queues"]["low"]["max_jobs_per_user"] == {"submitted": 20, "running": 10}
    assert data["queues"]["normal"]["max_jobs_per_user"] == {"running": 20}
    assert parse("santis", account="g123", walltime="01:00:00")[1].queue == "normal"
    assert parse("santis", account="g123", queue="low", walltime="24:00:00")[1].queue == "low"


# docs.cscs.ch as published, build 6e813db5e42b (2026-09-17 or later), clusters/clariden: "There are six
# Slurm partitions": highprio (>128 nodes, 24 hours, with --qos=highprio), preemptable (1-128, 24 hours),
# normal (1-128, 12 hours), debug (1-4, 1.5 node-hours), low (1-10, 6 hours), xfer.
def test_clariden_s_normal_partition_takes_at_most_128_nodes():
    assert parse("clariden", account="g123", nodes=128, walltime="01:00:00")[1].queue == "normal"
    with pytest.raises(QueueRefusedError):
        parse("clariden", account="g123", queue="normal", nodes=129, walltime="01:00:00")


def test_clariden_s_highprio_partition_needs_more_than_128_nodes_and_its_qos():
    text = script("clariden", account="g123", queue="highprio", nodes=129)
    assert "#SBATCH --partition=highprio\n" in text and "#SBATCH --qos=highprio\n" in text
    with pytest.raises(QueueRefusedError):
        parse("clariden", account="g123", queue="highprio", nodes=128, walltime="01:00:00")


def test_clariden_s_preemptable_and_low_partitions_are_used_only_when_named():
    # a job longer than normal's 12 hours is not sent to preemptable (its jobs may be stopped) on its own
    with pytest.raises(QueueRefusedError):
        parse("clariden", account="g123", walltime="13:00:00")
    assert parse("clariden", account="g123", queue="preemptable", walltime="24:00:00")[1].queue == "preemptable"
    assert parse("clariden", account="g123", queue="low", nodes=10, walltime="06:00:00")[1].queue == "low"
    with pytest.raises(QueueRefusedError):
        parse("clariden", account="g123", queue="low", nodes=10, walltime="06:01:00")
