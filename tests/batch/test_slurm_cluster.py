"""SLURMGPUCluster on the real SLURM the fixture starts: what only SLURM does (pinning, adapt and
no leaks on every backend are in test_conformance.py)."""

from __future__ import annotations

import pytest
from conftest import wait_until
from distributed.exceptions import WorkerStartTimeoutError

from gpujobqueue import GPUJobQueueError, SLURMGPUCluster, SubmissionError, UnknownKeywordError, ValidationError

pytestmark = pytest.mark.slurm

SMALL = dict(queue="gpu", walltime="00:10:00", memory_per_gpu="512MiB", cpus_per_gpu=1, death_timeout=20)


def test_dask_cuda_mode_submits_and_cancels(slurm, counted):
    # No GPU here to run dask-cuda on: the job is submitted, queued or running, then cancelled.
    with SLURMGPUCluster(gpus_per_node=2, **SMALL) as cluster:
        cluster.scale(jobs=1)
        assert len(slurm.squeue_ids()) == 1
        assert "--gpus-per-node=2" in cluster.job_script() and "-m dask_cuda.cli " in cluster.job_script()
    assert wait_until(lambda: not slurm.squeue_ids(), 30, what="squeue to empty after close()")
    assert counted.count("sbatch") == 1 and counted.count("scancel") == 1


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"walltime": "25:99"}, "walltime"),
        ({"gpus_per_node": 0}, "gpus_per_node"),
        ({"job_name": "dask\nworker"}, "job_name"),
        ({"job_name": "dask;reboot"}, "job_name"),
        ({"memory_per_gpu": "a lot"}, "memory_per_gpu"),
    ],
)
def test_bad_input_names_the_field_and_submits_nothing(slurm, counted, keywords, field):
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster(n_workers=2, **{**SMALL, **keywords})
    assert info.value.field == field
    assert counted.count("sbatch") == 0
    assert not slurm.squeue_ids()


def test_unknown_keyword_submits_nothing(slurm, counted):
    with pytest.raises(UnknownKeywordError, match="gpu_per_node"):
        SLURMGPUCluster(n_workers=2, gpu_per_node=2, **SMALL)
    assert counted.count("sbatch") == 0


@pytest.mark.parametrize(
    "keywords, stderr",
    [
        ({"queue": "nosuchpartition"}, "invalid partition"),
        (
            {"gpus_per_node": 8, "worker_mode": "per-device", "cpus_per_gpu": None, "cores": 1},
            "node configuration is not available",
        ),
    ],
)
def test_sbatch_refusal_is_raised_with_its_message(slurm, counted, keywords, stderr):
    with SLURMGPUCluster(**{**SMALL, **keywords}) as cluster:
        with pytest.raises(SubmissionError) as info:
            cluster.scale(jobs=1)
        assert stderr in str(info.value).lower()
        assert "sbatch" in str(info.value)
        # sbatch's own words once, and not the temporary script file, deleted by now
        said = [line for line in str(info.value).splitlines() if line.startswith("sbatch: error:")]
        assert said and all(str(info.value).count(line) == 1 for line in said), str(info.value)
        assert "gpujobqueue-job-" not in str(info.value) and info.value.__cause__ is None, str(info.value)
        assert not cluster.worker_spec and not cluster.workers
    assert not slurm.squeue_ids()


def test_a_wait_for_workers_timeout_keeps_the_reason_the_jobs_wait(slurm, counted):
    # Held jobs cannot start: the timeout says so, as squeue does, not just "0/2 workers arrived".
    with SLURMGPUCluster(**SMALL, job_extra_directives=["--hold"]) as cluster:
        cluster.scale(jobs=2)
        with pytest.raises(WorkerStartTimeoutError) as info:
            cluster.wait_for_workers(2, timeout=2)
        names = sorted(cluster.workers)
    assert isinstance(info.value, GPUJobQueueError)
    message = str(info.value)
    assert message.startswith("0/2 workers after 2 s; "), message
    assert all(f"{name} PENDING (JobHeldUser)" in message for name in names) and len(names) == 2, message
    assert wait_until(lambda: not slurm.squeue_ids(), 30, what="squeue to empty after close()")
