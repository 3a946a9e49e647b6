"""The gpujobqueue command: render and demo, run as a user runs them."""

import subprocess
import sys

from gpujobqueue.gpus import nvidia_gpu_ids

GPUJOBQUEUE = [sys.executable, "-m", "gpujobqueue.cli"]


def run(*args, check=True):
    return subprocess.run([*GPUJOBQUEUE, *args], capture_output=True, text=True, check=check, timeout=300)


def test_render_options_mirror_keywords():
    out = run("render", "slurm", "--gpus-per-node", "2", "--gpu-request", "gres", "--gpu-type", "h200", "--queue", "gpu",
              "--walltime", "00:20:00", "--env", "A=b", "--job-script-prologue", "module load cuda", "--scheduler-address", "tls://10.1.1.1:8786").stdout
    assert out.startswith("#!/usr/bin/env bash\n")
    for line in ("#SBATCH --gres=gpu:h200:2", "#SBATCH --partition=gpu", "#SBATCH --time=00:20:00", "export A=b", "module load cuda", "tls://10.1.1.1:8786"):
        assert line in out


def test_render_refuses_bad_input_with_the_field():
    result = run("render", "slurm", "--walltime", "25:99", check=False)
    assert result.returncode != 0
    assert "walltime: '25:99'" in result.stderr
    assert result.stdout == ""


def test_demo_runs_the_seed_workloads_and_checks_them():
    result = run("demo", "--size", "small", "--gpus", "2")
    if nvidia_gpu_ids():
        assert "starting 2 dask-cuda worker(s), one per GPU" in result.stdout
    else:
        assert "no NVIDIA GPU here; starting 2 per-device CPU worker(s)" in result.stdout
    assert "ok: mean" in result.stdout and "ok: relative error" in result.stdout
    assert "dashboard: http" in result.stdout
    assert "FAILED" not in result.stdout


def test_render_speaks_each_batch_systems_gpu_syntax():
    pbs = run("render", "pbs", "--gpus-per-node", "4", "--chunk-resource", "system=polaris", "--filesystems", "home:eagle", "--place", "scatter").stdout
    assert "#PBS -l select=1:ncpus=4:ngpus=4:system=polaris\n" in pbs and "#PBS -l filesystems=home:eagle\n" in pbs and "#PBS -l place=scatter\n" in pbs
    torque = run("render", "pbs", "--gpus-per-node", "2", "--cores", "8", "--gpu-request", "torque").stdout
    assert "#PBS -l nodes=1:ppn=8:gpus=2\n" in torque
    lsf = run("render", "lsf", "--gpus-per-node", "2", "--gpu-mode", "shared", "--lsf-units", "mb", "--memory", "4GiB").stdout
    assert '#BSUB -gpu "num=2:mode=shared"\n' in lsf and '#BSUB -R "rusage[mem=4096]"\n' in lsf and "#BSUB -M 4096\n" in lsf
    csm = run("render", "lsf", "--gpus-per-node", "6", "--gpu-request", "csm").stdout
    assert "#BSUB -nnodes 1\n" in csm and "jsrun --nrs 1 " in csm and "#BSUB -gpu" not in csm
    sge = run("render", "sge", "--gpus-per-node", "4", "--parallel-environment", "smp", "--cores", "2").stdout
    assert "#$ -l gpu=2\n" in sge and "#$ -pe smp 2\n" in sge and 'allocated="${SGE_HGR_gpu:-}"' in sge  # gpu counts per slot
    sge = run("render", "sge", "--gpus-per-node", "2", "--parallel-environment", "smp", "--cores", "8", "--gpu-consumable", "job").stdout
    assert "#$ -l gpu=2\n" in sge and "#$ -pe smp 8\n" in sge


def test_render_refuses_another_batch_systems_option():
    result = run("render", "pbs", "--qos", "regular", check=False)
    assert result.returncode != 0 and "qos" in result.stderr and result.stdout == ""
    result = run("render", "sge", "--gpu-request", "gres", check=False)
    assert result.returncode != 0 and "complex, resource-type, none" in result.stderr
