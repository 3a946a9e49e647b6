"""Issue 44, point 3: ``check --submit-test`` compares the batch system's own listing of its queues with the site
file, each difference printed with the file's line: ``sinfo`` (SLURM), ``qstat -Qf`` (PBS), ``bqueues -l`` (LSF),
``qconf -sq`` (Grid Engine). PBS and LSF have no test-only submission, so the listing is what checks their sites:
here against the strict emulators (tests/emulators), with a site file planted wrong both ways. Each batch system's
parser reads its command's real layout and refuses, naming the line, what is not one; the real SLURM's and Grid
Engine's listings are read in tests/sites/test_submit_test.py.

Layouts: sinfo's from Debian's SLURM 22.05 here (``--format=%R|%l|%s|%D|%G``); ``qconf -sq`` from Debian's Grid
Engine 8.1.9 here (queue_conf(5), a backslash continuing a line); ``qstat -Qf`` as OpenPBS's qstat.c
(display_statque, prt_attr) prints it and MetaCentrum's documentation shows it; ``bqueues -l`` as openlava's
bqueues.c (prtQueuesLong) and its limit printing (prtResourceLimit, prtLimit) print it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpujobqueue.batch import batch_system

SINFO = """gpu|1-00:00:00|1-infinite|1|gpu:h200:4
debug|30:00|1|3|gpu:a100:2(S:0-1),shard:4
debug|30:00|1|1|gpu:a100:4
cpu|infinite|2-16|100|(null)
"""
QCONF = """qname                 gpu.q
hostlist              node1 node2
seq_no                0
load_thresholds       np_load_avg=1.75, \\
                      mem_free=1G
h_rt                  24:00:00
qname                 debug.q
hostlist              @allhosts
h_rt                  0:30:0,[@big=2:00:00]
"""
QSTAT_QF = """Queue: default
    queue_type = Route
    total_jobs = 0
    state_count = Transit:0 Queued:0 Held:0 Waiting:0 Running:0 Exiting:0 Begun
\t:0\x20
    resources_max.ngpus = 0
    resources_max.walltime = 720:00:00
    resources_default.walltime = 24:00:00
    enabled = True
    started = True

Queue: gpu
    resources_max.nodect = 16
    resources_max.ngpus = 64
    resources_max.walltime = 12:00:00

"""


def columns(*words: str) -> str:
    """Words in LSF's limit columns: " %-24s" each (the trailing blanks included)."""
    return "".join(f" {word:<24}" for word in words)


BQUEUES_L = "\n".join(
    [
        "QUEUE: normal",
        "  -- For normal low priority jobs, RUNLIMIT 24 hours.  This is the default queue.",
        "",
        "PARAMETERS/STATISTICS",
        "PRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN SSUSP USUSP  RSV",
        " 30    0  Open:Active      -    -    -    -     0     0     0     0     0    0",
        "",
        "DEFAULT LIMITS:",
        columns("RUNLIMIT"),
        columns("60.0 min"),
        "",
        "MAXIMUM LIMITS:",
        columns("CPULIMIT", "RUNLIMIT"),
        columns("20.0 min of hostA", "1440.0 min of hostA"),
        "",
        "USERS:  all users",
        "HOSTS:  all hosts used by the scheduler system",
        "",
        "-" * 79,
        "",
        "QUEUE: gpu",
        "  -- GPU hosts",
        "",
        columns("RUNLIMIT"),
        columns("720.0 min"),
        "",
        "HOSTS:  g1 g2 g3",
        "",
    ]
)


