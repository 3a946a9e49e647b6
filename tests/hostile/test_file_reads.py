"""Every file the package reads from a place users control (site files on the site path, usage
reports, the scheduler file) is read only if it is a regular file, within a size bound, and
parsed within a time and memory bound; a bad one is refused naming the file (and the line
where there is one), and a bad site file is reported on its own line while the others work.

Each command runs in a child process with 2 GiB of address space and a time limit, its peak
memory measured, so that a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixtures.measured import measured

from gpujobqueue.jobs.usage import UsageReport, read_usage
from gpujobqueue.runtime.usage_watch import UsageMeter
from gpujobqueue.settings.limits import MAX_SITE_FILE_BYTES, MAX_SITE_VALUES, MAX_USAGE_JOBS, MAX_USAGE_JSON_VALUES

MINIMAL = (Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml").read_text()
CLI = [sys.executable, "-m", "gpujobqueue.cli"]
# A command's own start (python, dask, distributed) takes about 100 MiB and 2 s; a bad file must add little.
MEMORY_BOUND_MIB = 300
TIME_BOUND_S = 30


def site_text(name: str, extra: str = "", replace: tuple[str, str] | None = None) -> str:
    text = MINIMAL.replace("name: minimal", f"name: {name}").replace("minimal-login", f"{name}-login")
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    return text + extra


def plant(folder: Path, label: str) -> Path:
    """Write the bad site file ``label`` into ``folder``; return its path."""
    path = folder / f"{label}.yaml"
    if label == "fifo":
        os.mkfifo(path)
    elif label == "directory":
        path.mkdir()
    else:
        path.write_text(BAD_SITES[label][0](label))
    return path


# label -> (the file's text from its name, or None; words its error says; text on the line it names, or None)
BAD_SITES = {
    "complex-key": (lambda name: site_text(name, "? [a, b]\n: c\n"), "a key must be text", "? [a, b]"),
    "set": (
        lambda name: site_text(name, replace=("gpu_request:\n  style: gpus-per-node", "gpu_request: !!set {style}")),
        "!!set",
        "!!set",
    ),
    "big-number": (
        lambda name: site_text(name, replace=("  gpus: 4", "  gpus: " + "9" * 5000)),
        "a number of 5000 characters",
        "9999",
    ),
    "wrong-type": (
        lambda name: site_text(name, replace=("gpu_request:\n  style: gpus-per-node", "gpu_request: [style]")),
        "gpu_request: ['style'] is not of type 'object'",
        "gpu_request: [style]",
    ),
    "line-break-key": (lambda name: site_text(name, '"bad\\nkey": 1\n'), "bad\\nkey: unknown key", '"bad'),
    "fifo": (None, "not a regular file but a FIFO", None),
    "directory": (None, "not a regular file but a directory", None),
    "oversized": (
        lambda name: site_text(name, "# " + "x" * MAX_SITE_FILE_BYTES + "\n"),
        f"a site file is at most {MAX_SITE_FILE_BYTES >> 10} KiB",
        None,
    ),
    # Just under the size bound, of one-letter values: each a node of the YAML tree, parsed in Python.
    "many-values": (
        lambda name: site_text(name, "notes: [" + "a," * (MAX_SITE_FILE_BYTES // 2 - len(MINIMAL)) + "a]\n"),
        f"more than {MAX_SITE_VALUES} values",
        "notes: [",
    ),
}


def where(label: str, path: Path) -> str:
    """``path:line: `` as the error of the bad file ``label`` at ``path`` starts."""
    make, _, marker = BAD_SITES[label]
    if marker is None:
        return f"{path}: "
    line = next(number for number, text in enumerate(make(label).splitlines(), 1) if marker in text)
    return f"{path}:{line}: "


@pytest.fixture
def site_path(tmp_path):
    """A site path holding one good site, ``good``; the environment that uses it."""
    folder = tmp_path / "sites"
    folder.mkdir()
    (folder / "good.yaml").write_text(site_text("good"))
    env = {**os.environ, "GPUJOBQUEUE_SITE_PATH": str(folder), "HOME": str(tmp_path / "home")}
    return folder, env


def test_the_good_site_loads_and_the_file_of_many_values_is_within_the_size_bound(tmp_path):
    # The bad text files are this one with one thing changed; the file of many values is refused for them alone.
    from gpujobqueue.sites import load_site

    path = tmp_path / "good.yaml"
    path.write_text(site_text("good"))
    assert load_site(path).data["node"]["gpus"] == 4
    assert len(BAD_SITES["many-values"][0]("many-values").encode()) < MAX_SITE_FILE_BYTES  # the values, not the size


@pytest.mark.parametrize("label", list(BAD_SITES))
def test_a_bad_site_file_is_one_line_of_sites_while_the_others_are_listed(site_path, label):
    folder, env = site_path
    path = plant(folder, label)
    words = BAD_SITES[label][1]
    result = measured([*CLI, "sites"], timeout=60, env=env)
    assert not result.timed_out, f"gpujobqueue sites ran past 60 s with {label}"
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    header, *lines = result.stdout.splitlines()
    rows = {line.split()[0]: line for line in lines}
    # The columns by the header's places: a centre's name has spaces (and is whole where no terminal or COLUMNS is).
    assert rows["good"][header.index("BATCH") :].split()[0] == "slurm" and "perlmutter" in rows
    assert rows[label][header.index("STATUS") :].split()[0] == "broken", rows[label]
    broken = [text for text in result.stderr.splitlines() if "broken" in text]
    assert len(broken) == 1 and f"site {label} is broken: {where(label, path)}" in broken[0] and words in broken[0], (
        broken
    )
    assert result.seconds < TIME_BOUND_S and result.max_rss_mib < MEMORY_BOUND_MIB, result


def test_every_bad_site_file_is_its_own_line_of_check_and_the_good_site_still_serves(site_path):
    folder, env = site_path
    paths = [plant(folder, label) for label in BAD_SITES]
    result = measured([*CLI, "check"], timeout=120, env=env)
    assert not result.timed_out, "gpujobqueue check ran past 120 s"
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    failures = [line for line in result.stdout.splitlines() if line.startswith("  FAIL  site files")]
    for path, (label, (_, words, _)) in zip(paths, BAD_SITES.items()):
        assert len([line for line in failures if where(label, path) in line and words in line]) == 1, (label, failures)
        assert len([line for line in result.stderr.splitlines() if f"site {label} is skipped: {path}" in line]) == 1
    assert len(failures) == len(BAD_SITES) and "good.yaml" not in result.stdout + result.stderr
    assert result.max_rss_mib < MEMORY_BOUND_MIB, result

    # GPUCluster() detects the good site among the bad ones (by a host name its pattern matches), and takes it by name.
    code = textwrap.dedent("""
        import socket
        socket.gethostname = lambda: "good-login1"
        from gpujobqueue import GPUCluster
        for site in (None, "good"):
            with GPUCluster(site=site, cpus_per_gpu=1, memory_per_gpu="512MiB") as cluster:
                print(cluster.site.name, type(cluster).__name__)
    """)
    cluster = measured([sys.executable, "-c", code], timeout=120, env=env, cwd=folder.parent)
    assert cluster.returncode == 0, cluster.stderr[-3000:]
    assert cluster.stdout.split("\n")[:2] == ["good SLURMGPUCluster"] * 2, cluster.stdout + cluster.stderr[-3000:]
    assert cluster.max_rss_mib < MEMORY_BOUND_MIB, cluster


def test_check_file_refuses_each_bad_site_file_naming_it(site_path):
    folder, env = site_path
    for label in ("fifo", "complex-key", "big-number"):
        path = plant(folder, label)
        result = measured([*CLI, "check", str(path)], timeout=60, env=env)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (label, result.stderr[-3000:])
        assert [line for line in result.stderr.splitlines() if line] == [
            line for line in result.stderr.splitlines() if line.startswith(f"{path}")
        ]
        assert BAD_SITES[label][1] in result.stderr


# -- usage files ------------------------------------------------------------------------------


def usage_refusal(path: Path) -> str:
    """What ``gpujobqueue usage PATH`` says on standard error; it must refuse within the bounds."""
    result = measured([*CLI, "usage", str(path)], timeout=60)
    assert not result.timed_out, f"gpujobqueue usage {path.name} ran past 60 s"
    assert result.returncode == 1 and "Traceback" not in result.stderr and not result.stdout, result.stderr[-3000:]
    assert result.seconds < TIME_BOUND_S and result.max_rss_mib < MEMORY_BOUND_MIB, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}"), lines
    return lines[0]


def test_a_usage_file_nested_deep_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested deeper than" in usage_refusal(path)


def test_a_usage_file_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"schema": "gpujobqueue-usage/1",\n "cluster": "Universit\xe9"}\n')
    assert usage_refusal(path) == f"Error: {path}:2: not UTF-8 text: byte 0xe9 cannot be decoded"


def test_a_fifo_given_as_a_usage_file_is_refused_without_waiting_for_a_writer(tmp_path):
    path = tmp_path / "usage.json"
    os.mkfifo(path)
    assert usage_refusal(path) == f"Error: {path}: not a regular file but a FIFO"


def test_a_usage_file_of_many_small_values_is_refused_before_it_is_parsed(tmp_path):
    # 24 MiB, under the size bound, of empty objects: json would build 8 million of them (about 600 MB).
    path = tmp_path / "many.json"
    path.write_text('{"schema": "gpujobqueue-usage/1", "jobs": [], "x": [' + ",".join(["{}"] * (8 << 20)) + "]}")
    assert f"more than {MAX_USAGE_JSON_VALUES} JSON values" in usage_refusal(path)


def test_the_value_bound_admits_a_report_of_the_most_jobs_a_meter_keeps():
    meter = UsageMeter(clock=lambda: 1_800_000_000.0)
    for i in range(100):  # names and ids with the separators JSON's structure uses, counted by the bound too
        meter.submitted(f"cluster,with:commas-{i}", f"{1000 + i}.server:15001", nodes=1, gpus=4)
        meter.started(f"cluster,with:commas-{i}")
    text = meter.report(cluster="c", batch="pbs").to_json()
    per_job = sum(map(text.count, "[{,:")) / 100
    assert per_job * MAX_USAGE_JOBS < MAX_USAGE_JSON_VALUES
    assert len(UsageReport.from_json(text).jobs) == 100


def test_a_usage_file_is_still_read(tmp_path):
    meter = UsageMeter(clock=lambda: 1_800_000_000.0)
    meter.submitted("c-0", "101", nodes=1, gpus=4)
    path = tmp_path / "usage.json"
    path.write_text(meter.report(cluster="c", batch="slurm").to_json())
    assert read_usage(path).jobs[0].job_id == "101"
    link = tmp_path / "link.json"
    link.symlink_to(path)  # a link to a regular file is read, as a shared config on the site path may be
    assert read_usage(link).jobs[0].job_id == "101"


# -- the scheduler file -----------------------------------------------------------------------


def test_a_fifo_at_the_scheduler_file_reads_as_not_written_yet(tmp_path):
    path = tmp_path / "scheduler.json"
    os.mkfifo(path)
    code = (
        "from gpujobqueue.jobs.scheduler_job import read_scheduler_address; "
        f"print(read_scheduler_address({str(path)!r}))"
    )
    try:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO as the scheduler file waited for a writer")
    assert result.stdout.strip() == "None", result.stderr[-3000:]
    path.unlink()
    path.write_text(json.dumps({"address": "tcp://10.0.0.1:8786"}))
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == (
        "tcp://10.0.0.1:8786"
    )
