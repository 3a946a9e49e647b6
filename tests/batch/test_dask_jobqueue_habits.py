"""What dask-jobqueue's own tests expect of a batch class, checked here by behaviour: its Job
class made from dask-jobqueue's Job keywords, an unknown keyword as a ValueError, the log
directory made with the cluster, PBS's and Grid Engine's -S after the shebang, and a
docstring that documents every keyword the class takes."""

from __future__ import annotations

import inspect
import warnings

import pytest
from fixtures.sizes import with_job_size
from numpydoc.docscrape import NumpyDocString

from gpujobqueue import (
    LocalGPUCluster,
    LSFGPUCluster,
    PBSGPUCluster,
    SGEGPUCluster,
    SLURMGPUCluster,
    UnknownKeywordError,
)
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.settings.keywords import LAUNCH_KEYWORDS, REQUEST_KEYWORDS

CLASSES = [SLURMGPUCluster, PBSGPUCluster, LSFGPUCluster, SGEGPUCluster]


@pytest.mark.parametrize("cluster_cls", CLASSES, ids=lambda cls: cls.job_cls.batch)
def test_a_job_made_from_dask_jobqueues_job_keywords_asks_for_what_the_cluster_would(cluster_cls):
    keywords = {"cores": 8, "memory": "16GB", "gpus_per_node": 2, "walltime": "00:30:00", "job_name": "mine"}
    job = cluster_cls.job_cls(scheduler="tcp://127.0.0.1:8786", name="mine-0", **keywords)
    plan = cluster_cls.parse_keywords(keywords)
    request, launch = plan.request, plan.launch
    assert (job.request, job.launch) == (request, launch)
    script = job.job_script()
    assert "tcp://127.0.0.1:8786" in script and "mine-0" in script
    assert job.worker_processes == 2


@pytest.mark.parametrize("cluster_cls", CLASSES, ids=lambda cls: cls.job_cls.batch)
def test_an_unknown_keyword_to_a_job_class_names_that_class(cluster_cls):
    with pytest.raises(ValueError, match=rf"gpus_per_nodes: unknown keyword.*{cluster_cls.job_cls.__name__}") as info:
        cluster_cls.job_cls(cores=1, gpus_per_nodes=2)
    assert isinstance(info.value, UnknownKeywordError) and isinstance(info.value, TypeError)
    assert info.value.field == "gpus_per_nodes"


def test_an_unknown_keyword_names_the_class_and_shows_the_keywords_given_shortened():
    with pytest.raises(ValueError) as info:
        SLURMGPUCluster(cores=1, memory="1GB", environment={"TOKEN": "s3cret"}, wrong_parameter="x" * 500)
    message = str(info.value)
    assert message.startswith("wrong_parameter: unknown keyword.")
    assert "SLURMGPUCluster" in message and "cores, memory, environment, wrong_parameter=" in message
    assert "x" * 50 in message and "x" * 100 not in message
    assert "s3cret" not in message, "the other keywords' values are not shown"


def test_the_log_directory_is_made_with_the_cluster(tmp_path):
    folder = tmp_path / "logs" / "today"
    with SLURMGPUCluster(cpus_per_gpu=1, memory_per_gpu="512MiB", queue="gpu", log_directory=str(folder)):
        assert folder.is_dir()


@pytest.mark.parametrize("batch, prefix", [("pbs", "#PBS"), ("sge", "#$")])
@pytest.mark.parametrize(
    "shebang, shell",
    [
        (None, "/bin/bash"),
        ("#!/bin/bash -l", "/bin/bash"),
        ("#!/bin/zsh", "/bin/zsh"),
        ("#!/usr/bin/env python3", None),
    ],
)
def test_pbs_and_grid_engine_run_the_script_with_the_shebangs_interpreter(batch, prefix, shebang, shell):
    keywords = {"shebang": shebang} if shebang else {}
    script = _script(batch, keywords)
    assert script.splitlines()[0] == (shebang or "#!/usr/bin/env bash")
    shells = [line.split()[-1] for line in script.splitlines() if line.startswith(f"{prefix} -S ")]
    assert shells == ([shell] if shell else [])


def _script(batch: str, keywords: dict) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP warns; TLS is not what this test is about
        return job_script_for(batch, with_job_size(keywords), name="job", tls=False)


@pytest.mark.parametrize("cluster_cls", [*CLASSES, LocalGPUCluster], ids=lambda cls: cls.__name__)
def test_each_class_documents_every_keyword_it_takes(cluster_cls):
    documented = set()
    for parameter in NumpyDocString(inspect.cleandoc(cluster_cls.__doc__))["Parameters"]:
        documented |= {name.strip() for name in parameter.name.split(",")}
    signature = set(inspect.signature(cluster_cls.__init__).parameters) - {"self", "kwargs"}
    taken = signature | {
        *REQUEST_KEYWORDS,
        *LAUNCH_KEYWORDS,
        *cluster_cls.batch_system.keywords,
        *cluster_cls.batch_system.synonyms,
        "processes",
    }
    assert not taken - documented, f"{cluster_cls.__name__} does not document {sorted(taken - documented)}"
    assert "cores :" in cluster_cls.__doc__


@pytest.mark.parametrize("cluster_cls", [SLURMGPUCluster, PBSGPUCluster, LSFGPUCluster, SGEGPUCluster])
@pytest.mark.parametrize(
    "keywords, missing", [({}, ["cores", "memory"]), ({"cores": 4}, ["memory"]), ({"memory_per_gpu": "8GB"}, ["cores"])]
)
def test_off_a_site_a_job_without_cores_or_memory_is_refused_naming_what_is_missing(
    cluster_cls, keywords, missing, counted
):
    from gpujobqueue import JobSizeMissingError

    with pytest.raises(JobSizeMissingError) as info:
        cluster_cls(gpus_per_node=2, **keywords)
    assert isinstance(info.value, ValueError) and info.value.missing == missing and info.value.field == missing[0]
    assert f"{cluster_cls.__name__}(cores=" in str(info.value) and "cpus_per_gpu and memory_per_gpu" in str(info.value)
    assert counted.count("sbatch") == 0


def test_the_size_is_asked_for_in_option_terms_and_a_site_or_dask_config_gives_it():
    import subprocess
    import sys

    import dask

    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "pbs", "--gpus-per-node", "2", "--cores", "4"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and not result.stdout  # click's status for bad usage
    assert (
        result.stderr.startswith("Error: --memory not given: ")
        and "--cpus-per-gpu and --memory-per-gpu" in result.stderr
    )
    assert "#SBATCH --cpus-per-task=128" in job_script_for(
        "perlmutter", {"account": "m1234_g"}, name="w"
    )  # the site's whole node
    with dask.config.set({"gpujobqueue.slurm.cores": 8, "gpujobqueue.slurm.memory": "64GB"}):
        assert "#SBATCH --mem=61036M" in job_script_for("slurm", {}, name="w")
    resource_spec = job_script_for("pbs", {"resource_spec": "select=1:ncpus=8:ngpus=2:mem=32gb"}, name="w")
    assert "#PBS -l select=1:ncpus=8:ngpus=2:mem=32gb" in resource_spec  # dask-jobqueue's own way of saying both
