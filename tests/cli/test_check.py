"""``gpujobqueue check``: the machine's facts match what the machine really has, and every
missing piece is a failure that names its fix."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from gpujobqueue.diagnostics import Package, gather_facts, judge, report
from gpujobqueue.machine import install
from gpujobqueue.machine.gpus import GPU

GPU_HERE = (
    shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
)


@pytest.fixture(autouse=True)
def install_lines_as_from_the_index(monkeypatch):
    """The fixes' install lines name the package index here, to compare them whole; where this checkout's lines
    come from is tests/cli/test_first_hour.py's test."""
    monkeypatch.setattr(install, "install_source", lambda: "gpujobqueue")


def check(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--json", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def by_topic(result: dict) -> dict[str, dict]:
    return {finding["topic"]: finding for finding in result["findings"]}


def test_the_facts_are_this_machines():
    status, result = check("--batch", "local")
    facts = result["facts"]
    assert facts["hostname"] == socket.gethostname()
    assert set(facts["interfaces"]) <= {name for _, name in socket.if_nameindex()}
    assert "127.0.0.1" in facts["interfaces"]["lo"]
    for command in ("sbatch", "qsub", "bsub"):
        assert facts["batch_commands"][command] == shutil.which(command)
    assert facts["infiniband_devices"] == (
        sorted(os.listdir("/sys/class/infiniband")) if os.path.isdir("/sys/class/infiniband") else []
    )
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "show", "dask-cuda"], capture_output=True, text=True
    ).stdout
    assert facts["packages"]["dask-cuda"]["version"] == (
        installed.split("Version: ")[1].split()[0] if installed else None
    )
    if importlib.util.find_spec("ucxx"):
        assert facts["ucx_source"] == "ucxx" and "tcp" in facts["ucx_transports"]
    if GPU_HERE:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")
        assert len(facts["gpus"]) == listed and facts["cuda_driver_version"]
        if importlib.util.find_spec("ucxx") and any(gpu["active_nvlinks"] for gpu in facts["gpus"]):
            assert "cuda_ipc" in facts["ucx_transports"]
    else:
        assert facts["gpus"] == [] and by_topic(result)["GPUs"]["status"] == "warn"
    assert status == (1 if any(f["status"] == "fail" for f in result["findings"]) else 0)


def test_the_text_report_names_every_topic_and_sums_up():
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--batch", "local"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    for topic in (
        "site",
        "GPUs",
        "dask-cuda",
        "distributed-ucxx",
        "UCX transports",
        "interfaces",
        "batch commands",
        "site files",
    ):
        assert f" {topic} " in done.stdout, done.stdout
    assert re.match(r"(nothing missing|\d+ problem\(s\) stop GPU workers here)", done.stdout.strip().splitlines()[-1])


def test_a_host_without_the_sites_interface_fails_for_the_scheduler_it_would_run_with_the_interfaces_that_exist():
    # The scheduler runs here (scheduler='local' over TCP) and listens on the site's interface:
    # GPUCluster(site="perlmutter") cannot start on this host, whatever the compute nodes have.
    status, result = check("--site", "perlmutter")
    found = by_topic(result)
    assert status == 1
    assert result["facts"]["batch"] == "slurm" and result["facts"]["interface"] == "hsn0"
    assert result["facts"]["scheduler_placement"] == "local"
    detail = found["site interface"]["detail"]
    assert found["site interface"]["status"] == "fail" and "hsn0 is not on this host" in detail
    assert "the scheduler" in detail
    fix = found["site interface"]["fix"]
    assert "run on a perlmutter login node" in fix and "scheduler_options={'interface': " in fix, fix
    others = [name for name, addresses in result["facts"]["interfaces"].items() if addresses and name != "lo"]
    assert all(name in fix for name in others)
    assert found["batch commands"]["status"] == ("ok" if shutil.which("sbatch") else "fail")


def test_with_the_scheduler_in_a_job_a_missing_interface_is_the_compute_nodes_business():
    # UCX puts the scheduler in the first job (scheduler='job'): only the workers' nodes need hsn0.
    status, result = check("--site", "perlmutter", "--protocol", "ucx")
    found = by_topic(result)
    assert result["facts"]["scheduler_placement"] == "job"
    assert found["site interface"]["status"] == "warn" and "compute nodes" in found["site interface"]["detail"]


def test_inside_a_job_a_missing_interface_and_no_gpus_are_failures():
    status, result = check("--site", "perlmutter", env={"SLURM_JOB_ID": "12345"})
    found = by_topic(result)
    assert status == 1
    assert found["site interface"]["status"] == "fail" and "pass interface=" in found["site interface"]["fix"]
    if not GPU_HERE:
        assert found["GPUs"]["status"] == "fail" and "ask the job for GPUs" in found["GPUs"]["fix"]


