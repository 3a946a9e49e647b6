"""GPU-hours held, charged and busy: the meter, the report, its file."""

from __future__ import annotations

import json
import os

import pytest

from gpujobqueue.errors import ValidationError
from gpujobqueue.jobs.usage import Charge, UsageReport, read_usage, write_usage
from gpujobqueue.runtime.usage_watch import UsageMeter, busy_by_job, worker_busy
from gpujobqueue.settings.limits import MAX_USAGE_FILE_BYTES


class Clock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def run_two_jobs(clock: Clock) -> UsageMeter:
    """Two 4-GPU jobs: one queued 9 minutes then busy half the time for an hour, one never starting."""
    meter = UsageMeter(max_gap=10, clock=clock)
    meter.submitted("c-0", "101", nodes=1, gpus=4)
    meter.submitted("c-1", "102", nodes=1, gpus=4)
    clock.tick(9 * 60)
    meter.started("c-0")
    meter.sample({})
    for _ in range(360):  # an hour in 10 s samples: 2 of the 4 GPUs busy
        clock.tick(10)
        meter.sample({"c-0": (2.0, "nvml")})
    meter.ended("c-0")
    meter.ended("c-1")
    return meter


def test_a_job_busy_half_the_time_is_charged_its_hours_and_shown_half_busy():
    clock = Clock()
    report = run_two_jobs(clock).report(cluster="c", batch="slurm")
    first, second = report.jobs
    assert first.held_seconds(report.at) == pytest.approx(3600)
    assert first.gpu_hours(report.at) == pytest.approx(4.0)
    assert first.busy_gpu_hours() == pytest.approx(2.0)
    assert first.queued_seconds(report.at) == pytest.approx(540)
    assert second.started is None and second.gpu_hours(report.at) == 0  # never ran: nothing charged
    assert report.gpus == 4
    assert report.gpu_hours == pytest.approx(4.0)
    assert report.busy_fraction == pytest.approx(0.5)
    summary = report.summary()
    assert summary.startswith("2 jobs, 4 GPUs, 4.00 GPU-h charged, 50 % busy, 69 min queued at most")
    assert "idle at the end" not in summary  # busy until its last sample


def test_idle_gpus_at_the_end_are_counted_and_the_summary_says_what_would_have_released_them():
    clock = Clock()
    meter = UsageMeter(max_gap=10, clock=clock)
    meter.submitted("c-0", "7", nodes=1, gpus=4)
    meter.started("c-0")
    meter.sample({})
    for _ in range(6):  # a minute of work
        clock.tick(10)
        meter.sample({"c-0": (4.0, "tasks")})
    for _ in range(90):  # 15 minutes held with nothing to do
        clock.tick(10)
        meter.sample({"c-0": (0.0, "tasks")})
    meter.ended("c-0")
    report = meter.report(cluster="c", batch="slurm")
    assert report.idle_tail_gpu_hours == pytest.approx(1.0)
    assert "1.00 GPU-h idle at the end: adapt(maximum=...) would have released it" in report.summary()
    adaptive = meter.report(cluster="c", batch="slurm", adaptive=True)
    assert "wait_count" in adaptive.summary()


def test_a_pause_in_sampling_counts_no_longer_than_the_largest_gap():
    clock = Clock()
    meter = UsageMeter(max_gap=10, clock=clock)
    meter.submitted("c-0", "1", nodes=1, gpus=1)
    meter.started("c-0")
    meter.sample({})
    clock.tick(600)  # a stalled loop: ten minutes without a sample
    meter.sample({"c-0": (1.0, "nvml")})
    assert meter.report(cluster="c", batch="slurm").jobs[0].busy_gpu_seconds == pytest.approx(10)


def test_busy_beyond_the_gpus_held_is_capped():
    clock = Clock()
    meter = UsageMeter(clock=clock)
    meter.submitted("c-0", "1", nodes=1, gpus=2)
    meter.started("c-0")
    meter.sample({})
    clock.tick(5)
    meter.sample({"c-0": (7.0, "tasks")})
    assert meter.report(cluster="c", batch="slurm").jobs[0].busy_gpu_seconds == pytest.approx(10)


def test_service_units_follow_the_sites_charge_factor():
    clock = Clock()
    report = run_two_jobs(clock).report(
        cluster="c", batch="pbs", charge=Charge("node-hour", 2.5, "https://example.org (2026-11-24)")
    )
    assert report.node_hours == pytest.approx(1.0)
    assert report.service_units == pytest.approx(2.5)
    assert "2.50 service units (node-hours x 2.5)" in report.summary()
    by_gpu = run_two_jobs(Clock()).report(cluster="c", batch="pbs", charge=Charge("gpu-hour", 1.0))
    assert by_gpu.service_units == pytest.approx(4.0)


@pytest.mark.parametrize(
    "unit, factor", [("core-hour", 1.0), ("node-hour", -1), ("node-hour", float("nan")), ("node-hour", True)]
)
def test_a_charge_of_the_wrong_form_is_refused(unit, factor):
    with pytest.raises(ValidationError, match="charge"):
        Charge(unit, factor)


def test_nothing_measured_says_so_rather_than_zero_busy():
    meter = UsageMeter(clock=Clock())
    meter.submitted("c-0", "1", nodes=1, gpus=4)
    meter.started("c-0")
    report = meter.report(cluster="c", batch="slurm")
    assert report.busy_fraction is None
    assert "busy not measured" in report.summary()


