"""LSF's memory lines as dask-jobqueue writes them (issue 31: "same defaults where the user relied on
dask-jobqueue's, memory units included"): ``-M`` is the job's bytes divided by powers of 1000 in the
cluster's ``LSF_UNIT_FOR_LIMITS``, rounded up (dask_jobqueue.lsf.lsf_format_bytes_ceil), and no
``rusage[mem=]`` reservation is added that the user did not write."""

from __future__ import annotations

import re

import pytest
from dask.utils import parse_bytes
from dask_jobqueue.lsf import LSFJob

from gpujobqueue.plan.scripts import job_script_for


def bsub_lines(script: str) -> list[str]:
    return [line for line in script.split("\n") if line.startswith("#BSUB ")]


def dask_jobqueue_memory_line(memory: str, lsf_units: str) -> str:
    job = LSFJob(scheduler="tcp://127.0.0.1:8786", cores=4, memory=memory, lsf_units=lsf_units)
    return next(line for line in job.job_header.split("\n") if line.startswith("#BSUB -M "))


@pytest.mark.parametrize("lsf_units", ["kb", "mb", "gb", "MB", "g"])
@pytest.mark.parametrize("memory", ["25GB", "600 GB", "48 GB", "4GiB", "1500MB", "512MiB"])
def test_the_memory_limit_is_dask_jobqueues_for_the_same_keywords(memory, lsf_units):
    # lsf_djq_docs_examples (25GB), lsf_djq_352_csm (600 GB), lsf_asapdiscovery_lilac_gpu (48 GB)
    script = job_script_for("lsf", {"cores": 4, "memory": memory, "lsf_units": lsf_units}, name="job-7")
    assert [line for line in bsub_lines(script) if line.startswith("#BSUB -M ")] == [
        dask_jobqueue_memory_line(memory, lsf_units)
    ]


def test_mem_in_bytes_is_written_as_dask_jobqueue_writes_it():
    script = job_script_for("lsf", {"ncpus": 4, "mem": 8 * 10**9, "lsf_units": "mb"}, name="job-7")
    assert "#BSUB -M 8000" in bsub_lines(script)


def test_the_limit_gives_the_workers_no_less_than_the_job_asks_for():
    # LSF's units are binary (its MB is 1024 KB): a decimal division rounded up is never less.
    for memory, units in [("25GB", "kb"), ("4GiB", "mb"), ("1GB", "gb")]:
        script = job_script_for("lsf", {"cores": 1, "memory": memory, "lsf_units": units}, name="job-7")
        written = int(re.search(r"#BSUB -M (\d+)", script).group(1))
        assert written * 1024 ** (["kb", "mb", "gb"].index(units) + 1) >= parse_bytes(memory)


@pytest.mark.parametrize("keywords", [{"memory": "25GB"}, {"mem": 25 * 10**9}, {"memory_per_gpu": "8GB"}])
def test_no_memory_reservation_is_added_that_the_user_did_not_write(keywords):
    # dask-jobqueue writes no rusage[mem=]: LSF reserves it per slot or per host as the cluster is
    # configured (RESOURCE_RESERVE_PER_TASK), so 600 GB on 128 slots could be 128 x 600 GB, never dispatched.
    script = job_script_for("lsf", {"cores": 4, "lsf_units": "kb", **keywords}, name="job-7")
    assert not [line for line in bsub_lines(script) if "rusage" in line]


def test_a_reservation_the_user_writes_is_kept_as_written():
    keywords = {"cores": 4, "memory": "25GB", "lsf_units": "mb", "job_extra_directives": ['-R "rusage[mem=24000]"']}
    script = job_script_for("lsf", keywords, name="job-7")
    assert [line for line in bsub_lines(script) if "rusage" in line] == ['#BSUB -R "rusage[mem=24000]"']
