"""Sizes are bounded before anything is allocated; odd numbers and files get an error naming
the field, not a raw exception; values that were accepted but wrong are refused.

Cases that exhausted the host before (a billion GPUs, a billion-laughs YAML, a backtracking
account pattern) run in a child process with 2 GiB of address space and a time limit, so a
regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue import SLURMGPUCluster, ValidationError
from gpujobqueue.errors import GPUJobQueueError
from gpujobqueue.plan import site_problems
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import SiteConfigError, detect_site, load_site, site_table

MINIMAL = (Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml").read_text()
ADDRESS_SPACE = 2 * 2**30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def bounded(args: list[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """Run a command with 2 GiB of address space; a run past ``timeout`` counts as a hang."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, preexec_fn=_limit_memory, **kwargs)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} ran past {timeout} s")


def refusals(cases: list[tuple[str, dict]], timeout: float = 60) -> dict[str, str]:
    """Each case's keywords rendered for SLURM in one bounded child process: the field its
    GPUJobQueueError names, or the name of whatever else it raised, or 'accepted'."""
    code = textwrap.dedent("""
        import json, sys
        from gpujobqueue.plan.scripts import job_script_for
        out = {}
        for label, keywords in json.loads(sys.stdin.read()):
            try:
                job_script_for("slurm", keywords, name="w")
                out[label] = "accepted"
            except Exception as error:
                out[label] = getattr(error, "field", None) or type(error).__name__
            print(json.dumps(out), flush=True)
    """)
    result = bounded([sys.executable, "-c", code], timeout=timeout, input=json.dumps(cases))
    lines = result.stdout.strip().split("\n")
    return json.loads(lines[-1]) if lines[-1] else {"(none)": result.stderr[-2000:]}


# -- 6: every size is bounded ----------------------------------------------------------------

HUGE = [
    ("gpus_per_node", {"gpus_per_node": 10**9}),
    ("nodes", {"nodes": 10**9, "launcher": "srun"}),
    ("cores", {"cores": 10**9}),
    ("cpus_per_gpu", {"cpus_per_gpu": 10**9}),
    ("job_cpu", {"job_cpu": 10**9}),
    ("nthreads", {"nthreads": 10**9}),
    ("memory", {"memory": "1000000 TiB"}),
    ("memory_per_gpu", {"memory_per_gpu": "100 PiB"}),
    ("memory_limit", {"memory_limit": "100 PiB"}),
    ("rmm_pool_size", {"rmm_pool_size": "100 PiB"}),
    ("walltime", {"walltime": "99999999999:00:00"}),
    ("death_timeout", {"death_timeout": 10**12}),
    ("job_script_prologue", {"job_script_prologue": ["true"] * 100_000}),
]


def test_every_size_is_bounded_before_anything_is_allocated():
    started = time.monotonic()
    out = refusals(HUGE, timeout=60)
    assert out == {label: label for label, _ in HUGE}
    assert time.monotonic() - started < 30


def test_render_refuses_a_trillion_gpus_and_a_million_element_array(tmp_path):
    # The command line names its options, not the keywords (gpus_per_node=) they mirror.
    for options, field in (
        (["--gpus-per-node", "1000000000000"], "--gpus-per-node: "),
        (["--job-array", "1000000"], "--job-array: "),
        (["--nodes", "1000000000000", "--launcher", "srun"], "--nodes: "),
    ):
        result = bounded(
            [sys.executable, "-m", "gpujobqueue.cli", "render", "slurm", "--cores", "1", "--memory", "1GB", *options],
            timeout=60,
            cwd=tmp_path,
        )
        assert result.returncode == 2 and field in result.stderr and "Traceback" not in result.stderr, result.stderr[
            -2000:
        ]
        assert not result.stdout


def test_the_largest_array_the_package_submits_renders():
    script = job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}, name="w", array_jobs=1000)
    assert "#SBATCH --array=1-1000" in script


def test_scale_refuses_more_jobs_than_a_cluster_holds(tmp_path):
    code = textwrap.dedent("""
        from gpujobqueue import SLURMGPUCluster
        with SLURMGPUCluster(cpus_per_gpu=1, memory_per_gpu="512MiB", queue="gpu") as cluster:
            try:
                cluster.scale(10**12)
            except Exception as error:
                print(type(error).__name__, getattr(error, "field", ""), len(cluster.worker_spec))
    """)
    result = bounded([sys.executable, "-c", code], timeout=60, cwd=tmp_path)
    assert result.stdout.split() == ["ValidationError", "n", "0"], result.stdout + result.stderr[-2000:]


