"""Rendered scripts: golden files for each GPU request style and worker mode."""

import os
from pathlib import Path

import pytest

from gpujobqueue.plan.scripts import job_script_for

GOLDEN = Path(__file__).parents[1] / "golden"
COMMON = {"python": "python3", "walltime": "01:00:00"}
SIZED = {
    **COMMON,
    "cpus_per_gpu": 1,
    "memory_per_gpu": "16GB",
}  # off a site, dask-jobqueue's cores and memory are needed

CASES = {
    "slurm-gpus-per-node-dask-cuda": (
        "slurm",
        {
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "memory_per_gpu": "60GiB",
            "queue": "gpu",
            "account": "m1234",
            "rmm_pool_size": "20GB",
            "device_memory_limit": "0.8",
        },
    ),
    "slurm-gres-typed-dask-cuda": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "gpu_request": "gres",
            "gpu_type": "a100",
            "qos": "regular",
            "constraint": "gpu&hbm80g",
            "exclusive": True,
        },
    ),
    "slurm-gres-per-device": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "gpus_per_node": 2,
            "gpu_request": "gres",
            "worker_mode": "per-device",
            "memory": "8GB",
            "log_directory": "/scratch/logs",
        },
    ),
    "slurm-partition-implies-gpus": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 8,
            "gpu_request": "none",
            "queue": "gpu-a100",
            "job_script_prologue": ["module load cuda/12.4", "source activate rapids"],
            "environment": {"DASK_LOGGING__DISTRIBUTED": "info"},
        },
    ),
    "slurm-per-device-rocm": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 8,
            "worker_mode": "per-device",
            "visibility_variable": "ROCR_VISIBLE_DEVICES",
            "job_extra_directives": ["--mail-type=END"],
            "job_directives_skip": ["--ntasks-per-node"],
            "job_script_epilogue": ["echo done"],
        },
    ),
    # PBS Pro select chunks (ALCF Polaris-style, NCAR Casper-style), Torque, the queue alone,
    # dask-jobqueue's resource_spec
    "pbs-select-polaris": (
        "pbs",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "queue": "debug",
            "account": "MyProject",
            "chunk_resources": {"system": "polaris"},
            "place": "scatter",
            "filesystems": "home:eagle",
            "job_script_prologue": ["module use /soft/modulefiles", "module load conda"],
        },
    ),
    "pbs-select-gpu-type-per-device": (
        "pbs",
        {
            "cpus_per_gpu": 1,
            "gpus_per_node": 2,
            "gpu_type": "v100",
            "memory_per_gpu": "40GB",
            "worker_mode": "per-device",
            "exclusive": True,
            "log_directory": "/glade/work/me/logs",
        },
    ),
    "pbs-torque": (
        "pbs",
        {"gpus_per_node": 2, "cores": 16, "memory": "64GiB", "gpu_request": "torque", "queue": "gpu"},
    ),
    "pbs-queue-implies-gpus": (
        "pbs",
        {"cpus_per_gpu": 1, "memory_per_gpu": "32GB", "gpus_per_node": 4, "gpu_request": "none", "queue": "gpu"},
    ),
    "pbs-resource-spec": (
        "pbs",
        {
            "gpus_per_node": 4,
            "resource_spec": "select=1:ncpus=64:ngpus=4:mem=480gb:system=polaris",
            "account": "MyProject",
        },
    ),
    # LSF -gpu (exclusive and shared), CSM whole nodes through jsrun (Summit-style), the queue alone
    "lsf-gpu-exclusive": (
        "lsf",
        {
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "memory_per_gpu": "60GB",
            "lsf_units": "mb",
            "queue": "gpu",
            "project": "ABC123",
            "gpu_type": "TeslaV100_SXM2_32GB",
        },
    ),
    "lsf-gpu-shared-per-device": (
        "lsf",
        {
            "gpus_per_node": 2,
            "ncpus": 4,
            "mem": 8 * 10**9,
            "lsf_units": "gb",
            "gpu_mode": "shared",
            "worker_mode": "per-device",
            "log_directory": "/scratch/logs",
        },
    ),
    "lsf-csm-jsrun": (
        "lsf",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 6,
            "cores": 42,
            "gpu_request": "csm",
            "queue": "batch",
            "project": "ABC123",
            "job_extra_directives": ["-alloc_flags gpumps"],
            "walltime": "00:30:00",
        },
    ),
    "lsf-queue-implies-gpus": (
        "lsf",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 2,
            "gpu_request": "none",
            "queue": "gpu",
            "lsf_units": "mb",
        },
    ),
    # Grid Engine: consumable complex with a parallel environment, resource type (ABCI rt_F-style), the queue alone
    "sge-complex-pe": (
        "sge",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "cores": 2,
            "parallel_environment": "smp",
            "queue": "gpu.q",
            "project": "gpujq",
            "resource_spec": "h_vmem=8G",
        },
    ),
    "sge-job-consumable-pe": (
        "sge",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 2,
            "cpus_per_gpu": 4,
            "parallel_environment": "smp",
            "gpu_consumable": "job",
            "gpu_complex": "gpus",
        },
    ),
    "sge-resource-type": (
        "sge",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "gpu_request": "resource-type",
            "resource_type": "rt_F",
            "account": "gpujq",
            "walltime": "02:00:00",
        },
    ),
    "sge-queue-implies-gpus-per-device": (
        "sge",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 2,
            "gpu_request": "none",
            "queue": "gpu.q",
            "worker_mode": "per-device",
            "allocation_variable": "CUDA_VISIBLE_DEVICES",
        },
    ),
    # Jobs of two nodes: each launcher of each batch system starts one worker group per node
    "slurm-2-nodes-srun": (
        "slurm",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "cpus_per_gpu": 16,
            "launcher": "srun",
            "launcher_args": ["--cpu-bind=none"],
            "queue": "gpu",
            "interface": "hsn0",
        },
    ),
    "slurm-2-nodes-ibrun": (
        "slurm",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 3,
            "cpus_per_gpu": 42,
            "launcher": "ibrun",
            "queue": "gpu-a100",
            "gpu_request": "none",
        },
    ),
    "slurm-2-nodes-mpiexec-openmpi-per-device": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 2,
            "launcher": "mpiexec-openmpi",
            "worker_mode": "per-device",
            "environment": {"OMP_NUM_THREADS": "1"},
        },
    ),
    "slurm-2-nodes-mpiexec-mpich": (
        "slurm",
        {"cpus_per_gpu": 1, "memory_per_gpu": "32GB", "nodes": 2, "gpus_per_node": 4, "launcher": "mpiexec-mpich"},
    ),
    "pbs-2-nodes-mpiexec-pals": (
        "pbs",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "launcher": "mpiexec-pals",
            "queue": "gpu",
            "account": "MyProject",
            "chunk_resources": {"system": "polaris"},
            "place": "scatter",
            "filesystems": "home:eagle",
        },
    ),
    "pbs-2-nodes-mpiexec-openmpi": (
        "pbs",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "launcher": "mpiexec-openmpi",
            "queue": "gpu",
            "protocol": "ucx",
            "enable_infiniband": True,
        },
    ),
    "pbs-2-nodes-mpiexec-mpich-torque": (
        "pbs",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 2,
            "cores": 32,
            "gpu_request": "torque",
            "launcher": "mpiexec-mpich",
            "queue": "gpu",
        },
    ),
    "lsf-2-nodes-csm-jsrun": (
        "lsf",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 6,
            "cores": 84,
            "gpu_request": "csm",
            "queue": "batch",
            "project": "ABC123",
        },
    ),
    "lsf-2-nodes-mpiexec-openmpi": (
        "lsf",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "launcher": "mpiexec-openmpi",
            "queue": "gpu",
            "lsf_units": "mb",
        },
    ),
    "lsf-2-nodes-mpiexec-mpich": (
        "lsf",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "launcher": "mpiexec-mpich",
            "queue": "gpu",
            "lsf_units": "mb",
        },
    ),
    "sge-2-nodes-resource-type-mpiexec-openmpi": (
        "sge",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 4,
            "gpu_request": "resource-type",
            "resource_type": "rt_F",
            "launcher": "mpiexec-openmpi",
        },
    ),
    "sge-2-nodes-queue-implies-gpus-mpiexec-mpich": (
        "sge",
        {
            "memory_per_gpu": "32GB",
            "nodes": 2,
            "gpus_per_node": 2,
            "cores": 2,
            "gpu_request": "none",
            "parallel_environment": "smp",
            "launcher": "mpiexec-mpich",
            "queue": "gpu.q",
        },
    ),
    # Job arrays: eight one-node jobs in one submission (array_jobs is job_script_for's, not a keyword)
    "slurm-array-log-directory": (
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 2,
            "queue": "gpu",
            "log_directory": "/scratch/logs",
            "array_jobs": 8,
        },
    ),
    "pbs-array": (
        "pbs",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "queue": "gpu",
            "account": "MyProject",
            "array_jobs": 8,
        },
    ),
    "lsf-array": (
        "lsf",
        {
            "memory_per_gpu": "32GB",
            "gpus_per_node": 4,
            "cpus_per_gpu": 8,
            "queue": "gpu",
            "lsf_units": "mb",
            "log_directory": "/scratch/logs",
            "array_jobs": 8,
        },
    ),
    "sge-array-per-device": (
        "sge",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "32GB",
            "gpus_per_node": 2,
            "queue": "gpu.q",
            "worker_mode": "per-device",
            "array_jobs": 8,
        },
    ),
    "local-per-device": ("local", {"gpus_per_node": 2, "worker_mode": "per-device", "nthreads": 2}),
    "local-dask-cuda": (
        "local",
        {
            "gpus_per_node": 2,
            "worker_mode": "dask-cuda",
            "protocol": "ucx",
            "interface": "ib0",
            "local_directory": "/tmp/dask",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_script_matches_golden_file(case):
    batch, keywords = CASES[case]
    keywords = dict(keywords)
    array_jobs = keywords.pop("array_jobs", None)
    text = job_script_for(
        batch, {**COMMON, **keywords}, name="gpujobqueue-worker", scheduler="tls://10.0.0.1:8786", array_jobs=array_jobs
    )
    path = GOLDEN / f"{case}.sh"
    if os.environ.get("GPUJOBQUEUE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{case} differs from {path}; GPUJOBQUEUE_UPDATE_GOLDEN=1 rewrites it"


def test_every_golden_file_has_a_case():
    assert {p.stem for p in GOLDEN.glob("*.sh")} == set(CASES)


def test_values_are_shell_quoted():
    text = job_script_for(
        "slurm",
        {
            **SIZED,
            "environment": {"GREETING": "it's $(whoami)"},
            "worker_extra_args": ["--preload", "'my mod; rm -rf /'", "--preload x; touch /tmp/owned"],
        },
        name="w",
    )
    assert "export GREETING='it'\"'\"'s $(whoami)'" in text
    assert "'my mod; rm -rf /'" in text  # one shell word, as dask-jobqueue's shell reads it
    assert "'x;'" in text and "touch /tmp/owned" not in text  # each word quoted: no command runs


def test_gpu_request_styles():
    per_node = job_script_for("slurm", {**SIZED, "gpus_per_node": 2}, name="w")
    gres = job_script_for("slurm", {**SIZED, "gpus_per_node": 2, "gpu_request": "gres", "gpu_type": "h200"}, name="w")
    none = job_script_for("slurm", {**SIZED, "gpus_per_node": 2, "gpu_request": "none"}, name="w")
    assert "#SBATCH --gpus-per-node=2\n" in per_node
    assert "#SBATCH --gres=gpu:h200:2\n" in gres
    assert "--gres" not in none and "--gpus" not in none


def test_directives_skip_leaves_extra_directives():
    # No walltime keyword: one that said otherwise than the line would be refused, naming both
    # (tests/batch/test_hand_written_directives.py).
    no_walltime = {key: value for key, value in SIZED.items() if key != "walltime"}
    text = job_script_for(
        "slurm",
        {**no_walltime, "job_directives_skip": ["--time"], "job_extra_directives": ["--time=00:10:00"]},
        name="w",
    )
    assert "#SBATCH --time=00:30:00" not in text
    assert "#SBATCH --time=00:10:00" in text


@pytest.mark.parametrize(
    "interface, status, words", [("nosuch0", 3, "network interface nosuch0 does not exist on"), ("lo", 1, "")]
)
def test_the_job_fails_at_once_naming_a_missing_interface(tmp_path, interface, status, words):
    import subprocess

    # `false` stands in for python: past the interface check, the worker command fails with 1.
    from gpujobqueue.security.tls import make_credentials

    script = job_script_for(
        "local",
        {"gpus_per_node": 1, "interface": interface, "python": "false"},
        name="w",
        scheduler="tls://127.0.0.1:1",
    )
    path = tmp_path / "job.sh"
    path.write_text(script)
    make_credentials(tmp_path / ".config" / "gpujobqueue" / "tls")
    result = subprocess.run(
        ["bash", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "CUDA_VISIBLE_DEVICES": "0", "HOME": str(tmp_path)},
    )
    assert result.returncode == status and words in result.stderr, result.stderr


def test_ucx_transports_are_set_once_for_every_dask_process_of_the_job():
    per_device = job_script_for(
        "local",
        {
            "gpus_per_node": 2,
            "worker_mode": "per-device",
            "protocol": "ucx",
            "enable_nvlink": True,
            "enable_infiniband": False,
        },
        name="w",
    )
    assert (
        per_device.count("export DASK_DISTRIBUTED_UCXX__NVLINK=True") == 1
        and per_device.count("export DASK_DISTRIBUTED_UCXX__INFINIBAND=False") == 1
    )
    assert per_device.index("DASK_DISTRIBUTED_UCXX__NVLINK") < per_device.index("distributed.cli.dask_worker")
    dask_cuda = job_script_for(
        "local", {"gpus_per_node": 2, "worker_mode": "dask-cuda", "protocol": "ucx", "enable_nvlink": True}, name="w"
    )
    assert (
        "DASK_DISTRIBUTED_UCXX__" not in dask_cuda and "--enable-nvlink" in dask_cuda
    )  # dask-cuda takes its own flags
