"""Queues a centre removed (``removed_queues``): naming one, by keyword or in the dask config, is
refused before anything renders, quoting the centre's words, date and source; the site never
routes a job to one, even where an override file still lists it; ``gpujobqueue show`` lists them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import dask.config
import pytest

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import QueueRefusedError, load_site

MINIMAL = Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml"
# NCAR's commit to NCAR/HPC-Docs of 2025-11-04, as site-configs/casper.yaml records it.
GPUDEV_WORDS = "Remove gpudev information as queue will be deleted"


def render(site: str, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a site's unconfirmed facts
        return job_script_for(site, {"account": "UABC0001", "walltime": "00:30:00", **keywords}, name="w")


def test_naming_casper_s_gpudev_is_refused_with_ncar_s_words_date_and_source():
    with pytest.raises(ValidationError) as info:
        render("casper", queue="gpudev")
    error = info.value
    assert error.field == "queue" and isinstance(error, QueueRefusedError)
    assert error.key == "removed_queues.gpudev" and error.path.endswith("casper.yaml")
    assert "2025-11-04" in str(error) and GPUDEV_WORDS in str(error), str(error)
    assert "https://github.com/NCAR/HPC-Docs/" in str(error), str(error)
    assert "one of its queues: casper, casper-h100, casper-a100-80gb" in str(error)  # what to name instead


def test_a_removed_queue_set_in_the_dask_config_is_refused_too():
    with dask.config.set({"gpujobqueue.pbs.queue": "gpudev"}), pytest.raises(QueueRefusedError, match=GPUDEV_WORDS):
        render("casper")
    assert "#PBS -q casper\n" in render("casper")  # the default queue is unchanged


@pytest.fixture
def minimal_with_gpu_removed_by_an_override(tmp_path, monkeypatch):
    """The minimal site, and an admin's override that records its ``gpu`` queue as removed."""
    base, override = tmp_path / "base", tmp_path / "override"
    base.mkdir(), override.mkdir()
    shutil.copy(MINIMAL, base / "minimal.yaml")
    (override / "minimal.yaml").write_text(
        "removed_queues:\n"
        "  gpu:\n"
        '    date: "2026-01-05"\n'
        "    words: the gpu partition was retired\n"
        "    source: https://docs.example.org/news/gpu-retired\n"
        "default_queue: debug\n"
    )
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", f"{base}{os.pathsep}{override}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return override / "minimal.yaml"


def test_a_queue_an_override_removes_is_never_routed_to_and_refused_when_named(minimal_with_gpu_removed_by_an_override):
    # 2 nodes for 2 hours: only gpu (4 nodes, 1 day) takes it; debug takes 1 node for 30 minutes
    with pytest.raises(QueueRefusedError) as routed:
        SLURMGPUCluster.parse_keywords({"site": "minimal", "nodes": 2, "walltime": "02:00:00"})
    assert "gpu:" not in str(routed.value) and "queue='gpu'" not in str(routed.value), str(routed.value)
    with pytest.raises(QueueRefusedError) as named:
        SLURMGPUCluster.parse_keywords({"site": "minimal", "queue": "gpu", "walltime": "00:10:00"})
    assert named.value.field == "queue" and named.value.key == "removed_queues.gpu"
    assert named.value.path == str(minimal_with_gpu_removed_by_an_override) and named.value.line == 2
    assert "withdrew the gpu queue (2026-01-05)" in str(named.value) and "the gpu partition was retired" in str(
        named.value
    )


def test_show_lists_a_site_s_removed_queues_with_their_date_and_words():
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "show", "casper"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "# removed queues (refused when named):" in result.stdout, result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("#   gpudev: "))
    assert "removed 2025-11-04" in line and GPUDEV_WORDS in line, line
    assert "gpudev" not in load_site("casper").data["queues"]
