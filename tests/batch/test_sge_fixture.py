"""The Grid Engine fixture is a real Grid Engine: jobs run, GPUs are counted and assigned
by the queue starter, and qsub refuses what Grid Engine cannot run."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fixtures.sge import SGECommandError, SGETestCluster

pytestmark = pytest.mark.sge

ALL_IDS = {"0", "1", "2", "3"}


def wait_for(predicate, timeout: float, what: str):
    """Poll ``predicate`` until it returns something true; fail the test on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


class HeldJob:
    """A job script that records what it was given, then runs until released."""

    def __init__(self, folder: Path, name: str):
        self.folder, self.name = folder, name
        self.info_path = folder / f"{name}.info"
        self.release_path = folder / f"{name}.release"
        self.script = folder / f"{name}.sh"
        self.script.write_text(f"""#!/bin/bash
#$ -cwd
#$ -N {name}
echo "$JOB_ID|$QUEUE|$NSLOTS|${{SGE_HGR_gpu-unset}}|${{CUDA_VISIBLE_DEVICES-unset}}" > {name}.tmp
mv {name}.tmp {self.info_path}
for i in $(seq 600); do [ -e {self.release_path} ] && exit 0; sleep 0.1; done
exit 1
""")

    def submit(self, cluster: SGETestCluster, *args: str) -> str:
        self.job_id = cluster.qsub("-w", "e", *args, str(self.script), cwd=self.folder)
        return self.job_id

    def info(self, timeout: float = 15.0) -> dict[str, str]:
        """What the job saw once it runs: id, queue, slots, SGE_HGR_gpu, CUDA_VISIBLE_DEVICES."""
        text = wait_for(
            lambda: self.info_path.exists() and self.info_path.read_text().strip(), timeout, f"job {self.name} to start"
        )
        keys = ("job_id", "queue", "nslots", "hgr", "cuda")
        return dict(zip(keys, text.split("|")))

    def release(self) -> None:
        self.release_path.touch()


@pytest.fixture
def cluster(sge):  # noqa: F811  (the imported fixture)
    """The session's Grid Engine, with an empty queue before and after each test.

    Grid Engine can take over 30 s to end a deleted job on a loaded machine, hence the minute.
    """
    assert sge.wait_queue_empty(60), f"jobs left by an earlier test: {sge.job_states()}"
    yield sge
    ids = sge.job_ids()
    if ids:
        sge.run("qdel", *ids, check=False)
    assert sge.wait_queue_empty(60), f"jobs left: {sge.job_states()}"


def gone(cluster: SGETestCluster, job_id: str, timeout: float = 60.0) -> None:
    wait_for(lambda: job_id not in cluster.job_ids(), timeout, f"job {job_id} to finish")


def test_a_job_runs_python3_in_the_default_queue_and_writes_a_file(cluster, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        '#!/bin/bash\n#$ -cwd\necho "queue=$QUEUE"\n'
        'python3 -c \'import sys; open("out.txt", "w").write("python %d" % '
        "sys.version_info[0])'\n"
    )
    job_id = cluster.qsub(str(script), cwd=tmp_path)
    assert job_id.isdigit()
    gone(cluster, job_id)
    assert (tmp_path / "out.txt").read_text() == "python 3"
    assert (tmp_path / f"job.sh.o{job_id}").read_text().strip() == "queue=gpu.q"
    assert job_id in cluster.job_states(finished=True)  # qstat -s z: finished jobs


def test_a_gpu_job_sees_the_two_ids_the_starter_gave_it(cluster, tmp_path):
    job = HeldJob(tmp_path, "two")
    job_id = job.submit(cluster, "-l", "gpu=2")
    info = job.info()
    ids = info["hgr"].split()
    assert len(ids) == 2 and set(ids) <= ALL_IDS, info
    assert info["cuda"] == ",".join(ids)
    assert cluster.allocated_devices(job_id) == ids
    wait_for(lambda: cluster.job_states().get(job_id) == "r", 5, "state r")  # t: transferring
    job.release()
    gone(cluster, job_id)
    assert cluster.allocated_devices(job_id) == []


