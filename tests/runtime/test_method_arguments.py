"""Issue 40, points 8 and 9: the arguments of ``scale``, ``adapt`` and ``close`` that were taken
as given (``scale('3')``, ``adapt(bogus=1)``) or ended in a raw traceback (``close(timeout=-1)``,
``scale(10**5000)``) are refused with a :class:`GPUJobQueueError` naming the argument; nothing is
submitted and the cluster stays as it was."""

from __future__ import annotations

import pytest
from distributed.deploy.adaptive import Adaptive

from gpujobqueue import GPUJobQueueError, LocalGPUCluster, ValidationError
from gpujobqueue.errors import UnknownKeywordError


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arguments")
    with LocalGPUCluster(
        devices=[0], worker_mode="per-device", shared_temp_directory=str(folder), log_directory=str(folder / "logs")
    ) as cluster:
        yield cluster


@pytest.mark.parametrize("argument", ["n", "jobs", "gpus", "cores"])
@pytest.mark.parametrize("value", ["3", pytest.param(10**5000, id="huge-int")])
def test_scale_takes_a_whole_number_and_refuses_its_text_or_a_huge_one_by_name(cluster, argument, value):
    with pytest.raises(ValidationError) as info:
        cluster.scale(**{argument: value})
    assert info.value.field == argument
    assert not cluster.worker_spec


def test_adapt_refuses_a_keyword_that_no_adaptive_takes_naming_it(cluster):
    with pytest.raises(UnknownKeywordError) as info:
        cluster.adapt(bogus=1, interval="1h")
    assert info.value.field == "bogus" and isinstance(info.value, (GPUJobQueueError, TypeError))
    with pytest.raises(UnknownKeywordError) as info:
        cluster.adapt(minimun=1, interval="1h")
    assert "minimum" in str(info.value)  # the keyword meant


class _Patient(Adaptive):
    def __init__(self, cluster=None, patience: int = 1, **kwargs):
        super().__init__(cluster, **kwargs)
        self.patience = patience


def test_adapt_takes_distributeds_keywords_and_those_of_the_adaptive_class_given(cluster):
    adaptive = cluster.adapt(interval="1h", wait_count=5, target_duration="10s", memory_ratio=2)
    adaptive.stop()
    adaptive = cluster.adapt(Adaptive=_Patient, patience=3, interval="1h")
    adaptive.stop()
    assert adaptive.patience == 3


@pytest.mark.parametrize("timeout", [-1, "1-1", pytest.param(10**5000, id="huge-int"), "soon"])
def test_close_refuses_a_timeout_that_is_no_duration_and_leaves_the_cluster_open(cluster, timeout):
    with pytest.raises(ValidationError) as info:
        cluster.close(timeout=timeout)
    assert info.value.field == "timeout"
    assert cluster.status.name == "running"
