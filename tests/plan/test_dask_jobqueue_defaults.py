"""dask-jobqueue's defaults where its users rely on them (issue 31, point 9): with no walltime a job
asks for 30 minutes, its name is ``dask-worker``, and a GPU request is written only where the user
gave a GPU count (a keyword, a hand-written directive, a site), so a job that asked for no GPU is
not refused by a batch system without GPU resources."""

from __future__ import annotations

import warnings

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue.plan.scripts import job_script_for

BATCHES = ["slurm", "pbs", "lsf", "sge"]
# The header line each batch system's job asks for its time and gives its name with
TIME_LINE = {"slurm": "#SBATCH --time=", "pbs": "#PBS -l walltime=", "lsf": "#BSUB -W ", "sge": "#$ -l h_rt="}
NAME_LINE = {"slurm": "#SBATCH --job-name=", "pbs": "#PBS -N ", "lsf": "#BSUB -J ", "sge": "#$ -N "}
# A word that only a GPU request of each batch system's default style holds
GPU_WORD = {"slurm": "gpus-per-node", "pbs": "ngpus", "lsf": "-gpu ", "sge": "gpu="}


def _header(batch: str, keywords: dict) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP warns; TLS is not what this test is about
        script = job_script_for(batch, with_job_size(keywords), name="job", tls=False)
    prefix = TIME_LINE[batch].split()[0]
    return [line for line in script.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("batch", BATCHES)
def test_without_a_walltime_the_job_asks_for_dask_jobqueues_thirty_minutes(batch):
    times = [line for line in _header(batch, {}) if line.startswith(TIME_LINE[batch])]
    assert [line[len(TIME_LINE[batch]) :] for line in times] == ["00:30" if batch == "lsf" else "00:30:00"]


@pytest.mark.parametrize("batch", BATCHES)
def test_the_jobs_name_is_dask_jobqueues_dask_worker_unless_given(batch):
    names = [line for line in _header(batch, {}) if line.startswith(NAME_LINE[batch])]
    assert names == [NAME_LINE[batch] + "dask-worker"]
    names = [line for line in _header(batch, {"job_name": "mine"}) if line.startswith(NAME_LINE[batch])]
    assert names == [NAME_LINE[batch] + "mine"]


@pytest.mark.parametrize("batch", BATCHES)
def test_a_job_given_no_gpu_count_asks_for_no_gpu(batch):
    header = _header(batch, {})
    assert not [line for line in header if GPU_WORD[batch] in line], header


@pytest.mark.parametrize("batch", BATCHES)
def test_a_gpu_count_given_by_keyword_is_asked_for(batch):
    header = _header(batch, {"gpus_per_node": 2})
    assert [line for line in header if GPU_WORD[batch] in line and "2" in line], header


def test_a_gpu_resource_in_the_worker_arguments_is_a_gpu_count_given():
    header = _header("slurm", {"worker_extra_args": ["--resources GPU=1"]})
    assert "#SBATCH --gpus-per-node=1" in header, header


def test_a_hand_written_gpu_request_is_kept_and_no_second_one_added():
    header = _header("slurm", {"job_extra_directives": ["--gres=gpu:2"]})
    assert [line for line in header if "--gres" in line or "--gpus" in line] == ["#SBATCH --gres=gpu:2"], header
