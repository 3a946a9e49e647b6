"""GPU requests that dask-jobqueue users write by hand, read: one parser per batch system's forms
(SLURM's ``--gres=gpu:2``, ``--gpus=4``, ``-G 4``; PBS's ``select=1:ncpus=32:ngpus=4``; LSF's
``-gpu "num=2"``; Grid Engine's ``-l gpu=2``), each giving a :class:`HandWrittenGPUs`, and
:func:`find`, the one GPU request among a job's directives. :mod:`gpujobqueue.hand_written_gpus`
takes what is found over into the settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .errors import ValidationError
from .limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES
from .validation import parse_count, parse_lines


@dataclass(frozen=True)
class HandWrittenGPUs:
    """A GPU request found in the user's own directives.

    Parameters
    ----------
    field : str
        Where it was written: ``job_extra_directives[2]`` or ``resource_spec``.
    text : str
        The directive (or value) as written.
    gpus_per_node : int
        GPUs it asks for on each node.
    gpu_type : str or None
        The GPU model it names (``a100`` in ``--gres=gpu:a100:2``), if any.
    style : str
        The batch system's ``gpu_request`` style of the form written (``gres``, ``select``).
    rest : str or None
        What the directive holds besides the GPU request (``--gres=nvme:1`` of
        ``--gres=gpu:2,nvme:1``), kept in its place; None when nothing is left.
    settings : dict
        Other settings the directive carries (LSF's ``gpu_mode``; PBS's ``cores`` and
        ``memory`` from ``ncpus`` and ``mem``).
    keeps_line : bool
        The directive stays as written and is the job's GPU request (PBS ``resource_spec``).
    """

    field: str
    text: str
    gpus_per_node: int
    gpu_type: str | None = None
    style: str = "none"
    rest: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    keeps_line: bool = False

    def describe(self) -> str:
        """``job_extra_directives[0] '--gres=gpu:2'`` for messages."""
        return f"{self.field} {self.text!r}"


def _count(
    field_name: str, text: str, value: str, what: str = "GPUs", most: int = MAX_GPUS_PER_NODE * MAX_NODES
) -> int:
    """A count written in a directive: digits 0-9 (:func:`~gpujobqueue.validation.parse_count`), 1 to
    ``most`` (gpujobqueue.limits)."""
    try:
        count = parse_count(field_name, value, minimum=1)
    except ValidationError:
        raise ValidationError(field_name, f"{text!r}: {value!r} is not a number of {what} (1 or more)") from None
    if count > most:
        raise ValidationError(
            field_name, f"{text!r}: {value} {what} is more than the {most} gpujobqueue accepts (gpujobqueue.limits)"
        )
    return count


def _typed_count(field_name: str, text: str, value: str) -> tuple[str | None, int]:
    """SLURM's ``[type:]count``."""
    kind, _, count = value.rpartition(":")
    return (kind or None), _count(field_name, text, count)


def _own_line(field_name: str, text: str, option: str, match: re.Match) -> None:
    if text[: match.start()].strip() or text[match.end() :].strip():
        raise ValidationError(
            field_name, f"{text!r}: put {option} on a line of its own, so that gpujobqueue can take it over"
        )


_SLURM_OPTION = re.compile(r"(?<![\w-])(--gres|--gpus-per-node|--gpus-per-task|--gpus|-G)(?:=|\s+|(?<=-G)(?=\d))(\S+)")


def parse_slurm(field_name: str, text: str, nodes: int) -> HandWrittenGPUs | None:
    """``--gres=gpu[:type][:N]``, ``--gpus=[type:]N`` (per job), ``-G N``, ``--gpus-per-node``,
    ``--gpus-per-task`` (per node: gpujobqueue's jobs run one task per node)."""
    match = _SLURM_OPTION.search(text)
    if match is None:
        return None
    option, value = match.groups()
    if option == "--gres":
        entries = value.split(",")
        gpus = [entry for entry in entries if entry == "gpu" or entry.startswith("gpu:")]
        if not gpus:
            return None
        _own_line(field_name, text, option, match)
        if len(gpus) > 1:
            raise ValidationError(field_name, f"{text!r} asks for GPUs twice; give one gpu entry")
        parts = gpus[0].split(":")[1:]
        if len(parts) > 2:
            raise ValidationError(field_name, f"{text!r}: gpujobqueue reads gpu, gpu:N and gpu:TYPE:N")
        count = (
            _count(field_name, text, parts[-1], "GPUs per node", MAX_GPUS_PER_NODE)
            if parts and parts[-1].isdigit()
            else 1
        )
        kind = parts[0] if parts and not parts[0].isdigit() else None
        others = [entry for entry in entries if entry is not gpus[0]]
        rest = f"--gres={','.join(others)}" if others else None
        return HandWrittenGPUs(field_name, text, count, kind, "gres", rest=rest)
    _own_line(field_name, text, option, match)
    kind, count = _typed_count(field_name, text, value)
    if option in ("--gpus", "-G"):  # GPUs of the whole job
        if count % nodes:
            raise ValidationError(
                field_name,
                f"{text!r} asks for {count} GPUs per job, which {nodes} nodes "
                "cannot share evenly; give --gpus-per-node or gpus_per_node",
            )
        count //= nodes
    return HandWrittenGPUs(field_name, text, count, kind, "gpus-per-node")


