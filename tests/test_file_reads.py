"""Every file the package reads from a place users control (usage reports, the scheduler file)
is read only if it is a regular file, within a size bound, and parsed within a time and memory
bound; a bad one is refused naming the file (and the line where there is one).

Each command runs in a child process with 2 GiB of address space and a time limit, its peak
memory measured, so that a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.measured import measured

from gpujobqueue.limits import MAX_USAGE_JOBS, MAX_USAGE_JSON_VALUES
from gpujobqueue.usage import UsageReport, read_usage
from gpujobqueue.usage_meter import UsageMeter

CLI = [sys.executable, "-m", "gpujobqueue.cli"]
# A command's own start (python, dask, distributed) takes about 100 MiB and 2 s; a bad file must add little.
MEMORY_BOUND_MIB = 300
TIME_BOUND_S = 30


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
    code = f"from gpujobqueue.scheduler_job import read_scheduler_address; print(read_scheduler_address({str(path)!r}))"
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
