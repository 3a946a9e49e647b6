"""The core shared by the batch-system emulators (PBS Pro/Torque: ``pbs.py``, LSF: ``lsf.py``).

Stdlib only.  There is no daemon: the emulated machine is a directory (the *home*, named by
the environment variable ``GPUJOBQUEUE_EMULATOR_HOME``) holding ``config.json``, one JSON
record per job and a lock file.  Every command invocation and every job's end runs a
schedule pass; a job runs as a detached *runner* process (``python -m emulators.common run
HOME KEY``) that starts the job script in its own session/process group, enforces the
walltime, executes kill requests, stages the output and records the exit status.

API summary
-----------
``ENV_HOME = "GPUJOBQUEUE_EMULATOR_HOME"``

``Rejected(message: str, exit_status: int)``
    Exception: the command refuses; ``message`` is printed to stderr verbatim (it may hold
    several lines) and the command exits with ``exit_status``.

``EmulatorConfig(flavor="pbspro", server="emulator", host=<short hostname>, ncpus=8,
ngpus=4, mem="32gb", queues={}, default_queue="workq", custom_resources=[],
kill_grace_s=2.0, first_id=1000, hosts=1, extra={})``
    ``EmulatorConfig.load(home) -> EmulatorConfig``, ``config.write(home) -> Path``,
    ``config.mem_bytes`` (int).  ``hosts`` counts identical hosts of ``ncpus``/``ngpus``/``mem``
    for the submission checks only (what qsub/bsub refuse, what can never run): a job the
    emulator runs still runs on its one ``host``.
    ``custom_resources`` is a list of dicts
    ``{"name": str, "type": "string"|"string_array"|"long"|"size"|"boolean",
    "level": "job"|"chunk"}``.  Unknown keys of config.json land in ``extra``.

``JobRecord`` (dataclass, JSON-serialisable)
    id: int, name, user, queue, script (path of the saved copy), workdir (submit dir),
    stdout, stderr (final paths), join ("oe"|"eo"|"n"), env (exported submit env or None),
    ncpus, ngpus, mem_bytes, walltime_s (None = unlimited), state ("queued"|"held"|
    "running"|"exiting"|"finished"), exit_status (None until known), pid (runner's script
    pid), pgid (= the script's session and process group), runner_pid, devices (list of
    int), hosts (list of str), submit_time, start_time, end_time, array (spec string on
    the parent of an array, e.g. "1-10:2"), array_index (int on an array element, None
    otherwise), holds (str of hold letters, "u" user, "s" system/dependency),
    depend (list of [type, key], type in after/afterok/afternotok/afterany), exclusive
    (the job needs the host to itself), run_env,
    run_cwd, run_argv (set by the flavour when the job starts), kill (pending kill request),
    extra (dict, flavour-specific; the core reads ``extra["direct_write"]`` (write the final
    -o/-e files while running instead of spooling) and ``extra["never_runs"]`` (never
    schedule)).  ``record.key`` is "1234" or "1234[3]";
    ``record.is_array_parent``; ``record.active`` (running or exiting).

``JobStore(home)``
    ``config``; ``locked()`` (re-entrant ``fcntl`` lock context); ``next_id() -> int``;
    ``add(job)``; ``get(job_id) -> JobRecord | None`` (int, "1234" or "1234[3]");
    ``jobs() -> list[JobRecord]`` (submit order); ``save(job)``;
    ``subjobs(job_id) -> list[JobRecord]``; ``free() -> (ncpus, ngpus, mem_bytes,
    free_device_ids)``; ``schedule(start_job=None) -> list[JobRecord]`` (FIFO pass; jobs
    that do not fit are passed over and wait; a job is allocated the lowest free GPU ids,
    state running, then ``start_job(store, job)`` runs it, by default ``store.start``);
    ``start(job)`` (``flavor.prepare`` then ``launch``); ``launch(job)`` (spawn the runner);
    ``cancel(job_id, signal_sequence=(SIGTERM, SIGKILL), grace_s=None, reason="cancel")
    -> JobRecord | None``; ``release(job_id)`` (drop the user hold); ``spool_paths(job)``;
    ``job_dir(job) -> Path`` (per-job scratch under the home).

``Flavor`` (base class; a flavour module registered in ``FLAVOR_MODULES`` exposes
``flavor(name) -> Flavor``)
    ``prepare(store, job)`` must set ``job.run_env``, ``run_cwd``, ``run_argv``;
    ``signal_exit_status(signum)``; ``walltime_exit_status(returncode)``;
    ``walltime_message(job, used_s)``; ``finish(store, job)``; ``stage_output`` (bool).

Helpers: ``kill_all(home)``, ``parse_size(text, default_unit="b") -> int``,
``format_size(nbytes) -> str`` (PBS style "32gb"), ``format_hms(seconds)``,
``short_hostname()``, ``load_flavor(config)`` (module from config key ``flavor_module`` or
``FLAVOR_MODULES[config.flavor]``), ``default_argv(script)``,
``main_wrapper(func, prog)`` (runs a command entry point: prints ``Rejected`` and exits).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import getpass
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_HOME",
    "Rejected",
    "EmulatorConfig",
    "JobRecord",
    "JobStore",
    "Flavor",
    "FLAVOR_MODULES",
    "kill_all",
    "parse_size",
    "format_size",
    "format_hms",
    "short_hostname",
    "load_flavor",
    "default_argv",
    "emulator_home",
    "main_wrapper",
]

ENV_HOME = "GPUJOBQUEUE_EMULATOR_HOME"
TESTS_DIR = str(Path(__file__).resolve().parent.parent)

#: flavour name -> module defining ``flavor(name) -> Flavor``
FLAVOR_MODULES = {
    "pbspro": "emulators.pbs",
    "torque": "emulators.pbs",
    "lsf": "emulators.lsf",
}

STATES = ("queued", "held", "running", "exiting", "finished")


class Rejected(Exception):
    """The emulated command refuses: print ``message`` to stderr, exit ``exit_status``."""

    def __init__(self, message: str, exit_status: int = 1):
        super().__init__(message)
        self.message = message
        self.exit_status = exit_status


def short_hostname() -> str:
    """This machine's short host name (what PBS's exec_host / LSF's EXEC_HOST show)."""
    return socket.gethostname().split(".")[0]


