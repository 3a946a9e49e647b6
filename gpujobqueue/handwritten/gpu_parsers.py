"""Hand-written GPU requests read: :class:`HandWrittenGPUs`, what one is; the helpers of each batch system's own
parser (its ``parse_gpu_directive``); and :func:`find`, the one request among a job's directives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ValidationError
from ..settings.keywords import parse_keyword
from ..settings.limits import MAX_GPUS_PER_NODE, MAX_NODES
from ..settings.validation import parse_count


@dataclass(frozen=True)
class HandWrittenGPUs:
    """A GPU request found in the user's own directives."""

    field: str  # where it was written: job_extra_directives[2] or resource_spec
    text: str  # the directive (or value) as written
    gpus_per_node: int
    gpu_type: str | None = None  # the GPU model it names (a100 in --gres=gpu:a100:2)
    style: str = "none"  # the batch system's gpu_request style of the form written (gres, select)
    # What the directive holds besides the GPU request (--gres=nvme:1 of --gres=gpu:2,nvme:1), kept in its place.
    rest: str | None = None
    # Other settings it carries (LSF's gpu_mode; PBS's cores and memory from ncpus and mem): one given must agree.
    settings: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # what it suggests where nothing sets it (gpu_complex)
    # It stays as written and is the job's GPU request (PBS's select line, SLURM's --gres with other resources,
    # LSF's -gpu with other options).
    keeps_line: bool = False

    def describe(self) -> str:
        """``job_extra_directives[0] '--gres=gpu:2'`` for messages."""
        return f"{self.field} {self.text!r}"


def written_count(
    field_name: str, text: str, value: str, what: str = "GPUs", most: int = MAX_GPUS_PER_NODE * MAX_NODES
) -> int:
    """A count written in a directive ``text`` (its line; ``""`` where the caller names it): digits 0-9
    (:func:`~gpujobqueue.settings.validation.parse_count`), 1 to ``most`` (gpujobqueue.settings.limits)."""
    where = f"{text!r}: " if text else ""
    try:
        count = parse_count(field_name, value, minimum=1)
    except ValidationError:
        raise ValidationError(field_name, f"{where}{value!r} is not a number of {what} (1 or more)") from None
    if count > most:
        raise ValidationError(
            field_name,
            f"{where}{value} {what} is more than the {most} gpujobqueue accepts (gpujobqueue.settings.limits)",
        )
    return count


def own_line(field_name: str, text: str, option: str, match: re.Match) -> None:
    """Refuse a directive that holds more than the GPU option ``match`` found in it."""
    if text[: match.start()].strip() or text[match.end() :].strip():
        raise ValidationError(
            field_name, f"{text!r}: put {option} on a line of its own, so that gpujobqueue can take it over"
        )


def find(system: Any, settings: Mapping[str, Any]) -> HandWrittenGPUs | None:
    """The one GPU request written by hand in the settings' directives, in ``system``'s syntax, or None; a
    ValidationError for an unreadable request, or two of them (naming both)."""
    nodes = settings.get("nodes") or 1
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else 1
    found = []
    for i, line in enumerate(parse_keyword("job_extra_directives", settings.get("job_extra_directives"))):
        hit = system.parse_gpu_directive(f"job_extra_directives[{i}]", line, nodes, settings)
        if hit is not None:
            found.append(hit)
    spec = settings.get("resource_spec")
    if isinstance(spec, str):
        hit = system.parse_gpu_resource_spec(spec, settings)
        if hit is not None:
            found.append(hit)
    if len(found) > 1:
        raise ValidationError(
            found[1].field, f"{found[0].describe()} and {found[1].describe()} both ask for GPUs; give one GPU request"
        )
    return found[0] if found else None
