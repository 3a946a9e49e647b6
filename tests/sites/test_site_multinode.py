"""Every shipped site's multi-node job script, accepted by the batch system that plays its scheduler, as
tests/sites/test_site_scripts.py checks their one-node (default) scripts.

The job: the site's default job of tests/site_samples.py on 2 nodes (or the fewest a queue takes: its default
queue, else the queue the site routes such a job to), with the site's own launcher and nothing else given.

- SLURM: the real ``sbatch --test-only`` on a two-node test cluster (``TwoNodeSlurmTestCluster``), the site's
  partition, constraint, GPU type and node size mapped onto the fixture's as for the one-node scripts; the answer
  must name both nodes.
- PBS Pro and LSF: the emulators' grammars configured as the site's server with two hosts: the script is
  accepted, and nothing in it can never run there (PBS's scheduler comment, LSF's pending reason).
- Grid Engine: the real ``qsub -w v``, whose one execution host cannot hold a job of two: one host's share is
  checked, a resource type's node count (TSUBAME's ``node_f=2``) rewritten to 1 and a parallel environment's
  slots to one host's (generic-sge's ``mpi``, made as its file states it: ``allocation_rule 4``, so the
  per-slot GPU complex gives the host its 4 GPUs). What is checked there is every other directive (queue,
  ``h_rt``, the parallel environment, the GPU complex); what is not is that the job gets two hosts (the
  allocation rule's arithmetic is tests/batch/test_sge_allocation_rule.py's).
"""

from __future__ import annotations

import re

import pytest
from emulators import lsf as lsf_emulator
from emulators import pbs as pbs_emulator
from emulators.common import Rejected
from fixtures.sge import _format_conf
from site_samples import SHIPPED, site_job_script, site_keywords
from test_site_scripts import fit_to_fixture_sge, fit_to_fixture_slurm, lsf_server_of, pbs_server_of, sites_of

from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import load_site

MULTI_PE = "mpi"  # generic-sge's gpu.q-nodes

# The start of the line that starts the node part on every node, by launcher; {n}: the job's nodes.
LAUNCH_LINES = {
    "srun": "srun --ntasks={n} ",
    "ibrun": "ibrun ",
    "mpiexec-pals": "mpiexec -n {n} ",
    "mpiexec-openmpi": "mpiexec -n {n} ",
    "mpiexec-mpich": "mpiexec -n {n} ",
    "jsrun": "jsrun --nrs {n} ",
    "blaunch": 'blaunch "$host" ',
    "qrsh-inherit": 'qrsh -inherit -nostdin "$host" ',
}


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.config/gpujobqueue/sites override


def multi_node_keywords(name):
    """The site's default keywords on 2 nodes, or the fewest nodes its default queue (else the first queue that
    takes more than one node) takes; the queue named only where it is not the default."""
    site = load_site(name)
    queues, default = site.data["queues"], site.data["default_queue"]
    for queue in (default, *queues):
        nodes = max(2, queues[queue].get("min_nodes") or 1)
        if queues[queue].get("max_nodes") is None or nodes <= queues[queue]["max_nodes"]:
            break
    else:
        raise AssertionError(f"{name}: no queue takes a job of more than one node")
    keywords = {**site_keywords(name), "nodes": nodes}
    if queue != default:
        keywords["queue"] = queue
    return keywords


def multi_node_script(name):
    return job_script_for(name, multi_node_keywords(name), name="w", scheduler="tls://10.0.0.1:8786")


def node_count(text, scheduler):
    """The nodes a script's directives ask for (Grid Engine's parallel environment: its slots, not nodes)."""
    patterns = {
        "slurm": [r"^#SBATCH --nodes=(\d+)$"],
        "pbs": [r"^#PBS -l select=(\d+):"],
        "lsf": [r"^#BSUB -nnodes (\d+)$"],
        "sge": [r"^#\$ -l (?!h_rt=|gpu=)[A-Za-z_]+=(\d+)$", r"^#\$ -pe \S+ (\d+)$"],
    }
    for pattern in patterns[scheduler]:
        found = re.findall(pattern, text, re.M)
        if found:
            return sum(int(count) for count in found)
    slots, ptile = re.search(r"^#BSUB -n (\d+)$", text, re.M), re.search(r"span\[ptile=(\d+)\]", text)
    return int(slots.group(1)) // int(ptile.group(1))


# A directive line with its node count written N.
COUNT = re.compile(r"^(#SBATCH --nodes=|#PBS -l select=|#BSUB -nnodes |#BSUB -n |#\$ -l (?!h_rt=|gpu=)[A-Za-z_]+=)\d+")


