"""Issue 31 point 6: dask-jobqueue's ``processes`` that divides the GPUs per node starts that many
workers per node, each with its share of the devices; one that does not divide them is refused."""

from __future__ import annotations

import re

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.preloads.pin_device import device_of
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.runtime.scaling import Scaling

FOUR_GPUS_TWO_WORKERS = dict(processes=2, job_extra_directives=["--gres gpu:4"], cores=8, memory="64GB")


def slurm_plan(**keywords):
    return make_plan(cluster_class("slurm"), keywords)


def test_processes_dividing_a_hand_written_gpu_request_gives_each_worker_its_share():
    plan = slurm_plan(**FOUR_GPUS_TWO_WORKERS)
    assert plan.request.gpus_per_node == 4, "the job still asks for the 4 GPUs written"
    assert (plan.launch.workers_per_node, plan.launch.gpus_per_worker) == (2, 2)
    assert plan.launch.mode == "per-device", "dask-cuda cannot give a worker several devices"
    assert plan.launch.memory_limit == 32 * 10**9, "each worker takes half the job's memory"
    assert plan.launch.nthreads == 4, "each worker takes half the job's cores"
    assert plan.launch.resources_arg == "GPU=2"
    assert plan.launch.name_suffixes == ["-0", "-1"]


def test_processes_dividing_gpus_per_node_renders_two_workers_of_two_devices():
    script = job_script_for(
        "slurm",
        with_job_size(dict(processes=2, gpus_per_node=4)),
        name="job-7",
        scheduler="tls://10.0.0.1:8786",
    )
    assert "--nworkers 2" in script
    assert re.search(r"--resources GPU=2\b", script)
    assert "--gpus=4" in script or "--gpus-per-node=4" in script


def test_the_rendered_pairs_give_each_worker_two_devices(tmp_path):
    # Run the script's own pairing lines in bash with four devices allocated.
    import subprocess

    script = job_script_for(
        "slurm", with_job_size(dict(processes=2, gpus_per_node=4)), name="job-7", scheduler="tls://10.0.0.1:8786"
    )
    lines = script.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pins=()"))
    end = next(i for i, line in enumerate(lines) if line.startswith("export GPUJOBQUEUE_DEVICES"))
    body = "\n".join(["devices=(4 5 6 7)", 'name_of() { echo "job-7-$1"; }', *lines[start : end + 1]])
    body = body + '\necho "$GPUJOBQUEUE_DEVICES"'
    out = subprocess.run(["bash", "-c", body], capture_output=True, text=True, check=True).stdout.strip()
    pairs = out
    assert device_of("job-7-0", pairs) == "4,5"
    assert device_of("job-7-1", pairs) == "6,7"


def test_the_pin_device_preload_reads_a_worker_s_list_of_devices():
    assert device_of("job-1", "job-0=0+1,job-1=2+3") == "2,3"
    assert device_of("job-0", "job-0=0,job-1=1") == "0"


@pytest.mark.parametrize("processes, fits", [(3, "1, 2 or 4"), (8, "1, 2 or 4")])
def test_processes_not_dividing_the_gpus_is_refused_saying_which_would(processes, fits):
    with pytest.raises(ValidationError) as refused:
        slurm_plan(**dict(FOUR_GPUS_TWO_WORKERS, processes=processes))
    assert refused.value.field == "processes"
    assert fits in str(refused.value) and "4 GPU" in str(refused.value)


def test_dask_cuda_mode_with_a_share_of_the_devices_is_refused_naming_both():
    with pytest.raises(ValidationError) as refused:
        slurm_plan(**dict(FOUR_GPUS_TWO_WORKERS, worker_mode="dask-cuda"))
    assert refused.value.field == "worker_mode"
    assert "processes=2" in str(refused.value) and "one worker per GPU" in str(refused.value)


def test_processes_equal_to_the_gpus_is_one_worker_per_gpu_as_before():
    plan = slurm_plan(**dict(FOUR_GPUS_TWO_WORKERS, processes=4))
    assert (plan.launch.workers_per_node, plan.launch.gpus_per_worker, plan.launch.mode) == (4, 1, "dask-cuda")


def test_scale_in_gpus_counts_the_devices_of_each_worker():
    plan = slurm_plan(**FOUR_GPUS_TWO_WORKERS)
    scaling = Scaling(
        None,  # its arithmetic alone: no job book, nothing kept or watched
        None,
        None,
        workers_per_job=plan.launch.workers_per_node * plan.request.nodes,
        gpus_per_worker=plan.launch.gpus_per_worker,
        memory_per_worker=plan.launch.memory_limit,
        nthreads=plan.launch.nthreads,
        cpu_workers_per_job=None,
    )
    assert scaling.jobs_to_scale(None, 0, None, None, gpus=8, cpu_workers=None) == (2, None), "8 GPUs: 2 jobs of 4"
    assert scaling.jobs_to_scale(4, 0, None, None, gpus=None, cpu_workers=None) == (2, None), "4 workers: 2 jobs of 2"
    with pytest.raises(ValidationError, match="gpus"):
        scaling.jobs_to_scale(8, 0, None, None, gpus=8, cpu_workers=None)


def test_on_a_machine_with_gpus_the_local_batch_system_shares_them_too(monkeypatch):
    # Before: on the GPU machine the local batch system's default (dask-cuda where NVIDIA GPUs are)
    # was taken for the user's choice, and processes=2 on 4 GPUs was refused naming worker_mode.
    import gpujobqueue.batch.local as local

    monkeypatch.setattr(local, "nvidia_gpu_ids", lambda: ["0", "1", "2", "3"])
    plan = make_plan(cluster_class("local"), with_job_size({"gpus_per_node": 4, "processes": 2}))
    assert (plan.launch.mode, plan.launch.workers_per_node, plan.launch.gpus_per_worker) == (
        "per-device",
        2,
        2,
    )
    with pytest.raises(ValidationError) as refused:  # the user's own dask-cuda is still refused
        make_plan(
            cluster_class("local"), with_job_size({"gpus_per_node": 4, "processes": 2, "worker_mode": "dask-cuda"})
        )
    assert refused.value.field == "worker_mode"
