"""Each extra of setup.cfg resolves, in a fresh venv from the package registries, to a current
GPU stack: dask-cuda 26.x with the dask it pins, the matching distributed-ucxx, and no
backtracking to old releases (pip once went back to dask-cuda 0.18 and rapids-dask-dependency 24.4).

The resolution test needs the registries (marker ``registry``; ``-m "not registry"`` offline).
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import time
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from gpujobqueue.machine.install import CUDA_EXTRAS, DEFAULT_CUDA_MAJOR, install_line

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def install_lines_as_from_the_index(monkeypatch):
    """The install lines name the package index here, to compare them whole (where this checkout's lines come
    from is tests/cli/test_first_hour.py's test)."""
    monkeypatch.setattr("gpujobqueue.machine.install.install_source", lambda: "gpujobqueue")


# The extras users install (as install_line prints them with ucx=True) and the test extra,
# with the CUDA major version each stack is built for (None: no CUDA stack of its own).
# `cuda` and `ucx` are the same lines as `cuda12` and `ucx12` (checked below), so they
# resolve the same. `test,cuda12` is the GPU tests' install on a CUDA 12 node.
LINES = {"cuda12,ucx12": 12, "cuda13,ucx13": 13, "test": None, "test,cuda12": 12}


def extras() -> dict[str, list[str]]:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    section = parser["options.extras_require"]
    return {name: [line for line in value.splitlines() if line.strip()] for name, value in section.items()}


def test_the_aliases_are_the_cuda_12_stack_and_every_printed_extra_exists():
    found = extras()
    assert found["cuda"] == found[f"cuda{DEFAULT_CUDA_MAJOR}"] and found["ucx"] == found[f"ucx{DEFAULT_CUDA_MAJOR}"]
    for major, extra in CUDA_EXTRAS.items():
        assert extra in found and f"ucx{major}" in found
        assert install_line(f"{major}.2") == f"pip install 'gpujobqueue[{extra}]'"
    assert install_line("13.0", ucx=True) == "pip install 'gpujobqueue[cuda13,ucx13]'"
    assert install_line("14.1") == "pip install 'gpujobqueue[cuda13]'"  # a newer driver runs the newest stack
    assert "older than" in install_line("11.8") and "pip" not in install_line("11.8")
    unknown = install_line(None)
    assert "gpujobqueue[cuda12]" in unknown and "gpujobqueue[cuda13]" in unknown and "nvidia-smi" in unknown


SMI_BANNER = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.82.07              Driver Version: 580.82.07      CUDA Version: {cuda}     |
+-----------------------------------------+------------------------+----------------------+"""


@pytest.mark.parametrize("cuda, extra", [("12.4", "cuda12"), ("13.0", "cuda13")])
def test_without_nvml_the_cuda_version_and_extra_come_from_nvidia_smi(tmp_path, monkeypatch, cuda, extra):
    from gpujobqueue.machine import gpus

    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        f"""#!/bin/sh\ncase "$1" in\n --query-gpu*) echo '0, NVIDIA H200, 143771, 580.82.07' ;;\n *) cat <<'END'\n"""
        f"""{SMI_BANNER.format(cuda=cuda)}\nEND\n;; esac\n"""
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    machine = gpus._nvidia_smi_gpus("nvidia-ml-py not installed")
    assert machine.cuda_driver_version == cuda and machine.driver_version == "580.82.07" and len(machine.gpus) == 1
    assert f"gpujobqueue[{extra}]" in install_line(machine.cuda_driver_version)  # the demo's advice


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory):
    """The python of a fresh venv without this machine's site-packages, as a new user has; the
    resolution runs this venv's current pip against it (``pip --python``), which reads the wheels'
    metadata from the index (PEP 658) instead of downloading the CUDA libraries' wheels (hundreds of
    MB) as the pip bundled with Python does, without installing a pip there first."""
    env_dir = tmp_path_factory.mktemp("fresh") / "venv"
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    return str(env_dir / "bin" / "python")


def resolve(python: str, extra: str) -> tuple[dict[str, dict], float]:
    """What ``pip install --dry-run '.[extra]'`` would install: name -> metadata; and its seconds."""
    started = time.perf_counter()
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--dry-run", "--quiet", "--report", "-"]
        + [f"{REPO}[{extra}]"],
        capture_output=True,
        text=True,
        timeout=500,
        env=env,
    )
    assert result.returncode == 0, f"pip could not resolve .[{extra}]:\n{result.stderr[-3000:]}"
    report = json.loads(result.stdout)
    found = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"] for item in report["install"]}
    return found, time.perf_counter() - started


def pinned(metadata: dict, name: str):
    """The specifier ``metadata`` requires of ``name`` (unconditionally)."""
    for line in metadata.get("requires_dist", []):
        requirement = Requirement(line)
        if requirement.name == name and requirement.marker is None:
            return requirement.specifier
    raise AssertionError(f"{metadata['name']} does not require {name}")


@pytest.mark.long
@pytest.mark.registry
@pytest.mark.timeout(600)
def test_every_extra_resolves_to_the_current_stack_in_a_fresh_venv(fresh_python):
    started = time.perf_counter()
    # A resolution is CPU-bound more than network-bound: on 2 cores the three took 74 s side by
    # side and 41 s one after another, so they run side by side only with cores to spare.
    threads = max(1, min(len(LINES), (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(threads) as pool:
        resolved = dict(zip(LINES, pool.map(lambda extra: resolve(fresh_python, extra), LINES)))
    print(
        f"resolved {len(LINES)} extras in {time.perf_counter() - started:.1f} s: "
        + ", ".join(f"[{extra}] {seconds:.1f} s" for extra, (_, seconds) in resolved.items())
    )
    for extra, major in LINES.items():
        found = {name: Version(meta["version"]) for name, meta in resolved[extra][0].items()}
        where = f".[{extra}] resolved to {sorted((n, str(v)) for n, v in found.items())}"
        assert found["rapids-dask-dependency"] >= Version("26.10"), where
        rdd = resolved[extra][0]["rapids-dask-dependency"]
        for name in ("dask", "distributed"):
            assert found[name] in pinned(rdd, name), (
                f"{name} {found[name]} is not rapids-dask-dependency's pin; {where}"
            )
        if extra.startswith(("cuda", "test")):
            assert found["dask-cuda"] >= Version("26.10"), where
            assert found["dask-cuda"].release[:2] == found["rapids-dask-dependency"].release[:2], where
            assert found["cuda-bindings"].major == (major or 13), where
        if major is not None and "cuda" in extra:
            assert found[f"cupy-cuda{major}x"] >= Version("14"), where
            assert not [name for name in found if name.startswith("cupy-cuda") and name != f"cupy-cuda{major}x"], where
        if "ucx" in extra:
            ucxx = found[f"ucxx-cu{major}"]
            assert found[f"distributed-ucxx-cu{major}"] >= Version("0.52") and ucxx >= Version("0.52"), where
            assert found[f"distributed-ucxx-cu{major}"].release[:2] == ucxx.release[:2], where
            other = ({12, 13} - {major}).pop()
            assert not [name for name in found if name.endswith(f"-cu{other}")], f"both CUDA majors; {where}"
        if extra == "test":  # the machine has no GPU
            assert not [name for name in found if name.startswith("cupy")], f"the test extra pulls cupy; {where}"
