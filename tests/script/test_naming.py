"""One naming scheme, in gpujobqueue/settings/naming.py: the names a cluster gives its jobs and workers
read back to the same job, in Python, in the job script's shell, and in its nanny preload; and no
other module or template spells or parses these names itself."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.jobs.job_commands import ArrayElements
from gpujobqueue.jobs.workers import ALL_WORKER_MODES, CPU_WORKER_MODE
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.preloads import pin_device
from gpujobqueue.settings import naming
from gpujobqueue.settings.keywords import WORKER_MODES
from gpujobqueue.sites.schema import schemas as site_schemas

ROOT = Path(__file__).resolve().parents[2]
SIZE = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}
CLUSTER_NAMES = ["gpujobqueue", "my-job", "a-1-2", "x.y+z_1"]  # job names may hold '-', even '-<digit>'
# (gpus per node, nodes): one worker, one node, per-node workers of a multi-node job, and both.
SHAPES = [(1, 1), (4, 1), (1, 3), (2, 3)]


@pytest.mark.parametrize("cluster", CLUSTER_NAMES)
@pytest.mark.parametrize("gpus, nodes", SHAPES)
def test_every_worker_of_a_gpu_job_reads_back_to_its_job(cluster, gpus, nodes):
    key = naming.WorkerJobKey(naming.worker_suffixes(gpus, nodes))
    for number in (0, 1, 12):
        job = naming.gpu_job_name(cluster, number)
        names = naming.worker_names(job, gpus, nodes)
        assert len(set(names)) == gpus * nodes
        assert [key.job_of(name) for name in names] == [job] * len(names)
        assert key(SimpleNamespace(name=names[-1])) == job  # as the scheduler calls it, on a WorkerState
        assert naming.job_number(job) == (cluster, number)


@pytest.mark.parametrize(
    "gpus, nodes, names",
    [
        (1, 1, ["my-job-3"]),
        (2, 1, ["my-job-3-0", "my-job-3-1"]),
        (1, 2, ["my-job-3-0", "my-job-3-1"]),
        (2, 2, ["my-job-3-0-0", "my-job-3-0-1", "my-job-3-1-0", "my-job-3-1-1"]),
    ],
)
def test_worker_names_are_job_node_gpu(gpus, nodes, names):
    assert naming.worker_names("my-job-3", gpus, nodes) == names


def test_the_keywords_give_the_launch_the_schemes_suffixes():
    for gpus, nodes in SHAPES:
        keywords = dict(SIZE, gpus_per_node=gpus, nodes=nodes, **({"launcher": "srun"} if nodes > 1 else {}))
        plan = SLURMGPUCluster.parse_keywords(keywords)
        launch = plan.launch
        assert launch.name_suffixes == naming.worker_suffixes(gpus, nodes)


@pytest.mark.parametrize("cluster", CLUSTER_NAMES)
@pytest.mark.parametrize("gpus, nodes", SHAPES)
def test_cpu_pool_workers_and_gpu_workers_of_one_cluster_read_back_to_their_own_jobs(cluster, gpus, nodes):
    cpu_processes = 3
    key = naming.WorkerJobKey(naming.worker_suffixes(gpus, nodes), naming.worker_suffixes(cpu_processes, 1))
    for number in (0, 1, 10):
        cpu_job = naming.cpu_job_name(cluster, number)
        assert cpu_job == f"{cluster}-cpu-{number}"
        assert {key.job_of(name) for name in naming.worker_names(cpu_job, cpu_processes, 1)} == {cpu_job}
        gpu_job = naming.gpu_job_name(cluster, number)
        assert {key.job_of(name) for name in naming.worker_names(gpu_job, gpus, nodes)} == {gpu_job}


def test_a_cluster_with_a_cpu_pool_maps_both_pools_workers_to_their_jobs():
    """The cluster's own key, built from its two launches, as adapt and the job table use it."""
    from gpujobqueue import GPUCluster

    with GPUCluster(
        "slurm", gpus_per_node=2, **SIZE, cpu_pool={"processes": 4, "cores": 4, "memory": "4GiB"}, name="my-job"
    ) as cluster:
        assert cluster.cpu_launch.mode == CPU_WORKER_MODE and cluster.cpu_launch.cpu_workers
        assert not cluster.launch.cpu_workers
        key = cluster._worker_to_job
        gpu_job, cpu_job = cluster._new_worker_name(7), naming.cpu_job_name("my-job", 7)
        assert gpu_job == "my-job-7"
        assert {key.job_of(name) for name in naming.worker_names(gpu_job, 2, 1)} == {gpu_job}
        assert {key.job_of(name) for name in naming.worker_names(cpu_job, 4, 1)} == {cpu_job}
        assert cluster.cpu_request.job_name == naming.cpu_batch_job_name(cluster.request.job_name)


