"""What a job script asks of its batch system, read from its header, and two such requests compared.

Each directive line of the header (``#SBATCH``, ``#PBS``, ``#BSUB``, ``#$``) is split into options
as the batch system reads them (``-p gpu`` and ``--partition=gpu`` are one option). Options that
ask for resources are brought to one form per batch system (times in seconds, memory in bytes,
GPUs per node, nodes and tasks) so that two scripts written differently compare equal when they ask
for the same thing; options that only name the job or its files are kept apart and compared as text.
"""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

PREFIXES = {"slurm": "#SBATCH", "pbs": "#PBS", "lsf": "#BSUB", "sge": "#$"}
SLURM_SHORT = {
    "-J": "job-name", "-p": "partition", "-A": "account", "-n": "ntasks", "-N": "nodes", "-c": "cpus-per-task",
    "-t": "time", "-o": "output", "-e": "error", "-C": "constraint", "-q": "qos", "-G": "gpus", "-L": "licenses",
    "-D": "chdir", "-w": "nodelist", "-x": "exclude", "-d": "dependency", "-a": "array", "-S": "core-spec",
}  # fmt: skip
SLURM_LONG = {"tasks-per-node": "ntasks-per-node", "workdir": "chdir", "gpus-per-job": "gpus"}
NAMING = {
    "slurm": {"job-name", "output", "error", "chdir", "mail-type", "mail-user", "open-mode", "comment"},
    "pbs": {"-N", "-o", "-e", "-j", "-m", "-M", "-S", "-k", "-V", "-r"},
    "lsf": {"-J", "-o", "-e", "-oo", "-eo", "-N", "-B", "-u", "-L"},
    "sge": {"-N", "-o", "-e", "-j", "-cwd", "-S", "-V", "-m", "-M", "-w"},
}
UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
MEMORY_TOLERANCE = 0.02  # two memory figures this close (relative) are one request, rounded differently
TIME_KEYS = ("time", "walltime", "-W", "-l h_rt", "-l s_rt")


def header_directives(script: str, batch: str) -> list[str]:
    """The text after the directive prefix of each header line, in order."""
    prefix = PREFIXES.get(batch)
    if prefix is None:
        return []
    found = []
    for line in script.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith(prefix + " "):
            found.append(stripped[len(prefix) :].strip())
        elif stripped and not stripped.startswith("#"):
            break
    return found


def split_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def options(text: str) -> list[tuple[str, str | None]]:
    """``--name=value``, ``--name value``, ``-x value`` and flags; stray words join the option before them."""
    found: list[list[Any]] = []
    words = split_words(text)
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("-") and len(word) > 1:
            if word.startswith("--") and "=" in word:
                name, value = word.split("=", 1)
                found.append([name, value])
            elif index + 1 < len(words) and not words[index + 1].startswith("-"):
                found.append([word, words[index + 1]])
                index += 1
            else:
                found.append([word, None])
        elif found and found[-1][1] is not None:
            found[-1][1] += " " + word
        else:
            found.append(["", word])
        index += 1
    return [(name, value) for name, value in found]


def seconds(text: str | None, lsf: bool = False, bare_minutes: bool = False) -> int | None:
    """A walltime in seconds: SLURM/PBS/SGE ``HH:MM:SS``, ``MM:SS``, bare minutes (SLURM) or seconds, and
    SLURM's ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` (after the days, hours come first)."""
    if text is None:
        return None
    text = text.strip()
    days = None
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = int(day_text)
    parts = [float(part) for part in text.split(":")] if re.fullmatch(r"[\d.:]+", text) else None
    if parts is None:
        return None
    if days is not None:
        total = sum(part * unit for part, unit in zip(parts, (3600, 60, 1)))
        return int(days * 86400 + total)
    days = 0
    if lsf:
        total = parts[0] * 60 if len(parts) == 1 else parts[0] * 3600 + parts[1] * 60
    elif len(parts) == 1:  # sbatch -t 1800 is 1800 minutes; PBS's and SGE's bare number seconds
        total = parts[0] * 60 if bare_minutes else parts[0]
    elif len(parts) == 2:
        total = parts[0] * 60 + parts[1]
    else:
        total = parts[-3] * 3600 + parts[-2] * 60 + parts[-1]
    return int(days * 86400 + total)