def test_concurrent_gpu_jobs_get_disjoint_ids_and_a_third_waits_for_one(cluster, tmp_path):
    first, second, third = (HeldJob(tmp_path, name) for name in ("first", "second", "third"))
    a, b = first.submit(cluster, "-l", "gpu=2"), second.submit(cluster, "-l", "gpu=2")
    ids_a, ids_b = set(first.info()["hgr"].split()), set(second.info()["hgr"].split())
    assert len(ids_a) == len(ids_b) == 2 and not ids_a & ids_b and ids_a | ids_b == ALL_IDS

    c = third.submit(cluster, "-l", "gpu=2")
    time.sleep(3)  # three scheduler runs
    assert cluster.job_states()[c] == "qw" and not third.info_path.exists()
    why = cluster.run("qstat", "-j", c).stdout
    assert "offers only hc:gpu=0" in why, why

    first.release()
    gone(cluster, a)
    assert cluster.allocated_devices(a) == []
    ids_c = set(third.info()["hgr"].split())
    assert ids_c == ids_a  # the ids the first job gave back
    assert set(cluster.allocated_devices(c)) == ids_a
    assert set(cluster.allocated_devices(b)) == ids_b
    second.release()
    third.release()
    gone(cluster, c)


def test_more_gpus_than_the_host_has_are_refused_with_w_e(cluster, tmp_path):
    script = HeldJob(tmp_path, "big").script
    with pytest.raises(SGECommandError, match="no suitable queues"):
        cluster.qsub("-w", "e", "-l", "gpu=5", str(script))
    with pytest.raises(SGECommandError, match="no suitable queues"):  # per slot: 2 x 4
        cluster.qsub("-w", "e", "-pe", "smp", "2", "-l", "gpu=4", str(script))
    verify = cluster.run("qsub", "-w", "v", "-l", "gpu=5", str(script), check=False)
    assert verify.returncode == 1
    reason = verify.stdout + verify.stderr
    assert 'cannot run at host "localhost" because it offers only hc:gpu=4' in reason
    assert not cluster.job_ids()
    # Without -w e, Grid Engine takes the job and it waits forever.
    job_id = cluster.qsub("-l", "gpu=5", str(script))
    time.sleep(2)
    assert cluster.job_states()[job_id] == "qw"


def test_debug_queue_walltime_limit_is_refused_with_w_e(cluster, tmp_path):
    script = str(HeldJob(tmp_path, "long").script)
    with pytest.raises(SGECommandError, match="no suitable queues"):
        cluster.qsub("-w", "e", "-l", "h_rt=1:00:00", "-q", "debug.q", script)
    with pytest.raises(SGECommandError, match="no suitable queues"):
        cluster.qsub("-w", "e", "-l", "h_rt=25:00:00", script)
    verify = cluster.run("qsub", "-w", "v", "-l", "h_rt=1:00:00", "-q", "debug.q", script, check=False)
    assert verify.returncode == 1
    assert 'cannot run in queue "debug.q"' in verify.stdout + verify.stderr
    ok = cluster.run("qsub", "-w", "v", "-l", "h_rt=0:10:0", "-q", "debug.q", script)
    assert "verification: found suitable queue(s)" in ok.stdout
    job_id = cluster.qsub("-l", "h_rt=1:00:00", "-q", "debug.q", script)  # plain qsub takes it
    time.sleep(2)
    assert cluster.job_states()[job_id] == "qw"


def test_w_v_says_a_valid_job_would_run_and_submits_nothing(cluster, tmp_path):
    result = cluster.run(
        "qsub", "-w", "v", "-l", "gpu=2", "-pe", "smp", "2", "-P", "gpujq", str(HeldJob(tmp_path, "ok").script)
    )
    assert result.returncode == 0
    assert "verification: found suitable queue(s)" in result.stdout
    time.sleep(1)
    assert not cluster.job_ids()