def emulator_home(environ: dict[str, str] | None = None, prog: str = "emulator") -> Path:
    """The emulated machine's home directory from ``GPUJOBQUEUE_EMULATOR_HOME``."""
    value = (os.environ if environ is None else environ).get(ENV_HOME)
    if not value:
        raise Rejected(
            f"{prog}: {ENV_HOME} is not set: this is the gpujobqueue test emulator, "
            "it needs the directory of an emulated machine",
            2,
        )
    home = Path(value)
    if not (home / "config.json").is_file():
        raise Rejected(f"{prog}: {home}/config.json is missing: not an emulator home", 2)
    return home


# -- sizes and times -----------------------------------------------------------------------

_SIZE_UNITS = {"": 1, "b": 1, "w": 8, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(text: str, default_unit: str = "b") -> int:
    """Parse a PBS-style size (``32gb``, ``500mb``, ``1024``, ``4kw``) into bytes.

    Units are case-insensitive ``b``, ``kb``, ``mb``, ``gb``, ``tb``, ``pb`` (and ``w``
    words of 8 bytes, ``kw``...), powers of 1024 as in PBS.  A bare number uses
    ``default_unit`` (``b`` for PBS, ``mb`` for LSF).  Raises ``ValueError`` otherwise.
    """
    match = re.fullmatch(r"(\d+)([kmgtp]?)([bw]?)", text.strip().lower())
    if not match:
        raise ValueError(f"bad size {text!r}")
    number, prefix, unit = match.groups()
    if not prefix and not unit:
        unit_text = default_unit.lower()
        if unit_text in ("b", "w"):
            prefix, unit = "", unit_text
        else:
            prefix, unit = unit_text[:-1], unit_text[-1]
    elif prefix and not unit:
        unit = "b"  # "32g" is 32gb: PBS's to_size() (attr_fn_size.c) makes the b optional
    factor = _SIZE_UNITS[prefix] * (8 if unit == "w" else 1)
    return int(number) * factor


def format_size(nbytes: int) -> str:
    """Format bytes the way PBS prints sizes: the largest exact unit, ``32gb``, ``500mb``."""
    for suffix, factor in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if nbytes and nbytes % factor == 0:
            return f"{nbytes // factor}{suffix}"
    return f"{nbytes}b"


def format_hms(seconds: float | None) -> str:
    """``HH:MM:SS`` (hours may exceed 24), as PBS prints walltimes."""
    if seconds is None:
        return "--"
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


# -- configuration --------------------------------------------------------------------------


@dataclass
class EmulatorConfig:
    """The emulated machine: one host with ``ncpus``, ``ngpus`` and ``mem``, some queues; ``hosts``
    such hosts for the submission checks (multi-node jobs of a site configured with two or more)."""

    flavor: str = "pbspro"
    server: str = "emulator"
    host: str = field(default_factory=short_hostname)
    ncpus: int = 8
    ngpus: int = 4
    mem: str = "32gb"
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    default_queue: str = "workq"
    custom_resources: list[dict[str, Any]] = field(default_factory=list)
    kill_grace_s: float = 2.0
    first_id: int = 1000
    hosts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mem_bytes(self) -> int:
        return parse_size(self.mem)

    @classmethod
    def load(cls, home: str | os.PathLike[str]) -> EmulatorConfig:
        data = json.loads((Path(home) / "config.json").read_text())
        names = {f.name for f in dataclasses.fields(cls)}
        extra = {k: v for k, v in data.items() if k not in names}
        known = {k: v for k, v in data.items() if k in names}
        config = cls(**known)
        config.extra.update(extra)
        return config

    def write(self, home: str | os.PathLike[str]) -> Path:
        home = Path(home)
        home.mkdir(parents=True, exist_ok=True)
        data = dataclasses.asdict(self)
        extra = data.pop("extra")
        data.update(extra)
        path = home / "config.json"
        _atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        return path


# -- job records ----------------------------------------------------------------------------


@dataclass
class JobRecord:
    """One job (or one array element, or the parent of an array)."""

    id: int
    name: str = "job"
    user: str = field(default_factory=getpass.getuser)
    queue: str = ""
    script: str = ""
    workdir: str = ""
    stdout: str = ""
    stderr: str = ""
    join: str = "n"
    env: dict[str, str] | None = None
    ncpus: int = 1
    ngpus: int = 0
    mem_bytes: int = 0
    walltime_s: int | None = None
    state: str = "queued"
    exit_status: int | None = None
    pid: int | None = None
    pgid: int | None = None
    runner_pid: int | None = None
    devices: list[int] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    submit_time: float = field(default_factory=time.time)
    start_time: float | None = None
    end_time: float | None = None
    array: str | None = None
    array_index: int | None = None
    holds: str = ""
    depend: list[list[str]] = field(default_factory=list)
    exclusive: bool = False
    run_env: dict[str, str] | None = None
    run_cwd: str | None = None
    run_argv: list[str] | None = None
    kill: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.id}" if self.array_index is None else f"{self.id}[{self.array_index}]"

    @property
    def is_array_parent(self) -> bool:
        return self.array is not None and self.array_index is None

    @property
    def active(self) -> bool:
        return self.state in ("running", "exiting")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def parse_key(job_id: int | str) -> tuple[int, int | None]:
    """``1234`` / ``"1234"`` / ``"1234[3]"`` -> (1234, None|3).  Raises ValueError."""
    if isinstance(job_id, int):
        return job_id, None
    match = re.fullmatch(r"(\d+)(?:\[(\d+)\])?", str(job_id).strip())
    if not match:
        raise ValueError(f"bad job key {job_id!r}")
    return int(match.group(1)), None if match.group(2) is None else int(match.group(2))


