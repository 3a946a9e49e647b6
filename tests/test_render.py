"""Rendered scripts: golden files for each GPU request style and worker mode."""

import os
from pathlib import Path

import pytest

from gpujobqueue.scripts import job_script_for

GOLDEN = Path(__file__).parent / "golden"
COMMON = {"python": "python3", "walltime": "01:00:00"}

CASES = {
    "slurm-gpus-per-node-dask-cuda": ("slurm", {"gpus_per_node": 4, "cpus_per_gpu": 8, "memory_per_gpu": "60GiB", "queue": "gpu", "account": "m1234", "rmm_pool_size": "20GB", "device_memory_limit": "0.8"}),
    "slurm-gres-typed-dask-cuda": ("slurm", {"gpus_per_node": 4, "gpu_request": "gres", "gpu_type": "a100", "qos": "regular", "constraint": "gpu&hbm80g", "exclusive": True}),
    "slurm-gres-per-device": ("slurm", {"gpus_per_node": 2, "gpu_request": "gres", "worker_mode": "per-device", "memory": "8GB", "log_directory": "/scratch/logs"}),
    "slurm-partition-implies-gpus": ("slurm", {"gpus_per_node": 8, "gpu_request": "none", "queue": "gpu-a100", "job_script_prologue": ["module load cuda/12.4", "source activate rapids"], "environment": {"DASK_LOGGING__DISTRIBUTED": "info"}}),
    "slurm-per-device-rocm": ("slurm", {"gpus_per_node": 8, "worker_mode": "per-device", "visibility_variable": "ROCR_VISIBLE_DEVICES", "job_extra_directives": ["--mail-type=END"], "job_directives_skip": ["--ntasks-per-node"], "job_script_epilogue": ["echo done"]}),
    "local-per-device": ("local", {"gpus_per_node": 2, "worker_mode": "per-device", "nthreads": 2}),
    "local-dask-cuda": ("local", {"gpus_per_node": 2, "worker_mode": "dask-cuda", "protocol": "ucx", "interface": "ib0", "local_directory": "/tmp/dask"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_script_matches_golden_file(case):
    batch, keywords = CASES[case]
    text = job_script_for(batch, {**COMMON, **keywords}, name="gpujobqueue-worker", scheduler="tcp://10.0.0.1:8786")
    path = GOLDEN / f"{case}.sh"
    if os.environ.get("GPUJOBQUEUE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{case} differs from {path}; GPUJOBQUEUE_UPDATE_GOLDEN=1 rewrites it"


def test_every_golden_file_has_a_case():
    assert {p.stem for p in GOLDEN.glob("*.sh")} == set(CASES)


def test_values_are_shell_quoted():
    text = job_script_for("slurm", {**COMMON, "environment": {"GREETING": "it's $(whoami)"}, "worker_extra_args": ["--preload", "my mod; rm -rf /"]}, name="w")
    assert "export GREETING='it'\"'\"'s $(whoami)'" in text
    assert "'my mod; rm -rf /'" in text


def test_gpu_request_styles():
    per_node = job_script_for("slurm", {**COMMON, "gpus_per_node": 2}, name="w")
    gres = job_script_for("slurm", {**COMMON, "gpus_per_node": 2, "gpu_request": "gres", "gpu_type": "h200"}, name="w")
    none = job_script_for("slurm", {**COMMON, "gpus_per_node": 2, "gpu_request": "none"}, name="w")
    assert "#SBATCH --gpus-per-node=2\n" in per_node
    assert "#SBATCH --gres=gpu:h200:2\n" in gres
    assert "--gres" not in none and "--gpus" not in none


def test_directives_skip_leaves_extra_directives():
    text = job_script_for("slurm", {**COMMON, "job_directives_skip": ["--time"], "job_extra_directives": ["--time=00:10:00"]}, name="w")
    assert "#SBATCH --time=01:00:00" not in text
    assert "#SBATCH --time=00:10:00" in text
