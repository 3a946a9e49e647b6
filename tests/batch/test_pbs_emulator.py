"""The PBS Pro / Torque emulator is as strict as the real thing (see tests/emulators/pbs.py).

Accepted scripts really run (a file the job writes proves it), refused ones get PBS's own
message and exit status, and the job's life shows in qstat as on a real server.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from emulators.common import ENV_HOME, Rejected
from emulators.pbs import QSUB_USAGE, default_config, parse_submission

HOST = socket.gethostname().split(".")[0]


def wait_for(predicate, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


ENV_DUMP = """#!/bin/bash
#PBS -N envdump
#PBS -l select=1:ncpus=2:ngpus=2:mpiprocs=2:mem=2gb
#PBS -l walltime=00:05:00
#PBS -l filesystems=home:eagle
{{
  echo "PWD=$(pwd)"
  echo "TMPDIR_EXISTS=$([ -d "$TMPDIR" ] && echo yes)"
  echo "NODES=$(tr '\\n' ' ' < "$PBS_NODEFILE")"
  env
}} > {out}
echo "to stdout"
echo "to stderr" >&2
"""


def read_env(path: Path) -> dict[str, str]:
    pairs = (line.partition("=") for line in path.read_text().splitlines() if "=" in line)
    return {k: v for k, _, v in pairs}


# -- accepted scripts really run ------------------------------------------------------------


def test_job_runs_with_pbs_environment(pbs, tmp_path):
    submit_dir = tmp_path / "submit"
    submit_dir.mkdir()
    out = tmp_path / "env.txt"
    job_id = pbs.qsub(ENV_DUMP.format(out=out), cwd=submit_dir)
    assert job_id == "1000.emulator"  # <sequence>.<server>, as qsub prints it
    pbs.wait_state(job_id, "F")
    env = read_env(out)
    assert env["PBS_JOBID"] == job_id
    assert env["PBS_JOBNAME"] == "envdump"
    assert env["PBS_QUEUE"] == "workq"
    assert env["PBS_ENVIRONMENT"] == "PBS_BATCH"
    assert env["PBS_O_WORKDIR"] == str(submit_dir)
    assert env["PBS_O_HOST"] == HOST
    # PBS Pro starts the job in the home directory, not in the submit directory
    assert env["PWD"] == os.path.expanduser("~")
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["NCPUS"] == "2" and env["OMP_NUM_THREADS"] == "2"
    assert env["TMPDIR_EXISTS"] == "yes"
    assert not Path(env["TMPDIR"]).exists()  # removed when the job ended
    # the node file lists the host once per MPI process (mpiprocs=2), and is removed
    assert env["NODES"] == f"{HOST} {HOST} "
    assert not Path(env["PBS_NODEFILE"]).exists()
    # default output files <name>.o<seq> / <name>.e<seq> in the submit directory
    assert (submit_dir / "envdump.o1000").read_text() == "to stdout\n"
    assert (submit_dir / "envdump.e1000").read_text() == "to stderr\n"
    job = pbs.qstat_json(job_id)[job_id]
    assert job["Exit_status"] == 0
    assert job["Resource_List"]["ngpus"] == 2 and job["Resource_List"]["ncpus"] == 2
    assert job["Resource_List"]["filesystems"] == "home:eagle"


def test_nodefile_lists_host_per_mpiproc(pbs, tmp_path):
    out = tmp_path / "nodefile.txt"
    job_id = pbs.qsub(f"#PBS -l select=2:ncpus=1:mpiprocs=3\ncat $PBS_NODEFILE > {out}\n", cwd=tmp_path)
    pbs.wait_state(job_id, "F")
    assert out.read_text().splitlines() == [HOST] * 6


def test_V_exports_the_submit_environment_and_v_single_variables(pbs, tmp_path):
    out_v, out_plain = tmp_path / "v.txt", tmp_path / "plain.txt"
    extra = {"GJQ_MARKER": "hello", "GJQ_OTHER": "x"}
    a = pbs.qsub(f"env > {out_v}\n", "-V", cwd=tmp_path, name="a.sh", env=extra)
    b = pbs.qsub(f"env > {out_plain}\n", "-v", "GJQ_OTHER,GJQ_SET=1", cwd=tmp_path, name="b.sh", env=extra)
    pbs.wait_state(a, "F")
    pbs.wait_state(b, "F")
    with_v, plain = read_env(out_v), read_env(out_plain)
    assert with_v["GJQ_MARKER"] == "hello"
    assert "GJQ_MARKER" not in plain  # without -V only PBS_O_* travel
    assert plain["GJQ_OTHER"] == "x" and plain["GJQ_SET"] == "1"
    assert plain["PBS_O_PATH"] == pbs.env["PATH"]  # qsub's PATH travels as PBS_O_PATH
    assert plain["PATH"] != pbs.env["PATH"]  # the job's PATH is the default one
    assert with_v["PATH"] == pbs.env["PATH"]  # ... unless -V exports it


def test_directives_stop_at_first_command_and_command_line_wins(pbs, tmp_path):
    script = (
        "#!/bin/bash\n#PBS -N fromscript\n#PBS -l walltime=00:10:00\n\n"
        "# a comment\necho hi\n#PBS -l walltime=not-a-time\n"
    )
    parsed = pbs.parse(script, ["-N", "fromcli", "-l", "walltime=00:20:00"])
    assert parsed.name == "fromcli"
    assert parsed.walltime_s == 1200
    job_id = pbs.qsub(script, "-N", "fromcli", "-l", "walltime=20:00", cwd=tmp_path)
    pbs.wait_state(job_id, "F")
    job = pbs.qstat_json(job_id)[job_id]
    assert job["Job_Name"] == "fromcli"
    assert job["Resource_List"]["walltime"] == "00:20:00"


def test_stdin_and_command_forms(pbs, tmp_path):
    marker = tmp_path / "stdin.txt"
    result = pbs.run("qsub", input=f"#PBS -l walltime=60\ntouch {marker}\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    pbs.wait_state(result.stdout.strip(), "F")
    assert marker.exists()
    assert (tmp_path / f"STDIN.o{result.stdout.strip().split('.')[0]}").exists()
    marker2 = tmp_path / "cmd.txt"
    result = pbs.run("qsub", "-l", "walltime=60", "--", "/usr/bin/touch", str(marker2), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    pbs.wait_state(result.stdout.strip(), "F")
    assert marker2.exists()


def test_block_true_returns_the_job_exit_status(pbs, tmp_path):
    (tmp_path / "b.sh").write_text("exit 3\n")
    result = pbs.run("qsub", "-W", "block=true", "b.sh", cwd=tmp_path)
    assert result.stdout.strip() == "1000.emulator"
    assert result.returncode == 3


# -- refused scripts get PBS's message ------------------------------------------------------

USAGE = QSUB_USAGE + "\n"

REFUSALS = [
    # (options, directives, stderr, exit status)
    (["-Y"], "", "qsub: invalid option -- 'Y'\n" + USAGE, 2),
    (["-l", "foo=1"], "", "qsub: Unknown resource Resource_List.foo\n", 187),
    (["-l", "select=1:ncpus=1:foo=2"], "", "qsub: Unknown resource: foo\n", 187),
    (
        [],
        "#PBS -l select=1:ncpus=2\n#PBS -l ngpus=2\n",
        'qsub: "-lresource=" cannot be used with "select" or "place", resource is: ngpus\n',
        5,
    ),
    (
        ["-l", "select=1:ncpus=1", "-l", "mem=4gb"],
        "",
        'qsub: "-lresource=" cannot be used with "select" or "place", resource is: mem\n',
        5,
    ),
    (
        ["-l", "select=1:ncpus=1:walltime=01:00:00"],
        "",
        'qsub: Resource invalid in "select" specification: walltime\n',
        4,
    ),
    (
        ["-l", "select=1:ncpus=1:filesystems=home"],
        "",
        'qsub: Resource invalid in "select" specification: filesystems\n',
        4,
    ),
    (["-l", "select=1:ncpus"], "", "qsub: Illegal attribute or resource value Resource_List.select\n", 166),
    (["-l", "select=1:ncpus=2+"], "", "qsub: Illegal attribute or resource value Resource_List.select\n", 166),
    (["-l", "select=1:ncpus=1:mem=4GiB"], "", "qsub: Illegal attribute or resource value Resource_List.select\n", 166),
    (
        ["-l", "select=1:ncpus=1:ncpus=2"],
        "",
        "qsub: duplicated resource within a section of a select specification, resource is: ncpus\n",
        12,
    ),
    (["-l", "walltime=1:2:3:4"], "", "qsub: Illegal attribute or resource value Resource_List.walltime\n", 166),
    (["-l", "walltime=1h"], "", "qsub: Illegal attribute or resource value Resource_List.walltime\n", 166),
    (["-l", "mem=1.5gb"], "", "qsub: Illegal attribute or resource value Resource_List.mem\n", 166),
    (["-l", "place=scatter"], "", 'qsub: Cannot have "place" without "select"\n', 7),
    (
        ["-l", "select=1:ncpus=1", "-l", "place=sideways"],
        "",
        "qsub: Illegal attribute or resource value Resource_List.place\n",
        166,
    ),
    (["-q", "nosuchqueue"], "", "qsub: Unknown queue\n", 170),
    (["-l", "walltime=30:00:00"], "", "qsub: Job violates queue and/or server resource limits\n", 188),
    (["-q", "debug", "-l", "walltime=02:00:00"], "", "qsub: Job violates queue and/or server resource limits\n", 188),
    (
        ["-q", "debug", "-l", "select=1:ncpus=1:ngpus=8"],
        "",
        "qsub: Job violates queue and/or server resource limits\n",
        188,
    ),
    (["-N", "bad name"], "", "qsub: illegal -N value\n" + USAGE, 2),
    (["-N", "x" * 231], "", "qsub: Job name is too long \n", 2),
    (["-j", "oo"], "", "qsub: illegal -j value\n" + USAGE, 2),
    (["-r", "maybe"], "", "qsub: illegal -r value\n" + USAGE, 2),
    ([], "#PBS -r maybe\n", "qsub: illegal -r value\nqsub: directive error: -r maybe \n", 1),
    ([], "#PBS -l walltime\n", "qsub: illegal -l value\nqsub: directive error: -l walltime \n", 1),
    (["-J", "5-1"], "", "qsub: illegal -J value\n" + USAGE, 2),
    (["-J", "1-20000"], "", "qsub: Array job exceeds server or queue size limit\n", 3),
    (["-m", "abj"], "", "qsub: mail option 'j' can not be used without array job\n", 1),
    (["-I"], "", "qsub:\tstandard input and output must be a terminal for\n\tinteractive job submission\n", 1),
    (["-W", "depend=afterok"], "", "qsub: illegal -W value\n" + USAGE, 2),
    (["-W", "depend=afterok:9999.emulator"], "", "qsub: Unknown Job Id 9999.emulator\n", 153),
    (["-W", "nosuchattr=1"], "", "qsub: Undefined attribute \n", 154),
    (["-v", "GJQ_NOT_SET_ANYWHERE"], "", "qsub: cannot send environment with the job\n", 1),
]


@pytest.mark.parametrize(
    "options,directives,stderr,status", REFUSALS, ids=[" ".join(r[0]) or r[1].strip() for r in REFUSALS]
)
def test_refusals(pbs, tmp_path, options, directives, stderr, status):
    (tmp_path / "job.sh").write_text("#!/bin/bash\n" + directives + "sleep 1\n")
    result = pbs.run("qsub", *options, "job.sh", cwd=tmp_path)
    assert (result.stderr, result.returncode) == (stderr, status)
    assert result.stdout == ""
    assert pbs.job_ids(finished=True) == []  # nothing was queued
    assert not list((pbs.home / "jobs").glob("*.json"))


def test_parse_submission_raises_exactly_when_qsub_refuses(pbs):
    parsed = pbs.parse("#PBS -l select=2:ncpus=2:ngpus=1+1:ncpus=1\n#PBS -l place=pack\n")
    assert (parsed.ncpus, parsed.ngpus, parsed.nodect) == (5, 2, 3)
    assert parsed.resources["select"] == "2:ncpus=2:ngpus=1+1:ncpus=1"
    with pytest.raises(Rejected) as refusal:
        pbs.parse("#PBS -l select=1:ngpus=1\n#PBS -l ngpus=1\n")
    assert refusal.value.exit_status == 5
    # a site without the ALCF filesystems resource refuses it, as a real server does
    plain = default_config(custom_resources=[])
    with pytest.raises(Rejected, match="Unknown resource Resource_List.filesystems"):
        parse_submission("#PBS -l filesystems=home:eagle\n", (), plain)


def test_job_name_comes_from_script_and_is_checked(pbs, tmp_path):
    (tmp_path / "9lives.sh").write_text("true\n")
    result = pbs.run("qsub", "9lives.sh", cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # a leading digit is fine
    assert pbs.attribute(result.stdout.strip(), "Job_Name") == "9lives.sh"
    (tmp_path / "bad name.sh").write_text("true\n")
    result = pbs.run("qsub", "bad name.sh", cwd=tmp_path)
    assert (result.stderr, result.returncode) == ("qsub: illegal -N value\n" + USAGE, 2)


def test_missing_home_variable_is_a_clear_error(pbs, tmp_path):
    result = pbs.run("qstat", env={ENV_HOME: ""})
    assert result.returncode == 2
    assert ENV_HOME in result.stderr


# -- qstat through a job's life, GPUs, queueing ---------------------------------------------


def test_two_gpu_jobs_get_disjoint_devices_and_a_third_waits(pbs, tmp_path):
    script = "#PBS -l select=1:ncpus=1:ngpus=2\n#PBS -l walltime=00:01:00\nsleep 60\n"
    first = pbs.qsub(script, cwd=tmp_path, name="a.sh")
    second = pbs.qsub(script, cwd=tmp_path, name="b.sh")
    third = pbs.qsub(script, cwd=tmp_path, name="c.sh")
    assert pbs.wait_state(first, "R") == "R" and pbs.wait_state(second, "R") == "R"
    devices = pbs.allocated_devices(first), pbs.allocated_devices(second)
    assert sorted(devices[0] + devices[1]) == [0, 1, 2, 3]
    assert set(devices[0]).isdisjoint(devices[1])
    assert pbs.state(third) == "Q"  # no free GPU: real queueing
    table = pbs.run("qstat").stdout.splitlines()
    assert table[0] == ("Job id            Name             User              Time Use S Queue")
    assert table[1] == "----------------  ---------------- ----------------  -------- - -----"
    assert [line.split()[4] for line in table[2:]] == ["R", "R", "Q"]
    assert pbs.run("qdel", first).returncode == 0
    pbs.wait_state(third, "R")
    assert sorted(pbs.allocated_devices(third)) == sorted(devices[0])
    assert pbs.wait_state(first, "F") == "F"
    # finished jobs: only with -x
    assert first not in pbs.job_ids() and first in pbs.job_ids(finished=True)
    result = pbs.run("qstat", first)
    assert result.returncode == 35
    assert result.stderr == (f"qstat: {first} Job has finished, use -x or -H to obtain historical job information\n")


def test_qstat_full_and_json_layouts(pbs, tmp_path):
    job_id = pbs.qsub("#PBS -l select=1:ncpus=2:ngpus=2\n#PBS -A proj\nsleep 30\n", cwd=tmp_path)
    pbs.wait_state(job_id, "R")
    text = pbs.run("qstat", "-f", job_id).stdout
    lines = text.splitlines()
    assert lines[0] == f"Job Id: {job_id}"
    for expected in (
        "    job_state = R",
        "    Resource_List.ngpus = 2",
        "    Resource_List.ncpus = 2",
        f"    exec_host = {HOST}/0*2",
        "    Account_Name = proj",
        "    queue = workq",
        "    Resource_List.select = 1:ncpus=2:ngpus=2",
    ):
        assert expected in lines
    doc = json.loads(pbs.run("qstat", "-f", "-F", "json", job_id).stdout)
    assert set(doc) == {"timestamp", "pbs_version", "pbs_server", "Jobs"}
    job = doc["Jobs"][job_id]
    assert job["job_state"] == "R" and job["Resource_List"]["ngpus"] == 2
    assert job["Variable_List"]["PBS_O_WORKDIR"] == str(tmp_path)
    # nothing matched: no "Jobs" key at all
    empty = json.loads(pbs.run("qstat", "-f", "-F", "json", "-u", "nosuchuser").stdout)
    assert "Jobs" not in empty
    alt = pbs.run("qstat", "-u", pbs.record(job_id).user).stdout.splitlines()
    assert alt[1] == "emulator: " and alt[3].startswith("Job ID          Username Queue")


def test_unknown_ids(pbs):
    result = pbs.run("qstat", "4242")
    assert (result.stderr, result.returncode) == ("qstat: Unknown Job Id 4242.emulator\n", 153)
    result = pbs.run("qdel", "4242.emulator")
    assert (result.stderr, result.returncode) == ("qdel: Unknown Job Id 4242.emulator\n", 153)
    result = pbs.run("qdel", "abc")
    assert result.stderr == "qdel: illegally formed job identifier: abc\n"
    result = pbs.run("qdel")
    assert result.returncode == 2 and result.stderr.startswith("usage:\n\tqdel")


def test_qdel_kills_the_whole_process_group(pbs, tmp_path):
    pidfile = tmp_path / "child.pid"
    job_id = pbs.qsub(f"sleep 300 &\necho $! > {pidfile}\nwait\n", cwd=tmp_path)
    pid = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), what="the child sleep"))
    assert pid_alive(pid)
    result = pbs.run("qdel", job_id)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    wait_for(lambda: not pid_alive(pid), what="the child sleep to die")
    assert pbs.wait_state(job_id, "F") == "F"
    assert pbs.attribute(job_id, "Exit_status") == 256 + 15  # 271: killed by SIGTERM
    again = pbs.run("qdel", job_id)
    assert (again.stderr, again.returncode) == (f"qdel: Job has finished {job_id}\n", 35)


def test_queued_job_deleted(pbs, tmp_path):
    job_id = pbs.qsub("sleep 5\n", "-h", cwd=tmp_path)
    assert pbs.state(job_id) == "H"  # -h: user hold, never starts by itself
    time.sleep(0.3)
    assert pbs.state(job_id) == "H"
    assert pbs.run("qdel", job_id).returncode == 0
    assert pbs.state(job_id) == "F"


def test_walltime_is_enforced(pbs, tmp_path):
    job_id = pbs.qsub("#PBS -l walltime=00:00:01\n#PBS -j oe\necho started\nsleep 60\n", cwd=tmp_path)
    pbs.wait_state(job_id, "F", timeout=15)
    assert pbs.attribute(job_id, "Exit_status") == 271
    output = (tmp_path / "job.sh.o1000").read_text()
    assert output.startswith("started\n")
    assert "=>> PBS: job killed: walltime" in output and "exceeded limit 1" in output


def test_arrays_get_their_index(pbs, tmp_path):
    out = tmp_path / "idx"
    out.mkdir()
    job_id = pbs.qsub(
        f"#PBS -J 1-5:2\n#PBS -l walltime=60\necho $PBS_JOBID $PBS_ARRAY_ID > {out}/$PBS_ARRAY_INDEX\n", cwd=tmp_path
    )
    assert job_id == "1000[].emulator"
    pbs.wait_state(job_id, "F")
    assert sorted(p.name for p in out.iterdir()) == ["1", "3", "5"]
    assert (out / "3").read_text() == "1000[3].emulator 1000[].emulator\n"
    ids = pbs.job_ids(finished=True)
    assert ids == ["1000[].emulator"]
    sub = pbs.run("qstat", "-x", "-t", job_id).stdout.splitlines()[2:]
    assert [line.split()[0] for line in sub] == [
        "1000[].emulator",
        "1000[1].emulator",
        "1000[3].emulator",
        "1000[5].emulator",
    ]
    assert [line.split()[4] for line in sub] == ["F", "X", "X", "X"]
    assert (tmp_path / "job.sh.o1000.3").exists()
    assert pbs.run("qstat", "1000").returncode == 153  # an array is named 1000[]


def test_qdel_of_an_array_and_of_one_element(pbs, tmp_path):
    job_id = pbs.qsub("#PBS -J 1-3\n#PBS -l select=1:ncpus=1\nsleep 60\n", cwd=tmp_path)
    pbs.wait_state("1000[1]", "R")
    assert pbs.run("qdel", "1000[2].emulator").returncode == 0
    assert pbs.wait_state("1000[2]", "X") == "X"
    assert pbs.state("1000[1]") == "R" and pbs.state(job_id) == "B"
    assert pbs.run("qdel", "1000[]").returncode == 0
    assert pbs.wait_state(job_id, "F") == "F"
    assert pbs.attribute("1000[1]", "Exit_status") == 271


def test_output_paths_and_join(pbs, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    job_id = pbs.qsub("#PBS -N named\n#PBS -j oe\n#PBS -o logs/\necho out\necho err >&2\n", cwd=tmp_path)
    pbs.wait_state(job_id, "F")
    assert (logs / "named.o1000").read_text() == "out\nerr\n"  # joined, in the directory
    assert not (logs / "named.e1000").exists()
    second = pbs.qsub("echo two\n", "-o", str(tmp_path / "exact.out"), cwd=tmp_path)
    pbs.wait_state(second, "F")
    assert (tmp_path / "exact.out").read_text() == "two\n"


def test_dependency_waits_for_the_first_job(pbs, tmp_path):
    order = tmp_path / "order"
    go = tmp_path / "go"
    # The first job waits for the test, not for a second that a loaded machine may take to submit the second.
    first = pbs.qsub(f"until [ -e {go} ]; do sleep 0.1; done\necho first >> {order}\n", cwd=tmp_path, name="a.sh")
    second = pbs.qsub(f"echo second >> {order}\n", "-W", f"depend=afterok:{first}", cwd=tmp_path, name="b.sh")
    assert pbs.state(second) == "H"
    go.touch()
    pbs.wait_state(second, "F")
    assert order.read_text() == "first\nsecond\n"


def test_job_larger_than_the_host_is_accepted_but_never_runs(pbs, tmp_path):
    job_id = pbs.qsub("#PBS -l select=1:ncpus=1:ngpus=8\ntrue\n", cwd=tmp_path)
    time.sleep(0.3)
    assert pbs.state(job_id) == "Q"
    assert pbs.attribute(job_id, "comment").startswith("Can Never Run: Insufficient amount of resource: ngpus")
    elsewhere = pbs.qsub("#PBS -l select=1:ncpus=1:host=othernode\ntrue\n", cwd=tmp_path, name="b.sh")
    time.sleep(0.3)
    assert pbs.state(elsewhere) == "Q"


# -- Torque ---------------------------------------------------------------------------------


def test_torque_nodes_ppn_gpus(torque, tmp_path):
    out = tmp_path / "env.txt"
    job_id = torque.qsub(
        f"#PBS -l nodes=1:ppn=2:gpus=1\n#PBS -l mem=1gb,walltime=60\n"
        f"{{ env; echo GPUFILE=$(cat $PBS_GPUFILE); }} > {out}\n",
        cwd=tmp_path,
    )
    assert job_id == "1000.emulator"
    torque.wait_state(job_id, "C")
    env = read_env(out)
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["GPUFILE"] == f"{HOST}-gpu0"
    assert env["PBS_NUM_PPN"] == "2" and env["PBS_NUM_NODES"] == "1"


def test_torque_refuses_select(torque, tmp_path):
    (tmp_path / "job.sh").write_text("#PBS -l select=1:ncpus=2\ntrue\n")
    result = torque.run("qsub", "job.sh", cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr == ("qsub: submit error (Unknown resource type  Resource_List.select)\n")
    assert torque.job_ids(finished=True) == []