def _key_sort(job: JobRecord) -> tuple[int, int]:
    return job.id, -1 if job.array_index is None else job.array_index


# -- flavours -------------------------------------------------------------------------------


def default_argv(script: str) -> list[str]:
    """How a script runs when the flavour has no opinion: its ``#!`` line, else ``bash``."""
    try:
        first = Path(script).read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        first = ""
    if first.startswith("#!"):
        words = first[2:].split(None, 1)
        if words:
            return [words[0], *words[1:], script]
    return ["/bin/bash", script]


class Flavor:
    """Hooks a batch system gives the core.  Subclass in the flavour module."""

    name = "base"
    #: copy spooled output to the final -o/-e paths when the job ends (PBS, LSF default)
    #: instead of writing the final files while the job runs
    stage_output = True

    def prepare(self, store: JobStore, job: JobRecord) -> None:
        """Set ``job.run_env``, ``run_cwd``, ``run_argv`` (called under the lock)."""
        job.run_env = dict(job.env or {})
        job.run_env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, job.devices))
        job.run_cwd = job.workdir or os.path.expanduser("~")
        job.run_argv = default_argv(job.script)

    def signal_exit_status(self, signum: int) -> int:
        """Exit status recorded for a job whose shell died of ``signum``."""
        return 128 + signum

    def walltime_exit_status(self, returncode: int) -> int:
        """Exit status recorded for a job killed for exceeding its walltime."""
        return self.signal_exit_status(-returncode) if returncode < 0 else returncode

    def walltime_message(self, job: JobRecord, used_s: float) -> str | None:
        """Line appended to the job's stderr when the walltime kill starts."""
        return None

    def cancelled_queued_exit_status(self) -> int | None:
        return None

    def finish(self, store: JobStore, job: JobRecord) -> None:
        """Clean up after the job ended (under the lock; state is still ``exiting``)."""


