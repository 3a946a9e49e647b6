"""Every SLURM script the CLI renders is accepted by the real sbatch (--test-only)."""

import subprocess
import sys

import pytest
from fixtures.sizes import with_size_options

pytestmark = pytest.mark.slurm

# Each GPU request style and worker mode, with values this test SLURM has (partitions gpu
# and debug, GPUs of type h200, four per node).
RENDERINGS = {
    "gpus-per-node, dask-cuda": [
        "--gpus-per-node",
        "2",
        "--queue",
        "gpu",
        "--memory-per-gpu",
        "1GiB",
        "--walltime",
        "00:30:00",
    ],
    "gres untyped, per-device": [
        "--gpus-per-node",
        "4",
        "--gpu-request",
        "gres",
        "--worker-mode",
        "per-device",
        "--cores",
        "2",
    ],
    "gres typed": [
        "--gpus-per-node",
        "2",
        "--gpu-request",
        "gres",
        "--gpu-type",
        "h200",
        "--queue",
        "debug",
        "--walltime",
        "10",
    ],
    "gpus-per-node typed": ["--gpus-per-node", "1", "--gpu-type", "h200"],
    "job array": [
        "--gpus-per-node",
        "2",
        "--queue",
        "gpu",
        "--log-directory",
        "/tmp/gpujobqueue-logs",
        "--job-array",
        "8",
    ],
    "partition implies GPUs": ["--gpus-per-node", "1", "--gpu-request", "none", "--queue", "gpu"],
    "everything else": [
        "--gpus-per-node",
        "2",
        "--exclusive",
        "--job-name",
        "analysis-1",
        "--log-directory",
        "/tmp/gpujobqueue-logs",
        "--job-extra-directives",
        "--comment=gpujobqueue",
        "--job-script-prologue",
        "echo start",
        "--env",
        "OMP_NUM_THREADS=1",
        "--job-script-epilogue",
        "echo end",
        "--account",
        "m1234",
        "--cores",
        "2",
        "--memory",
        "2GB",
        "--nthreads",
        "2",
    ],
}


def render(args):
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "slurm", *with_size_options(args)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def sbatch_test_only(script_path):
    return subprocess.run(["sbatch", "--test-only", str(script_path)], capture_output=True, text=True)


@pytest.mark.parametrize("case", sorted(RENDERINGS))
def test_rendered_script_is_accepted_by_sbatch(slurm, tmp_path, case):
    path = tmp_path / "job.sh"
    path.write_text(render(RENDERINGS[case]))
    result = sbatch_test_only(path)
    assert result.returncode == 0, f"sbatch --test-only refused {case}:\n{result.stderr}\n{path.read_text()}"
    assert "to start at" in result.stderr
    assert not slurm.squeue_ids(), "--test-only must not queue anything"


@pytest.mark.parametrize(
    "args, refusal",
    [
        (["--gpus-per-node", "8", "--cores", "1"], "node configuration is not available"),
        (["--queue", "nosuch"], "invalid partition"),
    ],
)
def test_sbatch_test_only_does_refuse_what_slurm_cannot_run(slurm, tmp_path, args, refusal):
    path = tmp_path / "job.sh"
    path.write_text(render(args))
    result = sbatch_test_only(path)
    assert result.returncode != 0 and refusal in result.stderr.lower()


@pytest.mark.parametrize("launcher", ["srun", "ibrun", "mpiexec-openmpi", "mpiexec-mpich", None])
def test_two_node_script_of_each_launcher_is_accepted_by_sbatch(slurm, tmp_path, launcher):
    # One slurmd cannot offer two nodes: sbatch's own options (which win over #SBATCH lines)
    # turn the node count into two tasks on the one node; every other directive is the script's.
    # None: no launcher given, SLURM's own (srun) is used.
    text = render(
        [
            "--nodes",
            "2",
            "--gpus-per-node",
            "2",
            "--job-cpu",
            "1",
            "--queue",
            "gpu",
            *(["--launcher", launcher] if launcher else []),
        ]
    )
    if launcher is None:
        assert "srun --ntasks=2 --ntasks-per-node=1" in text
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" in text
    path = tmp_path / "job.sh"
    path.write_text(text)
    result = subprocess.run(
        ["sbatch", "--test-only", "--nodes=1", "--ntasks-per-node=2", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0 and "to start at" in result.stderr, (
        f"sbatch --test-only refused the {launcher} script:\n{result.stderr}\n{text}"
    )
    assert not slurm.squeue_ids()
