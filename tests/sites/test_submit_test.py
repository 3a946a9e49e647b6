"""``gpujobqueue check --site NAME --submit-test`` (issue 33, point 3; issue 44, point 3): the site's default job
and one job per routing bin, rendered and shown to the batch system itself (``sbatch --test-only``, Grid Engine's
``qsub -w v``), which says whether it would take each; nothing is submitted, and a refusal is a failure in the batch
system's own words, the machine stricter than the file at the limits the job sits at. One job more per limit asks
one step past it (a node, a minute, a GPU) and expects a refusal: one taken shows the machine looser than the file.
The batch system's queue listing (sinfo, qconf -sq; qstat -Qf and bqueues -l in tests/sites/test_queue_listing.py)
is compared with the file, each difference with the file's line. PBS Pro and LSF have no test mode, and the check
says so.

The daemon tests (markers slurm and sge) give the real batch systems of the fixtures a site file whose queues
mirror theirs, and one planted wrong both ways (a limit looser than the machine's, one stricter), which the submit
test and the listing both find: ``test_the_real_sbatch_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime``,
``test_the_real_slurm_finds_a_planted_too_loose_and_a_planted_too_strict_limit``,
``test_the_real_sbatch_refuses_a_partition_it_does_not_have``,
``test_grid_engines_qsub_w_v_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime`` and
``test_the_real_grid_engine_finds_a_planted_too_loose_and_a_planted_too_strict_limit``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpujobqueue.diagnostics.submit_test import within_trials
from gpujobqueue.plan.scripts import job_script_for
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
    jobs = {trial.label: trial.keywords for trial in within_trials(load_site("aurora"))}
    assert jobs["default job"] == {}
    assert jobs["prod, 1024 nodes, 12:00:00 (small)"] == {"queue": "prod", "nodes": 1024, "walltime": "12:00:00"}
    assert jobs["prod, 10624 nodes, 24:00:00 (large)"] == {"queue": "prod", "nodes": 10624, "walltime": "24:00:00"}
    assert jobs["capacity, 16 nodes, 168:00:00"] == {"queue": "capacity", "nodes": 16, "walltime": "168:00:00"}
    assert not [label for label, keywords in jobs.items() if keywords.get("queue") == "tiny"]  # withdrawn 2026-02
    casper = {trial.label: trial.keywords for trial in within_trials(load_site("casper"))}
    assert not [label for label, keywords in casper.items() if keywords.get("queue") == "gpudev"]


def test_sbatch_is_asked_with_test_only_and_its_refusal_fails_the_check_in_its_words(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    refusal = "allocation failure: Requested time limit is invalid (missing or exceeds some limit)"
    stand_in(folder, "sbatch", log, refuse_if="--time=1-00:00:00", refusal=refusal)
    for command in ("squeue", "scancel"):
        stand_in(folder, command, log)
    site = slurm_site(tmp_path, "mirror")
    status, found = check(site, path=f"{folder}{os.pathsep}{os.environ['PATH']}")
    calls = submissions(log, "sbatch")
    assert len(calls) == 9 and all(call[:1] == ["--test-only"] and len(call) == 2 for call in calls), calls
    lines = {finding["detail"].split(": ")[0]: finding for finding in found["submit test"]}
    within = {"default job", "gpu, 1 node, 1-00:00:00", "debug, 1 node, 00:30:00"}
    assert within <= set(lines) and len(lines) == 9, list(lines)
    refused = lines["gpu, 1 node, 1-00:00:00"]
    assert refused["status"] == "fail" and f"refused: {refusal}; at the file's " in refused["detail"]
    text = site.read_text().splitlines()
    line = next(n for n, words in enumerate(text, 1) if words.startswith("  gpu:"))
    assert refused["detail"].endswith(
        f"queues.gpu.max_nodes = 1 at {site}:{line}, queues.gpu.max_walltime = 1-00:00:00 at {site}:{line}: "
        "the machine is stricter than the file says"
    ), refused["detail"]
    assert (
        lines["debug, 1 node, 00:30:00"]["status"] == "ok"
        and "to start at" in lines["debug, 1 node, 00:30:00"]["detail"]
    )
    assert status == 1


def test_the_jobs_past_the_limits_ask_one_step_past_each_and_nothing_else_more():
    from gpujobqueue.diagnostics.submit_test import past_trials  # issue 44's: imported here, so main runs the rest

    trials = {trial.label: trial for trial in past_trials(load_site("frontier"))}
    nodes = trials["batch, 9473 nodes, 01:00:00, past max_nodes"]
    assert nodes.keywords == {"queue": "batch", "nodes": 9473, "walltime": "01:00:00"}  # a short walltime
    assert nodes.past.startswith("queues.batch.max_nodes = 9472 at ") and nodes.past.endswith("frontier.yaml:42")
    binned = trials["batch, 92 nodes, 06:01:00, past walltime_by_nodes.1.max_walltime"]
    assert binned.keywords == {"queue": "batch", "nodes": 92, "walltime": "06:01:00"}  # the bin's least nodes
    longer = trials["extended, 1 node, 24:01:00, past max_walltime"]
    assert longer.keywords == {"queue": "extended", "nodes": 1, "walltime": "24:01:00"}
    gpus = trials["extended, 1 node, 9 GPUs a node, 01:00:00, past node.gpus"]
    assert gpus.keywords["gpus_per_node"] == 9 and gpus.keywords["cores"] == 56  # the node's cores, no more
    assert len(trials) == 13
    # Each renders: gpujobqueue's own refusal of a job past the file's limit is not what is tested.
    for trial in trials.values():
        job_script_for("slurm", {**trial.keywords, "account": "ABC123", "site": trial.site}, name="past")


def test_a_job_past_a_limit_that_is_taken_shows_the_machine_looser_and_one_refused_passes(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    # This "machine" refuses the jobs past the gpu queue's limits (2 nodes, 1-00:01:00) and takes the others.
    stand_in(folder, "sbatch", log, refuse_if="--nodes=2\\|--time=1-00:01:00", refusal="allocation failure: no")
    for command in ("squeue", "scancel"):
        stand_in(folder, command, log)
    site = slurm_site(tmp_path, "mirror")
    status, found = check(site, path=f"{folder}{os.pathsep}{os.environ['PATH']}")
    lines = {finding["detail"].split(": ")[0]: finding for finding in found["submit test"]}
    assert lines["gpu, 2 nodes, 01:00:00, past max_nodes"]["status"] == "ok"
    assert "refused, as the file says" in lines["gpu, 2 nodes, 01:00:00, past max_nodes"]["detail"]
    taken = lines["debug, 1 node, 00:31:00, past max_walltime"]
    line = next(n for n, words in enumerate(site.read_text().splitlines(), 1) if words.startswith("  debug:"))
    assert taken["status"] == "warn", taken
    assert taken["detail"].startswith(
        f"debug, 1 node, 00:31:00, past max_walltime: accepted one step past queues.debug.max_walltime = 00:30:00 "
        f"at {site}:{line}: the machine is looser than the file says"
    ), taken["detail"]
    assert status == 0  # looser: the file refuses jobs the machine would take, a warning


def test_an_unreadable_queue_listing_is_reported_as_such_never_a_crash(tmp_path, monkeypatch):
    from gpujobqueue.diagnostics.queue_check import compare_queues  # issue 44's: imported here, so main runs the rest

    folder = tmp_path / "bin"
    folder.mkdir()
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    sinfo, site = folder / "sinfo", load_site(str(slurm_site(tmp_path, "mirror")))
    for output, said in (
        ("echo 'Welcome to the cluster'", "printed what gpujobqueue does not read as a listing: sinfo line 1: "),
        ("yes 'gpu|1-00:00:00|1-infinite|1|gpu:4' | head -c 9000000", "its output is over 8 MiB; not read"),
        ("echo 'sinfo: error: Unable to contact slurm controller' >&2; exit 1", "exited with status 1: sinfo: error"),
    ):
        sinfo.write_text(f"#!/bin/sh\n{output}\n")
        sinfo.chmod(0o755)
        listing = compare_queues(site)
        assert said in listing["error"] and listing["lines"] == [] and listing["compared"] == 0, listing
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert "sinfo cannot run" in compare_queues(site)["error"]
    monkeypatch.setenv("PATH", path)
    # The check says so in one line, a note: the site file is not blamed for a listing it could not read.
    sinfo.write_text("#!/bin/sh\necho 'Welcome to the cluster'\n")
    sinfo.chmod(0o755)
    for command in ("sbatch", "squeue", "scancel"):
        stand_in(folder, command, tmp_path / "calls.log")
    status, found = check(slurm_site(tmp_path, "mirror"))
    (line,) = found["queue listing"]
    assert line["status"] == "info" and line["detail"].startswith("not compared: sinfo --all"), line
    assert status == 0


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
        f"{len(within_trials(load_site(site)))} job(s) not asked: "
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


def by_label(found: dict[str, list[dict]]) -> dict[str, dict]:
    """The submit test's lines by their job's label."""
    return {f["detail"].split(": ")[0]: f for f in found["submit test"]}


def line_of(path: Path, start: str) -> str:
    """``path:N`` of the file's first line that starts with ``start``."""
    return f"{path}:{next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(start))}"


