"""``gpujobqueue check --site NAME --submit-test`` (issue 33, point 3): the site's default job and one job per
routing bin, rendered and shown to the batch system itself (``sbatch --test-only``, Grid Engine's
``qsub -w v``), which says whether it would take each; nothing is submitted, and a refusal is a failure in
the batch system's own words. PBS Pro and LSF have no such mode, and the check says so.

The daemon tests (markers slurm and sge) give the real batch systems of the fixtures a site file whose
queues mirror theirs: ``test_the_real_sbatch_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime``,
``test_the_real_sbatch_refuses_a_partition_it_does_not_have`` and
``test_grid_engines_qsub_w_v_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpujobqueue.diagnostics.submit_test import trial_keywords
from gpujobqueue.sites import load_site

SLURM_SITE = """schema: 1
name: {name}
description: The tests' one-node SLURM, its partitions as its slurm.conf has them
centre: gpujobqueue tests
documentation: https://example.org/fixture-slurm
status: generic
scheduler: slurm
node: {{gpus: 2, gpu_model: H200, cpus: 2, memory: 4000MB}}
gpu_request: {{style: gpus-per-node}}
queues:
  {partition}: {{max_walltime: "{partition_time}", max_nodes: 1}}
  {debug}: {{max_walltime: "{debug_time}", max_nodes: 1}}
{more}default_queue: {partition}
launcher: {{name: srun}}
worker: {{mode: per-device, cpus_per_gpu: 1, memory_per_gpu: 500MB}}
network: {{protocol: tcp}}
"""

SGE_SITE = """schema: 1
name: {name}
description: The tests' one-host Grid Engine, its queues as qconf has them
centre: gpujobqueue tests
documentation: https://example.org/fixture-sge
status: generic
scheduler: sge
node: {{gpus: 2, gpu_model: H200, cpus: 2, memory: 4000MB}}
gpu_request: {{style: complex, complex: gpu, consumable: slot}}
directives: {{parallel_environment: smp, allocation_rule: $pe_slots}}
queues:
  {queue}: {{max_walltime: "{queue_time}", max_nodes: 1}}
  {debug}: {{max_walltime: "{debug_time}", max_nodes: 1}}