def write_site(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(text.replace("name: minimal", f"name: {name}"))
    return path


BILLION_LAUGHS = (
    "\n".join(
        ["schema: 1", "a: &a [x, x, x, x, x, x, x, x, x, x]"]
        + [
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
            f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
            for i in range(9)
        ]
    )
    + "\n"
)


@pytest.mark.parametrize(
    "label, text, words",
    [
        ("billion-laughs", BILLION_LAUGHS, "alias"),
        (
            "one-alias",
            MINIMAL.replace("  gpus: 4", "  gpus: &four 4").replace("    max_nodes: 4", "    max_nodes: *four"),
            "alias",
        ),
        ("deep", MINIMAL + "extra: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than"),
        ("huge", MINIMAL + "# " + "x" * (2 << 20) + "\n", "KiB"),
    ],
    ids=["billion-laughs", "one-alias", "deep", "huge"],
)
def test_check_refuses_site_files_that_would_exhaust_the_host(tmp_path, label, text, words):
    path = write_site(tmp_path, label, text)
    started = time.monotonic()
    result = bounded([sys.executable, "-m", "gpujobqueue.cli", "check", str(path)], timeout=60)
    assert result.returncode == 1 and words in result.stderr and str(path) in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 20


# -- 7: raw exceptions become errors naming the field ----------------------------------------


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"memory_per_gpu": math.nan}, "memory_per_gpu"),
        ({"memory_per_gpu": math.inf}, "memory_per_gpu"),
        ({"memory": math.inf}, "memory"),
        ({"memory_per_gpu": "1e400"}, "memory_per_gpu"),
        ({"walltime_margin": math.inf}, "walltime_margin"),
        ({"walltime_margin": math.nan}, "walltime_margin"),
        ({"death_timeout": math.inf}, "death_timeout"),
        ({"death_timeout": math.nan}, "death_timeout"),
        ({"gpus_per_node": "9" * 5000}, "gpus_per_node"),
        ({"allocation_variable": ["CUDA_VISIBLE_DEVICES"]}, "allocation_variable"),
    ],
    ids=lambda v: str(v) if not isinstance(v, dict) else "-".join(f"{k}={str(x)[:12]}" for k, x in v.items()),
)
def test_an_odd_number_is_refused_naming_the_field(keywords, field):
    with pytest.raises(GPUJobQueueError) as info:
        job_script_for("slurm", keywords, name="w")
    assert info.value.field == field, info.value


def test_render_refuses_an_overflowing_size_naming_it():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpujobqueue.cli",
            "render",
            "slurm",
            "--cpus-per-gpu",
            "1",
            "--memory-per-gpu",
            "1e400",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "--memory-per-gpu: " in result.stderr, result.stderr


@pytest.mark.parametrize("below", ["", "logs"])
def test_a_log_directory_that_cannot_be_a_directory_is_refused_when_the_cluster_is_made(tmp_path, below):
    (tmp_path / "passwd").write_text("root:x:0:0\n")
    log_directory = str(tmp_path / "passwd" / below) if below else str(tmp_path / "passwd")
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster(queue="gpu", cpus_per_gpu=1, memory_per_gpu="512MiB", log_directory=log_directory).close()
    assert info.value.field == "log_directory"


def test_a_site_file_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes(
        MINIMAL.replace("name: minimal", "name: latin").encode() + "centre: Universit\xe9\n".encode("latin-1")
    )
    with pytest.raises(SiteConfigError) as info:
        load_site(path)
    assert "UTF-8" in str(info.value) and f"{path}:{MINIMAL.count(chr(10)) + 1}" in str(info.value)


@pytest.fixture
def site_path(tmp_path, monkeypatch):
    folder = tmp_path / "sites"
    folder.mkdir()
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return folder