def slurm_mirror(slurm, folder: Path, name: str = "mirror") -> Path:
    return write_site(
        folder,
        SLURM_SITE,
        name,
        partition=slurm.partition,
        partition_time=slurm.partition_max_time,
        debug=slurm.debug_partition,
        debug_time=slurm.debug_max_time,
        more="",
    )


@pytest.mark.slurm
def test_the_real_sbatch_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime(slurm, tmp_path):
    status, found = check(slurm_mirror(slurm, tmp_path))
    within = [f for label, f in by_label(found).items() if ", past " not in label]
    assert [f["status"] for f in within] == ["ok", "ok", "ok"], found["submit test"]
    assert all("to start at" in f["detail"] for f in within)
    past = {label: f for label, f in by_label(found).items() if ", past " in label and "GPUs" not in label}
    assert len(past) == 4 and all("refused, as the file says" in f["detail"] for f in past.values()), past
    # The mirror's nodes and walltimes are the partitions' (its 2 GPUs a node are fewer than the node's 4).
    assert all("GPUs a node" in f["detail"] for f in found["queue listing"][:-1]), found["queue listing"]
    assert status == 0, found
    # The "centre" halved nothing: the file claims twice the partition's MaxTime, which sbatch refuses.
    longer = slurm_site(tmp_path, "longer", partition_time="2-00:00:00")
    status, found = check(longer)
    answers = by_label(found)
    assert answers["gpu, 1 node, 2-00:00:00"]["status"] == "fail"
    assert "Requested time limit is invalid" in answers["gpu, 1 node, 2-00:00:00"]["detail"]
    assert answers["default job"]["status"] == "ok" and status == 1
    assert not slurm.squeue_ids(), "--test-only must queue nothing"


