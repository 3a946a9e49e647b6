"""Directives gpujobqueue writes that users also write by hand, other than GPU requests: the walltime and SLURM's
``--nodes`` and ``--ntasks-per-node``, in the forms each batch system declares (:class:`DirectiveForm`). A walltime
written by hand is the job's where no keyword gives one; a value that contradicts the job's is refused, naming both.
The line is then written once: by the generated directive, unless ``job_directives_skip`` leaves that out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import ValidationError
from ..settings.keywords import parse_keyword
from ..settings.walltimes import format_hours_walltime, format_walltime, parse_walltime

#: What each setting is, for messages.
WHAT = {"walltime": "walltime", "nodes": "nodes", "tasks_per_node": "tasks per node"}


@dataclass(frozen=True)
class DirectiveForm:
    """One setting (``walltime``, ``nodes``, ``tasks_per_node``) as a batch system's directive spells it: its
    ``options`` (``--time=``/``--time V``, ``-t V``/``-t5``; with ``resource``, the option of a resource list such as
    ``-l walltime=...,mem=4gb``), ``read(field_name, value)`` giving a whole number (seconds, a count) or a
    ValidationError, and ``generated(value)``, the line its template writes (which ``job_directives_skip`` may drop).
    """

    setting: str
    options: tuple[str, ...]
    read: Callable[[str, str], int]
    generated: Callable[[int], str]
    resource: str | None = None

    def find(self, field_name: str, text: str) -> list["WrittenOption"]:
        """The options of this form in one directive line, each with the line left without it."""
        if self.resource is not None:
            return self._find_resources(field_name, text)
        spellings = "|".join(
            re.escape(option) + (r"(?:=|\s+)" if option.startswith("--") else r"(?:\s+|(?=\d))")
            for option in sorted(self.options, key=len, reverse=True)
        )
        found = []
        for match in re.finditer(rf"(?<![\w-])(?:{spellings})(\S+)", text):
            rest = " ".join((text[: match.start()] + " " + text[match.end() :]).split())
            value = self._read(field_name, text, match.group(1))
            found.append(WrittenOption(field_name, text, self.setting, value, match.group(0), rest or None))
        return found

    def _read(self, field_name: str, text: str, value: str) -> int:
        try:
            return self.read(field_name, value)
        except ValidationError as error:
            raise ValidationError(field_name, f"{text!r}: {error.message}") from None

    def _find_resources(self, field_name: str, text: str) -> list["WrittenOption"]:
        found = []
        option = "|".join(re.escape(option) for option in self.options)
        for match in re.finditer(rf"(?<![\w-])(?:{option})\s+(\S+)", text):
            items = match.group(1).split(",")
            for index, item in enumerate(items):
                name, equals, value = item.partition("=")
                if name != self.resource or not equals:
                    continue
                others = ",".join(items[:index] + items[index + 1 :])
                kept = f"{match.group(0)[: match.start(1) - match.start()]}{others}" if others else ""
                rest = " ".join((text[: match.start()] + kept + text[match.end() :]).split())
                value = self._read(field_name, text, value)
                found.append(WrittenOption(field_name, text, self.setting, value, item, rest or None))
        return found


@dataclass(frozen=True)
class WrittenOption:
    """A setting found in one of the user's directive lines: where (``job_extra_directives[1]``), the line, the
    setting and its value (seconds, a count), the option as written (``--time=12:00:00``) and the line without it
    (None where nothing is left)."""

    field: str
    text: str
    setting: str
    value: int
    option: str
    rest: str | None

    def describe(self) -> str:
        """``job_extra_directives[1] '--time=12:00:00'`` for messages."""
        return f"{self.field} {self.text!r}"


def find(system: Any, lines: Sequence[str]) -> list[WrittenOption]:
    """The settings written in ``lines`` (the extra directives) in the forms ``system`` declares."""
    return [
        option
        for index, line in enumerate(lines)
        for form in system.directive_forms
        for option in form.find(f"job_extra_directives[{index}]", line)
    ]


def adopt(system: Any, settings: dict[str, Any], explicit: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Take the settings written by hand in ``system``'s ``directive_forms`` over into ``settings`` (in place): each
    option taken leaves ``job_extra_directives``; a walltime must agree with ``explicit``'s (keyword or config).
    Returns the sources (``{"walltime": "job_extra_directives[1]"}``) and the lines emptied, which stay until
    :func:`drop_emptied` so that the GPU lines :func:`~gpujobqueue.handwritten.gpus.adopt` reads keep their places."""
    lines = list(parse_keyword("job_extra_directives", settings.get("job_extra_directives")))
    found = find(system, lines)
    sources: dict[str, str] = {}
    taken: list[WrittenOption] = []
    for setting in dict.fromkeys(option.setting for option in found):
        options = [option for option in found if option.setting == setting]
        for other in options[1:]:
            if other.value != options[0].value:
                raise ValidationError(
                    other.field,
                    f"{options[0].describe()} and {other.describe()} both set the {WHAT[setting]}; give one",
                )
        generated = next(form for form in system.directive_forms if form.setting == setting).generated
        ours_skipped = skips(settings, generated(options[0].value))
        # A node layout whose own line job_directives_skip leaves out is the user's to write (a launcher's
        # tasks on fewer nodes, say); a walltime is checked all the same: the workers' lifetime follows it.
        if setting == "walltime" or not ours_skipped:
            _check(system, setting, options[0], settings, explicit)
        if setting == "walltime" and explicit.get("walltime") is None:
            settings["walltime"] = format_walltime(options[0].value)
            sources["walltime"] = options[0].field
        if not ours_skipped:  # else the user's line stays
            taken += options
    emptied = []
    for index, line in enumerate(lines):
        left: str | None = line
        for option in taken:
            if option.field == f"job_extra_directives[{index}]":
                left = _without(system, option, left)
        if left is None:
            emptied.append(line)  # taken out by drop_emptied, after the GPU lines are read
        else:
            lines[index] = left
    if taken:
        settings["job_extra_directives"] = lines
    return sources, emptied


