"""Grid Engine's parallel environments and jobs of several hosts (issue 20): a site says its parallel
environment's ``allocation_rule`` (as ``qconf -sp`` shows it), and gpujobqueue refuses the jobs that environment
cannot place and writes those it can. A GPU complex counted per slot gives each host the same GPUs only under a
fixed number of slots per host, which is how generic-sge's ``gpu.q-nodes`` takes jobs of several hosts.

The real ``qsub`` accepting generic-sge's two-host script is in tests/sites/test_site_multinode.py.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from gpujobqueue import SGEGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import SiteConfigError, load_site

KEYWORDS = {
    "queue": "gpu.q",
    "gpus_per_node": 4,
    "cpus_per_gpu": 1,
    "memory_per_gpu": "16GiB",
    "walltime": "01:00:00",
    "python": "python3",
}


def header(keywords: dict) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = job_script_for("sge", keywords, name="w", scheduler="tls://10.0.0.1:8786")
    return re.findall(r"^#\$ .*$", text, re.M)


def refusal(keywords: dict) -> ValidationError:
    with pytest.raises(ValidationError) as raised:
        header(keywords)
    return raised.value


@pytest.mark.parametrize("value", ["$fill", "0", 0, -4, True, "4 4", "$(reboot)", 100_001, "4\n"])
def test_a_bad_allocation_rule_is_refused_naming_it(value):
    error = refusal({**KEYWORDS, "parallel_environment": "mpi", "allocation_rule": value})
    assert error.field == "allocation_rule" and "qconf -sp" in str(error)


@pytest.mark.parametrize("value", ["$pe_slots", "$fill_up", "$round_robin", 4, "4"])
def test_an_allocation_rule_as_qconf_shows_it_is_taken_and_not_written(value):
    lines = header({**KEYWORDS, "parallel_environment": "mpi", "allocation_rule": value})
    assert "#$ -pe mpi 4" in lines and not any("allocation" in line or "$" in line[3:] for line in lines)


def test_fixed_slots_per_host_give_every_host_its_gpus_through_a_per_slot_complex():
    lines = header({**KEYWORDS, "nodes": 2, "parallel_environment": "mpi", "allocation_rule": 4})
    # 8 slots, 4 on each of 2 hosts, one GPU each: 4 GPUs on each host
    assert "#$ -pe mpi 8" in lines and "#$ -l gpu=1" in lines


def test_a_per_slot_complex_over_hosts_without_a_fixed_rule_is_refused_naming_the_rule():
    for rule in (None, "$fill_up", "$round_robin"):
        keywords = {**KEYWORDS, "nodes": 2, "parallel_environment": "mpi"}
        if rule is not None:
            keywords["allocation_rule"] = rule
        error = refusal(keywords)
        assert error.field == "nodes" and "allocation_rule=4" in str(error), rule


def test_a_job_consumable_over_hosts_is_refused():
    keywords = {**KEYWORDS, "nodes": 2, "parallel_environment": "mpi", "allocation_rule": 4, "gpu_consumable": "job"}
    assert refusal(keywords).field == "nodes"


def test_a_one_host_environment_refuses_several_nodes_whatever_the_gpu_request():
    for gpu_request in ("complex", "none"):
        keywords = {**KEYWORDS, "nodes": 2, "parallel_environment": "smp", "allocation_rule": "$pe_slots"}
        error = refusal({**keywords, "gpu_request": gpu_request, "launcher": "qrsh-inherit"})
        assert error.field == "nodes" and "keeps a job on one host" in str(error)


def test_fixed_slots_per_host_must_be_the_jobs_cores_per_node():
    error = refusal({**KEYWORDS, "gpus_per_node": 2, "parallel_environment": "mpi", "allocation_rule": 4})
    assert error.field == "cores" and "cores=4" in str(error)


# -- generic-sge: one host through smp, several through gpu.q-nodes ------------------------------------------


def plan(**keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a generic site's unconfirmed facts
        return make_plan(SGEGPUCluster, {"site": "generic-sge", "walltime": "01:00:00", **keywords})


def test_generic_sge_routes_a_job_of_several_nodes_to_its_multi_host_environment():
    one, two = plan(), plan(nodes=2)
    assert (one.site_queue, one.request.options.parallel_environment) == ("gpu.q", "smp")
    assert (two.site_queue, two.request.options.parallel_environment) == ("gpu.q-nodes", "mpi")
    assert two.request.options.allocation_rule == 4 and two.request.options.gpu_request_value == 1
    assert "gpu.q-nodes" in two.request.queue_choice


def test_generic_sge_refuses_several_nodes_in_its_one_host_queue_naming_the_other():
    with pytest.raises(ValidationError) as raised:
        plan(nodes=2, queue="gpu.q")
    assert "gpu.q-nodes" in str(raised.value)


def test_a_site_file_with_a_bad_allocation_rule_is_refused_naming_the_key(tmp_path):
    text = Path(load_site("generic-sge").files[0]).read_text()
    path = tmp_path / "my-sge.yaml"
    bad = text.replace("name: generic-sge", "name: my-sge").replace("allocation_rule: 4 ", "allocation_rule: 0 ")
    assert "allocation_rule: 0 " in bad
    path.write_text(bad)
    with pytest.raises(SiteConfigError) as raised:
        load_site(path)
    assert "allocation_rule" in str(raised.value)