default_queue: {queue}
launcher: {{name: direct}}
worker: {{mode: per-device, cpus_per_gpu: 1, memory_per_gpu: 500MB}}
network: {{protocol: tcp}}
"""


def write_site(folder: Path, template: str, name: str, **values: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(template.format(name=name, **values))
    return path


def slurm_site(folder: Path, name: str, partition_time: str = "1-00:00:00", more: str = "") -> Path:
    return write_site(
        folder,
        SLURM_SITE,
        name,
        partition="gpu",
        partition_time=partition_time,
        debug="debug",
        debug_time="00:30:00",
        more=more,
    )


def check(site: Path, *args: str, path: str | None = None) -> tuple[int, dict[str, list[dict]]]:
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--json", "--site", str(site), "--submit-test", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    findings: dict[str, list[dict]] = {}
    for finding in json.loads(done.stdout)["findings"]:
        findings.setdefault(finding["topic"], []).append(finding)
    return done.returncode, findings


def stand_in(folder: Path, command: str, log: Path, refuse_if: str = "", refusal: str = "") -> None:
    """A stand-in batch command that records its name and arguments, one call a line, and refuses a script holding
    ``refuse_if`` with ``refusal`` (exit status 1)."""
    script = folder / command
    script.write_text(
        "#!/bin/sh\n"
        f'echo "{command} $@" >> {log}\n'
        f'for last; do :; done\nif [ -n "{refuse_if}" ] && grep -q -- "{refuse_if}" "$last"; then\n'
        f'  echo "{refusal}" >&2; exit 1\nfi\n'
        'echo "sbatch: Job 7 to start at 2026-11-27T10:00:00 using 2 processors on nodes n1 in partition gpu" >&2\n'
    )
    script.chmod(0o755)


def submissions(log: Path, command: str) -> list[list[str]]:
    """The arguments of each call of ``command`` in the stand-ins' log, but ``check``'s version probes."""
    calls = [line.split() for line in log.read_text().splitlines() if line.strip()]
    return [call[1:] for call in calls if call[0] == command and call[1:] not in (["--version"], ["-V"])]


def test_the_jobs_are_the_default_job_and_each_bin_at_its_edge_never_a_withdrawn_queue():
    jobs = dict(trial_keywords(load_site("aurora")))
    assert jobs["default job"] == {}
    assert jobs["prod, 1024 nodes, 12:00:00 (small)"] == {"queue": "prod", "nodes": 1024, "walltime": "12:00:00"}
    assert jobs["prod, 10624 nodes, 24:00:00 (large)"] == {"queue": "prod", "nodes": 10624, "walltime": "24:00:00"}
    assert jobs["capacity, 16 nodes, 168:00:00"] == {"queue": "capacity", "nodes": 16, "walltime": "168:00:00"}
    assert not [label for label, keywords in jobs.items() if keywords.get("queue") == "tiny"]  # withdrawn 2026-02
    casper = dict(trial_keywords(load_site("casper")))
    assert not [label for label, keywords in casper.items() if keywords.get("queue") == "gpudev"]


def test_sbatch_is_asked_with_test_only_and_its_refusal_fails_the_check_in_its_words(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    refusal = "allocation failure: Requested time limit is invalid (missing or exceeds some limit)"
    stand_in(folder, "sbatch", log, refuse_if="--time=1-00:00:00", refusal=refusal)
    for command in ("squeue", "scancel"):
        stand_in(folder, command, log)
    status, found = check(slurm_site(tmp_path, "mirror"), path=f"{folder}{os.pathsep}{os.environ['PATH']}")
    calls = submissions(log, "sbatch")
    assert len(calls) == 3 and all(call[:1] == ["--test-only"] and len(call) == 2 for call in calls), calls
    lines = {finding["detail"].split(": ")[0]: finding for finding in found["submit test"]}
    assert set(lines) == {"default job", "gpu, 1 node, 1-00:00:00", "debug, 1 node, 00:30:00"}
    assert lines["gpu, 1 node, 1-00:00:00"]["status"] == "fail"
    assert lines["gpu, 1 node, 1-00:00:00"]["detail"].endswith(f"refused: {refusal}")
    assert (
        lines["debug, 1 node, 00:30:00"]["status"] == "ok"
        and "to start at" in lines["debug, 1 node, 00:30:00"]["detail"]
    )
    assert status == 1


@pytest.mark.parametrize("site, account, command", [("polaris", "MyProject", "qsub"), ("summit", "ABC123", "bsub")])
def test_a_batch_system_without_such_a_mode_is_not_asked_and_the_check_says_so(tmp_path, site, account, command):
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    log.touch()
    for name in ("qsub", "qstat", "qdel", "bsub", "bjobs", "bkill"):
        stand_in(folder, name, log)
    _, found = check(Path(site), "--account", account, path=f"{folder}{os.pathsep}{os.environ['PATH']}")
    (line,) = found["submit test"]
    scheduler = load_site(site).scheduler
    assert line["status"] == "warn"
    assert line["detail"] == (
        f"{len(trial_keywords(load_site(site)))} job(s) not asked: "
        f"{scheduler} has no mode that checks a job without submitting it"
    )
    assert submissions(log, command) == []


def test_a_job_the_site_refuses_to_render_is_a_failure_naming_the_keyword(tmp_path):
    status, found = check(Path("polaris"))  # Polaris requires an account
    assert status == 1
    assert all(f["status"] == "fail" and "account" in f["detail"] for f in found["submit test"]), found["submit test"]


def test_account_without_submit_test_is_a_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--site", "polaris", "--account", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--submit-test" in done.stderr


# -- the real batch systems of the fixtures (run by whoever holds the daemons) ------------------------


@pytest.mark.slurm
def test_the_real_sbatch_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime(slurm, tmp_path):
    mirror = write_site(
        tmp_path,
        SLURM_SITE,
        "mirror",
        partition=slurm.partition,
        partition_time=slurm.partition_max_time,
        debug=slurm.debug_partition,
        debug_time=slurm.debug_max_time,
        more="",
    )
    status, found = check(mirror)
    assert [f["status"] for f in found["submit test"]] == ["ok", "ok", "ok"], found["submit test"]
    assert all("to start at" in f["detail"] for f in found["submit test"])
    assert status == 0, found
    # The "centre" halved nothing: the file claims twice the partition's MaxTime, which sbatch refuses.
    longer = slurm_site(tmp_path, "longer", partition_time="2-00:00:00")
    status, found = check(longer)
    answers = {f["detail"].split(": ")[0]: f for f in found["submit test"]}
    assert answers["gpu, 1 node, 2-00:00:00"]["status"] == "fail"
    assert "Requested time limit is invalid" in answers["gpu, 1 node, 2-00:00:00"]["detail"]
    assert answers["default job"]["status"] == "ok" and status == 1
    assert not slurm.squeue_ids(), "--test-only must queue nothing"


@pytest.mark.slurm
def test_the_real_sbatch_refuses_a_partition_it_does_not_have(slurm, tmp_path):
    gone = slurm_site(tmp_path, "gone", more='  gpu-old: {max_walltime: "01:00:00", max_nodes: 1}\n')
    status, found = check(gone)
    answers = {f["detail"].split(": ")[0]: f for f in found["submit test"]}
    assert answers["gpu-old, 1 node, 01:00:00"]["status"] == "fail"
    assert "nvalid partition" in answers["gpu-old, 1 node, 01:00:00"]["detail"]
    assert status == 1 and not slurm.squeue_ids()


@pytest.mark.sge
def test_grid_engines_qsub_w_v_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime(sge, tmp_path):
    def site(name: str, queue_time: str) -> Path:
        return write_site(
            tmp_path,
            SGE_SITE,
            name,
            queue=sge.queue,
            queue_time=queue_time,
            debug=sge.debug_queue,
            debug_time="00:30:00",
        )

    status, found = check(site("mirror", sge.queue_h_rt))
    assert [f["status"] for f in found["submit test"]] == ["ok", "ok", "ok"], found["submit test"]
    assert all("verification: found suitable queue(s)" in f["detail"] for f in found["submit test"])
    assert status == 0, found
    status, found = check(site("longer", "48:00:00"))
    answers = {f["detail"].split(": ")[0]: f for f in found["submit test"]}
    refused = answers[f"{sge.queue}, 1 node, 48:00:00"]
    assert refused["status"] == "fail" and "verification: no suitable queues" in refused["detail"]
    assert f'cannot run in queue "{sge.queue}"' in refused["detail"] and status == 1
    assert not sge.job_ids(), "qsub -w v must submit nothing"