@pytest.mark.parametrize("prefix", ["gpujobqueue", "my-job"])
@pytest.mark.parametrize("offset", [-1, 0, 5])
def test_each_array_element_works_out_the_job_name_the_cluster_gave_it(prefix, offset):
    elements = ArrayElements(prefix, offset, 4, "SLURM_ARRAY_TASK_ID")
    for index in range(1, elements.count + 1):
        line = f"job_in_cluster={elements.shell_job_name}; echo {naming.SHELL_ARRAY_JOB_NAME}"  # as job.sh.j2 has it
        out = subprocess.run(
            ["bash", "-c", line],
            env={"SLURM_ARRAY_TASK_ID": str(index), "PATH": os.environ["PATH"]},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert out == naming.gpu_job_name(prefix, offset + index)
        assert naming.WorkerJobKey([""]).job_of(out) == out  # one worker per element: the job's name itself


@pytest.mark.parametrize("job", ["gpujobqueue-0", "my-job-12"])
@pytest.mark.parametrize("gpus, nodes", SHAPES)
def test_the_scripts_shell_names_each_worker_as_the_scheme_does(job, gpus, nodes):
    """The --name words of a script, expanded by bash for each node rank and device index, give
    the names that the scheme reads back (dask adds -<i> itself to a --nworkers process's name)."""
    expected = naming.worker_names(job, gpus, nodes)
    node_word = naming.shell_worker_name(job, nodes)
    device_word = naming.shell_device_worker_name(node_word, gpus)
    expanded = []
    for node in range(nodes):
        for gpu in range(gpus):
            words = subprocess.run(
                ["bash", "-c", f"node_rank={node}; i={gpu}; echo {node_word} {device_word}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            dask_name = words[0] if gpus == 1 else f"{words[0]}-{gpu}"  # distributed's --nworkers names
            assert dask_name == words[1]
            expanded.append(words[1])
    assert expanded == expected


@pytest.mark.parametrize("gpus, nodes", [(1, 1), (2, 1), (4, 1), (3, 2)])
def test_the_per_device_preload_pins_each_nannys_worker_to_the_device_the_script_pairs_with_its_name(gpus, nodes):
    keywords = dict(
        SIZE, gpus_per_node=gpus, nodes=nodes, worker_mode="per-device", **({"launcher": "srun"} if nodes > 1 else {})
    )
    script = job_script_for("slurm", keywords, name="my-job-4")
    # The script's lines that pair each worker's name with its device, run as the node runs them.
    lines = script[script.index("pins=()") : script.index("\n", script.index("export GPUJOBQUEUE_DEVICES="))]
    devices = [str(10 + i) for i in range(gpus)]
    for node in range(nodes):
        shell = f"node_rank={node}; devices=({' '.join(devices)})\n{lines}\n" + 'echo "$GPUJOBQUEUE_DEVICES"'
        pairs = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=True).stdout.strip()
        names = naming.worker_names("my-job-4", gpus, nodes)[node * gpus : (node + 1) * gpus]  # node, then device
        for name in names:  # as dask worker --nworkers names its nannies, naming.py reads them
            nanny = SimpleNamespace(name=name, env={})
            with mock.patch.dict(os.environ, {"GPUJOBQUEUE_DEVICES": pairs}):
                pin_device.dask_setup(nanny)
            index = naming.gpu_index(name) if gpus > 1 else 0
            assert nanny.env == {"CUDA_VISIBLE_DEVICES": devices[index]}, (name, pairs)
    with pytest.raises(LookupError, match="no device for worker my-job-9"):
        pin_device.device_of("my-job-9", "my-job-4-0=10")


def test_cpu_is_a_named_worker_mode_that_worker_mode_still_refuses():
    assert WORKER_MODES == ("dask-cuda", "per-device")  # what users may pass, unchanged
    assert ALL_WORKER_MODES == WORKER_MODES + (CPU_WORKER_MODE,)
    for mode in ALL_WORKER_MODES:  # the job script includes workers/<mode>.sh.j2
        assert (ROOT / "templates" / "workers" / f"{mode}.sh.j2").is_file()
    schema, _ = site_schemas()  # a site's worker.mode takes the same modes (the schema as sites are checked)
    assert tuple(schema["$defs"]["worker_settings"]["properties"]["mode"]["enum"]) == WORKER_MODES
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster.parse_keywords(dict(SIZE, worker_mode=CPU_WORKER_MODE))
    assert info.value.field == "worker_mode"


# Spellings of the scheme that lived outside naming.py; each is a name made or read by hand.
HAND_MADE_NAMES = {
    r"""(?:r?partition|r?split)\(\s*["']-["']""": "cuts a name at a '-'",
    r"""-"\$node_rank\"""": "adds a worker name's node",
    r"""-"\$i\"""": "adds a worker name's device",
    r"""["']-cpu-["']|\}-cpu["']""": "the CPU jobs' infix or batch job name",
    r"""-\$\(\(""": "an array element's job name in shell arithmetic",
    r'''"\$job_in_cluster"''': "reads an array element's job name",
    r"""f["']-\{""": "formats a '-<number>' name suffix",
    r"""self\._name\}-|\}-<element""": "formats a job name",
}


def hand_made_names(root: Path) -> list[str]:
    found = []
    files = sorted((root / "gpujobqueue").rglob("*.py")) + sorted((root / "templates").rglob("*.j2"))
    for path in files:
        if path == root / "gpujobqueue" / "settings" / "naming.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for pattern, what in HAND_MADE_NAMES.items():
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(root)}:{number}: {what}: {line.strip()}")
    return found


def test_no_module_or_template_but_naming_makes_or_reads_worker_and_job_names():
    assert hand_made_names(ROOT) == []
