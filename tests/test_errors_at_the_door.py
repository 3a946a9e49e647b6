"""Errors at the door (issue 18 §5): a site's interface missing here is one GPUJobQueueError that
says what to do. Run as a user runs it, in a fresh interpreter, and its stderr read whole."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gpujobqueue import GPUCluster, GPUJobQueueError, InterfaceNotFoundError, SLURMGPUCluster
from gpujobqueue import exit_cleanup
from gpujobqueue.interfaces import host_interfaces, usable_interfaces


def run_python(code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def io_loop_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "IO loop"]


def test_a_sites_interface_missing_here_is_one_error_saying_what_to_do():
    # GPUCluster(site="perlmutter") off Perlmutter: distributed's 40-line RuntimeError before.
    result = run_python("""
        from gpujobqueue import GPUCluster
        GPUCluster(site="perlmutter", account="m1234_g", dashboard_address="127.0.0.1:0")
    """)
    assert result.returncode == 1
    assert result.stderr.count("Traceback") == 1 and "RuntimeError" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("gpujobqueue.errors.InterfaceNotFoundError: interface: "), result.stderr
    assert "'hsn0' (perlmutter's network.interface, " in last and "perlmutter.yaml:" in last
    assert "run this on a perlmutter login node" in last
    assert "scheduler_options={'interface': " in last and "the workers keep 'hsn0' on the compute nodes" in last
    for name in usable_interfaces(host_interfaces()):
        assert f"{name} (" in last, last


def test_a_missing_scheduler_interface_is_refused_before_anything_starts():
    before = io_loop_threads()
    with pytest.raises(InterfaceNotFoundError) as info:
        SLURMGPUCluster(scheduler_options={"interface": "nosuchif0"}, dashboard_address="127.0.0.1:0")
    assert isinstance(info.value, GPUJobQueueError) and info.value.field == "scheduler_options"
    assert info.value.interface == "nosuchif0" and set(info.value.available) == set(host_interfaces())
    assert io_loop_threads() == before and not list(exit_cleanup._open_clusters)


def test_gpucluster_with_a_site_names_the_interface_in_the_class_users_catch():
    with pytest.raises(GPUJobQueueError, match="hsn0"):
        GPUCluster(site="perlmutter", account="m1234_g", dashboard_address="127.0.0.1:0")
