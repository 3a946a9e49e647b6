"""The named rules that read several keywords together, each on its own (issue 41: the declarations read each
keyword alone, these rules what the keywords decide together)."""

import pytest

from gpujobqueue.errors import ValidationError
from gpujobqueue.jobs.launchers import LAUNCHER_OBJECTS
from gpujobqueue.jobs.request import cpus_per_node, gpu_request_style, memory_per_node
from gpujobqueue.jobs.workers import nic_affinity, task_launcher, worker_mode, worker_module
from gpujobqueue.settings.declaration import read_declared
from gpujobqueue.settings.keywords import LAUNCH, REQUEST


def declared(**given):
    return read_declared(REQUEST, given)


def test_cpus_per_node_shares_cores_by_nodes_or_counts_per_gpu():
    assert cpus_per_node(declared(cores=32, nodes=2), None) == 16
    assert cpus_per_node(declared(cpus_per_gpu=8, gpus_per_node=4), None) == 32
    assert cpus_per_node(declared(gpus_per_node=4), None) == 4  # one per GPU where nothing says
    assert cpus_per_node(declared(cores=4), 12) == 12  # job_cpu, read by its declaration (SLURM) or LSF's -n rule
    with pytest.raises(ValidationError, match="^cores: give cores"):
        cpus_per_node(declared(cores=4, cpus_per_gpu=2), None)
    with pytest.raises(ValidationError, match="^cores: 33 per job cannot be shared evenly by 2 nodes"):
        cpus_per_node(declared(cores=33, nodes=2), None)
    with pytest.raises(ValidationError, match="^cores: 8192 cores per node is more than"):
        cpus_per_node(declared(cores=8192), None)


def test_memory_per_node_shares_memory_by_nodes_or_counts_per_gpu():
    assert memory_per_node(declared(memory="8GB", nodes=2)) == 4 * 10**9
    assert memory_per_node(declared(memory_per_gpu="1GiB", gpus_per_node=4)) == 4 * 2**30
    assert memory_per_node(declared()) is None
    with pytest.raises(ValidationError, match="^memory: give memory"):
        memory_per_node(declared(memory="8GB", memory_per_gpu="1GB"))
    with pytest.raises(ValidationError, match="^memory_per_gpu: .* is more than 64 TiB per node"):
        memory_per_node(declared(memory_per_gpu="60TiB", gpus_per_node=2))


def test_gpu_request_style_is_the_batch_systems():
    assert gpu_request_style(None, ("gpus-per-node", "gres")) == "gpus-per-node"
    assert gpu_request_style("gres", ("gpus-per-node", "gres")) == "gres"
    with pytest.raises(ValidationError, match="^gpu_request: 'select' is not a GPU request style"):
        gpu_request_style("select", ("gpus-per-node", "gres"))


def settings(**given):
    return given.get


def test_worker_mode_follows_the_nanny_and_the_share_of_gpus():
    assert worker_mode(settings(), True, 4, 4) == "dask-cuda"
    assert worker_mode(settings(), True, 2, 4) == "per-device"  # processes sharing the GPUs
    assert worker_mode(settings(), False, 4, 4) == "per-device"  # dask-cuda always has nannies
    with pytest.raises(ValidationError, match="^nanny: dask-cuda always starts its workers under a nanny"):
        worker_mode(settings(worker_mode="dask-cuda"), False, 4, 4)
    with pytest.raises(ValidationError, match="^nanny: nanny=False .* such as rmm_pool_size"):
        worker_mode(settings(rmm_pool_size="1GB"), False, 4, 4)
    with pytest.raises(ValidationError, match="^worker_mode: 'cpu' is not a worker mode"):
        worker_mode(settings(worker_mode="cpu"), True, 1, 1)


def test_worker_module_is_the_modes_and_keeps_dask_jobqueues_default():
    assert worker_module(None, "dask-cuda") == "dask_cuda.cli"
    assert worker_module("distributed.cli.dask_worker", "dask-cuda") == "dask_cuda.cli"
    assert worker_module(None, "per-device") == "distributed.cli.dask_worker"
    with pytest.raises(ValidationError, match="^worker_command: 'dask_cuda.cli' is dask-cuda's worker"):
        worker_module("dask_cuda.cli", "per-device")
    with pytest.raises(ValidationError, match="^worker_command: 'a;b' is not a python module"):
        worker_module("a;b", "per-device")


def test_task_launcher_is_direct_on_one_node_and_the_batch_systems_own_on_several():
    assert task_launcher("srun", LAUNCHER_OBJECTS, 1, None) == "direct"
    assert task_launcher("jsrun", LAUNCHER_OBJECTS, 1, None) == "jsrun"  # its script runs on a launch node
    assert task_launcher(None, LAUNCHER_OBJECTS, 2, "srun") == "srun"
    assert task_launcher("mpiexec-pals", LAUNCHER_OBJECTS, 2, "srun") == "mpiexec-pals"
    with pytest.raises(ValidationError, match="^launcher: a job of 2 nodes needs a launcher"):
        task_launcher(None, LAUNCHER_OBJECTS, 2, None)
    with pytest.raises(ValidationError, match="^launcher: 'ssh' is not a launcher"):
        task_launcher("ssh", LAUNCHER_OBJECTS, 1, None)


def test_nic_affinity_is_for_nvidia_workers_under_nannies():
    assert nic_affinity(False, "ROCR_VISIBLE_DEVICES", False) is False
    assert nic_affinity(True, "CUDA_VISIBLE_DEVICES", True) is True
    with pytest.raises(ValidationError, match="^nic_affinity: .*not ROCR_VISIBLE_DEVICES"):
        nic_affinity(True, "ROCR_VISIBLE_DEVICES", True)
    with pytest.raises(ValidationError, match="^nic_affinity: each worker's nanny"):
        nic_affinity(True, "CUDA_VISIBLE_DEVICES", False)


def test_a_launch_keyword_not_given_reads_as_its_declared_default():
    value = read_declared(LAUNCH, {})
    assert value["nanny"] is True and value["death_timeout"] == 60 and value["nic_affinity"] is False
    assert value["visibility_variable"] == "CUDA_VISIBLE_DEVICES" and value["launcher_args"] == ()
    assert value["nthreads"] is None and value["allocation_variable"] is None  # computed: the rules say
