"""LSF's ``ncpus`` beside ``cores``, as dask-jobqueue reads them (issue 31: "what dask-jobqueue accepts is
accepted"): ``ncpus`` is the job's slots (``#BSUB -n``), ``cores`` the threads of its workers, as SLURM's
``job_cpu`` beside ``cores``. Cellpose's Janelia cluster (tests/corpus/lsf_cellpose_janelia_gpu) gives both:
``ncpus=2, cores=1``, two slots for one single-threaded worker on one GPU."""

from __future__ import annotations

import re

import pytest
from dask_jobqueue.lsf import LSFJob

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for


def slots(script: str) -> str:
    return next(line for line in script.split("\n") if line.startswith("#BSUB -n "))


def threads(script: str) -> int:
    return int(re.search(r"--nthreads[ =](\d+)", script).group(1))


@pytest.mark.parametrize("ncpus, cores", [(2, 1), (8, 2), (4, 4)])
def test_ncpus_is_the_jobs_slots_and_cores_its_workers_threads(ncpus, cores):
    keywords = {"ncpus": ncpus, "cores": cores, "memory": "30GB", "gpus_per_node": 1}
    script = job_script_for("lsf", keywords, name="job-7")
    djq = LSFJob(scheduler="tcp://127.0.0.1:8786", ncpus=ncpus, cores=cores, memory="30GB", processes=1)
    assert slots(script) == next(line for line in djq.job_header.split("\n") if line.startswith("#BSUB -n "))
    assert threads(script) == cores


def test_ncpus_alone_is_still_the_jobs_cores():
    script = job_script_for("lsf", {"ncpus": 4, "memory": "16GB", "gpus_per_node": 1}, name="job-7")
    assert slots(script) == "#BSUB -n 4"
    assert threads(script) == 4


def test_ncpus_with_cpus_per_gpu_is_refused_naming_both():
    with pytest.raises(ValidationError, match="ncpus") as refused:
        job_script_for("lsf", {"ncpus": 4, "cpus_per_gpu": 2, "memory": "16GB"}, name="job-7")
    assert "cpus_per_gpu" in str(refused.value)