def test_pe_slots_and_project_are_accepted_and_unknown_projects_refused(cluster, tmp_path):
    job = HeldJob(tmp_path, "smp")
    job_id = job.submit(cluster, "-pe", "smp", "2", "-P", "gpujq", "-l", "gpu=1")
    info = job.info()
    assert info["nslots"] == "2"
    assert len(info["hgr"].split()) == 2  # gpu is a per-slot consumable: 2 slots x 1
    details = cluster.run("qstat", "-j", job_id).stdout
    assert "project:                    gpujq" in details
    assert "parallel environment:  smp range: 2" in details
    job.release()
    with pytest.raises(SGECommandError, match='the requested project "nosuchproject" does not exist'):
        cluster.qsub("-P", "nosuchproject", str(job.script))


def test_qdel_kills_a_running_job_and_frees_its_gpus(cluster, tmp_path):
    script = tmp_path / "sleeper.sh"
    script.write_text('#!/bin/bash\n#$ -cwd\nsleep 300 &\necho "$$ $!" > pids.tmp\nmv pids.tmp pids\nwait\n')
    job_id = cluster.qsub("-l", "gpu=1", str(script), cwd=tmp_path)
    pids = [
        int(p)
        for p in wait_for(
            lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text().split(), 15, "the job"
        )
    ]
    assert all(Path(f"/proc/{pid}").exists() for pid in pids)
    assert len(cluster.allocated_devices(job_id)) == 1
    cluster.run("qdel", job_id)
    assert cluster.wait_queue_empty(60) and cluster.job_ids() == []
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), 5, "the job's processes to be gone")
    assert cluster.allocated_devices(job_id) == []


def test_rt_F_gets_all_four_gpus_and_the_node_to_itself(cluster, tmp_path):
    before, full, after = (HeldJob(tmp_path, name) for name in ("before", "full", "after"))
    first = before.submit(cluster, "-l", "gpu=1")
    assert before.info()["hgr"] == "0"
    job_id = full.submit(cluster, "-l", "rt_F=1")  # -w e accepts it while the node is busy
    assert "gpu=4" in cluster.run("qstat", "-j", job_id).stdout  # added by the JSV
    time.sleep(2)
    assert cluster.job_states()[job_id] == "qw"  # waits for the whole node
    before.release()
    info = full.info()
    assert info["hgr"] == "0 1 2 3" and info["cuda"] == "0,1,2,3"
    assert cluster.allocated_devices(job_id) == ["0", "1", "2", "3"]
    assert cluster.allocated_devices(first) == []
    other = after.submit(cluster, "-l", "gpu=1")
    time.sleep(2)
    assert cluster.job_states()[other] == "qw"  # and nothing GPU shares it
    full.release()
    assert after.info()["hgr"] == "0"
    after.release()
    with pytest.raises(SGECommandError, match="no suitable queues"):
        cluster.qsub("-w", "e", "-l", "rt_F=2", str(full.script))  # one node only


def test_V_passes_the_submitting_environment(cluster, tmp_path, monkeypatch):
    script = tmp_path / "env.sh"
    script.write_text('#!/bin/bash\n#$ -cwd\npython3 -c \'import os; print(os.environ.get("GPUJQ_PROBE", "unset"))\'\n')
    monkeypatch.setenv("GPUJQ_PROBE", "from-the-submitter")
    with_v = cluster.qsub("-V", str(script), cwd=tmp_path)
    without = cluster.qsub(str(script), cwd=tmp_path)
    gone(cluster, with_v)
    gone(cluster, without)
    assert (tmp_path / f"env.sh.o{with_v}").read_text().strip() == "from-the-submitter"
    assert (tmp_path / f"env.sh.o{without}").read_text().strip() == "unset"


def test_plain_subprocess_calls_reach_the_cluster(cluster, tmp_path):
    assert os.environ["SGE_ROOT"] == cluster.env["SGE_ROOT"]
    assert Path(shutil.which("qsub")).parent == cluster.bin_dir
    submitted = subprocess.run(
        ["qsub", "-terse", "-b", "y", "-o", "/dev/null", "-j", "y", "sleep", "30"],
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = submitted.stdout.strip()
    assert job_id in subprocess.run(["qstat", "-u", "*"], capture_output=True, text=True, check=True).stdout
    subprocess.run(["qdel", job_id], capture_output=True, check=True)
    # A running job qdel-ed under CI's load once took over 10 s to leave the queue.
    assert cluster.wait_queue_empty(60), f"left: {cluster.job_states()}"