def test_each_batch_systems_listing_is_read_into_its_queues_limits():
    from gpujobqueue.jobs.queue_listing import ListedQueue

    slurm = batch_system("slurm").parse_queue_listing(SINFO)
    assert slurm["gpu"] == ListedQueue("gpu", max_nodes=1, nodes=1, max_walltime=86400, gpus_per_node=4)
    assert slurm["debug"] == ListedQueue("debug", 1, 4, 1800, 4, "2 to 4")  # two kinds of nodes, 4 of them
    assert slurm["cpu"] == ListedQueue("cpu", max_nodes=16, nodes=100, gpus_per_node=0)  # no walltime limit
    sge = batch_system("sge").parse_queue_listing(QCONF)
    assert sge["gpu.q"] == ListedQueue("gpu.q", nodes=2, max_walltime=86400)
    assert sge["debug.q"] == ListedQueue("debug.q", max_walltime=7200)  # its hosts a group; its longest h_rt
    pbs = batch_system("pbs").parse_queue_listing(QSTAT_QF)
    assert pbs["default"] == ListedQueue("default", max_walltime=720 * 3600, job_gpus=0)
    assert pbs["gpu"] == ListedQueue("gpu", max_nodes=16, max_walltime=12 * 3600, job_gpus=64)
    lsf = batch_system("lsf").parse_queue_listing(BQUEUES_L)
    assert lsf["normal"] == ListedQueue("normal", max_walltime=86400)  # the maximum, not the default, run limit
    assert lsf["gpu"] == ListedQueue("gpu", nodes=3, max_walltime=43200)


@pytest.mark.parametrize(
    "batch, text, said",
    [
        ("slurm", "gpu|1-00:00:00|1-infinite|1\n", "sinfo line 1: 'gpu|1-00:00:00|1-infinite|1' is not partition"),
        ("slurm", "gpu|soon|1|1|(null)\n", "sinfo line 1: 'soon' is not a walltime"),
        ("slurm", "gpu|1:00:00|1|1|gpu:99999\n", "sinfo line 1: '99999' is more than the 64"),
        ("slurm", "", "sinfo: it lists no queue"),
        ("sge", "Welcome\nqname gpu.q\n", "qconf -sq line 1: 'Welcome' before the first queue"),
        ("sge", "qname gpu.q\nh_rt forever\n", "qconf -sq queue gpu.q (line 1): 'forever' is not a walltime"),
        ("pbs", "qstat: cannot connect to server\n", "qstat -Qf: it lists no queue"),
        ("pbs", "Queue: a b\n", "qstat -Qf queue a b: 'a b' is not a queue name"),
        ("lsf", "QUEUE: q\n RUNLIMIT\n lots\n", "bqueues -l line 3: no run limit in minutes under RUNLIMIT"),
        ("lsf", "x" * (9 << 20), "bqueues -l: its output is over 8 MiB; not read"),
    ],
)
def test_a_listing_that_is_not_one_is_refused_naming_its_line(batch, text, said):
    from gpujobqueue.jobs.queue_listing import ListingError

    with pytest.raises(ListingError) as refused:
        batch_system(batch).parse_queue_listing(text)
    assert str(refused.value).startswith(said), str(refused.value)


PBS_SITE = """schema: 1
name: {name}
description: A PBS site whose file is wrong both ways
centre: gpujobqueue tests
documentation: https://example.org/pbs
status: generic
scheduler: pbs
node: {{gpus: 4, gpu_model: any, cpus: 8, memory: 32GB}}
gpu_request: {{style: select}}
queues:
  workq: {{max_walltime: "48:00:00", max_nodes: 4}}
  debug: {{max_walltime: "00:30:00", max_nodes: 1}}
default_queue: workq
launcher: {{name: mpiexec-mpich}}
worker: {{mode: per-device}}
network: {{protocol: tcp}}
"""

LSF_SITE = """schema: 1
name: {name}
description: An LSF site whose file is wrong both ways
centre: gpujobqueue tests
documentation: https://example.org/lsf
status: generic
scheduler: lsf
node: {{gpus: 4, gpu_model: any, cpus: 8, memory: 32GB}}
gpu_request: {{style: gpu, gpu_mode: exclusive_process}}
queues:
  normal: {{max_walltime: "48:00:00"}}
  short: {{max_walltime: "00:15:00", max_nodes: 2}}
default_queue: normal
launcher: {{name: blaunch}}
worker: {{mode: per-device}}
network: {{protocol: tcp}}
"""


def listing(site: Path) -> tuple[int, list[dict], list[dict]]:
    """``check --submit-test`` of ``site``: its exit status, its submit test lines and its queue listing lines."""
    done = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", "--json", "--site", str(site), "--submit-test"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    findings = json.loads(done.stdout)["findings"]
    return (
        done.returncode,
        [f for f in findings if f["topic"] == "submit test"],
        [f for f in findings if f["topic"] == "queue listing"],
    )