def size_bytes(text: str | None, default_unit: str = "") -> float | None:
    """``30G``, ``30518M``, ``100GB``, ``35gb``, ``20G`` in bytes (binary units, as SLURM, PBS and SGE read them)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGTP]?)(I?B)?\s*", text.upper())
    if not match:
        return None
    unit = match.group(2) or default_unit
    return float(match.group(1)) * UNITS[unit]


def gpu_count(text: str) -> tuple[str | None, int]:
    """``a100:2``, ``2``, ``gpu:a100:2`` as (type, count)."""
    parts = [part for part in text.split(":") if part and part != "gpu"]
    if not parts:
        return None, 1
    count = int(parts[-1]) if parts[-1].isdigit() else 1
    kind = parts[0] if len(parts) > 1 or not parts[0].isdigit() else None
    return kind, count


def slurm_request(directives: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """SLURM's request (nodes, tasks, CPUs, memory, time, GPUs per node, ...) and the naming options."""
    given: dict[str, str | None] = {}
    for line in directives:
        for name, value in options(line):
            key = SLURM_SHORT.get(name, name.lstrip("-"))
            given[SLURM_LONG.get(key, key)] = value
    naming = {key: value or "" for key, value in given.items() if key in NAMING["slurm"]}
    nodes = int(given.pop("nodes", None) or 1)
    per_node = given.pop("ntasks-per-node", None)
    tasks = int(given.pop("ntasks", None) or (int(per_node) * nodes if per_node else nodes))
    request: dict[str, Any] = {"nodes": nodes, "tasks": tasks, "cpus-per-task": int(given.pop("cpus-per-task", 1) or 1)}
    gpus: tuple[str | None, float] | None = None
    gres = given.pop("gres", None)
    if gres:
        others = []
        for item in gres.split(","):
            if item == "gpu" or item.startswith("gpu:"):
                gpus = gpu_count(item)
            else:
                others.append(item)
        if others:
            request["gres (not GPUs)"] = ",".join(others)
    for key, divide in (("gpus-per-node", 1), ("gpus", nodes), ("gpus-per-task", 1 / max(1, tasks // nodes))):
        if key in given:
            kind, count = gpu_count(given.pop(key) or "1")
            gpus = (kind, count / divide)
    request["GPUs per node"] = None if gpus is None else (f"{gpus[0]}:" if gpus[0] else "") + f"{gpus[1]:g}"
    if "mem" in given:
        request["mem"] = size_bytes(given.pop("mem"), "M")
    for key in ("mem-per-cpu", "mem-per-gpu"):
        if key in given:
            request[key] = size_bytes(given.pop(key), "M")
    if "time" in given:
        request["time"] = seconds(given.pop("time"), bare_minutes=True)
    for key, value in given.items():
        if key not in NAMING["slurm"]:
            request[key] = value if value is not None else "(flag)"
    return request, naming


def pbs_chunks(text: str) -> dict[str, Any]:
    """``select=1:ncpus=8:mem=32GB:ngpus=1`` or Torque's ``nodes=1:ppn=8:gpus=2`` as numbers."""
    kind, _, spec = text.partition("=")
    parts = spec.split(":")
    chunk: dict[str, Any] = {"chunks": int(parts[0]) if parts[0].isdigit() else parts[0]}
    for part in parts[1:]:
        name, _, value = part.partition("=")
        name = {"ppn": "ncpus", "gpus": "ngpus"}.get(name, name) if kind == "nodes" else name
        chunk[name] = size_bytes(value) if name in ("mem", "vmem") else (int(value) if value.isdigit() else value)
    return chunk


def pbs_request(directives: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    request: dict[str, Any] = {}
    naming: dict[str, str] = {}
    for line in directives:
        for name, value in options(line):
            if name == "-l":
                for item in (value or "").split(","):
                    key, _, setting = item.partition("=")
                    if key in ("select", "nodes"):
                        for chunk_key, chunk_value in pbs_chunks(item).items():
                            request[f"chunk {chunk_key}"] = chunk_value
                    elif key == "walltime":
                        request["walltime"] = seconds(setting)
                    else:
                        request[f"-l {key}"] = setting
            elif name in NAMING["pbs"]:
                naming[name] = value or ""
            else:
                request[name or "(word)"] = value if value is not None else "(flag)"
    request.setdefault("chunk ngpus", None)
    return request, naming


def lsf_request(directives: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    request: dict[str, Any] = {}
    naming: dict[str, str] = {}
    for line in directives:
        for name, value in options(line):
            if name == "-R":
                for section, body in re.findall(r"(\w+)\[([^\]]*)\]", value or ""):
                    request[f"-R {section}"] = body
            elif name == "-W":
                request["-W"] = seconds(value, lsf=True)
            elif name == "-gpu":
                settings = dict(item.partition("=")[::2] for item in (value or "").split(":") if item)
                request["-gpu num"] = int(settings.pop("num", 1)) if value != "-" else 1
                if settings:
                    request["-gpu (other)"] = ":".join(f"{key}={val}" for key, val in sorted(settings.items()))
            elif name in NAMING["lsf"]:
                naming[name] = value or ""
            else:
                request[name or "(word)"] = value if value is not None else "(flag)"
    slots = int(request.get("-n", 1) or 1)
    span = request.pop("-R span", None)
    if span and span.startswith("ptile="):
        request["hosts"] = math.ceil(slots / int(span.split("=")[1]))
    elif span:
        request["hosts"] = int(span.split("=")[1]) if span.startswith("hosts=") else span
    elif slots == 1:  # one slot is on one host, with a span[] or without
        request["hosts"] = 1
    request.setdefault("-gpu num", None)
    return request, naming


def sge_request(directives: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    request: dict[str, Any] = {}
    naming: dict[str, str] = {}
    for line in directives:
        for name, value in options(line):
            if name == "-l":
                for item in (value or "").split(","):
                    key, _, setting = item.partition("=")
                    request[f"-l {key}"] = seconds(setting) if key in ("h_rt", "s_rt") else setting
            elif name == "-pe":
                request["-pe"] = " ".join((value or "").split())
            elif name in NAMING["sge"]:
                naming[name] = value or ""
            else:
                request[name or "(word)"] = value if value is not None else "(flag)"
    request.setdefault("-l gpu", None)
    return request, naming


READERS = {"slurm": slurm_request, "pbs": pbs_request, "lsf": lsf_request, "sge": sge_request}


def read_request(script: str, batch: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The script's request and naming options; both empty for a batch system with no header."""
    reader = READERS.get(batch)
    return reader(header_directives(script, batch)) if reader else ({}, {})


GPU_FIELDS = {"slurm": ("GPUs per node",), "pbs": ("chunk ngpus",), "lsf": ("-gpu num",), "sge": ("-l gpu", "-l gpus")}


def requested_gpus(request: dict[str, Any], batch: str) -> float | None:
    """The GPUs per node the request asks for, or None where it asks for none (in a form read here)."""
    for field_name in GPU_FIELDS.get(batch, ()):
        value = request.get(field_name)
        if value is not None:
            try:
                return float(str(value).split(":")[-1])
            except ValueError:
                return None
    return None


def show(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if key in TIME_KEYS and isinstance(value, int):
        return f"{value // 3600}:{value % 3600 // 60:02d}:{value % 60:02d}"
    if is_memory(key) and isinstance(value, (int, float)) and value:
        return f"{value / 2**30:.2f} GiB"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def is_memory(key: str) -> bool:
    return key in ("mem", "mem-per-cpu", "mem-per-gpu", "chunk mem", "chunk vmem")


def rounded(left: Any, right: Any) -> str | None:
    """How two memory figures are one request, rounded differently: within 2%, or one is the other
    rounded up to a whole MiB or GiB (dask-jobqueue writes ``--mem=10G`` for ``memory="10GB"``)."""
    if not (isinstance(left, (int, float)) and isinstance(right, (int, float)) and left and right):
        return None
    small, large = sorted((left, right))
    if (large - small) / large <= MEMORY_TOLERANCE:
        return "within 2%"
    for unit, name in ((2**20, "MiB"), (2**30, "GiB")):
        if math.ceil(small / unit) * unit == large:
            return f"rounded up to a whole {name}"
    return None


def compare(first: dict[str, Any], second: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The fields that differ, and those that differ only by rounding of a memory figure."""
    differ, rounded_up = [], []
    for key in sorted(set(first) | set(second)):
        left, right = first.get(key), second.get(key)
        if left == right:
            continue
        text = f"{key}: {show(key, left)} → {show(key, right)}"
        how = rounded(left, right) if is_memory(key) else None
        if how:
            rounded_up.append(f"{text} ({how})")
        else:
            differ.append(text)
    return differ, rounded_up