def test_an_interface_that_exists_is_ok():
    name = next(name for name, addresses in gather_facts(batch="local").interfaces.items() if addresses)
    status, result = check("--batch", "local", "--interface", name)
    assert by_topic(result)["site interface"]["status"] == "ok"


def test_an_unknown_site_fails_naming_it():
    status, result = check("--site", "nosuchmachine")
    assert status == 1
    assert "nosuchmachine" in by_topic(result)["site"]["detail"]


@pytest.mark.sge
def test_qsub_of_grid_engine_is_not_taken_for_pbs(sge):
    status, result = check("--batch", "pbs")
    found = by_topic(result)
    assert status == 1 and found["batch commands"]["status"] == "fail"
    assert "SGE" in found["batch commands"]["detail"]
    status, result = check("--batch", "sge")
    assert by_topic(result)["batch commands"]["status"] == "ok"


def test_the_pbs_emulators_commands_are_taken_for_pbs(pbs):
    status, result = check("--batch", "pbs", env=pbs.env)
    found = by_topic(result)
    assert found["batch commands"]["status"] == "ok", found["batch commands"]
    assert found["batch commands"]["detail"].startswith("PBS 2022")


@pytest.mark.slurm
def test_check_run_inside_a_real_slurm_job_sees_the_job(slurm, tmp_path):
    out = tmp_path / "check.out"
    job = slurm.sbatch(
        "--gpus-per-node=2",
        f"--output={out}",
        "--wrap",
        f"{sys.executable} -m gpujobqueue.cli check --json --batch slurm --interface nosuchif0; echo exit=$?",
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while job in slurm.job_ids() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert job not in slurm.job_ids()
    text = out.read_text()
    result = json.loads(text[: text.rindex("}") + 1])
    found = by_topic(result)
    assert result["facts"]["job_of"] == "slurm"
    assert f"job {job}" in found["batch commands"]["detail"]
    assert found["site interface"]["status"] == "fail"
    assert text.strip().endswith("exit=1")


# The judgement on facts no machine here has: each missing piece fails with its own fix.


def facts_of_a_gpu_node(**changes):
    facts = gather_facts(batch="local")
    nvlinked = [GPU(i, "NVIDIA H200", 141 * 2**30, 18) for i in range(4)]
    packages = {
        **facts.packages,
        "dask-cuda": Package("dask-cuda", "26.10.0"),
        "distributed-ucxx": Package("distributed-ucxx", "0.52.0"),
        "cupy": Package("cupy", "14.2.0"),
    }
    base = dataclasses.replace(
        facts,
        gpus=nvlinked,
        gpu_source="NVML",
        gpu_error=None,
        driver_version="580.1",
        cuda_driver_version="13.0",
        packages=packages,
        ucx_source="ucxx",
        ucx_transports=["tcp", "cuda_copy", "cuda_ipc", "rc_mlx5"],
        infiniband_devices=["mlx5_0"],
        protocol="ucx",
        worker_mode="dask-cuda",
        site_file_errors=[],
    )
    return dataclasses.replace(base, **changes)


def statuses(facts):
    return {f.topic: f for f in judge(facts)}


def test_a_complete_gpu_node_has_nothing_missing():
    found = statuses(facts_of_a_gpu_node())
    assert not [f for f in found.values() if f.status in ("fail", "warn")], found
    assert "4 seen by NVML" in found["GPUs"].detail and "18 NVLinks" in found["GPUs"].detail
    assert "nothing missing" in report(list(found.values()), facts_of_a_gpu_node())


@pytest.mark.parametrize(
    "changes, topic, fix",
    [
        ({"packages_dask_cuda": Package("dask-cuda", None)}, "dask-cuda", "pip install 'gpujobqueue[cuda13]'"),
        (
            {
                "packages_dask_cuda": Package(
                    "dask-cuda", "26.10.0", "ImportError: cannot import name 'bindings' from 'cuda'"
                )
            },
            "dask-cuda",
            "pip install 'gpujobqueue[cuda13]' (it brings the cuda-bindings",
        ),
        (
            {"packages_distributed_ucxx": Package("distributed-ucxx", None)},
            "distributed-ucxx",
            "pip install 'gpujobqueue[cuda13,ucx13]'",
        ),
        ({"ucx_transports": None, "ucx_source": None}, "UCX transports", "pip install 'gpujobqueue[cuda13,ucx13]'"),
        (
            {"cuda_driver_version": "12.4", "packages_cupy": Package("cupy", "14.2.0", None, "cupy-cuda13x")},
            "CUDA versions",
            "pip install 'gpujobqueue[cuda12]'",
        ),
        ({"gpus": [], "job_of": "slurm"}, "GPUs", "ask the job for GPUs"),
        ({"interface": "ib0", "job_of": "pbs"}, "site interface", "pass interface="),
        (
            {"batch": "slurm", "batch_commands": {"sbatch": None, "squeue": None, "scancel": None}},
            "batch commands",
            "puts sbatch on PATH",
        ),
        (
            {
                "batch": "pbs",
                "batch_commands": {"qsub": "/q", "qstat": "/q", "qdel": "/q"},
                "batch_versions": {"sge": "SGE 8.1.9"},
            },
            "batch commands",
            "put pbs's commands first",
        ),
        ({"site_error": "no site named 'x'"}, "site", "gpujobqueue sites"),
        (
            {"site_file_errors": ["/etc/gpujobqueue/sites/a.yaml:3: node.gpus: 0 is less than 1"]},
            "site files",
            "gpujobqueue check FILE",
        ),
    ],
    ids=[
        "no-dask-cuda",
        "dask-cuda-without-cuda-bindings",
        "ucx-without-distributed-ucxx",
        "ucx-without-ucx",
        "cuda-13-cupy-on-a-cuda-12-driver",
        "job-without-gpus",
        "missing-interface-in-job",
        "no-sbatch",
        "qsub-of-another-system",
        "unknown-site",
        "broken-site-file",
    ],
)
def test_each_missing_piece_fails_with_its_fix(changes, topic, fix):
    facts = facts_of_a_gpu_node()
    for key in [k for k in changes if k.startswith("packages_")]:
        facts.packages = {**facts.packages, changes[key].name: changes.pop(key)}
    facts = dataclasses.replace(facts, **changes)
    found = statuses(facts)
    assert found[topic].status == "fail", found[topic]
    assert fix in found[topic].fix
    assert "problem(s) stop GPU workers here" in report(list(found.values()), facts)


@pytest.mark.parametrize(
    "driver, line",
    [
        ("12.8", "pip install 'gpujobqueue[cuda12]'"),
        ("13.0", "pip install 'gpujobqueue[cuda13]'"),
        (
            None,
            "pip install 'gpujobqueue[cuda12]' (CUDA 12 driver; pip install 'gpujobqueue[cuda13]' for CUDA 13: "
            "nvidia-smi shows the driver's CUDA version)",
        ),
    ],
    ids=["cuda-12-driver", "cuda-13-driver", "driver-unread"],
)
def test_the_install_line_is_the_one_for_the_drivers_cuda_version(driver, line):
    found = statuses(
        dataclasses.replace(
            facts_of_a_gpu_node(cuda_driver_version=driver),
            packages={
                **facts_of_a_gpu_node().packages,
                "dask-cuda": Package("dask-cuda", None),
                "cupy": Package("cupy", None),
            },
        )
    )
    assert found["dask-cuda"].status == "fail" and found["dask-cuda"].fix == line
    assert found["GPU libraries"].fix.startswith(line)
    if driver:
        assert found["CUDA driver"].detail.endswith(f"its stack: {line}")


@pytest.mark.parametrize(
    "changes, topic",
    [
        ({"ucx_transports": ["tcp", "cuda_copy", "rc_mlx5"]}, "UCX over NVLink"),
        ({"ucx_transports": ["tcp", "cuda_copy", "cuda_ipc"]}, "UCX over InfiniBand"),
    ],
    ids=["nvlink-without-cuda_ipc", "infiniband-without-verbs"],
)
def test_ucx_without_the_machines_transports_is_a_warning(changes, topic):
    found = statuses(facts_of_a_gpu_node(**changes))
    assert found[topic].status == "warn" and found[topic].fix


def test_the_ucxx_probe_gives_its_code_on_stdin_not_in_its_arguments(tmp_path, monkeypatch):
    from gpujobqueue.diagnostics import probes

    python = tmp_path / "python"
    python.write_text(
        f'#!/bin/sh\nprintf "%s\\0" "$@" > {tmp_path}/argv\ncat > {tmp_path}/code\necho "transports: tcp"\n'
    )
    python.chmod(0o755)
    monkeypatch.setattr(probes.sys, "executable", str(python))
    monkeypatch.setattr(probes.importlib.util, "find_spec", lambda name: object() if name == "ucxx" else None)
    assert probes.ucx_resources() == ("ucxx", ["tcp"])
    assert (tmp_path / "argv").read_text().split("\0")[:-1] == ["-"]
    assert (tmp_path / "code").read_text() == probes._UCXX_TRANSPORTS