def _without(system: Any, option: WrittenOption, line: str | None) -> str | None:
    """``line`` less ``option`` (found in it again, as the options before it were taken out)."""
    if line is None:
        return None
    again = [
        found for found in find(system, [line]) if (found.setting, found.option) == (option.setting, option.option)
    ]
    return again[0].rest if again else line


def _check(
    system: Any, setting: str, written: WrittenOption, settings: Mapping[str, Any], explicit: Mapping[str, Any]
) -> None:
    """Refuse a hand-written value that says otherwise than the job."""
    if setting == "walltime":
        given = explicit.get("walltime")
        if given is not None and system.walltime_seconds(given) != written.value:
            raise ValidationError(
                "walltime",
                f"walltime={given!r} but {written.describe()} asks for {format_walltime(written.value)}; "
                "give one of them",
            )
    elif setting == "nodes":
        nodes = parse_keyword("nodes", settings.get("nodes") or 1)
        if written.value != nodes:
            if explicit.get("nodes") is not None:
                raise ValidationError(
                    "nodes", f"nodes={explicit['nodes']!r} but {written.describe()} asks for {written.value}; give one"
                )
            raise ValidationError(
                written.field,
                f"{written.describe()} asks for {written.value} nodes but the job has nodes={nodes}: give "
                f"nodes={written.value} (gpujobqueue then starts workers on each node), or leave the line out",
            )
    elif setting == "tasks_per_node" and written.value != 1:
        raise ValidationError(
            written.field,
            f"{written.describe()}: gpujobqueue's jobs run one task per node, whose script starts the node's "
            "workers (one per GPU); leave the line out",
        )


def skips(settings: Mapping[str, Any], generated: str | None) -> bool:
    """Whether ``job_directives_skip`` leaves the generated directive ``generated`` out (the user's own line stands)."""
    skip = parse_keyword("job_directives_skip", settings.get("job_directives_skip"))
    return generated is not None and any(needle in generated for needle in skip)


def drop_emptied(settings: dict[str, Any], emptied: Sequence[str]) -> None:
    """Take the lines :func:`adopt` emptied out of the extra directives (once each)."""
    if not emptied:
        return
    lines = list(parse_keyword("job_extra_directives", settings.get("job_extra_directives")))
    for line in emptied:
        lines.remove(line)
    settings["job_extra_directives"] = lines


def walltime_form(
    options: tuple[str, ...], prefix: str, number_unit: int, resource: str | None = None
) -> DirectiveForm:
    """The walltime in ``options`` (or ``resource`` of their list), read as
    :func:`~gpujobqueue.settings.walltimes.parse_walltime` reads it (a bare number in ``number_unit`` seconds), written
    by the template as ``prefix`` and the value in ``HH:MM:SS`` (``D-HH:MM:SS`` from a day on where
    ``number_unit`` is 60, SLURM's; else with hours past 24, PBS's and Grid Engine's)."""
    written = format_walltime if number_unit == 60 else format_hours_walltime
    return DirectiveForm(
        "walltime",
        options,
        lambda field_name, value: parse_walltime(field_name, value, number_unit),
        lambda seconds: prefix + written(seconds),
        resource,
    )