@pytest.mark.slurm
def test_the_real_slurm_finds_a_planted_too_loose_and_a_planted_too_strict_limit(slurm, tmp_path):
    """The file says the gpu partition takes 2 nodes (it has 1) and the debug partition 15 minutes (it allows 30):
    the job at the gpu limit is refused (stricter), the job one minute past the debug limit taken (looser), and
    sinfo's listing shows both, each with the file's line; the nodes' 4 GPUs (the file says 2) the same way."""
    site = slurm_mirror(slurm, tmp_path, "wrong")
    text = site.read_text()
    site.write_text(
        text.replace(f'{slurm.partition}: {{max_walltime: "{slurm.partition_max_time}", max_nodes: 1}}',
                     f'{slurm.partition}: {{max_walltime: "{slurm.partition_max_time}", max_nodes: 2}}')
        .replace(f'{slurm.debug_partition}: {{max_walltime: "{slurm.debug_max_time}"',
                 f'{slurm.debug_partition}: {{max_walltime: "00:15:00"')
    )  # fmt: skip
    assert site.read_text() != text
    gpu_line, debug_line, gpus_line = line_of(site, "  gpu:"), line_of(site, "  debug:"), line_of(site, "node:")
    status, found = check(site)
    answers = by_label(found)
    loose = answers["gpu, 2 nodes, 1-00:00:00"]
    # sbatch names the first thing 2 nodes break: the 2 cores a node asked on 2 nodes are more than the partition's
    assert loose["status"] == "fail" and "refused: allocation failure: " in loose["detail"], loose
    assert f"queues.gpu.max_nodes = 2 at {gpu_line}" in loose["detail"]
    assert loose["detail"].endswith("the machine is stricter than the file says")
    strict = answers["debug, 1 node, 00:16:00, past max_walltime"]
    assert strict["status"] == "warn" and "to start at" in strict["detail"], strict
    assert f"past queues.debug.max_walltime = 00:15:00 at {debug_line}: the machine is looser" in strict["detail"]
    assert answers["debug, 1 node, 00:15:00"]["status"] == "ok"
    assert answers["gpu, 1 node, 3 GPUs a node, 01:00:00, past node.gpus"]["status"] == "warn"
    listing = {(f["status"], f["detail"]) for f in found["queue listing"]}
    assert listing == {
        ("fail", "gpu: listed with 1 node(s) a job, the file's queues.gpu.max_nodes = 2: the machine is stricter "
                 f"than the file says ({gpu_line})"),
        ("warn", "debug: listed with a walltime limit of 00:30:00, the file's queues.debug.max_walltime = 00:15:00: "
                 f"the machine is looser than the file says ({debug_line})"),
        ("warn", f"gpu: listed with 4 GPUs a node, the file's node.gpus = 2: the machine is looser than the file says "
                 f"({gpus_line})"),
        ("warn", f"debug: listed with 4 GPUs a node, the file's node.gpus = 2: the machine is looser than the file "
                 f"says ({gpus_line})"),
        ("ok", "2 queue(s) compared with `sinfo --all --noheader --format=%R|%l|%s|%D|%G`: 0 as the file says"),
    }, found["queue listing"]  # fmt: skip
    assert status == 1 and not slurm.squeue_ids(), "--test-only must queue nothing"


