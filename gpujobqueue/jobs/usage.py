"""What a cluster's jobs held of the allocation and how much of it did work (:class:`UsageReport`), written as
JSON next to the job logs and read back by ``gpujobqueue usage``."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import tempfile
from typing import Any, Sequence

from ..errors import ValidationError
from ..security.files import read_bounded_text
from ..security.tls import write_private_file
from ..settings.limits import (
    MAX_CPUS_PER_NODE,
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_USAGE_FILE_BYTES,
    MAX_USAGE_JOBS,
    MAX_USAGE_JSON_VALUES,
)
from ..settings.validation import parse_count

SCHEMA = "gpujobqueue-usage/1"
CHARGE_UNITS = ("node-hour", "gpu-hour")
MEASURED_BY = ("nvml", "tasks")
# A worker busier than this (in GPUs) counts as working when the idle time at the end is measured.
BUSY_THRESHOLD = 0.05
# Idle GPU-hours at the end worth a word: this share of what was charged, and at least this much.
IDLE_SHARE_WORTH_SAYING = 0.1
IDLE_GPU_HOURS_WORTH_SAYING = 0.01
MAX_TEXT = 256  # characters of a name, id or source read back from a file


@dataclasses.dataclass(frozen=True)
class Charge:
    """How the site charges its allocation: ``factor`` service units per ``unit``.

    Parameters
    ----------
    unit : {"node-hour", "gpu-hour"}
        What the factor multiplies.
    factor : float
        Service units per unit.
    source : str
        Where the site file says the factor comes from (its page and date).
    """

    unit: str
    factor: float
    source: str = ""

    def __post_init__(self) -> None:
        if self.unit not in CHARGE_UNITS:
            raise ValidationError("charge.unit", f"expected one of {', '.join(CHARGE_UNITS)}, got {self.unit!r}")
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)) or not self.factor >= 0:
            raise ValidationError("charge.factor", f"expected a number of 0 or more, got {self.factor!r}")
        if not math.isfinite(self.factor):
            raise ValidationError("charge.factor", f"expected a finite number, got {self.factor!r}")


@dataclasses.dataclass(frozen=True)
class JobUsage:
    """One job's use of the allocation. Times are seconds since the epoch.

    Parameters
    ----------
    name : str
        The job's name in the cluster.
    job_id : str or None
        The batch system's id.
    pool : {"gpu", "cpu"}
        The GPU workers' pool or the CPU pool's.
    nodes : int
        Nodes the job held.
    gpus : int
        GPUs the job held (0 for a CPU-pool job).
    submitted, started, ended : float or None
        When it was submitted, when it started running (the batch system said so or its
        first worker connected) and when it ended (None: not yet).
    busy_gpu_seconds : float
        GPU-seconds its workers were busy, as measured.
    last_busy : float or None
        The last time any of its workers was busy.
    measured_by : {"nvml", "tasks"} or None
        How busy was measured: NVML's GPU utilisation, the share of the workers' threads
        executing tasks, or not at all.
    cores : int
        Cores the job held (0 where not recorded, as in reports written before it was).
    """

    name: str
    job_id: str | None
    pool: str
    nodes: int
    gpus: int
    submitted: float | None
    started: float | None = None
    ended: float | None = None
    busy_gpu_seconds: float = 0.0
    last_busy: float | None = None
    measured_by: str | None = None
    cores: int = 0

    def held_seconds(self, now: float) -> float:
        """Wall time the job held its nodes (0 if it never started)."""
        if self.started is None:
            return 0.0
        return max(0.0, (self.ended if self.ended is not None else now) - self.started)

    def queued_seconds(self, now: float) -> float:
        """Time from submission to start (or to its end, or now, if it never started)."""
        if self.submitted is None:
            return 0.0
        until = self.started if self.started is not None else self.ended if self.ended is not None else now
        return max(0.0, until - self.submitted)

    def gpu_hours(self, now: float) -> float:
        """GPU-hours charged: GPUs held times the wall time held."""
        return self.gpus * self.held_seconds(now) / 3600

    def core_hours(self, now: float) -> float:
        """Core-hours held: cores times the wall time held."""
        return self.cores * self.held_seconds(now) / 3600

    def node_hours(self, now: float) -> float:
        """Node-hours held."""
        return self.nodes * self.held_seconds(now) / 3600

    def busy_gpu_hours(self) -> float:
        """GPU-hours its workers were measured busy."""
        return self.busy_gpu_seconds / 3600

    def idle_tail_gpu_hours(self, now: float) -> float:
        """GPU-hours held after its workers were last busy (all of it if they never were)."""
        if self.started is None or not self.gpus:
            return 0.0
        end = self.ended if self.ended is not None else now
        since = max(self.started, self.last_busy) if self.last_busy is not None else self.started
        return self.gpus * max(0.0, end - since) / 3600


@dataclasses.dataclass(frozen=True)
class UsageReport:
    """A cluster's usage at one moment, per job and in total.

    Parameters
    ----------
    cluster : str
        The cluster's name.
    batch : str
        Its batch system.
    site : str or None
        Its site.
    jobs : tuple of JobUsage
        Every job it submitted.
    at : float
        When the report was made (seconds since the epoch).
    charge : Charge or None
        The site's charge factor, where it states one.
    adaptive : bool
        Whether ``adapt()`` was scaling the cluster.
    """

    cluster: str
    batch: str
    site: str | None
    jobs: tuple[JobUsage, ...]
    at: float
    charge: Charge | None = None
    adaptive: bool = False

    @property
    def gpu_jobs(self) -> list[JobUsage]:
        return [job for job in self.jobs if job.pool == "gpu"]

    @property
    def gpus(self) -> int:
        """GPUs held by the jobs that ever started."""
        return sum(job.gpus for job in self.jobs if job.started is not None)

    @property
    def gpu_hours(self) -> float:
        """GPU-hours charged over all jobs."""
        return sum(job.gpu_hours(self.at) for job in self.jobs)

    @property
    def node_hours(self) -> float:
        return sum(job.node_hours(self.at) for job in self.jobs)

    @property
    def _measured(self) -> list[JobUsage]:
        return [job for job in self.gpu_jobs if job.measured_by is not None]

    @property
    def busy_gpu_hours(self) -> float | None:
        """GPU-hours measured busy; None where no job was measured."""
        return sum(job.busy_gpu_hours() for job in self._measured) if self._measured else None

    @property
    def busy_fraction(self) -> float | None:
        """Busy GPU-hours over the GPU-hours charged to the measured jobs."""
        charged = sum(job.gpu_hours(self.at) for job in self._measured)
        return None if charged <= 0 else min(1.0, (self.busy_gpu_hours or 0.0) / charged)

    @property
    def longest_queued_seconds(self) -> float:
        return max((job.queued_seconds(self.at) for job in self.jobs), default=0.0)

    @property
    def idle_tail_gpu_hours(self) -> float:
        return sum(job.idle_tail_gpu_hours(self.at) for job in self._measured)

    @property
    def service_units(self) -> float | None:
        """Node-hours (or GPU-hours) times the site's charge factor; None where it states none."""
        if self.charge is None:
            return None
        hours = self.node_hours if self.charge.unit == "node-hour" else self.gpu_hours
        return hours * self.charge.factor

    def summary(self) -> str:
        """One paragraph: jobs, GPUs, GPU-hours charged, busy share, the CPU workers' cores and core-hours (jobs
        that held no GPU), queue wait, idle at the end."""
        jobs = len(self.jobs)
        parts = [f"{jobs} job{'s' if jobs != 1 else ''}"]
        cpu_jobs = [job for job in self.jobs if not job.gpus]
        if len(cpu_jobs) < jobs:
            busy = self.busy_fraction
            parts += [f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}", f"{_hours(self.gpu_hours)} GPU-h charged"]
            parts.append(f"{busy:.0%} busy".replace("%", " %") if busy is not None else "busy not measured")
        if cpu_jobs:
            cores = sum(job.cores for job in cpu_jobs if job.started is not None)
            core_hours = sum(job.core_hours(self.at) for job in cpu_jobs)
            parts.append(f"CPU workers on {cores} core{'s' if cores != 1 else ''}, {_hours(core_hours)} core-h")
        parts.append(f"{_duration(self.longest_queued_seconds)} queued at most")
        text = ", ".join(parts)
        if self.service_units is not None and self.charge is not None:
            text += f"; {self.service_units:.2f} service units ({self.charge.unit}s x {self.charge.factor:g})"
        idle = self.idle_tail_gpu_hours
        if idle >= IDLE_GPU_HOURS_WORTH_SAYING and idle >= IDLE_SHARE_WORTH_SAYING * self.gpu_hours:
            advice = (
                "a shorter adapt(wait_count=...) would have released it sooner"
                if self.adaptive
                else "adapt(maximum=...) would have released it"
            )
            text += f"; {_hours(idle)} GPU-h idle at the end: {advice}"
        return text

    def table(self) -> str:
        """The jobs as a text table, one line each, and the summary below."""
        return f"{text_table(_COLUMNS, [_cells(job, self.at) for job in self.jobs])}\n\n{self.summary()}"

    def _repr_html_(self) -> str:
        table = html_table(_COLUMNS, [_cells(job, self.at) for job in self.jobs])
        return f"<p>{html.escape(self.summary())}</p>{table}"

    def __str__(self) -> str:
        return self.table()

    def to_json(self) -> str:
        """The report as JSON, totals included for readers other than gpujobqueue."""
        data = {
            "schema": SCHEMA,
            "cluster": self.cluster,
            "batch": self.batch,
            "site": self.site,
            "at": self.at,
            "adaptive": self.adaptive,
            "charge": dataclasses.asdict(self.charge) if self.charge else None,
            "jobs": [dataclasses.asdict(job) for job in self.jobs],
            "totals": {
                "jobs": len(self.jobs),
                "gpus": self.gpus,
                "gpu_hours": self.gpu_hours,
                "core_hours": sum(job.core_hours(self.at) for job in self.jobs),
                "busy_gpu_hours": self.busy_gpu_hours,
                "busy_fraction": self.busy_fraction,
                "longest_queued_seconds": self.longest_queued_seconds,
                "idle_tail_gpu_hours": self.idle_tail_gpu_hours,
                "service_units": self.service_units,
            },
            "summary": self.summary(),
        }
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str, field: str = "usage file") -> UsageReport:
        """Read a report written by :meth:`to_json`, every value checked.

        Raises
        ------
        ValidationError
            Not a usage report, or a value of the wrong form (naming it).
        """
        values = sum(map(text.count, "[{,:"))  # at least the values and keys json would build, strings' own too
        if values > MAX_USAGE_JSON_VALUES:
            raise ValidationError(
                field,
                f"more than {MAX_USAGE_JSON_VALUES} JSON values; a usage report has 23 per job "
                "(gpujobqueue.settings.limits)",
            )
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValidationError(
                field, "nested deeper than Python's JSON reader goes; a usage report is 3 levels deep"
            ) from None
        except ValueError as error:
            raise ValidationError(field, f"not JSON: {error}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValidationError(field, f"not a gpujobqueue usage report (schema {SCHEMA!r})")
        jobs = data.get("jobs")
        if not isinstance(jobs, list) or len(jobs) > MAX_USAGE_JOBS:
            raise ValidationError(f"{field}: jobs", f"expected a list of at most {MAX_USAGE_JOBS} jobs")
        charge = data.get("charge")
        if charge is not None:
            if not isinstance(charge, dict) or set(charge) - {"unit", "factor", "source"}:
                raise ValidationError(f"{field}: charge", "expected unit, factor and source")
            charge = Charge(
                unit=charge.get("unit"),
                factor=charge.get("factor"),
                source=_text(charge.get("source", ""), f"{field}: charge.source"),
            )
        return cls(
            cluster=_text(data.get("cluster"), f"{field}: cluster"),
            batch=_text(data.get("batch"), f"{field}: batch"),
            site=_text(data.get("site"), f"{field}: site", optional=True),
            jobs=tuple(_job_from_dict(job, f"{field}: jobs[{i}]") for i, job in enumerate(jobs)),
            at=_time(data.get("at"), f"{field}: at"),
            charge=charge,
            adaptive=bool(data.get("adaptive", False)),
        )


def read_usage(path: str | os.PathLike) -> UsageReport:
    """Read a usage report from a file: a regular file, its size bounded before it is read.

    Raises
    ------
    ValidationError
        Missing, not a regular file, too large, not UTF-8, or not a usage report.
    """
    text = read_bounded_text(path, MAX_USAGE_FILE_BYTES, "a usage report")
    return UsageReport.from_json(text, field=os.fspath(path))


def write_usage(report: UsageReport, directory: str | os.PathLike, name: str) -> str:
    """Write a report as JSON to a new file of ``directory`` (mode 0600), ``name.json`` or, where that is taken,
    ``name-<random>.json``, and return its path; a file or link already at a name is never written over."""
    directory = os.fspath(directory)
    try:
        return write_private_file(directory, f"{name}.json", report.to_json())
    except FileExistsError:
        descriptor, path = tempfile.mkstemp(prefix=f"{name}-", suffix=".json", dir=directory)
    with os.fdopen(descriptor, "w") as f:
        f.write(report.to_json())
    return path


def text_table(columns: Sequence[str], rows: list[list[str]]) -> str:
    """Rows of cells under their columns' names, each column as wide as its widest cell."""
    rows = [list(columns), *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def html_table(columns: Sequence[str], rows: list[list[str]]) -> str:
    """The same as an HTML table, each cell escaped."""
    head = "".join(f"<th>{column}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_COLUMNS = ("name", "job_id", "gpus", "queued", "held", "gpu_h", "busy_gpu_h", "busy")


def _cells(job: JobUsage, now: float) -> list[str]:
    charged = job.gpu_hours(now)
    measured = job.measured_by is not None and job.pool == "gpu"
    busy = f"{min(1.0, job.busy_gpu_hours() / charged):.0%}" if measured and charged > 0 else "-"
    return [
        job.name,
        job.job_id or "-",
        str(job.gpus),
        _duration(job.queued_seconds(now)),
        _duration(job.held_seconds(now)) if job.started is not None else "never started",
        _hours(charged),
        _hours(job.busy_gpu_hours()) if measured else "-",
        busy,
    ]


def _hours(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _text(value: Any, field: str, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT or not value.isprintable():
        raise ValidationError(field, f"expected printable text of at most {MAX_TEXT} characters")
    return value


def _time(value: Any, field: str, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < 1e11):
        raise ValidationError(field, "expected seconds since the epoch")
    return float(value)


def _job_from_dict(data: Any, field: str) -> JobUsage:
    names = {f.name for f in dataclasses.fields(JobUsage)}
    if not isinstance(data, dict) or set(data) - names:
        raise ValidationError(field, f"expected a job's record with {', '.join(sorted(names))}")
    busy = data.get("busy_gpu_seconds", 0.0)
    if isinstance(busy, bool) or not isinstance(busy, (int, float)) or not 0 <= busy < 1e12:
        raise ValidationError(f"{field}.busy_gpu_seconds", "expected a number of seconds")
    if data.get("pool") not in ("gpu", "cpu"):
        raise ValidationError(f"{field}.pool", "expected gpu or cpu")
    if data.get("measured_by") not in (None, *MEASURED_BY):
        raise ValidationError(f"{field}.measured_by", f"expected null or one of {', '.join(MEASURED_BY)}")
    return JobUsage(
        name=_text(data.get("name"), f"{field}.name"),
        job_id=_text(data.get("job_id"), f"{field}.job_id", optional=True),
        pool=data["pool"],
        nodes=parse_count(f"{field}.nodes", data.get("nodes"), maximum=MAX_NODES, text=False),
        gpus=parse_count(f"{field}.gpus", data.get("gpus"), maximum=MAX_NODES * MAX_GPUS_PER_NODE, text=False),
        submitted=_time(data.get("submitted"), f"{field}.submitted", optional=True),
        started=_time(data.get("started"), f"{field}.started", optional=True),
        ended=_time(data.get("ended"), f"{field}.ended", optional=True),
        busy_gpu_seconds=float(busy),
        last_busy=_time(data.get("last_busy"), f"{field}.last_busy", optional=True),
        measured_by=data.get("measured_by"),
        cores=parse_count(f"{field}.cores", data.get("cores", 0), maximum=MAX_NODES * MAX_CPUS_PER_NODE, text=False),
    )