def test_one_broken_file_on_the_site_path_does_not_break_the_others(site_path):
    write_site(site_path, "minimal", MINIMAL)
    write_site(site_path, "deep", MINIMAL + "extra: " + "[" * 5000 + "]" * 5000 + "\n")
    (site_path / "latin.yaml").write_bytes(b"name: latin\ncentre: Universit\xe9\n")
    rows = {row["name"]: row for row in site_table()}
    assert rows["minimal"]["scheduler"] == "slurm"
    assert rows["deep"]["status"].startswith("broken") and rows["latin"]["status"].startswith("broken")
    assert detect_site(["minimal-login3"]).name == "minimal"
    assert detect_site(["elsewhere"]) is None
    result = subprocess.run([sys.executable, "-m", "gpujobqueue.cli", "sites"], capture_output=True, text=True)
    assert result.returncode == 0 and "minimal" in result.stdout and "broken" in result.stdout, result.stderr


@pytest.mark.parametrize("pattern", ["(a|aa)+", "(a+)+", "(\\w*)*x", "a*a*a*a*a*b", "(a)\\1"])
def test_a_site_pattern_that_could_backtrack_for_ever_is_refused(tmp_path, pattern):
    text = MINIMAL + f"account:\n  required: true\n  pattern: '{pattern}'\n"
    path = write_site(tmp_path, "slow", text)
    code = f"""
import sys
from gpujobqueue import SLURMGPUCluster
try:
    SLURMGPUCluster.parse_keywords({{"site": {str(path)!r}, "account": "a" * 40 + "b"}})
except Exception as error:
    print(type(error).__name__, getattr(error, "key", ""))
"""
    started = time.monotonic()
    result = bounded([sys.executable, "-c", code], timeout=20)
    assert result.stdout.split() == ["SiteConfigError", "account.pattern"], result.stdout + result.stderr[-2000:]
    assert time.monotonic() - started < 15


def test_a_safe_account_pattern_still_matches():
    path = Path(__file__).parents[2] / "site-configs" / "perlmutter.yaml"
    assert load_site(path).data["account"]["pattern"]
    SLURMGPUCluster.parse_keywords({"site": str(path), "account": "m1234_g"})
    with pytest.raises(SiteConfigError):
        SLURMGPUCluster.parse_keywords({"site": str(path), "account": "nope!"[:4]})


# -- 8: accepted but wrong ---------------------------------------------------------------------


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge"])
@pytest.mark.parametrize(
    "needles, field",
    [
        ([""], "job_directives_skip[0]"),
        (["  "], "job_directives_skip[0]"),
        (["#"], "job_directives_skip"),
        (["-"], "job_directives_skip"),
    ],
)
def test_a_skip_can_never_drop_the_walltime(batch, needles, field):
    with pytest.raises(ValidationError) as info:
        job_script_for(batch, with_job_size({"job_directives_skip": needles}), name="w")
    assert info.value.field == field


def test_a_skipped_walltime_may_be_replaced_by_an_extra_directive():
    script = job_script_for(
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "512MiB",
            "job_directives_skip": ["--time"],
            "job_extra_directives": ["--time=00:10:00"],
        },
        name="w",
    )
    assert "#SBATCH --time=00:10:00" in script.split("\n")


@pytest.mark.parametrize(
    "walltime, accepted",
    [
        ("99999999999:00:00", False),
        ("366-00:00:00", False),
        ("8785:00:00", False),
        ("365-00:00:00", True),
        ("7-00:00:00", True),
    ],
)
def test_walltime_is_at_most_a_year(walltime, accepted):
    if accepted:
        assert "#SBATCH --time=" in job_script_for(
            "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": walltime}, name="w"
        )
    else:
        with pytest.raises(ValidationError) as info:
            job_script_for("slurm", {"walltime": walltime}, name="w")
        assert info.value.field == "walltime"


@pytest.mark.parametrize(
    "variable, accepted",
    [
        ("PATH", False),
        ("HOME", False),
        ("LD_PRELOAD", False),
        ("PYTHONPATH", False),
        ("BASH_ENV", False),
        ("CUDA_VISIBLE_DEVICES", True),
        ("ROCR_VISIBLE_DEVICES", True),
        ("SGE_HGR_gpu", True),
        ("SLURM_JOB_GPUS", True),
        ("ZE_AFFINITY_MASK", True),
    ],
)
def test_allocation_variable_names_a_device_list(variable, accepted):
    keywords = {"allocation_variable": variable, "worker_mode": "per-device"}
    if accepted:
        assert f'allocated="${{{variable}:-}}"' in job_script_for("slurm", with_job_size(keywords), name="w")
    else:
        with pytest.raises(ValidationError) as info:
            job_script_for("slurm", keywords, name="w")
        assert info.value.field == "allocation_variable"


