"""The LSF emulator (tests/emulators/lsf.py) is as strict as LSF: what it refuses, with LSF's
messages, and what accepted jobs really get (environment, GPUs, states, kills, limits, jsrun).

Messages are checked verbatim; their sources are cited in emulators/lsf.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from emulators.common import Rejected
from emulators.lsf import default_config, parse_submission

SCRIPT_HEAD = "#!/bin/bash\n"
NOT_SUBMITTED = "Job not submitted."


def refusal(script: str | None, *argv: str, **config) -> Rejected:
    with pytest.raises(Rejected) as caught:
        parse_submission(script, argv, default_config(**config))
    assert caught.value.exit_status == 255
    return caught.value


def wait_for(predicate, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


# -- what bsub refuses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "abc"], "Bad argument for option -n. Job not submitted."),
        (["-n", "4,2"], "Bad argument for option -n. Job not submitted."),
        (["-n", "0"], "The number of processors must be a positive integer. Job not submitted."),
        (["-n", "16"], "Too many processors requested. Job not submitted."),
        (["-W", "01:00:00"], "01:00:00: Bad RUNLIMIT specification. Job not submitted."),
        (["-W", "1h"], "1h: Bad RUNLIMIT specification. Job not submitted."),
        (["-W", "60", "-q", "short"], "RUNLIMIT: Cannot exceed queue's hard limit(s). Job not submitted."),
        (["-q", "gpu"], "gpu: No such queue. Job not submitted."),
        (["-x", "-q", "short"], "short: Queue does not accept EXCLUSIVE jobs. Job not submitted."),
        (["-Is"], "Queue does not accept interactive jobs. Job not submitted."),
        (["-M", "4XB"], "4XB: MEMLIMT value should be a positive integer. Job not submitted."),
        (["-gpu", "num=2:foo=1"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=2:mode=exclusive"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=0"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=two"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=2::mode=shared"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=2,mode=shared"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "num=2/node"], "Bad resource requirement syntax. Job not submitted."),
        (["-gpu", "mps=maybe"], "Bad resource requirement syntax. Job not submitted."),
        (["-R", "span[hosts=1"], "Bad resource requirement syntax. Job not submitted."),
        (["-R", "spam[hosts=1]"], "Bad resource requirement syntax. Job not submitted."),
        (["-R", "span[ptile=0]"], "Bad resource requirement syntax. Job not submitted."),
        (["-R", "select[mem>1] select[mem>2]"], 'Error near "select" : duplicate section. Job not submitted.'),
        (
            ["-R", "select[]"],
            'Error in select section: Expected number, string, name, or "(" '
            "but found end of section. Job not submitted.",
        ),
        (["-R", "rusage[mem=lots]"], "Error in rusage section. Job not submitted."),
        (["-J", "arr[0-3]"], "Job array index error. Job not submitted."),
        (["-J", "arr[1-5000]"], "Job array index too large. Job not submitted."),
        (
            ["-nnodes", "1"],
            "-nnodes: CSM options can only be used with a CSM queue; queue <normal> "
            "is not a CSM queue. Job not submitted.",
        ),
    ],
)
def test_bsub_refuses_with_lsf_messages(argv, message):
    assert refusal(SCRIPT_HEAD + "hostname\n", *argv).message == message


def test_bsub_refuses_bad_directives_in_the_script_too():
    script = SCRIPT_HEAD + "#BSUB -W 2:00:00\nhostname\n"
    assert refusal(script).message == "2:00:00: Bad RUNLIMIT specification. Job not submitted."
    # ... unless the command line sets the option: it overrides the script's
    assert parse_submission(script, ["-W", "90"]).run_limit_min == 90


def test_unknown_option_prints_getopt_error_and_usage():
    message = refusal(SCRIPT_HEAD + "hostname\n", "-zz").message
    first, second = message.splitlines()[:2]
    assert first == "bsub: illegal option -- zz"
    assert second.startswith("Usage: bsub ")
    assert refusal(None, "-q").message.splitlines()[0] == "bsub: option requires an argument -- q"
    assert refusal(None, "-xq", "hostname").message.splitlines()[0] == "bsub: option cannot have an argument -- x"


def test_empty_script_and_unknown_project():
    assert (
        refusal(SCRIPT_HEAD + "#BSUB -n 1\n\n# a comment\n").message
        == "No command is specified in the script file. Job not submitted."
    )
    assert (
        refusal(SCRIPT_HEAD + "#BSUB -P nope\nhostname\n", projects=["ABC123"]).message
        == "Invoker is not in specified project group. Job not submitted."
    )
    assert (
        parse_submission(
            SCRIPT_HEAD + "#BSUB -P ABC123\nhostname\n", config=default_config(projects=["ABC123"])
        ).project
        == "ABC123"
    )


def test_csm_queue_refusals_summit_and_plain_lsf():
    base = ["-q", "batch", "-W", "10", "-P", "ABC123"]
    summit = refusal(SCRIPT_HEAD + "jsrun hostname\n", *base, "-n", "2", "-R", "span[hosts=1]")
    assert summit.message.splitlines() == [
        "ERROR: Resource strings (-R) are not supported in easy mode. Please resubmit without a resource string.",
        "ERROR: -n is no longer supported. Please request nodes with -nnodes.",
        "ERROR: No nodes requested. Please request nodes with -nnodes.",
    ]
    assert "Typical usage:" in summit.stdout
    plain = refusal(SCRIPT_HEAD + "jsrun hostname\n", *base, "-nnodes", "1", "-n", "2", csm_site="lsf")
    assert plain.message == (
        "You cannot specify -R/-M/-n/LSB_DEFAULT_RESREQ when CSM Easy Mode "
        "job submission is enabled. Job not submitted."
    )
    with_gpu = refusal(SCRIPT_HEAD + "jsrun hostname\n", *base, "-nnodes", "1", "-gpu", "num=1")
    assert with_gpu.message == (
        "You cannot specify -gpu when CSM Easy Mode job submission is enabled. Job not submitted."
    )


# -- what bsub accepts, and what it makes of it ----------------------------------------------


def test_accepted_scripts_parse_as_lsf_reads_them():
    script = (
        SCRIPT_HEAD + "#BSUB -n 4\n#BSUB -q normal\n# BSUB -J spaced  # a comment\n"
        '#BSUB -gpu "num=1/task:mode=exclusive_process:mps=yes,shared:j_exclusive=yes"\n'
        '#BSUB -R "span[hosts=1]"\n#BSUB -R "rusage[mem=2GB] select[mem>100 && ngpus>0]"\n'
        "#BSUB -M 4096\n#BSUB -W 1:20\nhostname\n#BSUB -P late_directive\n"
    )
    parsed = parse_submission(script, ["-n", "2"])
    assert parsed.slots == 2  # the command line beats "#BSUB -n 4"
    assert parsed.queue == "normal" and parsed.queue_given
    assert parsed.name == "spaced"  # "# BSUB" is a directive; "# a comment" is not
    assert parsed.ngpus == 2  # num=1/task x 2 tasks
    assert parsed.mem_reserve_bytes == 2 << 30
    assert parsed.mem_limit_bytes == 4096 << 20  # LSF_UNIT_FOR_LIMITS=MB
    assert parsed.run_limit_min == 80 and parsed.walltime_s == 80 * 60
    assert parsed.project == "late_directive"  # read after the first command, as LSF does
    assert parse_submission(None, ["-W", "1:90", "hostname"]).run_limit_min == 150
    assert parse_submission(None, ["-M", "4GB", "hostname"]).mem_limit_bytes == 4 << 30
    assert parse_submission(None, ["-M32000", "-W02:00", "hostname"]).walltime_s == 7200
    trailing = parse_submission(None, ["-gpu", "num=1:j_exclusive=yes:mode=shared:mps=no:", "x"])
    assert trailing.ngpus == 1
    assert parse_submission(SCRIPT_HEAD + "hostname\n").queue_given is False


def test_lsf_conf_gives_dask_jobqueue_the_units(lsf):  # noqa: F811
    from dask_jobqueue.lsf import lsf_detect_units

    assert os.environ["LSF_ENVDIR"] == str(lsf.home / "conf")
    assert "LSF_UNIT_FOR_LIMITS=MB" in (lsf.home / "conf" / "lsf.conf").read_text()
    assert lsf_detect_units() == "m"


# -- jobs that run -------------------------------------------------------------------------


def test_accepted_script_runs_with_lsf_environment(lsf, tmp_path, monkeypatch):  # noqa: F811
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("MY_SUBMIT_VAR", "exported")
    script = (
        SCRIPT_HEAD + '#BSUB -J envjob\n#BSUB -n 3\n#BSUB -gpu "num=2"\n'
        "#BSUB -o job.%J.out\n#BSUB -W 10\n"
        "env | grep -E '^(LSB_|LS_SUBCWD|CUDA_VISIBLE_DEVICES|MY_SUBMIT_VAR)' > env.txt\n"
        'cat "$LSB_DJOB_HOSTFILE" > hostfile.txt\npwd > pwd.txt\necho to-stdout\n'
    )
    result = lsf.run("bsub", input=script, cwd=work)
    assert result.returncode == 0, result.stderr
    match = re.fullmatch(r"Job <(\d+)> is submitted to default queue <normal>\.\n", result.stdout)
    assert match, result.stdout
    job_id = match.group(1)
    assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "DONE"
    env = dict(line.split("=", 1) for line in (work / "env.txt").read_text().splitlines())
    host = env["LSB_HOSTS"].split()[0]
    assert env["LSB_JOBID"] == job_id
    assert env["LSB_JOBNAME"] == "envjob"
    assert env["LSB_QUEUE"] == "normal"
    assert env["LSB_HOSTS"] == " ".join([host] * 3)
    assert env["LSB_MCPU_HOSTS"] == f"{host} 3"
    assert env["LSB_DJOB_NUMPROC"] == "3"
    assert env["LS_SUBCWD"] == str(work)
    assert env["MY_SUBMIT_VAR"] == "exported"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert (work / "hostfile.txt").read_text() == f"{host}\n" * 3
    assert (work / "pwd.txt").read_text().strip() == str(work)
    report = (work / f"job.{job_id}.out").read_text()
    assert report.startswith("Sender: LSF System")
    assert "Successfully completed." in report
    assert report.endswith("The output (if any) follows:\n\nto-stdout\n")
    named = lsf.run("bsub", "-q", "normal", input=SCRIPT_HEAD + "true\n", cwd=work)
    assert re.fullmatch(r"Job <\d+> is submitted to queue <normal>\.\n", named.stdout)


def test_bsub_script_file_is_a_command_not_a_parsed_script(lsf, tmp_path):  # noqa: F811
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT_HEAD + "#BSUB -J from_directive\n#BSUB -o direct.out\necho ran > ran.txt\n")
    job_id = lsf.bsub(None, "-o", "cmd.out", str(script), cwd=tmp_path)
    assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "EXIT"  # not executable: sh says 126
    assert lsf.record(job_id).exit_status == 126
    assert lsf.record(job_id).name == str(script)  # #BSUB -J was not read
    assert not (tmp_path / "direct.out").exists() and not (tmp_path / "ran.txt").exists()
    script.chmod(0o755)
    job_id = lsf.bsub(None, "-o", "cmd2.out", str(script), cwd=tmp_path)
    assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "DONE"
    assert (tmp_path / "ran.txt").exists() and not (tmp_path / "direct.out").exists()


def test_gpu_jobs_pend_run_done_with_disjoint_devices(lsf, tmp_path):  # noqa: F811
    release = tmp_path / "release"
    script = (
        SCRIPT_HEAD + '#BSUB -gpu "num=2:mode=exclusive_process"\n#BSUB -o %J.out\n'
        'echo "$CUDA_VISIBLE_DEVICES" > gpus.$LSB_JOBID\n'
        f"while [ ! -e {release} ]; do sleep 0.05; done\n"
    )
    ids = [lsf.bsub(script, cwd=tmp_path) for _ in range(3)]
    for job_id in ids[:2]:
        assert lsf.wait_state(job_id, "RUN") == "RUN"
    wait_for(lambda: all((tmp_path / f"gpus.{i}").exists() for i in ids[:2]), what="GPU files")
    first, second = ((tmp_path / f"gpus.{i}").read_text().split()[0].split(",") for i in ids[:2])
    assert len(first) == len(second) == 2 and not set(first) & set(second)
    assert sorted(first + second) == ["0", "1", "2", "3"]
    assert [int(d) for d in first] == lsf.allocated_devices(ids[0])
    assert lsf.state(ids[2]) == "PEND"
    table = lsf.run("bjobs").stdout.splitlines()
    assert table[0].split() == ["JOBID", "USER", "STAT", "QUEUE", "FROM_HOST", "EXEC_HOST", "JOB_NAME", "SUBMIT_TIME"]
    assert [line.split()[2] for line in table[1:]] == ["RUN", "RUN", "PEND"]
    assert set(lsf.job_ids()) == set(ids)
    release.touch()
    for job_id in ids:
        assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "DONE"
    assert (tmp_path / f"gpus.{ids[2]}").exists()
    assert lsf.wait_queue_empty(5)
    empty = lsf.run("bjobs")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "No unfinished job found\n")
    assert set(lsf.job_ids(finished=True)) == set(ids)


def test_bkill_kills_the_whole_process_group(lsf, tmp_path):  # noqa: F811
    script = SCRIPT_HEAD + "#BSUB -o kill.out\nsleep 300 &\necho $! > child.pid\nwait\necho not-killed > survived\n"
    job_id = lsf.bsub(script, cwd=tmp_path)
    wait_for(
        lambda: (tmp_path / "child.pid").exists() and (tmp_path / "child.pid").read_text().strip(),
        what="the child sleep",
    )
    child = int((tmp_path / "child.pid").read_text())
    os.kill(child, 0)
    result = lsf.run("bkill", job_id)
    assert (result.returncode, result.stdout) == (0, f"Job <{job_id}> is being terminated\n")
    assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "EXIT"

    def gone():
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[0] == "Z"

    wait_for(gone, 5, "the child sleep to die")
    assert not (tmp_path / "survived").exists()
    assert "TERM_OWNER: job killed by owner." in (tmp_path / "kill.out").read_text()
    again = lsf.run("bkill", job_id)
    assert (again.returncode, again.stderr) == (255, f"Job <{job_id}>: Job has already finished\n")
    unknown = lsf.run("bkill", "424242")
    assert (unknown.returncode, unknown.stderr) == (255, "Job <424242>: No matching job found\n")


def test_walltime_is_enforced(tmp_path, monkeypatch):
    from fixtures.emulators import LSFEmulator

    emulator = LSFEmulator(tmp_path / "home", seconds_per_minute=1.0)  # -W 2: 2 seconds
    for key, value in emulator.env.items():
        monkeypatch.setenv(key, value)
    try:
        started = time.monotonic()
        job_id = emulator.bsub(
            SCRIPT_HEAD + "#BSUB -W 2\n#BSUB -o wall.out\nsleep 60\necho finished > finished\n", cwd=tmp_path
        )
        assert emulator.wait_state(job_id, ("DONE", "EXIT"), timeout=20) == "EXIT"
        assert time.monotonic() - started < 15
        assert not (tmp_path / "finished").exists()
        # LSF sends SIGUSR2 at the run limit (140); the shared runner may still send SIGTERM (143)
        assert emulator.record(job_id).exit_status in (140, 143)
        assert "TERM_RUNLIMIT" in (tmp_path / "wall.out").read_text()
        codes = emulator.run("bjobs", "-a", "-noheader", "-o", "jobid stat exit_code delimiter='^'")
        assert codes.stdout.strip() == f"{job_id}^EXIT^{emulator.record(job_id).exit_status}"
    finally:
        emulator.stop()


def test_array_elements_get_their_index(lsf, tmp_path):  # noqa: F811
    script = (
        SCRIPT_HEAD + '#BSUB -J "arr[1-3]"\n#BSUB -o out.%J.%I\n'
        'echo "$LSB_JOBINDEX $LSB_JOBNAME" > index.$LSB_JOBINDEX\n'
    )
    job_id = lsf.bsub(script, cwd=tmp_path)
    wait_for(lambda: len(lsf.job_ids()) == 0 and len(lsf.job_ids(finished=True)) == 3, what="the array to finish")
    assert sorted(lsf.job_ids(finished=True)) == [f"{job_id}[{i}]" for i in (1, 2, 3)]
    for index in (1, 2, 3):
        assert (tmp_path / f"index.{index}").read_text().split() == [str(index), f"arr[{index}]"]
        assert (tmp_path / f"out.{job_id}.{index}").read_text().startswith("Sender:")
    names = lsf.run("bjobs", "-a", "-noheader", "-o", "job_name").stdout.split()
    assert names == ["arr[1]", "arr[2]", "arr[3]"]


def test_csm_job_runs_jsrun_resource_sets_on_its_gpus(lsf, tmp_path):  # noqa: F811
    script = (
        SCRIPT_HEAD + "#BSUB -q batch\n#BSUB -nnodes 1\n#BSUB -W 10\n#BSUB -P ABC123\n"
        "#BSUB -alloc_flags gpumps\n#BSUB -o csm.out\n"
        'echo "${CUDA_VISIBLE_DEVICES-unset} $LSB_HOSTS" > launch.txt\n'
        "jsrun -n 4 -a 1 -c 2 -g 1 --bind packed:2 sh -c "
        '\'echo "$JSM_NAMESPACE_RANK $JSM_NAMESPACE_SIZE $CUDA_VISIBLE_DEVICES" '
        "> rank.$JSM_NAMESPACE_RANK'\n"
        'echo "jsrun=$?" > status.txt\n'
        'jsrun --nrs 5 --gpu_per_rs 1 true 2> toomany.err; echo "toomany=$?" >> status.txt\n'
        "jsrun -n2 -a2 -g2 -c4 sh -c 'echo $OMPI_COMM_WORLD_RANK:$CUDA_VISIBLE_DEVICES' "
        "> pairs.txt\n"
    )
    job_id = lsf.bsub(script, cwd=tmp_path)
    assert lsf.wait_state(job_id, ("DONE", "EXIT"), timeout=20) == "DONE"
    launch = (tmp_path / "launch.txt").read_text().split()
    assert launch[0] == "unset"  # the launch node has no GPUs
    assert launch[1:] == ["batch1"] + [launch[2]] * 8  # launch node + the node's 8 cores
    ranks = [(tmp_path / f"rank.{r}").read_text().split() for r in range(4)]
    assert [r[:2] for r in ranks] == [[str(r), "4"] for r in range(4)]
    assert sorted(r[2] for r in ranks) == ["0", "1", "2", "3"]  # one GPU each, all distinct
    status = (tmp_path / "status.txt").read_text().split()
    assert status[0] == "jsrun=0" and status[1] != "toomany=0"
    assert (tmp_path / "toomany.err").read_text() == "ERROR: Not enough resources available to schedule job.\n"
    pairs = sorted((tmp_path / "pairs.txt").read_text().split())
    assert pairs == ["0:0,1", "1:0,1", "2:2,3", "3:2,3"]
    assert lsf.allocated_devices(job_id) == [0, 1, 2, 3]


def test_jsrun_outside_a_job_and_summit_usage_on_stdout(lsf, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.delenv("LSB_JOBID", raising=False)
    outside = lsf.run("jsrun", "-n", "1", "hostname")
    assert outside.returncode != 0
    assert "not inside an LSF CSM job allocation" in outside.stderr
    refused = lsf.run(
        "bsub", "-q", "batch", "-n", "2", "-W", "5", "-P", "ABC", input=SCRIPT_HEAD + "jsrun hostname\n", cwd=tmp_path
    )
    assert refused.returncode == 255
    assert "Typical usage:" in refused.stdout and "Job <" not in refused.stdout
    assert "ERROR: -n is no longer supported. Please request nodes with -nnodes." in refused.stderr
    assert lsf.job_ids(finished=True) == []


def test_bjobs_formats_and_not_found(lsf, tmp_path):  # noqa: F811
    job_id = lsf.bsub(SCRIPT_HEAD + "#BSUB -J fmt\n#BSUB -o f.out\nexit 3\n", cwd=tmp_path)
    assert lsf.wait_state(job_id, ("DONE", "EXIT")) == "EXIT"
    delimited = lsf.run("bjobs", "-o", "jobid stat exit_code name delimiter='|'", job_id)
    assert delimited.stdout.splitlines() == ["JOBID|STAT|EXIT_CODE|JOB_NAME", f"{job_id}|EXIT|3|fmt"]
    as_json = json.loads(lsf.run("bjobs", "-o", "jobid stat exit_code", "-json", job_id).stdout)
    assert as_json["JOBS"] == 1
    assert as_json["RECORDS"] == [{"JOBID": job_id, "STAT": "EXIT", "EXIT_CODE": "3"}]
    missing = lsf.run("bjobs", "424242")
    assert (missing.returncode, missing.stdout, missing.stderr) == (0, "", "Job <424242> is not found\n")
    mixed = lsf.run("bjobs", "-noheader", job_id, "424242")
    assert mixed.returncode == 255 and mixed.stdout.split()[0] == job_id
    long = lsf.run("bjobs", "-l", job_id).stdout
    assert f"Job <{job_id}>, Job Name <fmt>" in long and "Exited with exit code 3." in long


def test_past_the_pending_job_threshold_bsub_says_so_and_retries_until_a_job_leaves_pending(lsf, tmp_path):  # noqa: F811
    lsf.config.extra.update(max_pend_jobs=1, sub_try_interval_s=0.5)
    lsf.config.write(lsf.home)
    release = tmp_path / "release"
    script = (
        SCRIPT_HEAD + '#BSUB -gpu "num=4:mode=exclusive_process"\n#BSUB -o %J.out\n'
        f"while [ ! -e {release} ]; do sleep 0.05; done\n"
    )
    running, pending = lsf.bsub(script, cwd=tmp_path), lsf.bsub(script, cwd=tmp_path)
    assert lsf.wait_state(running, "RUN") == "RUN" and lsf.state(pending) == "PEND"
    user = os.environ.get("USER") or __import__("getpass").getuser()
    refused = lsf.run("bsub", input=script, cwd=tmp_path, env={"LSB_NTRIES": "3"})
    line = f"User <{user}>: Pending job threshold reached. Retrying in 0.5 seconds..."
    assert refused.returncode == 255 and refused.stderr.count(line) == 2, refused.stderr
    assert "Job not submitted." in refused.stderr and len(lsf.job_ids()) == 2
    (tmp_path / "job.sh").write_text(script)
    with open(tmp_path / "job.sh") as stdin:
        waiting = subprocess.Popen(
            [str(lsf.bin_dir / "bsub")],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env={**os.environ, **lsf.env},
            text=True,
        )
    time.sleep(1.5)
    assert waiting.poll() is None, "no LSB_NTRIES: bsub goes on trying"
    lsf.run("bkill", running)  # the pending job starts: the threshold is no longer reached
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0 and re.search(r"Job <\d+> is submitted", out) and line in err
    release.touch()
    assert lsf.wait_queue_empty(30)
