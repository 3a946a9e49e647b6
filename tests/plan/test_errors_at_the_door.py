"""Errors at the door (issue 18 §5): a site's interface missing here is one GPUJobQueueError that
says what to do; a constructor that fails leaves nothing running and nothing printed at exit;
a refused submission says the batch system's message once and names no deleted file. Each is run
as a user runs it, in a fresh interpreter, and its stderr read whole."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gpujobqueue import GPUCluster, GPUJobQueueError, InterfaceNotFoundError, SLURMGPUCluster
from gpujobqueue.machine.interfaces import host_interfaces, usable_interfaces
from gpujobqueue.runtime import exit_cleanup

SBATCH_SAYS = (
    "sbatch: error: invalid partition specified: nosuch\n"
    "sbatch: error: Batch job submission failed: Invalid partition name specified"
)


def run_python(code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.fixture
def refusing_sbatch(tmp_path):
    """PATH with an sbatch that refuses every job (as SLURM does an unknown partition) and a
    squeue that answers (the batch system is up: the refusal is raised, not deferred)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sbatch").write_text("#!/bin/sh\ncat >&2 <<'EOF'\n" + SBATCH_SAYS + "\nEOF\nexit 1\n")
    (folder / "squeue").write_text("#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")
    (folder / "scancel").write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/scancel.log"\n')
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def io_loop_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "IO loop"]


def test_a_sites_interface_missing_here_is_one_error_saying_what_to_do():
    # GPUCluster(site="perlmutter") off Perlmutter: distributed's 40-line RuntimeError before.
    result = run_python("""
        from gpujobqueue import GPUCluster
        GPUCluster(site="perlmutter", account="m1234_g")
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


def test_the_login_nodes_are_named_as_patterns_not_as_a_host_name():
    # Before: "run this on a perlmutter login node (login[0-9]+\.chn\.perlmutter\.nersc\.gov)",
    # a regular expression shown as if it were a host to log in to.
    from gpujobqueue.machine.interfaces import check_scheduler_interface
    from gpujobqueue.sites import load_site

    site = load_site("perlmutter")
    with pytest.raises(InterfaceNotFoundError) as info:
        check_scheduler_interface("hsn0", "interface", site)
    message = str(info.value)
    pattern = site.data["hostnames"][0]
    assert f"login node ({pattern})" not in message
    assert f"a perlmutter login node (one whose host name matches the pattern '{pattern}')" in message, message


def test_a_missing_scheduler_interface_is_refused_before_anything_starts():
    before = io_loop_threads()
    with pytest.raises(InterfaceNotFoundError) as info:
        SLURMGPUCluster(
            cpus_per_gpu=1,
            memory_per_gpu="512MiB",
            scheduler_options={"interface": "nosuchif0"},
        )
    assert isinstance(info.value, GPUJobQueueError) and info.value.field == "scheduler_options"
    assert info.value.interface == "nosuchif0" and set(info.value.available) == set(host_interfaces())
    assert io_loop_threads() == before and not list(exit_cleanup._open_clusters)


def test_a_failed_constructor_leaves_nothing_running(refusing_sbatch, tmp_path):
    # Before: the refused job's cluster kept its scheduler, its job watch and its event loop's
    # thread for the life of the process, and was closed only at exit.
    result = run_python(
        """
        import threading
        from gpujobqueue import SLURMGPUCluster, SubmissionError
        from gpujobqueue.runtime import exit_cleanup
        for keywords in ({"n_workers": 1}, {"scheduler_options": {"interface": "nosuchif0"}}):
            try:
                SLURMGPUCluster(gpus_per_node=1, cpus_per_gpu=1, memory_per_gpu="512MiB", walltime="00:05:00",
                                **keywords)
            except Exception as error:
                print(type(error).__name__)
        print("threads", sorted(t.name for t in threading.enumerate()))
        print("open clusters", len(exit_cleanup._open_clusters))
    """,
        env=refusing_sbatch,
        cwd=tmp_path,
    )
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "SubmissionError",
        "InterfaceNotFoundError",
        "threads ['MainThread']",
        "open clusters 0",
    ]
    assert not (tmp_path / "bin" / "scancel.log").exists(), "no job was submitted, none to cancel"


def test_an_uncaught_refusal_prints_sbatchs_message_once_and_no_deleted_file(refusing_sbatch, tmp_path):
    result = run_python(
        """
        from gpujobqueue import SLURMGPUCluster
        SLURMGPUCluster(cpus_per_gpu=1, memory_per_gpu="512MiB", n_workers=1, gpus_per_node=1, walltime="00:05:00")
    """,
        env=refusing_sbatch,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.count("Traceback") == 1, result.stderr
    assert result.stderr.count("Invalid partition name specified") == 1, result.stderr
    assert "gpujobqueue-job-" not in result.stderr and ".sh" not in result.stderr, result.stderr
    # The error is the last thing printed: nothing at exit after it.
    last = "gpujobqueue.errors.SubmissionError: sbatch refused job SLURMGPUCluster-0 (exit status 1):\n"
    assert result.stderr.endswith(last + SBATCH_SAYS + "\n"), result.stderr


def test_a_handled_refusal_prints_nothing(refusing_sbatch, tmp_path):
    result = run_python(
        """
        from gpujobqueue import SLURMGPUCluster, SubmissionError
        try:
            SLURMGPUCluster(cpus_per_gpu=1, memory_per_gpu="512MiB", n_workers=1, gpus_per_node=1,
                            walltime="00:05:00")
        except SubmissionError as error:
            print(error)
    """,
        env=refusing_sbatch,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "sbatch refused job SLURMGPUCluster-0 (exit status 1):\n" + SBATCH_SAYS + "\n"


def test_gpucluster_with_a_site_names_the_interface_in_the_class_users_catch():
    with pytest.raises(GPUJobQueueError, match="hsn0"):
        GPUCluster(site="perlmutter", account="m1234_g")


@pytest.mark.parametrize("keywords", ['host="x"', "processes=0", 'scheduler_options={"port": -5}'])
def test_a_constructor_refused_early_prints_nothing_at_exit(keywords, tmp_path):
    # Before: a cluster refused inside distributed's constructor (no name yet) stayed in the
    # exit-time cancel list, and exit printed a "Logging error" with two AttributeErrors.
    result = run_python(
        f"""
        from gpujobqueue import SLURMGPUCluster
        try:
            SLURMGPUCluster(cpus_per_gpu=1, memory_per_gpu="512MiB", gpus_per_node=1, {keywords})
        except Exception as error:
            print(type(error).__name__)
    """,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout.strip(), result
    assert result.stderr == "", result.stderr