@pytest.mark.parametrize(
    "label, edit, key",
    [
        ("environment-newline", lambda t: t + 'environment:\n  FOO: "a\\nb"\n', "environment.FOO"),
        ("prologue-line-separator", lambda t: t + 'prologue:\n  - "module load cuda\\u2028rm -rf ~"\n', "prologue"),
        (
            "max-walltime-25-99",
            lambda t: t.replace('max_walltime: "00:30:00"', 'max_walltime: "25:99"'),
            "queues.debug.max_walltime",
        ),
        (
            "local-directory-substitution",
            lambda t: t.replace("  mode: per-device", '  mode: per-device\n  local_directory: "$(id)"'),
            "worker.local_directory",
        ),
        (
            "walltime-over-a-year",
            lambda t: t.replace('max_walltime: "1-00:00:00"', 'max_walltime: "400-00:00:00"'),
            "queues.gpu.max_walltime",
        ),
    ],
)
def test_check_refuses_what_use_refuses(tmp_path, label, edit, key):
    path = write_site(tmp_path, label, edit(MINIMAL))
    with pytest.raises(GPUJobQueueError):  # refused when used...
        SLURMGPUCluster.parse_keywords({"site": str(path)})
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "check", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 1 and f": {key}: " in result.stderr, result.stdout + result.stderr  # ...and by check
    assert site_problems(path)


def test_check_still_accepts_every_shipped_site():
    shipped = sorted((Path(__file__).parents[2] / "site-configs").glob("[!_]*.yaml"))
    assert shipped and all(site_problems(path) == [] for path in shipped), {
        str(p): site_problems(p) for p in shipped if site_problems(p)
    }


# -- 8: a job that can never start says why ---------------------------------------------------


def fake_slurm(folder: Path, reason: str) -> Path:
    """sbatch, squeue and scancel stand-ins: the job is accepted, then pends for ``reason``."""
    folder.mkdir()
    log = folder / "calls"
    commands = {
        "sbatch": 'echo "sbatch $*" >> {log}; echo "Submitted batch job 4242"',
        "squeue": 'echo "squeue $*" >> {log}; grep -q "^scancel" {log} || echo "4242|PENDING|{reason}|"',
        "scancel": 'echo "scancel $*" >> {log}',
        "scontrol": "exit 1",
        "sacct": "exit 1",
    }
    for name, body in commands.items():
        path = folder / name
        path.write_text("#!/bin/bash\n" + body.format(log=log, reason=reason) + "\n")
        path.chmod(0o755)
    return log


@pytest.mark.parametrize("reason", ["PartitionTimeLimit", "PartitionConfig", "QOSMaxWallDurationPerJobLimit"])
def test_a_job_pending_for_a_reason_that_never_clears_fails_wait_for_workers_and_is_cancelled(
    tmp_path, monkeypatch, reason
):
    import dask

    from gpujobqueue.jobs.job_status import JobFailedError

    log = fake_slurm(tmp_path / "bin", reason)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    with dask.config.set({"gpujobqueue.job-poll-interval": "1s"}):
        with SLURMGPUCluster(memory_per_gpu="512MiB", queue="gpu", cores=8) as cluster:
            cluster.scale(1)
            started = time.monotonic()
            with pytest.raises(JobFailedError) as info:
                cluster.wait_for_workers(1, timeout=30)
            assert time.monotonic() - started < 15
            assert reason in str(info.value) and "4242" in str(info.value)
            assert not cluster.worker_spec
    assert "scancel 4242" in log.read_text()


# -- intervals and counts of the cluster's own loops: bounded, refused before anything starts --

THIRTY_DIGITS = "1" * 30

LOOP_SETTINGS = [
    ("gpujobqueue.job-poll-interval", 0),  # was 150 squeue a second against a shared controller
    ("gpujobqueue.job-poll-interval", "100ms"),
    ("gpujobqueue.job-poll-interval", "2h"),
    ("gpujobqueue.job-poll-interval", THIRTY_DIGITS + "s"),
    ("gpujobqueue.job-poll-interval", "soon"),
    ("gpujobqueue.job-poll-interval", True),
    ("gpujobqueue.query-timeout", "100ms"),
    ("gpujobqueue.adapt.interval", "1ms"),
    ("gpujobqueue.adapt.interval", THIRTY_DIGITS),
    ("gpujobqueue.adapt.wait-count", 0),
    ("gpujobqueue.adapt.wait-count", 10**30),
    ("gpujobqueue.replace.max-failures", 10**30),
    ("gpujobqueue.usage.sample-interval", "1ms"),
    ("gpujobqueue.usage.sample-interval", THIRTY_DIGITS + "s"),
    ("gpujobqueue.usage.sample-interval", "nonsense"),
]


