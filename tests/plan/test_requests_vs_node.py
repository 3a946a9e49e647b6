"""A request is checked against its site's node (issue 18 §5): memory and cores per node beyond
what the node has are refused naming the keyword, the value and the node's size from the site
file, by render, by `gpujobqueue check FILE` and when a cluster is made; nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpujobqueue import GPUCluster, SLURMGPUCluster
from gpujobqueue.sites import SiteConfigError, load_site

MINIMAL = Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml"


def gpujobqueue(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpujobqueue.cli", *args], capture_output=True, text=True, timeout=120)


def perlmutter_line(key: str) -> str:
    path, line = load_site("perlmutter").location("node", key)
    return f"{path}:{line}: node.{key}: "


# The command line names its options (--memory), not the keywords (memory=).
@pytest.mark.parametrize(
    "options, words",
    [
        (["--memory", "2TB"], "--memory '2TB' per node asked but regular nodes have 256GB"),
        (
            ["--memory-per-gpu", "100GB"],
            "--memory-per-gpu '100GB' x 4 GPUs = 372.5 GiB per node asked but regular nodes have 256GB",
        ),
        (["--memory", "600GB", "--nodes", "2"], "--memory '600GB' over 2 nodes = 279.4 GiB per node asked"),
        (["--cores", "256"], "--cores 256 per node asked but regular nodes have 128"),
        (["--cpus-per-gpu", "33"], "--cpus-per-gpu 33 x 4 GPUs = 132 cores per node asked but regular nodes have 128"),
    ],
)
def test_render_refuses_more_than_the_node_has_naming_keyword_value_and_site_file(options, words):
    # `render perlmutter --memory 2TB` wrote --mem=1907349M for a 256 GB node.
    result = gpujobqueue("render", "perlmutter", "--account", "m1234_g", *options)
    assert result.returncode != 0, result.stdout
    assert "#SBATCH" not in result.stdout
    key = "memory" if "memory" in options[0] else "cpus"
    assert perlmutter_line(key) in result.stderr, result.stderr
    assert words in result.stderr, result.stderr


def test_render_writes_what_the_node_has():
    result = gpujobqueue("render", "perlmutter", "--account", "m1234_g", "--memory-per-gpu", "60GiB")
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --mem=240G" in result.stdout


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"memory": "2TB"}, "memory"),
        ({"memory_per_gpu": "65GiB"}, "memory_per_gpu"),
        ({"cpus_per_gpu": 40}, "cpus_per_gpu"),
    ],
)
def test_a_cluster_asking_more_than_the_node_has_is_refused_before_it_starts(keywords, field):
    with pytest.raises(SiteConfigError) as info:
        GPUCluster(site="perlmutter", account="m1234_g", **keywords)
    assert info.value.field == field
    assert info.value.key in ("node.memory", "node.cpus")
    assert f"{field}={keywords[field]!r}" in str(info.value)


def test_check_file_refuses_a_site_whose_own_memory_per_gpu_overflows_its_node(tmp_path):
    site = tmp_path / "minimal.yaml"
    site.write_text(MINIMAL.read_text().replace("  mode: per-device\n", "  mode: per-device\n  memory_per_gpu: 3GB\n"))
    result = gpujobqueue("check", str(site))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{site}:15: node.memory: " in result.stderr, result.stderr
    assert "memory_per_gpu='3GB' x 4 GPUs = 11.18 GiB per node asked but gpu nodes have 8GB" in result.stderr


def test_every_shipped_site_passes_the_node_check():
    shipped = sorted(str(p) for p in (Path(__file__).parents[2] / "site-configs").glob("[!_]*.yaml"))
    result = gpujobqueue("check", *shipped)
    assert result.returncode == 0, result.stderr


def test_a_nodes_memory_is_read_in_binary_units():
    from gpujobqueue.sites import node_memory_bytes

    assert node_memory_bytes("256GB") == 256 * 2**30
    assert node_memory_bytes("2TiB") == node_memory_bytes("2TB") == 2 * 2**40
    assert node_memory_bytes("1.5TB") == int(1.5 * 2**40)


def test_a_request_within_the_node_is_accepted_by_the_class():
    plan = SLURMGPUCluster.parse_keywords({"site": "perlmutter", "account": "m1234_g", "memory": "256GB"})
    request = plan.request
    assert request.memory_per_node == 256 * 10**9
