"""How the suite treats a machine without the batch daemons: outside CI the tests that need
SLURM or Grid Engine skip with the reason; under ``CI=true`` they fail the run, and a run
that collects nothing fails instead of pytest's exit status 5.

The real tests run in a child pytest with a plugin that makes a daemon binary missing, so no
daemon is started (no need for the batch lock)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NEEDS_SLURM = "tests/batch/test_slurm_cluster.py::test_unknown_keyword_submits_nothing"
NEEDS_SGE = "tests/batch/test_sge_fixture.py::test_a_job_runs_python3_in_the_default_queue_and_writes_a_file"
PLUGIN = """
def pytest_sessionstart(session):
    import fixtures.sge, fixtures.slurm
    for module in (fixtures.slurm, fixtures.sge):
        module.REQUIRED_BINARIES = (*module.REQUIRED_BINARIES, "gjq-no-such-daemon")
"""


def child_pytest(tmp_path: Path, ci: bool, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "gjq_no_daemons.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), str(REPO), env.get("PYTHONPATH")]))
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "gjq_no_daemons", "-p", "no:cacheprovider", "-q", "-rs", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_outside_ci_the_batch_system_tests_skip_with_the_reason(tmp_path):
    done = child_pytest(tmp_path, False, NEEDS_SLURM, NEEDS_SGE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout, done.stdout
    for name in ("SLURM", "SGE"):
        assert f"{name} test cluster needs gjq-no-such-daemon" in done.stdout, done.stdout
    assert "under CI=true this fails the run" in done.stdout


def test_under_ci_a_daemon_that_cannot_start_fails_the_run(tmp_path):
    done = child_pytest(tmp_path, True, NEEDS_SLURM, NEEDS_SGE)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("2 errors") and "skipped" not in summary, done.stdout
    assert "MissingPrerequisite: SLURM test cluster needs gjq-no-such-daemon" in done.stdout, done.stdout


@pytest.mark.parametrize(
    "ci, status",
    [(False, pytest.ExitCode.NO_TESTS_COLLECTED), (True, pytest.ExitCode.TESTS_FAILED)],
    ids=["outside-ci", "ci"],
)
def test_a_run_that_collects_nothing_fails_in_ci(tmp_path, ci, status):
    done = child_pytest(tmp_path, ci, "tests/plan/test_request.py", "-k", "gjq_matches_no_test")
    assert done.returncode == status, done.stdout + done.stderr


def test_not_slurm_and_not_sge_leaves_every_test_that_starts_the_daemons_out():
    # Before, the backend-parametrised tests (test_conformance, test_reliability, test_job_arrays) and tests taking
    # the slurm fixture without a marker were kept by -m "not slurm and not sge" and started the daemons.
    files = [
        "tests/batch/test_conformance.py",
        "tests/runtime/test_reliability.py",
        "tests/batch/test_job_arrays.py",
        "tests/batch/test_multi_node.py",
    ]

    def collected(marks: str) -> set[str]:
        command = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-m", marks, *files]
        out = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parent.parent).stdout
        return {line.split("::", 1)[1] for line in out.splitlines() if "::" in line}

    daemons, others = collected("slurm or sge"), collected("not slurm and not sge")
    for test in (
        "test_adapt_goes_up_to_four_gpus_and_back_to_none[slurm]",
        "test_adapt_goes_up_to_four_gpus_and_back_to_none[sge]",
        "test_whole_node_gpu_styles_run_one_worker_per_gpu[sge-resource-type]",
    ):
        assert test in daemons and test not in others, test
    assert {test for test in daemons if test.startswith("test_a_stopped_client_releases_its_jobs")} and others
    assert not {
        test for test in others if test.endswith(("[slurm]", "[sge]")) or "[slurm-per" in test or "[sge-per" in test
    }


def _holding_lock(name: str, tmp_path) -> subprocess.Popen:
    """Another process that holds the machine lock ``name`` (in ``tmp_path``) until killed."""
    code = f"from fixtures.daemons import machine_lock\nimport time\nwith machine_lock({name!r}):\n"
    code += "    print('held', flush=True)\n    time.sleep(60)"
    env = {**os.environ, "GPUJOBQUEUE_TESTS_LOCKS": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)


def test_a_daemons_machine_lock_is_held_by_one_session_at_a_time(tmp_path, monkeypatch):
    from fixtures.daemons import machine_lock

    monkeypatch.setenv("GPUJOBQUEUE_TESTS_LOCKS", str(tmp_path))
    holder = _holding_lock("gjq-probe", tmp_path)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(TimeoutError, match=rf"gpujobqueue-tests-gjq-probe.lock is held by process {holder.pid}"):
            with machine_lock("gjq-probe", timeout=0.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    with machine_lock("gjq-probe", timeout=5) as path:  # the lock went with its process
        assert path.parent == tmp_path and path.read_text() == str(os.getpid())


def test_a_second_session_runs_its_daemons_on_the_next_free_shard(tmp_path, monkeypatch):
    from fixtures.daemons import SHARDS, running_on_a_free_shard
    from fixtures.sge import SGETestCluster
    from fixtures.slurm import SlurmTestCluster, TwoNodeSlurmTestCluster

    class Stand_in:
        def __init__(self, shard):
            self.shard = shard

        def start(self):
            pass

        def stop(self):
            pass

    monkeypatch.setenv("GPUJOBQUEUE_TESTS_LOCKS", str(tmp_path))
    holder = _holding_lock("Stand_in-0", tmp_path)
    try:
        assert holder.stdout.readline() == "held\n"
        with running_on_a_free_shard("Stand_in", Stand_in) as first:
            with running_on_a_free_shard("Stand_in", Stand_in) as second:
                assert (first.shard, second.shard) == (1, 2)
    finally:
        holder.kill()
        holder.wait()
    ports = []
    for shard in range(SHARDS):
        for cluster in (
            SlurmTestCluster(tmp_path / f"slurm{shard}", shard),
            SGETestCluster(tmp_path / f"sge{shard}", shard),
        ):
            ports += [cluster.slurmctld_port, cluster.slurmd_port] if hasattr(cluster, "slurmd_port") else []
            ports += [cluster.qmaster_port, cluster.execd_port] if hasattr(cluster, "qmaster_port") else []
        two_nodes = TwoNodeSlurmTestCluster(tmp_path / f"two{shard}", shard)
        ports += [two_nodes.slurmctld_port, two_nodes.slurmd_port, two_nodes.second_slurmd_port]
    assert len(set(ports)) == len(ports), f"two shards' daemons would listen on one port: {sorted(ports)}"


def test_a_workers_warning_of_a_gpujobqueue_class_reaches_the_xdist_controller():
    # The controller imports a warning's module from a thread of its own; gpujobqueue's first import (dask_jobqueue
    # sets a signal handler) failed there: INTERNALERROR, the worker's node down, the run's tests lost.
    test = "tests/sites/test_site_scripts.py::test_site_script_matches_its_golden_file[wice]"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", "-W", "always", test]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=240)
    assert done.returncode == 0 and "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "UnconfirmedSiteFactsWarning: wice" in done.stdout and "1 passed" in done.stdout, done.stdout


class _Item:
    def __init__(self, name: str, long: bool):
        self.name, self.long = name, long

    def get_closest_marker(self, name: str):
        return name == "long" and self.long or None


def test_the_long_tests_lead_each_xdist_workers_share():
    # Collected last (the root folder's modules), they ran at the session's end while the other workers idled.
    from conftest import long_tests_first_in_each_share

    items = [_Item(f"t{i}", False) for i in range(20)] + [_Item(f"long{i}", True) for i in range(6)]
    ordered = long_tests_first_in_each_share(items, 4)
    assert sorted(item.name for item in ordered) == sorted(item.name for item in items)
    starts, remaining, at = [], len(ordered), 0
    for share in range(4):  # the shares --dist worksteal sends first
        starts.append(ordered[at].name)
        size = remaining // (4 - share)
        at, remaining = at + size, remaining - size
    assert starts == ["long0", "long1", "long2", "long3"]
    assert [item.name for item in ordered[:2]] == ["long0", "long4"]


def test_every_python_line_of_the_ci_scripts_runs():
    """The scripts of .ci/ call the package by name (``.ci/demo`` asks ``machine_extra`` for the CUDA extra): a name
    removed or moved in the package fails here, not on a new user's first command."""
    snippets = [
        (path.name, code)
        for path in sorted((REPO / ".ci").iterdir())
        if path.is_file()
        for code in re.findall(r"python -c '([^']*)'", path.read_text())
    ]
    assert any(name == "demo" for name, _ in snippets)
    for name, code in snippets:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert result.returncode == 0, (name, code, result.stderr[-2000:])