@pytest.mark.parametrize("key, value", LOOP_SETTINGS)
def test_an_unbounded_interval_or_count_in_dask_config_is_refused_before_the_cluster_starts(
    key, value, tmp_path, monkeypatch
):
    import dask

    from gpujobqueue import LocalGPUCluster

    monkeypatch.chdir(tmp_path)
    with dask.config.set({key: value}), pytest.raises(ValidationError) as raised:
        LocalGPUCluster(gpus_per_node=1, devices=["0"], log_directory=str(tmp_path / "logs"))
    assert raised.value.field == key
    assert not list(tmp_path.iterdir()), "nothing was written: the cluster never started"


@pytest.mark.parametrize(
    "key, value, seconds",
    [
        ("gpujobqueue.job-poll-interval", "1s", 1.0),
        ("gpujobqueue.job-poll-interval", "1h", 3600.0),
        ("gpujobqueue.adapt.interval", "100ms", 0.1),
        ("gpujobqueue.usage.sample-interval", "100ms", 0.1),
    ],
)
def test_the_bounds_of_an_interval_are_accepted(key, value, seconds):
    import dask

    from gpujobqueue.settings import intervals

    getter = {
        "gpujobqueue.job-poll-interval": intervals.job_poll_interval,
        "gpujobqueue.adapt.interval": intervals.adapt_interval,
        "gpujobqueue.usage.sample-interval": intervals.usage_sample_interval,
    }[key]
    with dask.config.set({key: value}):
        assert getter() == seconds


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"interval": "1ms"}, "interval"),
        ({"interval": 10**30}, "interval"),
        ({"interval": "soon"}, "interval"),
        ({"wait_count": 10**30}, "wait_count"),
        ({"wait_count": 0}, "wait_count"),
        ({"minimum_jobs": 10**30}, "minimum_jobs"),
        ({"maximum_jobs": 10**30}, "maximum_jobs"),
        ({"minimum_gpus": 10**30}, "minimum_gpus"),
        ({"minimum": -1}, "minimum"),
        ({"maximum_gpus": 2.5}, "maximum_gpus"),
    ],
)
def test_adapt_refuses_an_unbounded_interval_or_count_naming_it(keywords, field):
    from gpujobqueue import LocalGPUCluster

    with LocalGPUCluster(gpus_per_node=1, devices=["0"]) as cluster:
        with pytest.raises(ValidationError) as raised:
            cluster.adapt(**keywords)
        assert raised.value.field == field
        assert cluster._adaptive is None, "adapt() did not start"


# -- files: a pipe, a device or a folder where a file is read is refused at once, not waited on --

PIPE_READERS = {
    "site file": "from gpujobqueue.sites import load_site; load_site(sys.argv[1])",
    "usage report": "from gpujobqueue.jobs.usage import read_usage; read_usage(sys.argv[1])",
}


@pytest.mark.parametrize("reader", PIPE_READERS)
def test_a_file_that_is_a_pipe_is_refused_at_once(tmp_path, reader):
    pipe = tmp_path / "named.yaml"
    os.mkfifo(pipe)  # no writer: opening it to read waits for one
    code = "\n".join(
        ["import sys", "try:", f"    {PIPE_READERS[reader]}", "except Exception as error:", "    print(error)"]
    )
    result = bounded([sys.executable, "-c", code, str(pipe)], timeout=30)
    assert result.returncode == 0, result.stderr
    assert "not a regular file" in result.stdout and str(pipe) in result.stdout, result.stdout


def test_a_pipe_on_the_site_path_is_one_broken_site_not_a_hang(site_path):
    write_site(site_path, "minimal", MINIMAL)
    os.mkfifo(site_path / "pipe.yaml")
    result = bounded([sys.executable, "-m", "gpujobqueue.cli", "sites"], timeout=30)
    assert result.returncode == 0 and "minimal" in result.stdout, result.stderr
    assert any(line.split()[:1] == ["pipe"] and "broken" in line for line in result.stdout.splitlines())
    assert "pipe.yaml" in result.stderr and "not a regular file" in result.stderr, result.stderr
