"""Config in one place: gpujobqueue reads dask config only through gpujobqueue/config.py, and
dask-jobqueue's ``jobqueue.<name>.*`` never reaches a cluster."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import dask
import pytest

from gpujobqueue import SLURMGPUCluster, config

ROOT = Path(__file__).resolve().parents[1]
SIZE = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "gpus_per_node": 1, "security": False}
QUIET = {"dashboard_address": "127.0.0.1:0"}
# Modules that set dask's own config, not gpujobqueue's, with the reason.
ALLOWED = {"gpujobqueue/demo.py": "sets dask's array.backend for the length of one demo run"}


def _cluster_facts(shared: Path) -> tuple[str, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP warns
        with SLURMGPUCluster(**SIZE, shared_temp_directory=str(shared)) as cluster:
            return cluster.job_script(), cluster.scheduler_address, cluster._shared_directory


def test_dask_jobqueues_config_does_not_reach_the_scheduler_nor_the_script(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir(), theirs.mkdir()
    with dask.config.set({"gpujobqueue.slurm.scheduler-options": QUIET}):
        script, host, _ = _cluster_facts(ours)
        odd = {
            "jobqueue.slurm.interface": "no-such-nic0",
            "jobqueue.slurm.shared-temp-directory": str(theirs),
            "jobqueue.slurm.scheduler-options": {"interface": "no-such-nic1", "port": 1},
        }
        with dask.config.set(odd):
            odd_script, odd_host, _ = _cluster_facts(ours)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with SLURMGPUCluster(**SIZE) as cluster:  # no shared_temp_directory given
                    assert cluster._shared_directory != str(theirs)
    assert odd_script.replace(odd_host, host) == script
    assert odd_host.rpartition(":")[0] == host.rpartition(":")[0]  # the same interface
    assert list(theirs.iterdir()) == []


def test_the_shared_directory_and_scheduler_options_come_from_gpujobqueues_section(tmp_path):
    settings = {
        "gpujobqueue.slurm.shared-temp-directory": str(tmp_path),
        "gpujobqueue.slurm.scheduler-options": {"dashboard_address": "127.0.0.1:0", "interface": "lo"},
    }
    with dask.config.set(settings), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SLURMGPUCluster(**SIZE) as cluster:
            assert cluster._shared_directory == str(tmp_path)
            assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")


def test_no_module_but_config_reads_or_sets_dask_config():
    calls = re.compile(
        r"\bdask\.config\.(get|set|update|refresh)\(|^\s*from dask\.config import|\bimport dask\.config\b"
    )
    found = []
    for path in sorted((ROOT / "gpujobqueue").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in ("gpujobqueue/config.py", *ALLOWED):
            continue
        found += [f"{name}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if calls.search(line)]
    assert found == [], "read dask config through a getter in gpujobqueue/config.py"


@pytest.mark.parametrize("needed", [True, False])
def test_the_ucx_cuda_context_setting_lasts_only_while_the_cluster_starts(needed):
    key = "distributed-ucxx.create-cuda-context"
    before = dask.config.get(key, default=None)
    with config.ucx_cuda_context(needed):
        assert (dask.config.get(key, default=None) is True) == needed or before is True
    assert dask.config.get(key, default=None) == before


def test_every_getter_has_its_default_in_the_packages_yaml():
    assert config.adapt_interval() == "2s" and config.adapt_wait_count() == 10
    assert config.job_poll_interval() == "5s" and config.progress() == "auto" and config.max_failures() == 3
    assert config.shared_temp_directory("slurm") is None and config.scheduler_options("slurm") is None
