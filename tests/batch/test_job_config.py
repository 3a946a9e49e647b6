"""A GPUJob takes every setting from the plan it is given: dask-jobqueue's ``jobqueue.<name>.*`` config,
which ``dask_jobqueue.core.Job.__init__`` reads for each setting left None, changes nothing of the script
of a job made from a plan (the plan reads it, once, under gpujobqueue's own: tests/plan/test_jobqueue_config.py)."""

from __future__ import annotations

import warnings

import dask
import pytest

from gpujobqueue.batch import names as batch_names
from gpujobqueue.runtime.factory import cluster_class

ODD = {
    "cores": 77,
    "memory": "77GiB",
    "processes": 7,
    "python": "/odd/python",
    "name": "odd-name",
    "interface": "odd0",
    "death-timeout": 7,
    "local-directory": "/odd/local",
    "extra": ["--odd-extra"],
    "worker-command": "odd.module",
    "worker-extra-args": ["--odd-arg"],
    "job-extra": ["--odd-job-extra"],
    "job-extra-directives": ["--odd-directive"],
    "env-extra": ["echo odd-env-extra"],
    "job-script-prologue": ["echo odd-prologue"],
    "header-skip": ["--odd"],
    "job-directives-skip": ["--odd"],
    "shebang": "#!/odd/shell",
    "walltime": "77:00:00",
}


@pytest.mark.parametrize("batch", batch_names())
def test_jobqueue_config_changes_nothing_of_the_script_of_a_job_made_from_a_plan(batch, tmp_path):
    cls = cluster_class(batch)
    keywords = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "gpus_per_node": 2}
    plan = cls.parse_keywords(keywords)

    def script() -> str:
        return cls.job_cls("tcp://127.0.0.1:8786", name="job-1", plan=plan).job_script()

    plain = script()
    odd = dict(ODD, **{"log-directory": str(tmp_path / "odd-logs")})
    with dask.config.set({f"jobqueue.{cls.job_cls.config_name}": odd}), warnings.catch_warnings():
        warnings.simplefilter("error")  # dask-jobqueue's FutureWarnings for its deprecated keys included
        assert script() == plain
    assert "odd" not in plain and not (tmp_path / "odd-logs").exists()
