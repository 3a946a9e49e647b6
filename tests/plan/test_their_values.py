"""Issue 42: what dask-jobqueue users' code and configs pass is taken as dask-jobqueue takes it.

Each test holds one point of the issue against the plan a cluster class makes from the keywords (nothing is
submitted), and, where the point is about the script, against the rendered script.
"""

from __future__ import annotations

import warnings

from gpujobqueue import SLURMGPUCluster

JOB = {"cores": 8, "memory": "64GB", "gpus_per_node": 2}


def plan_of(cls, **keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.parse_keywords({**JOB, **keywords})


# Point 4: a GPU count given only as a worker resource.


def test_a_gpu_resource_alone_asks_for_that_many_gpus_per_worker():
    keywords = {"processes": 1, "cores": 2, "memory": "8GB", "worker_extra_args": ["--resources ssdGB=200,GPU=2"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = SLURMGPUCluster.parse_keywords(keywords)
    assert plan.request.gpus_per_node == 2
    assert plan.launch.workers_per_node == 1
    assert plan.launch.gpus_per_worker == 2
    assert dict(plan.launch.resources)["GPU"] == "2"
