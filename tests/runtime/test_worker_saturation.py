"""``gpujobqueue.worker-saturation`` is distributed's worker saturation for the clusters' schedulers,
here, in a scheduler's job and in a ``--run`` script's (issue 34: ``inf`` keeps a GPU worker's next
short task at hand; distributed's own 1.1 by default, since ``inf`` ran the spilling SVD out of
device memory). Real local clusters; the value read from the running scheduler itself."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import dask
import pytest
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster
from gpujobqueue.errors import ValidationError

SMALL = dict(gpus_per_node=1, worker_mode="per-device", memory_per_gpu="512MiB")
DISTRIBUTED_DEFAULT = 1.1  # distributed.yaml's worker-saturation


def scheduler_saturation(client: Client) -> float:
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION)


@pytest.mark.parametrize("scheduler", ["local", "job"])
def test_the_setting_reaches_the_scheduler_here_and_in_its_job(tmp_path, scheduler):
    with (
        dask.config.set({"gpujobqueue.worker-saturation": "inf"}),
        LocalGPUCluster(**SMALL, scheduler=scheduler, shared_temp_directory=str(tmp_path)) as cluster,
        Client(cluster) as client,
    ):
        assert math.isinf(scheduler_saturation(client))
        if scheduler == "job":
            assert "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=inf \\\n" in cluster.scheduler_job.job_script()
    # Scoped to the scheduler's start: the process's own setting is the user's again.
    assert dask.config.get("distributed.scheduler.worker-saturation") == DISTRIBUTED_DEFAULT


@pytest.mark.parametrize(
    "setting, expected",
    [
        ({}, DISTRIBUTED_DEFAULT),
        ({"gpujobqueue.worker-saturation": "2"}, 2.0),
        ({"distributed.scheduler.worker-saturation": 1.5}, 1.5),
    ],
)
def test_by_default_the_scheduler_keeps_distributeds_own(tmp_path, setting, expected):
    with (
        dask.config.set(setting),
        LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path)) as cluster,
        Client(cluster) as client,
    ):
        assert scheduler_saturation(client) == expected


@pytest.mark.parametrize("setting", [0, "nan", "many", True])
def test_a_bad_setting_is_refused_naming_it_before_anything_starts(tmp_path, setting):
    with dask.config.set({"gpujobqueue.worker-saturation": setting}):
        with pytest.raises(ValidationError, match="gpujobqueue.worker-saturation") as raised:
            LocalGPUCluster(**SMALL, shared_temp_directory=str(tmp_path))
    assert raised.value.field == "gpujobqueue.worker-saturation"
    assert not list(tmp_path.iterdir())  # no private folder made, no job


def test_a_run_scripts_scheduler_is_given_it():
    # The variable reaching a real scheduler in its job is the test above's (scheduler="job").
    rendered = subprocess.run(
        [
            *(sys.executable, "-m", "gpujobqueue.cli", "render", "local", "--worker-mode", "per-device"),
            *("--memory-per-gpu", "512MiB", "--cpus-per-gpu", "1", "--run", __file__),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DASK_GPUJOBQUEUE__WORKER_SATURATION": "inf"},
    )
    assert "\nDASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=inf \\\n" in rendered.stdout