@pytest.mark.slurm
def test_the_real_sbatch_refuses_a_partition_it_does_not_have(slurm, tmp_path):
    gone = slurm_site(tmp_path, "gone", more='  gpu-old: {max_walltime: "01:00:00", max_nodes: 1}\n')
    status, found = check(gone)
    answers = {f["detail"].split(": ")[0]: f for f in found["submit test"]}
    assert answers["gpu-old, 1 node, 01:00:00"]["status"] == "fail"
    assert "nvalid partition" in answers["gpu-old, 1 node, 01:00:00"]["detail"]
    assert status == 1 and not slurm.squeue_ids()


def sge_site(sge, folder: Path, name: str, queue_time: str, debug_time: str = "00:30:00") -> Path:
    return write_site(
        folder, SGE_SITE, name, queue=sge.queue, queue_time=queue_time, debug=sge.debug_queue, debug_time=debug_time
    )


@pytest.mark.sge
def test_grid_engines_qsub_w_v_takes_the_mirror_sites_jobs_and_refuses_a_longer_walltime(sge, tmp_path):
    status, found = check(sge_site(sge, tmp_path, "mirror", sge.queue_h_rt))
    within = [f for label, f in by_label(found).items() if ", past " not in label]
    assert [f["status"] for f in within] == ["ok", "ok", "ok"], found["submit test"]
    assert all("verification: found suitable queue(s)" in f["detail"] for f in within)
    assert by_label(found)[f"{sge.queue}, 1 node, 24:01:00, past max_walltime"]["status"] == "ok"
    assert found["queue listing"][-1]["detail"].endswith(": 2 as the file says"), found["queue listing"]
    assert status == 0, found
    status, found = check(sge_site(sge, tmp_path, "longer", "48:00:00"))
    refused = by_label(found)[f"{sge.queue}, 1 node, 48:00:00"]
    assert refused["status"] == "fail" and "verification: no suitable queues" in refused["detail"]
    assert f'cannot run in queue "{sge.queue}"' in refused["detail"] and status == 1
    assert not sge.job_ids(), "qsub -w v must submit nothing"


@pytest.mark.sge
def test_the_real_grid_engine_finds_a_planted_too_loose_and_a_planted_too_strict_limit(sge, tmp_path):
    """The file says gpu.q runs 48 hours (its h_rt is 24) and debug.q 15 minutes (its h_rt is 30): qsub -w v refuses
    the job at the gpu.q limit (stricter) and takes the one a minute past the debug.q limit (looser), and qconf -sq's
    listing shows both with the file's lines."""
    site = sge_site(sge, tmp_path, "wrong", "48:00:00", debug_time="00:15:00")
    queue_line, debug_line = line_of(site, f"  {sge.queue}:"), line_of(site, f"  {sge.debug_queue}:")
    status, found = check(site)
    answers = by_label(found)
    loose = answers[f"{sge.queue}, 1 node, 48:00:00"]
    assert loose["status"] == "fail" and f'cannot run in queue "{sge.queue}"' in loose["detail"], loose
    assert f"queues.{sge.queue}.max_walltime = 48:00:00 at {queue_line}" in loose["detail"]
    assert loose["detail"].endswith("the machine is stricter than the file says")
    strict = answers[f"{sge.debug_queue}, 1 node, 00:16:00, past max_walltime"]
    assert strict["status"] == "warn" and "verification: found suitable queue(s)" in strict["detail"], strict
    assert f"past queues.{sge.debug_queue}.max_walltime = 00:30:00" not in strict["detail"]
    assert (
        f"past queues.{sge.debug_queue}.max_walltime = 00:15:00 at {debug_line}: the machine is looser"
        in (strict["detail"])
    )
    listing = {(f["status"], f["detail"]) for f in found["queue listing"]}
    assert listing == {
        ("fail", f"{sge.queue}: listed with a walltime limit of 24:00:00, the file's queues.{sge.queue}.max_walltime "
                 f"= 48:00:00: the machine is stricter than the file says ({queue_line})"),
        ("warn", f"{sge.debug_queue}: listed with a walltime limit of 00:30:00, the file's "
                 f"queues.{sge.debug_queue}.max_walltime = 00:15:00: the machine is looser than the file says "
                 f"({debug_line})"),
        ("ok", "2 queue(s) compared with `qconf -sq *`: 0 as the file says"),
    }, found["queue listing"]  # fmt: skip
    assert status == 1 and not sge.job_ids(), "qsub -w v must submit nothing"