def where(path: Path, start: str) -> str:
    return f"{path}:{next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(start))}"


@pytest.fixture
def pbs_limits(tmp_path, monkeypatch):
    """A PBS Pro emulator whose workq takes jobs of 2 nodes at most (resources_max.nodect) for 24 hours, and whose
    debug queue 1 hour and 4 GPUs."""
    from fixtures.emulators import PBSEmulator, _on_path

    queues = {
        "workq": {"resources_max": {"walltime": "24:00:00", "nodect": 2}},
        "debug": {"resources_max": {"walltime": "01:00:00", "ngpus": 4}},
    }
    yield from _on_path(PBSEmulator(tmp_path / "pbs-home", "pbspro", queues=queues), monkeypatch)


def test_the_pbs_listing_finds_a_planted_too_loose_and_a_planted_too_strict_limit(pbs_limits, tmp_path):
    site = tmp_path / "wrong.yaml"
    site.write_text(PBS_SITE.format(name="wrong"))
    status, trials, lines = listing(site)
    assert [t["detail"].split(": ")[1:] for t in trials] == [
        ["pbs has no mode that checks a job without submitting it"]
    ]
    workq, debug = where(site, "  workq:"), where(site, "  debug:")
    assert {(f["status"], f["detail"]) for f in lines} == {
        ("fail", "workq: listed with 2 node(s) a job, the file's queues.workq.max_nodes = 4: the machine is stricter "
                 f"than the file says ({workq})"),
        ("fail", "workq: listed with a walltime limit of 24:00:00, the file's queues.workq.max_walltime = "
                 f"48:00:00: the machine is stricter than the file says ({workq})"),
        ("warn", "debug: listed with a walltime limit of 01:00:00, the file's queues.debug.max_walltime = 00:30:00: "
                 f"the machine is looser than the file says ({debug})"),
        ("ok", "2 queue(s) compared with `qstat -Qf`: 0 as the file says"),
    }, lines  # fmt: skip
    assert status == 1
    # A queue the listing lacks is a failure with the file's line.
    site.write_text(PBS_SITE.format(name="wrong").replace("  debug:", "  gone:"))
    status, _, lines = listing(site)
    assert ("fail", f"gone: not in the listing ({where(site, '  gone:')})") in {
        (f["status"], f["detail"]) for f in lines
    }


@pytest.fixture
def lsf_limits(tmp_path, monkeypatch):
    """An LSF emulator whose short queue names one host (HOSTS: h1) and runs 30 minutes, its normal queue 24 hours."""
    from emulators.lsf import DEFAULT_QUEUES
    from fixtures.emulators import LSFEmulator, _on_path

    queues = {name: dict(entry) for name, entry in DEFAULT_QUEUES.items()}
    queues["short"]["hosts"] = ["h1"]
    yield from _on_path(LSFEmulator(tmp_path / "lsf-home", queues=queues), monkeypatch)


def test_the_lsf_listing_finds_a_planted_too_loose_and_a_planted_too_strict_limit(lsf_limits, tmp_path):
    site = tmp_path / "wrong.yaml"
    site.write_text(LSF_SITE.format(name="wrong"))
    status, trials, lines = listing(site)
    assert [t["detail"].split(": ")[1:] for t in trials] == [
        ["lsf has no mode that checks a job without submitting it"]
    ]
    normal, short = where(site, "  normal:"), where(site, "  short:")
    assert {(f["status"], f["detail"]) for f in lines} == {
        ("fail", "normal: listed with a walltime limit of 24:00:00, the file's queues.normal.max_walltime = "
                 f"48:00:00: the machine is stricter than the file says ({normal})"),
        ("fail", "short: listed with 1 node(s) in the queue, the file's queues.short.max_nodes = 2: the machine is "
                 f"stricter than the file says ({short})"),
        ("warn", "short: listed with a walltime limit of 00:30:00, the file's queues.short.max_walltime = 00:15:00: "
                 f"the machine is looser than the file says ({short})"),
        ("ok", "2 queue(s) compared with `bqueues -l`: 0 as the file says"),
    }, lines  # fmt: skip
    assert status == 1