def directive_shapes(text, site):
    """The script's directives, node counts written N; the ``gpus`` style's ``--gpus=G`` of one node is the
    ``--gpus-per-node=G`` of several."""
    lines = re.findall(r"^#(?:SBATCH|PBS|BSUB|\$) .*$", text, re.M)
    shapes = [COUNT.sub(r"\1N", line) for line in lines]
    if site.data["gpu_request"].get("style") == "gpus":
        shapes = [line.replace("#SBATCH --gpus=", "#SBATCH --gpus-per-node=") for line in shapes]
    return shapes


# -- what changes from one node to several ---------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_the_multi_node_script_differs_from_the_one_node_script_in_node_count_and_launcher(name):
    site = load_site(name)
    n = multi_node_keywords(name)["nodes"]
    one, multi = site_job_script(name), multi_node_script(name)
    one_count = node_count(one, site.scheduler)
    assert node_count(multi, site.scheduler) == n * one_count
    assert one_count == 1 or name == "generic-sge"  # a parallel environment counts slots
    assert re.search(rf"^# Generated by gpujobqueue: .* \(\d+ on each of {n} nodes\)", multi, re.M)
    assert " on each of " not in one.split("\n# Generated by gpujobqueue: ", 1)[1].split("\n", 1)[0]
    assert '--name w-"$node_rank" \\' in multi and '--name w-"$node_rank"' not in one
    launcher = re.search(r"^# This script runs on [^:]*: (\S+) runs the node part below", multi, re.M).group(1)
    assert launcher == site.data["launcher"]["name"]
    start = LAUNCH_LINES[launcher].format(n=n)
    assert any(line.strip().startswith(start) for line in multi.splitlines()), f"{name}: no line starts {start!r}"
    assert not any(line.strip().startswith(start) for line in one.splitlines())
    if "queue" not in multi_node_keywords(name):  # the same job on n nodes
        assert directive_shapes(multi, site) == directive_shapes(one, site)


# -- SLURM: the real sbatch, on two nodes -----------------------------------------------------


@pytest.fixture(scope="module")
def slurm_two_nodes():
    """A real two-node SLURM beside the session's one-node one (its own ports)."""
    from fixtures.daemons import running_on_a_free_shard
    from fixtures.slurm import TwoNodeSlurmTestCluster

    with running_on_a_free_shard(
        "TwoNodeSlurmTestCluster", lambda shard: TwoNodeSlurmTestCluster(shard=shard)
    ) as cluster:
        yield cluster


def sbatch_test_only(cluster, path):
    result = cluster.run("sbatch", "--test-only", str(path), cwd=path.parent)
    return result.returncode, result.stderr


@pytest.mark.slurm
@pytest.mark.parametrize("name", sites_of("slurm"))
def test_slurm_multi_node_script_is_accepted_by_the_real_sbatch_on_two_nodes(slurm_two_nodes, tmp_path, name):
    assert multi_node_keywords(name)["nodes"] == 2  # the test cluster's nodes
    path = tmp_path / "job.sh"
    path.write_text(fit_to_fixture_slurm(multi_node_script(name), slurm_two_nodes))
    status, answer = sbatch_test_only(slurm_two_nodes, path)
    assert status == 0 and "to start at" in answer, f"sbatch --test-only refused {name}:\n{answer}\n{path.read_text()}"
    nodes = re.search(r" on nodes (\S+)", answer).group(1)
    assert sorted(nodes.split(",")) == sorted([slurm_two_nodes.node_name, slurm_two_nodes.second_node]), answer
    assert not slurm_two_nodes.squeue_ids()


@pytest.mark.slurm
def test_the_two_node_sbatch_refuses_a_third_node(slurm_two_nodes, tmp_path):
    path = tmp_path / "job.sh"
    text = fit_to_fixture_slurm(multi_node_script("perlmutter"), slurm_two_nodes)
    path.write_text(text.replace("#SBATCH --nodes=2\n", "#SBATCH --nodes=3\n"))
    status, answer = sbatch_test_only(slurm_two_nodes, path)
    # 22.05 says so by the CPUs that three nodes of --ntasks-per-node=1 --cpus-per-task=2 need
    refusals = ("node count specification invalid", "more processors requested than permitted")
    assert status != 0 and any(refusal in answer.lower() for refusal in refusals), answer


# -- PBS and LSF: the emulators, configured as the site with two hosts --------------------------


def two_host_server(site, hosts=2):
    server = pbs_server_of(site) if site.scheduler == "pbs" else lsf_server_of(site)
    server.hosts = hosts
    return server


def script_queue(text, name):
    site = load_site(name)
    queue = re.search(r"^#(?:PBS|BSUB) -q (\S+)$", text, re.M)
    default = site.data["default_queue"]
    if not queue and site.data["queues"][default].get("partition", default) is None:
        return default  # no -q: the server's default queue (HLRS' routing queue), which the emulator is given
    assert queue, f"{name}: no queue in the script"
    names = {entry.get("partition") or key for key, entry in site.data["queues"].items()}
    assert queue.group(1) in names, f"{name}: {queue.group(1)} is not one of {sorted(names)}"
    return queue.group(1)