_PBS_UNITS = {"b": 0, "kb": 1, "mb": 2, "gb": 3, "tb": 4, "pb": 5}


def _pbs_size(field_name: str, text: str, value: str) -> int:
    """A PBS size: its units are binary (``1gb`` is 1024**3 bytes), bytes without one."""
    match = re.fullmatch(r"([0-9]{1,12})([kmgtp]?b)?", value.lower())
    if match is None:
        raise ValidationError(field_name, f"{text!r}: mem={value!r} is not a PBS size such as 480gb")
    return int(match.group(1)) * 1024 ** _PBS_UNITS[match.group(2) or "b"]


def _pbs_chunk(field_name: str, text: str, value: str) -> HandWrittenGPUs | None:
    """The GPUs of a PBS ``-l`` value: ``select=N:ncpus=C:ngpus=G[:mem=M]`` or Torque's
    ``nodes=N:ppn=C:gpus=G``; the chunks are the nodes, their cores and memory the job's."""
    for resource in value.split(","):
        name, _, chunk = resource.partition("=")
        if name not in ("select", "nodes"):
            continue
        gpu_key, cpu_key, style = ("ngpus", "ncpus", "select") if name == "select" else ("gpus", "ppn", "torque")
        if not re.search(rf"(?:^|[:+]){gpu_key}=", chunk):
            return None
        if "+" in chunk:
            raise ValidationError(
                field_name, f"{text!r} holds several kinds of chunk; gpujobqueue starts one kind: give one chunk"
            )
        count, *pairs = chunk.split(":")
        values = dict(pair.partition("=")[::2] for pair in pairs)
        chunks = _count(field_name, text, count, "chunks (nodes)", MAX_NODES) if count.isdigit() else 1
        settings: dict[str, Any] = {"nodes": chunks}
        if values.get(cpu_key):
            settings["cores"] = chunks * _count(field_name, text, values[cpu_key], "cores per chunk", MAX_CPUS_PER_NODE)
        if values.get("mem"):
            settings["memory"] = chunks * _pbs_size(field_name, text, values["mem"])
        gpus = _count(field_name, text, values[gpu_key], "GPUs per chunk", MAX_GPUS_PER_NODE)
        kind = values.get("gpu_type")
        return HandWrittenGPUs(field_name, text, gpus, kind, style, settings=settings, keeps_line=True)
    return None


def parse_pbs(field_name: str, text: str, nodes: int) -> HandWrittenGPUs | None:
    """``-l select=...:ngpus=G`` (or Torque's ``-l nodes=...:gpus=G``), kept as the job's
    select line, or a job-wide ``-l ngpus=G``, in an extra directive."""
    match = re.fullmatch(r"\s*-l\s+(\S+)\s*", text)
    found = _pbs_chunk(field_name, text, match.group(1)) if match else None
    job_wide = re.fullmatch(r"\s*-l\s+ngpus=(\S+)\s*", text)
    if job_wide:  # PBS Pro refuses it beside a select line: it becomes the chunk's ngpus
        return HandWrittenGPUs(field_name, text, _count(field_name, text, job_wide.group(1)), None, "select")
    if found is None and re.search(r"(?:^|[:+,\s])n?gpus=", text):
        raise ValidationError(
            field_name,
            f"{text!r}: gpujobqueue reads GPUs from '-l select=N:ncpus=C:ngpus=G' "
            "(or Torque's '-l nodes=N:ppn=C:gpus=G') on a line of its own",
        )
    return found


_LSF_GPU = re.compile(r"(?<![\w-])-gpu\s+(?:\"([^\"]*)\"|'([^']*)'|(\S+))")
LSF_GPU_KEYS = ("num", "mode", "gmodel")  # what the generated -gpu request carries