def test_worker_busy_reads_nvml_where_reported_else_executing_threads():
    assert worker_busy({"gpu_utilization": 73, "task_counts": {"executing": 0}}, 4) == (0.73, "nvml")
    assert worker_busy({"task_counts": {"executing": 2, "memory": 10}}, 4) == (0.5, "tasks")
    assert worker_busy({"task_counts": {"executing": 9}}, 4) == (1.0, "tasks")
    assert worker_busy({}, 4) == (0.0, "tasks")
    assert worker_busy({"gpu_utilization": float("nan"), "task_counts": {"executing": "x"}}, 0) == (0.0, "tasks")


def test_busy_by_job_sums_each_jobs_workers():
    workers = [
        {"name": "c-0-0-0", "nthreads": 1, "metrics": {"gpu_utilization": 100}},
        {"name": "c-0-0-1", "nthreads": 1, "metrics": {"gpu_utilization": 50}},
        {"name": "c-1-0-0", "nthreads": 2, "metrics": {"task_counts": {"executing": 1}}},
    ]
    busy = busy_by_job(workers, lambda worker: worker.rsplit("-", 2)[0])
    assert busy == {"c-0": (1.5, "nvml"), "c-1": (0.5, "tasks")}


def test_a_report_round_trips_through_its_file_readable_by_its_owner_only(tmp_path):
    report = run_two_jobs(Clock()).report(cluster="c", batch="slurm", site="polaris", charge=Charge("node-hour", 1.0))
    path = tmp_path / "c-usage.json"
    assert write_usage(report, tmp_path, "c-usage") == str(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert read_usage(path) == report
    data = json.loads(path.read_text())
    assert data["totals"]["gpu_hours"] == pytest.approx(4.0)
    assert data["summary"] == report.summary()
    table = str(read_usage(path))
    assert table.splitlines()[0].split() == ["name", "job_id", "gpus", "queued", "held", "gpu_h", "busy_gpu_h", "busy"]
    assert "never started" in table


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d.update(schema="other"), "not a gpujobqueue usage report"),
        (lambda d: d["jobs"][0].update(gpus=-1), "jobs\\[0\\].gpus"),
        (lambda d: d["jobs"][0].update(name="a\nb"), "jobs\\[0\\].name"),
        (lambda d: d["jobs"][0].update(evil=1), "jobs\\[0\\]"),
        (lambda d: d["jobs"][0].update(started="yesterday"), "jobs\\[0\\].started"),
        (lambda d: d["jobs"][0].update(pool="tpu"), "jobs\\[0\\].pool"),
        (lambda d: d.update(charge={"unit": "node-hour", "factor": 1, "rate": 2}), "charge"),
        (lambda d: d.update(jobs="all"), "jobs"),
    ],
)
def test_a_usage_file_of_the_wrong_form_is_refused_naming_the_value(tmp_path, change, field):
    data = json.loads(run_two_jobs(Clock()).report(cluster="c", batch="slurm").to_json())
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match=field):
        read_usage(path)


def test_a_usage_file_past_the_bound_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as file:
        file.truncate(MAX_USAGE_FILE_BYTES + 1)
    with pytest.raises(ValidationError, match="at most"):
        read_usage(path)
    with pytest.raises(ValidationError, match="cannot read"):
        read_usage(tmp_path / "missing.json")


def test_the_html_table_escapes_names():
    meter = UsageMeter(clock=Clock())
    meter.submitted("<b>c-0</b>", "1", nodes=1, gpus=1)
    text = meter.report(cluster="c", batch="slurm")._repr_html_()
    assert "<b>c-0</b>" not in text and "&lt;b&gt;c-0&lt;/b&gt;" in text


def test_the_report_is_frozen():
    report = UsageMeter(clock=Clock()).report(cluster="c", batch="slurm")
    with pytest.raises(Exception):
        report.cluster = "other"
    assert isinstance(report, UsageReport)


def test_a_sites_charge_for_the_clusters_queue_reaches_the_report():
    from gpujobqueue.runtime.usage_watch import site_charge
    from gpujobqueue.sites import load_site

    charge = site_charge(load_site("frontera"), "rtx")
    assert charge is not None and charge.unit == "node-hour" and charge.factor == 3
    assert site_charge(None, "rtx") is None and site_charge(load_site("frontera"), None) is None
    report = run_two_jobs(Clock()).report(cluster="c", batch="slurm", site="frontera", charge=charge)
    assert report.service_units == pytest.approx(3.0)  # one node-hour held, 3 SU each


def test_cpu_workers_are_counted_in_core_hours_not_gpu_hours():
    # Issue 43, point 8: before, a CPU pool's (or a GPU-less machine's) workers were "0 GPUs, 0.00 GPU-h charged",
    # and examples/cupy_arrays.py's CPU form "2 GPUs, 0.02 GPU-h charged".
    clock = Clock()
    meter = UsageMeter(max_gap=10, clock=clock)
    meter.submitted("c-0", "101", nodes=1, gpus=0, cores=8, pool="cpu")
    meter.started("c-0")
    clock.tick(1800)
    meter.ended("c-0")
    summary = meter.report(cluster="c", batch="local").summary()
    assert summary.startswith("1 job, CPU workers on 8 cores, 4.00 core-h"), summary
    assert "GPU" not in summary, summary
    meter.submitted("c-1", "102", nodes=1, gpus=4, cores=32)
    meter.started("c-1")
    clock.tick(3600)
    meter.ended("c-1")
    report = meter.report(cluster="c", batch="slurm")
    summary = report.summary()
    assert summary.startswith("2 jobs, 4 GPUs, 4.00 GPU-h charged, busy not measured, CPU workers on 8 cores, "), (
        summary
    )
    assert UsageReport.from_json(report.to_json()).jobs[0].cores == 8