_FLAVOR_CACHE: dict[str, Flavor] = {}


def load_flavor(config: EmulatorConfig) -> Flavor:
    name = config.flavor
    if name not in _FLAVOR_CACHE:
        module_name = config.extra.get("flavor_module") or FLAVOR_MODULES.get(name) or f"emulators.{name}"
        module = importlib.import_module(module_name)
        _FLAVOR_CACHE[name] = module.flavor(name)
    return _FLAVOR_CACHE[name]


# -- processes ------------------------------------------------------------------------------


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not reaped) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _session_members(sid: int) -> list[int]:
    """Processes whose session id is ``sid`` (the job script and everything it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _signal_job(pgid: int | None, signum: int) -> None:
    """Send ``signum`` to the job's process group and to stragglers of its session."""
    if not pgid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
    for pid in _session_members(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


# -- the store ------------------------------------------------------------------------------


class JobStore:
    """All state of one emulated machine, under ``home``."""

    def __init__(self, home: str | os.PathLike[str]):
        self.home = Path(home)
        self.config = EmulatorConfig.load(self.home)
        self.jobs_dir = self.home / "jobs"
        self.spool_dir = self.home / "spool"
        self.scripts_dir = self.home / "scripts"
        self.log_dir = self.home / "logs"
        for folder in (self.jobs_dir, self.spool_dir, self.scripts_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self._lock_depth = 0
        self._lock_fd: int | None = None

    @property
    def flavor(self) -> Flavor:
        return load_flavor(self.config)

    # locking --------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[JobStore]:
        """Hold the machine's lock (re-entrant within this object)."""
        if self._lock_depth == 0:
            fd = os.open(self.home / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd = fd
        self._lock_depth += 1
        try:
            yield self
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0 and self._lock_fd is not None:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
                self._lock_fd = None

    # records --------------------------------------------------------------------------
    def next_id(self) -> int:
        with self.locked():
            path = self.home / "next_id"
            try:
                value = int(path.read_text())
            except (OSError, ValueError):
                value = self.config.first_id
            _atomic_write(path, str(value + 1))
            return value

    def _path(self, key: str) -> Path:
        return self.jobs_dir / f"{key}.json"

    def add(self, job: JobRecord) -> JobRecord:
        with self.locked():
            if self._path(job.key).exists():
                raise ValueError(f"job {job.key} exists")
            self.save(job)
        return job

    def save(self, job: JobRecord) -> None:
        _atomic_write(self._path(job.key), job.to_json())

    def get(self, job_id: int | str) -> JobRecord | None:
        try:
            number, index = parse_key(job_id)
        except ValueError:
            return None
        key = f"{number}" if index is None else f"{number}[{index}]"
        try:
            return JobRecord.from_dict(json.loads(self._path(key).read_text()))
        except (OSError, ValueError):
            return None

    def jobs(self) -> list[JobRecord]:
        found = []
        for path in self.jobs_dir.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                found.append(JobRecord.from_dict(json.loads(path.read_text())))
        return sorted(found, key=_key_sort)

    def subjobs(self, job_id: int | str) -> list[JobRecord]:
        number, _ = parse_key(job_id)
        return [j for j in self.jobs() if j.id == number and j.array_index is not None]

    def job_dir(self, job: JobRecord) -> Path:
        folder = self.home / "run" / job.key
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _stages(self, job: JobRecord) -> bool:
        """Whether this job's output is spooled and copied at the end (not direct write)."""
        return self.flavor.stage_output and not job.extra.get("direct_write")

    def spool_paths(self, job: JobRecord) -> tuple[Path, Path]:
        """Where the running job writes stdout and stderr (the same file when joined)."""
        if not self._stages(job):
            out, err = Path(job.stdout), Path(job.stderr)
        else:
            out, err = self.spool_dir / f"{job.key}.OU", self.spool_dir / f"{job.key}.ER"
        if job.join == "oe":
            err = out
        elif job.join == "eo":
            out = err
        return out, err

    # resources ------------------------------------------------------------------------
    def free(self) -> tuple[int, int, int, list[int]]:
        """Free (ncpus, ngpus, mem_bytes, device ids) of the host now."""
        active = [j for j in self.jobs() if j.active and not j.is_array_parent]
        used_devices = {d for j in active for d in j.devices}
        return (
            self.config.ncpus - sum(j.ncpus for j in active),
            self.config.ngpus - sum(j.ngpus for j in active),
            self.config.mem_bytes - sum(j.mem_bytes for j in active),
            [d for d in range(self.config.ngpus) if d not in used_devices],
        )

    def _dependency_state(self, job: JobRecord) -> str:
        """'ok' (all satisfied), 'wait' or 'never'."""
        verdict = "ok"
        for kind, key in job.depend:
            other = self.get(key)
            if other is None:
                continue  # purged: real servers treat an unknown finished job as satisfied
            if other.is_array_parent:
                subs = self.subjobs(other.id)
                done = all(s.state == "finished" for s in subs) and other.state == "finished"
                failed = any((s.exit_status or 0) != 0 for s in subs)
                started = other.state != "queued"
            else:
                done = other.state == "finished"
                failed = done and other.exit_status != 0
                started = other.start_time is not None or done
            if kind == "after":
                ok, never = started, False
            elif kind == "afterok":
                ok, never = done and not failed, done and failed
            elif kind == "afternotok":
                ok, never = done and failed, done and not failed
            else:  # afterany
                ok, never = done, False
            if never:
                return "never"
            if not ok:
                verdict = "wait"
        return verdict

    def schedule(self, start_job: Callable[[JobStore, JobRecord], None] | None = None) -> list[JobRecord]:
        """One scheduling pass: start, in submit order, every eligible job that fits now.

        Jobs that do not fit are passed over (PBS Pro's and LSF's default, not strict
        ordering) and wait for a later pass.  Returns the jobs started.
        """
        start_job = start_job or JobStore.start
        started = []
        with self.locked():
            self._update_holds()
            ncpus, ngpus, mem, devices = self.free()
            busy = any(j.active for j in self.jobs() if not j.is_array_parent)
            exclusive_running = any(j.active and j.exclusive for j in self.jobs())
            for job in self.jobs():
                if job.state != "queued" or job.is_array_parent:
                    continue
                if exclusive_running or (job.exclusive and busy):
                    continue  # an exclusive job has the host to itself
                if job.ncpus > ncpus or job.ngpus > ngpus or job.mem_bytes > mem:
                    continue  # waits (possibly for ever: a job larger than the host)
                if job.extra.get("never_runs"):
                    continue  # the flavour decided it can never run here (e.g. scatter > 1 host)
                job.devices = devices[: job.ngpus]
                devices = devices[job.ngpus :]
                ncpus, ngpus, mem = ncpus - job.ncpus, ngpus - job.ngpus, mem - job.mem_bytes
                job.hosts = [self.config.host]
                job.state = "running"
                job.start_time = time.time()
                busy = True
                exclusive_running = exclusive_running or job.exclusive
                self.save(job)
                try:
                    start_job(self, job)
                except Exception as error:  # noqa: BLE001 - the job fails to start
                    job.state, job.exit_status, job.end_time = "finished", -1, time.time()
                    job.extra["start_error"] = repr(error)
                    self.save(job)
                else:
                    started.append(job)
                self._update_array_parent(job.id)
        return started

    def estimated_start(self, job: JobRecord) -> float | None:
        """When a queued ``job`` would start, where the configuration asks for estimates (``extra["estimates"]``
        true): the end (start + walltime) of the running jobs, earliest first, until enough is free for it;
        None where it is not queued, estimates are off, or a job it waits for has no walltime."""
        if not self.config.extra.get("estimates") or job.state != "queued":
            return None
        ncpus, ngpus, mem, _ = self.free()
        if job.ncpus <= ncpus and job.ngpus <= ngpus and job.mem_bytes <= mem:
            return time.time()
        running = [other for other in self.jobs() if other.state == "running" and not other.is_array_parent]
        for other in sorted(running, key=lambda other: other.start_time + (other.walltime_s or 10**9)):
            if other.walltime_s is None:
                return None
            ncpus, ngpus, mem = ncpus + other.ncpus, ngpus + other.ngpus, mem + other.mem_bytes
            if job.ncpus <= ncpus and job.ngpus <= ngpus and job.mem_bytes <= mem:
                return other.start_time + other.walltime_s
        return None

    def _update_holds(self) -> None:
        """Drop dependency holds that are satisfied, delete jobs whose never will be,
        and keep ``state`` in line with ``holds`` for waiting jobs."""
        for job in self.jobs():
            if job.state not in ("queued", "held"):
                continue
            changed = False
            if "s" in job.holds and job.depend:
                verdict = self._dependency_state(job)
                if verdict == "ok":
                    job.holds, changed = job.holds.replace("s", ""), True
                elif verdict == "never":
                    job.state, job.end_time, job.holds = "finished", time.time(), ""
                    job.extra["deleted"] = "dependency"
                    self.save(job)
                    for sub in self.subjobs(job.id) if job.is_array_parent else []:
                        sub.state, sub.end_time, sub.holds = "finished", time.time(), ""
                        self.save(sub)
                    continue
            wanted = "held" if job.holds else "queued"
            if job.state != wanted:
                job.state, changed = wanted, True
            if changed:
                self.save(job)
            if job.is_array_parent:
                for sub in self.subjobs(job.id):
                    if sub.state in ("queued", "held") and (sub.holds != job.holds or sub.state != wanted):
                        sub.holds, sub.state = job.holds, wanted
                        self.save(sub)

    def _update_array_parent(self, number: int) -> None:
        parent = self.get(number)
        if parent is None or not parent.is_array_parent:
            return
        subs = self.subjobs(number)
        if subs and all(s.state == "finished" for s in subs):
            state = "finished"
        elif any(s.state != "queued" and s.state != "held" for s in subs):
            state = "running"
        else:
            state = "held" if parent.holds else "queued"
        if state != parent.state:
            parent.state = state
            if state == "running" and parent.start_time is None:
                parent.start_time = time.time()
            if state == "finished":
                parent.end_time = time.time()
                statuses = [s.exit_status for s in subs if s.exit_status is not None]
                parent.exit_status = max(statuses) if statuses else None
            self.save(parent)

    def start(self, job: JobRecord) -> None:
        """Default ``start_job``: the flavour prepares the job, then the runner is launched."""
        self.flavor.prepare(self, job)
        self.save(job)
        self.launch(job)

    def launch(self, job: JobRecord) -> None:
        """Spawn the detached runner process of a job whose ``run_*`` fields are set."""
        pythonpath = os.pathsep.join(filter(None, [TESTS_DIR, os.environ.get("PYTHONPATH")]))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": pythonpath,
            "GPUJOBQUEUE_EMULATOR_RUNNER": f"{self.home}:{job.key}",
        }
        log = open(self.log_dir / f"runner-{job.key}.log", "ab")  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from emulators.common import _main; sys.exit(_main(sys.argv[1:]))",
                    "run",
                    str(self.home),
                    job.key,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.home,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            log.close()
        job.runner_pid = proc.pid
        self.save(job)

    # user actions ---------------------------------------------------------------------
    def release(self, job_id: int | str, hold: str = "u") -> JobRecord | None:
        with self.locked():
            job = self.get(job_id)
            if job is None:
                return None
            job.holds = job.holds.replace(hold, "")
            if job.state == "held" and not job.holds:
                job.state = "queued"
            self.save(job)
            for sub in self.subjobs(job.id) if job.is_array_parent else []:
                sub.holds = sub.holds.replace(hold, "")
                if sub.state == "held" and not sub.holds:
                    sub.state = "queued"
                self.save(sub)
        return job

    def cancel(
        self,
        job_id: int | str,
        signal_sequence: Sequence[int] = (signal.SIGTERM, signal.SIGKILL),
        grace_s: float | None = None,
        reason: str = "cancel",
    ) -> JobRecord | None:
        """Delete a job: a waiting one ends at once; a running one gets ``signal_sequence``
        (to its whole process group), one signal every ``grace_s`` seconds
        (``config.kill_grace_s`` by default), sent by its runner.  An array parent cancels
        all its elements.  Returns the record (None if unknown); does not wait.
        """
        grace = self.config.kill_grace_s if grace_s is None else grace_s
        with self.locked():
            job = self.get(job_id)
            if job is None:
                return None
            if job.is_array_parent:
                for sub in self.subjobs(job.id):
                    self.cancel(sub.key, signal_sequence, grace, reason)
                job = self.get(job.key) or job
                if job.state != "finished" and all(s.state == "finished" for s in self.subjobs(job.id)):
                    job.state, job.end_time = "finished", time.time()
                    self.save(job)
                return job
            if job.state in ("queued", "held"):
                job.state, job.end_time = "finished", time.time()
                job.exit_status = self.flavor.cancelled_queued_exit_status()
                job.extra["deleted"] = reason
                self.save(job)
                self._update_array_parent(job.id)
            elif job.active and job.kill is None:
                job.kill = {
                    "signals": [int(s) for s in signal_sequence],
                    "grace": grace,
                    "reason": reason,
                    "requested": time.time(),
                }
                job.state = "exiting"
                self.save(job)
                if not _pid_alive(job.runner_pid):  # the runner is gone: do its work here
                    for signum in signal_sequence:
                        _signal_job(job.pgid, signum)
                    self._finish(job, self.flavor.signal_exit_status(int(signal_sequence[-1])))
        return job

    def _finish(self, job: JobRecord, exit_status: int | None) -> None:
        """Record the end of a job, release its resources, run a schedule pass."""
        with self.locked():
            job.exit_status = exit_status
            with contextlib.suppress(Exception):
                self.flavor.finish(self, job)
            job.state, job.end_time = "finished", time.time()
            self.save(job)
            self._update_array_parent(job.id)
        self.schedule()


# -- the runner -----------------------------------------------------------------------------


def _stage(source: Path, destination: str, fallback: Path) -> None:
    if not source.exists():
        source.touch()
    try:  # like PBS, the destination directory is not created
        shutil.copyfile(source, destination)
    except OSError:
        # PBS keeps undeliverable output in undelivered/ and mails the user; keep it here
        fallback.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, fallback / Path(destination).name)


def run_job(home: str | os.PathLike[str], key: str) -> int:
    """The runner: run one job to its end (called in the detached runner process)."""
    store = JobStore(home)
    flavor = store.flavor
    job = store.get(key)
    if job is None or job.run_argv is None:
        return 1
    out_path, err_path = store.spool_paths(job)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    err_path.parent.mkdir(parents=True, exist_ok=True)
    out = open(out_path, "ab")  # noqa: SIM115
    err = out if err_path == out_path else open(err_path, "ab")  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            job.run_argv,
            cwd=job.run_cwd,
            env=job.run_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        err.write(f"emulator: cannot start job: {error}\n".encode())
        out.close()
        err.close()
        store._finish(store.get(key) or job, -1)
        return 1
    with store.locked():
        job = store.get(key) or job
        job.pid = job.pgid = proc.pid
        store.save(job)
    deadline = None if job.walltime_s is None else (job.start_time or time.time()) + job.walltime_s
    plan: dict[str, Any] | None = None
    sent = 0
    next_signal_at = 0.0
    returncode = None
    while returncode is None:
        try:
            returncode = proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.time()
        if plan is None:
            current = store.get(key)
            if current is not None and current.kill:
                plan = current.kill
            elif deadline is not None and now >= deadline:
                plan = {
                    "signals": [signal.SIGTERM, signal.SIGKILL],
                    "grace": store.config.kill_grace_s,
                    "reason": "walltime",
                }
                message = flavor.walltime_message(job, now - (job.start_time or now))
                if message:
                    err.write(message.encode() + b"\n")
                    err.flush()
                with store.locked():
                    current = store.get(key) or job
                    current.kill = plan
                    current.state = "exiting"
                    store.save(current)
            next_signal_at = now
        if plan is not None and sent < len(plan["signals"]) and now >= next_signal_at:
            _signal_job(proc.pid, int(plan["signals"][sent]))
            sent += 1
            next_signal_at = now + float(plan["grace"])
    # the job's shell is gone: kill what it left behind, as the MoM / sbatchd does
    _signal_job(proc.pid, signal.SIGKILL)
    out.close()
    if err is not out:
        err.close()
    if plan is not None and plan.get("reason") == "walltime":
        status = flavor.walltime_exit_status(returncode)
    elif returncode < 0:
        status = flavor.signal_exit_status(-returncode)
    else:
        status = returncode
    with store.locked():
        job = store.get(key) or job
        job.state = "exiting"
        store.save(job)
        if store._stages(job):
            undelivered = store.home / "undelivered"
            if job.join == "oe":
                _stage(out_path, job.stdout, undelivered)
            elif job.join == "eo":
                _stage(err_path, job.stderr, undelivered)
            else:
                _stage(out_path, job.stdout, undelivered)
                _stage(err_path, job.stderr, undelivered)
        store._finish(job, status)
    return 0


# -- cleanup --------------------------------------------------------------------------------


def kill_all(home: str | os.PathLike[str]) -> None:
    """Kill every job and runner of the machine at ``home`` (fixture teardown)."""
    home = Path(home)
    if not (home / "config.json").exists():
        return
    store = JobStore(home)
    with store.locked():
        jobs = store.jobs()
        for job in jobs:
            if job.state != "finished":
                job.state, job.end_time = "finished", time.time()
                job.extra["deleted"] = "kill_all"
                store.save(job)
    for job in jobs:
        if job.runner_pid and _pid_alive(job.runner_pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(job.runner_pid, signal.SIGKILL)
        if job.pgid:
            _signal_job(job.pgid, signal.SIGKILL)
    # runners that had not yet recorded their job's process group
    marker = f"GPUJOBQUEUE_EMULATOR_RUNNER={home}:".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "environ").read_bytes():
                pid = int(entry.name)
                for sid in _session_ids(pid):
                    _signal_job(sid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)


def _session_ids(runner_pid: int) -> list[int]:
    """Sessions led by children of a runner (the job scripts it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if int(fields[1]) == runner_pid and int(fields[3]) == int(entry.name):
                found.append(int(entry.name))
    return found


# -- command entry points -------------------------------------------------------------------


def main_wrapper(func: Callable[[list[str]], int], prog: str, argv: Sequence[str] | None = None) -> int:
    """Run a command's ``func(argv) -> exit status``; a ``Rejected`` prints and exits."""
    try:
        status = func(list(sys.argv[1:] if argv is None else argv))
    except Rejected as refusal:
        if refusal.message:
            sys.stderr.write(refusal.message.rstrip("\n") + "\n")
        return refusal.exit_status
    except BrokenPipeError:
        return 1
    sys.stdout.flush()
    return status


def _main(argv: Sequence[str]) -> int:
    if len(argv) == 3 and argv[0] == "run":
        try:
            return run_job(argv[1], argv[2])
        except BaseException:
            # never leave a job "running" for ever: record a failed end (PBS's
            # JOB_EXEC_FAIL1 is -1), then re-raise so that the runner log shows why
            with contextlib.suppress(Exception):
                store = JobStore(argv[1])
                job = store.get(argv[2])
                if job is not None and job.state != "finished":
                    store._finish(job, -1)
            raise
    sys.stderr.write("usage: python -m emulators.common run HOME KEY\n")
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