def parse_lsf(field_name: str, text: str, nodes: int, *, keep: bool = False) -> HandWrittenGPUs | None:
    """``-gpu "num=G[:mode=M][:gmodel=T]"`` or ``-gpu -`` (one GPU); other ``-gpu`` options
    only where the line is kept (``gpu_request="none"``)."""
    match = _LSF_GPU.search(text)
    if match is None:
        return None
    _own_line(field_name, text, "-gpu", match)
    value = next(group for group in match.groups() if group is not None)
    values = {} if value.strip() == "-" else dict(pair.partition("=")[::2] for pair in value.split(":"))
    unknown = [key for key in values if key not in LSF_GPU_KEYS]
    if unknown and not keep:
        raise ValidationError(
            field_name,
            f"{text!r}: gpujobqueue writes num, mode and gmodel of -gpu, not "
            f"{', '.join(unknown)}; give gpu_request='none' to keep your own -gpu line "
            "as the job's request",
        )
    mode = values.get("mode")
    if mode is not None and mode not in ("exclusive_process", "shared"):
        raise ValidationError(field_name, f"{text!r}: mode={mode} is not exclusive_process or shared")
    count = _count(field_name, text, values["num"], "GPUs per host", MAX_GPUS_PER_NODE) if "num" in values else 1
    settings = {"gpu_mode": mode} if mode else {}
    return HandWrittenGPUs(field_name, text, count, values.get("gmodel"), "gpu", settings=settings)


def _sge_resources(
    field_name: str, text: str, value: str, names: tuple[str, ...]
) -> tuple[int, str, str | None] | None:
    """The GPU count of a Grid Engine ``-l`` value, the complex's name, and the other resources."""
    resources = value.split(",")
    gpus = [r for r in resources if r.partition("=")[0] in names]
    if not gpus:
        return None
    if len(gpus) > 1:
        raise ValidationError(field_name, f"{text!r} asks for GPUs twice; give one")
    name, _, count = gpus[0].partition("=")
    others = [r for r in resources if r is not gpus[0]]
    return _count(field_name, text, count, "GPUs", MAX_GPUS_PER_NODE), name, ",".join(others) or None


def parse_sge(
    field_name: str, text: str, nodes: int, *, names: tuple[str, ...] = ("gpu", "gpus")
) -> HandWrittenGPUs | None:
    """``-l gpu=G`` (or the site's GPU complex, or ``gpus``), alone or among other resources."""
    match = re.search(r"(?<![\w-])-l\s+(\S+)", text)
    found = _sge_resources(field_name, text, match.group(1), names) if match else None
    if found is None:
        return None
    _own_line(field_name, text, "-l", match)
    count, name, others = found
    return HandWrittenGPUs(
        field_name,
        text,
        count,
        None,
        "complex",
        rest=f"-l {others}" if others else None,
        settings={"gpu_complex": name},
    )


def parse_sge_resource_spec(text: str, names: tuple[str, ...]) -> HandWrittenGPUs | None:
    """A GPU complex among ``resource_spec``'s resources (``gpu=2,h_vmem=8G``)."""
    found = _sge_resources("resource_spec", text, text, names)
    if found is None:
        return None
    count, name, others = found
    return HandWrittenGPUs("resource_spec", text, count, None, "complex", rest=others, settings={"gpu_complex": name})


def find(batch: str, settings: Mapping[str, Any]) -> HandWrittenGPUs | None:
    """The one GPU request written by hand in the settings' directives, or None.

    Parameters
    ----------
    batch : str
        ``slurm``, ``pbs``, ``lsf``, ``sge`` (``local`` has no directives).
    settings : mapping
        Resolved cluster settings.

    Raises
    ------
    ValidationError
        An unreadable request, or two of them (naming both).
    """
    nodes = settings.get("nodes") or 1
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else 1
    keep = settings.get("gpu_request") == "none"
    names = tuple(dict.fromkeys([str(settings.get("gpu_complex") or "gpu"), "gpu", "gpus"]))
    parsers: dict[str, Callable[[str, str, int], HandWrittenGPUs | None]] = {
        "slurm": parse_slurm,
        "pbs": parse_pbs,
        "lsf": lambda f, t, n: parse_lsf(f, t, n, keep=keep),
        "sge": lambda f, t, n: parse_sge(f, t, n, names=names),
    }
    parse = parsers.get(batch)
    if parse is None:
        return None
    found = []
    for i, line in enumerate(parse_lines("job_extra_directives", settings.get("job_extra_directives"))):
        hit = parse(f"job_extra_directives[{i}]", line, nodes)
        if hit is not None:
            found.append(hit)
    spec = settings.get("resource_spec")
    if isinstance(spec, str) and batch == "pbs":
        hit = _pbs_chunk("resource_spec", spec, spec)
        if hit is not None:
            found.append(hit)
    elif isinstance(spec, str) and batch == "sge":
        hit = parse_sge_resource_spec(spec, names)
        if hit is not None:
            found.append(hit)
    if len(found) > 1:
        raise ValidationError(
            found[1].field, f"{found[0].describe()} and {found[1].describe()} both ask for GPUs; give one GPU request"
        )
    return found[0] if found else None