@pytest.mark.parametrize("name", sites_of("pbs"))
def test_pbs_multi_node_script_is_accepted_by_the_pbs_grammar_with_two_hosts(name):
    text = multi_node_script(name)
    parsed = pbs_emulator.parse_submission(text, (), two_host_server(load_site(name)))
    assert parsed.queue == script_queue(text, name)
    assert parsed.nodect == multi_node_keywords(name)["nodes"]
    assert parsed.never_runs is None, f"{name}: {parsed.never_runs}"


@pytest.mark.parametrize("name", sites_of("lsf"))
def test_lsf_multi_node_script_is_accepted_by_the_lsf_grammar_with_two_hosts(name):
    text = multi_node_script(name)
    parsed = lsf_emulator.parse_submission(text, (), two_host_server(load_site(name)))
    assert parsed.queue == script_queue(text, name)
    assert parsed.pending_reason is None, f"{name}: {parsed.pending_reason}"


def test_with_one_host_the_emulators_say_a_multi_node_job_cannot_run():
    polaris = load_site("polaris")
    parsed = pbs_emulator.parse_submission(multi_node_script("polaris"), (), two_host_server(polaris, hosts=1))
    assert parsed.never_runs and parsed.never_runs.startswith("Can Never Run: ")
    one_host = two_host_server(load_site("generic-lsf"), hosts=1)
    with pytest.raises(Rejected) as info:  # -n over the one host's cores
        lsf_emulator.parse_submission(multi_node_script("generic-lsf"), (), one_host)
    assert "too many processors" in info.value.message.lower()
    summit = two_host_server(load_site("summit"), hosts=1)  # -nnodes 2 of a CSM queue
    assert lsf_emulator.parse_submission(multi_node_script("summit"), (), summit).pending_reason is not None


# -- Grid Engine: the real qsub, one host ------------------------------------------------------


def fit_to_fixture_sge_multi(text, sge, nodes):
    """As for one node, with one host's share of the job (the fixture has one host): a resource type's node count
    rewritten to 1, a parallel environment's slots to one host's."""
    text = re.sub(r"^(#\$ -l (?!h_rt=|gpu=)[A-Za-z_]+)=\d+$", r"\1=1", text, flags=re.M)
    text = re.sub(r"^(#\$ -pe \S+) (\d+)$", lambda m: f"{m.group(1)} {int(m.group(2)) // nodes}", text, flags=re.M)
    return fit_to_fixture_sge(text, sge)


@pytest.fixture
def multi_host_pe(sge):
    """generic-sge's parallel environment of several hosts as its file states it (its allocation rule: one host's
    slots on each host), whose tasks qrsh -inherit may start, on the fixture's gpu.q for the test only."""
    rule = load_site("generic-sge").queue("gpu.q-nodes")["allocation_rule"]
    sge.run(
        "qconf",
        "-Ap",
        sge._write_conf(
            f"pe-{MULTI_PE}",
            _format_conf(
                {
                    "pe_name": MULTI_PE,
                    "slots": "999",
                    "user_lists": "NONE",
                    "xuser_lists": "NONE",
                    "start_proc_args": "NONE",
                    "stop_proc_args": "NONE",
                    "allocation_rule": str(rule),
                    "control_slaves": "TRUE",
                    "job_is_first_task": "FALSE",
                    "urgency_slots": "min",
                    "accounting_summary": "FALSE",
                    "qsort_args": "NONE",
                }
            ),
        ),
    )
    sge.run("qconf", "-aattr", "queue", "pe_list", MULTI_PE, "gpu.q")
    try:
        yield MULTI_PE
    finally:
        sge.run("qconf", "-dattr", "queue", "pe_list", MULTI_PE, "gpu.q", check=False)
        sge.run("qconf", "-dp", MULTI_PE, check=False)


@pytest.mark.sge
@pytest.mark.parametrize("name", sites_of("sge"))
def test_sge_multi_node_script_is_accepted_by_the_real_qsub(sge, multi_host_pe, tmp_path, name):
    path = tmp_path / "job.sh"
    path.write_text(fit_to_fixture_sge_multi(multi_node_script(name), sge, multi_node_keywords(name)["nodes"]))
    result = sge.run("qsub", "-w", "v", str(path), cwd=tmp_path, check=False)
    assert result.returncode == 0 and "found suitable queue" in result.stdout, (
        f"qsub -w v refused {name}:\n{result.stdout}{result.stderr}\n{path.read_text()}"
    )
    assert not sge.job_ids()
