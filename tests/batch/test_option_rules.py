"""Issue 41, third step: PBS's and Grid Engine's own keywords are read by their declarations alone
(:func:`~gpujobqueue.settings.declaration.read_declared`), and what reads several of them together is a small named
rule, each tested here by itself."""

from __future__ import annotations

import pytest

from gpujobqueue.batch import batch_systems
from gpujobqueue.batch.pbs import check_torque_options, exclusive_place
from gpujobqueue.batch.sge import check_hosts, check_resource_type, gpu_request_value
from gpujobqueue.errors import ValidationError
from gpujobqueue.jobs.request import JobRequest
from gpujobqueue.settings.declaration import read_declared

PBS_STYLES = ("select", "torque", "none")
SGE_STYLES = ("complex", "resource-type", "none")


def pbs_request(**settings) -> JobRequest:
    return JobRequest.from_settings({"gpus_per_node": 4, "cores": 8, **settings}, gpu_request_styles=PBS_STYLES)


def sge_request(**settings) -> JobRequest:
    return JobRequest.from_settings({"gpus_per_node": 4, "cores": 4, **settings}, gpu_request_styles=SGE_STYLES)


def sge_keywords(**settings) -> dict:
    return read_declared(batch_systems()["sge"].keywords, settings)


def test_an_exclusive_pbs_job_without_a_placement_is_placed_excl():
    assert exclusive_place(None, pbs_request(exclusive=True)) == "excl"
    assert exclusive_place("scatter", pbs_request(exclusive=True)) == "scatter"  # the placement given stays
    assert exclusive_place(None, pbs_request()) is None


def test_torque_refuses_chunk_resources_and_placement_naming_each():
    torque = pbs_request(gpu_request="torque")
    for chunk, place, field in (((("system", "polaris"),), None, "chunk_resources"), ((), "scatter", "place")):
        with pytest.raises(ValidationError) as refused:
            check_torque_options(torque, chunk, place)
        assert refused.value.field == field and "gpu_request='select'" in str(refused.value)
    check_torque_options(torque, (), None)
    check_torque_options(pbs_request(), (("system", "polaris"),), "scatter")  # PBS Pro's select takes both


def test_pbs_keywords_are_read_by_their_declarations_with_their_defaults():
    read = read_declared(batch_systems()["pbs"].keywords, {"chunk_resources": ["mpiprocs=4"]})
    assert read == {"chunk_resources": (("mpiprocs", "4"),), "place": None, "filesystems": None, "resource_spec": None}


def test_a_resource_type_request_needs_its_resource_type():
    with pytest.raises(ValidationError) as refused:
        check_resource_type(sge_request(gpu_request="resource-type"), None)
    assert refused.value.field == "resource_type" and "rt_F" in str(refused.value)
    check_resource_type(sge_request(gpu_request="resource-type"), "rt_F")
    check_resource_type(sge_request(), None)


def test_sge_keywords_take_their_declared_defaults():
    read = sge_keywords()
    assert (read["gpu_complex"], read["gpu_consumable"], read["allocation_rule"]) == ("gpu", "slot", None)
    assert sge_keywords(allocation_rule="4")["allocation_rule"] == 4


def test_a_slot_complex_divides_the_gpus_by_the_slots():
    request = sge_request(cores=2)
    assert gpu_request_value(request, sge_keywords(parallel_environment="smp")) == 2
    assert gpu_request_value(request, sge_keywords()) == 4  # no parallel environment: one slot
    assert gpu_request_value(request, sge_keywords(parallel_environment="smp", gpu_consumable="job")) == 4
    with pytest.raises(ValidationError) as refused:
        gpu_request_value(sge_request(cores=3), sge_keywords(parallel_environment="smp", gpu_complex="gpgpu"))
    assert refused.value.field == "cores" and "-l gpgpu=N" in str(refused.value)


def test_the_hosts_rule_refuses_what_the_parallel_environment_cannot_place():
    with pytest.raises(ValidationError) as refused:
        check_hosts(sge_request(), "mpi", 2, "slot")  # 2 slots a host, 4 cores asked
    assert refused.value.field == "cores"
    with pytest.raises(ValidationError) as refused:
        check_hosts(sge_request(nodes=2), "smp", "$pe_slots", "job")
    assert refused.value.field == "nodes" and "$pe_slots" in str(refused.value)
    check_hosts(sge_request(nodes=2, cores=8), "mpi", 4, "slot")  # the same slots, and GPUs, on each host
