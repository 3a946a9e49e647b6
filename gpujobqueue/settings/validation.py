"""Validation helpers: each parses one value a user gives (a size, a walltime, a name, a path, lines)
and raises :class:`~gpujobqueue.errors.ValidationError` naming the field when it is not accepted."""

from __future__ import annotations

import datetime
import math
import operator
import os
import re
from typing import Any, Callable, Mapping, Sequence

from dask.utils import parse_bytes, parse_timedelta

from ..errors import ValidationError, shown
from ..preloads.nic_affinity import MAP_VARIABLE as NIC_MAP_VARIABLE
from ..preloads.nic_affinity import parse_pinned_map
from .limits import (
    MAX_LIST_ITEMS,
    MAX_MEMORY_BYTES,
    MAX_NUMBER_DIGITS,
    MAX_PATH_CHARACTERS,
    MAX_PATH_PART_CHARACTERS,
    MAX_VALUE_CHARACTERS,
    MAX_VALUE_DEPTH,
    MAX_VALUE_ITEMS,
    MAX_WAIT_SECONDS,
)

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
# SLURM constraint expressions: features joined by & | , with counts and brackets.
_CONSTRAINT = re.compile(r"(?!-)[A-Za-z0-9_.&|,:*\[\]()-]{1,256}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTROL_CHARACTERS = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]"
)  # Unicode's control characters (Cc) but tab
SAFE_PATH = re.compile(r"(?!-)[A-Za-z0-9_./+@%=,:-]+")
# Numbers as users write them: ASCII digits only. Python's int() and float() also read "1_0"
# (10), "٤" and "１" (other scripts' digits), "nan" and "inf"; no count or size is written so.
_COUNT_TEXT = re.compile(r"[0-9]{1,40}")
_AMOUNT_TEXT = re.compile(r"\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?)\s*([A-Za-z]{0,12})\s*")


def check_bounded(field_name: str, value: Any) -> None:
    """Refuse, naming ``field_name``, a value past what any keyword takes (:mod:`~gpujobqueue.settings.limits`:
    text, depth, items, digits) before a parser reads it; walked without recursion, each list's length first."""
    pending, items, characters = [(value, 0)], 0, 0
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (str, bytes)):
            characters += len(item)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**MAX_NUMBER_DIGITS:
            raise ValidationError(field_name, f"a whole number of more than {MAX_NUMBER_DIGITS} digits")
        elif isinstance(item, (Mapping, list, tuple, set, frozenset)):
            items += len(item)
            if depth == MAX_VALUE_DEPTH or items > MAX_VALUE_ITEMS:
                raise ValidationError(
                    field_name,
                    f"lists or mappings more than {MAX_VALUE_DEPTH} deep or of more than {MAX_VALUE_ITEMS} items",
                )
            children = (part for pair in item.items() for part in pair) if isinstance(item, Mapping) else item
            pending += ((child, depth + 1) for child in children)
        if characters > MAX_VALUE_CHARACTERS:
            raise ValidationError(
                field_name,
                f"more than {MAX_VALUE_CHARACTERS >> 10} KiB of text (gpujobqueue.settings.limits): {shown(value)}",
            )


def given_or(value: Any, default: Any) -> Any:
    """``value`` unless it is None: ``0`` and ``""`` are given, and checked."""
    return default if value is None else value


def one_line(field_name: str, value: str) -> str:
    """``value``, a string of one printable line; else a ValidationError naming ``field_name``."""
    if not isinstance(value, str):
        raise ValidationError(field_name, f"expected a string, got {type(value).__name__} {shown(value)}")
    if any(c in value for c in "\n\r\0"):
        raise ValidationError(field_name, f"{shown(value)} must be a single line (no newline, carriage return or NUL)")
    # Other control characters and Unicode's line separators: some readers of the script
    # (Python's splitlines, editors) break lines there, and no value needs them.
    if CONTROL_CHARACTERS.search(value):
        raise ValidationError(
            field_name, f"{shown(value)} holds a control character or line separator; give printable text"
        )
    return value


def matching(field_name: str, value: Any, pattern: re.Pattern, accepted: str) -> str:
    """``value``, one line that ``pattern`` matches whole; else a ValidationError saying ``accepted``."""
    value = one_line(field_name, value)
    if not pattern.fullmatch(value):
        raise ValidationError(field_name, f"{shown(value)} is not accepted; use {accepted}")
    return value


def matching_parser(pattern: re.Pattern, accepted: str) -> Callable[[str, Any], str]:
    """The parser ``(field_name, value)`` of one line that ``pattern`` matches whole (:func:`matching`)."""
    return lambda field_name, value: matching(field_name, value, pattern, accepted)


# A SLURM --constraint; a job or worker name; an account, partition or QoS name.
parse_constraint = matching_parser(_CONSTRAINT, "SLURM feature names joined by & | , (no spaces or shell characters)")
parse_name = matching_parser(_SAFE_NAME, "letters, digits and _ . + - (at most 128, no spaces or shell characters)")
parse_word = matching_parser(_SAFE_WORD, "letters, digits and _ . + - (no spaces or shell characters)")


_LIST_SPELLING = {",": "separated by commas", " ": "separated by spaces"}


def parse_queues(field_name: str, value: Any, separator: str | None, command: str = "the batch system") -> str:
    """A queue (partition) name, or names joined by ``separator`` where the batch system takes a list, each
    checked as :func:`parse_word` checks one. ``separator`` is how the queue option of ``command`` (the submit
    command, for messages) reads a list: ``","`` (sbatch's ``--partition``, Grid Engine's ``qsub -q``), ``" "``
    (LSF's ``bsub -q "short long"``, whose surrounding quotes may be given too, as dask-jobqueue writes the value
    as given), or None where it takes one queue (PBS's ``qsub -q destination``). A ValidationError for a name not
    accepted, an empty name, a list where the batch system takes one queue or in another separator."""
    text = one_line(field_name, value)
    if separator == " " and len(text) > 1 and text[0] == text[-1] == '"':
        text = text[1:-1]
    names = re.split("[, ]+", text.strip())
    if any(mark != separator and mark in text.strip() for mark in _LIST_SPELLING) and all(
        _SAFE_WORD.fullmatch(name) for name in names
    ):
        if separator is None:
            raise ValidationError(field_name, f"{value!r} is a list of queues; {command} takes one: give one queue")
        raise ValidationError(
            field_name,
            f"{value!r} is a list of queues, which {command} reads {_LIST_SPELLING[separator]}: "
            f"give {field_name}={separator.join(names)!r}",
        )
    if separator is None or separator not in text:
        return parse_word(field_name, text)
    names = text.split(separator)
    if not all(names):
        raise ValidationError(
            field_name, f"{value!r} holds an empty queue name; give the names {_LIST_SPELLING[separator]}, none empty"
        )
    return separator.join(parse_word(field_name, name) for name in names)


def parse_count(field_name: str, value: Any, *, minimum: int = 0, maximum: int | None = None, text: bool = True) -> int:
    """A whole number from ``minimum`` to ``maximum`` (and of at most
    :data:`~gpujobqueue.settings.limits.MAX_NUMBER_DIGITS` digits): an integer (``True``/``False`` refused)
    or, where ``text``, its text in the digits 0-9 (``"4"``; not ``"1_0"``, ``"٤"`` or ``" 4"``,
    which Python's ``int()`` reads as 10, 4 and 4)."""
    if isinstance(value, str) and text:
        if not _COUNT_TEXT.fullmatch(value):
            raise ValidationError(
                field_name, f"expected a whole number written with the digits 0-9, got {shown(value)}"
            )
        number = int(value)
    else:
        try:
            number = operator.index(value) if not isinstance(value, bool) else None
        except TypeError:
            number = None
        if number is None:
            raise ValidationError(field_name, f"expected a whole number, got {shown(value)}")
    if abs(number) >= 10**MAX_NUMBER_DIGITS:
        raise ValidationError(field_name, f"a whole number of more than {MAX_NUMBER_DIGITS} digits")
    if number < minimum:
        raise ValidationError(field_name, f"expected a whole number of {minimum} or more, got {shown(value)}")
    if maximum is not None and number > maximum:
        raise ValidationError(
            field_name, f"{shown(value)} is more than the {maximum} gpujobqueue accepts (gpujobqueue.settings.limits)"
        )
    return number


def parse_positive_int(field_name: str, value: Any, maximum: int | None = None) -> int:
    """A count of 1 or more (:func:`parse_count`), at most ``maximum`` when given."""
    return parse_count(field_name, value, minimum=1, maximum=maximum)


def _amount(field_name: str, value: Any, parse: Callable[[str], float], accepted: str) -> float:
    """A finite, non-negative number, or text of ASCII digits with a unit that ``parse`` (dask's
    ``parse_bytes`` or ``parse_timedelta``) reads; else a ValidationError saying ``accepted``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValidationError(field_name, f"expected {accepted}, got {shown(value)}")
    try:
        if isinstance(value, str):
            match = _AMOUNT_TEXT.fullmatch(one_line(field_name, value))
            if match is None:
                raise ValueError(value)
            number = parse(f"{match[1]}{match[2]}")
        else:
            number = value
    except (ValueError, KeyError, TypeError, OverflowError):
        raise ValidationError(field_name, f"{shown(value)} is not {accepted}") from None
    if (isinstance(number, float) and not math.isfinite(number)) or number < 0:  # nan, inf, '1e400'
        raise ValidationError(field_name, f"{shown(value)} is not {accepted}")
    return number


def parse_duration(field_name: str, value: Any, fewest: float, most: float, unit: str = "seconds") -> float:
    """A duration in seconds from ``fewest`` to ``most``: a number (of ``unit``), dask's text of one
    in the digits 0-9 (``"90s"``, ``"2m"``, ``"500ms"``; not ``"1_0s"`` or ``"٤s"``, which dask reads
    through ``float()`` as 10 s and 4 s) or a :class:`datetime.timedelta`; ``True``/``False``, nan and
    values outside the bounds refused."""
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    else:
        accepted = f"a duration; use {unit} (60) or a dask duration ('90s', '2m')"
        number = _amount(field_name, value, lambda text: parse_timedelta(text, default=unit), accepted)
        try:
            seconds = number if isinstance(value, str) else parse_timedelta(number, default=unit)
        except (OverflowError, ValueError):  # an integer past any float, or past the 4300 digits Python writes
            seconds = math.inf
    if not fewest <= seconds <= most:
        raise ValidationError(
            field_name, f"{shown(value)}: expected a duration from {_seconds_text(fewest)} to {_seconds_text(most)}"
        )
    return float(seconds)


def parse_seconds(field_name: str, value: Any, fewest: float = 1, most: float = MAX_WAIT_SECONDS) -> int:
    """A duration (:func:`parse_duration`) in whole seconds rounded up (``60``, ``"90s"``, ``"2m"``), by default
    from one second to a week (:data:`~gpujobqueue.settings.limits.MAX_WAIT_SECONDS`)."""
    return math.ceil(parse_duration(field_name, value, fewest, most))


def _seconds_text(seconds: float) -> str:
    for size, unit in ((86400, "days"), (3600, "hours"), (60, "minutes")):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:g} {unit}" if seconds != size else f"1 {unit[:-1]}"
    return f"{seconds:g} s"


def parse_bool(field_name: str, value: Any) -> bool:
    """``True``/``False``, or their spellings in config files and environment variables."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else value if type(value) is int else None
    if text in ("true", "yes", "1", "on", 1):
        return True
    if text in ("false", "no", "0", "off", 0):
        return False
    raise ValidationError(field_name, f"expected true or false, got {shown(value)}")


def parse_size(field_name: str, value: Any, maximum: int = MAX_MEMORY_BYTES) -> int:
    """Parse a memory size such as ``60GiB``, ``60 GB``, or a Python number of bytes, into bytes (at most
    ``maximum``). Text without a unit (``"240"``, from ``--memory 240`` or a config file) is refused: dask
    reads it as bytes, which nobody asking for a job's memory means."""
    number = _amount(
        field_name, value, parse_bytes, "a size with a unit such as '60GiB' or '512 MB' (or a Python int of bytes)"
    )
    if isinstance(value, str) and not _AMOUNT_TEXT.fullmatch(value)[2]:
        raise ValidationError(
            field_name,
            f"{shown(value)} has no unit and would be read as {value.strip()} bytes; add one: '{value.strip()}GB' or "
            f"'{value.strip()}GiB'",
        )
    number = math.ceil(number)
    if number < 1:
        raise ValidationError(field_name, f"{shown(value)} is not a positive size")
    if not isinstance(value, str) and number < 2**20:  # dask reads a number as bytes: memory=240 is 240 bytes
        raise ValidationError(
            field_name,
            f'{value} is {number} bytes, less than a MiB; give the unit you mean: "{value}GB" or "{value}GiB"',
        )
    if number > maximum:
        raise ValidationError(
            field_name, f"{shown(value)} is more than {maximum // 2**40} TiB, the largest size gpujobqueue accepts here"
        )
    return number


def path_text(field_name: str, value: Any) -> str:
    """A path's text, one line (a :class:`os.PathLike` too), no longer than the system opens:
    :data:`~gpujobqueue.settings.limits.MAX_PATH_CHARACTERS`, and each part at most
    :data:`~gpujobqueue.settings.limits.MAX_PATH_PART_CHARACTERS` bytes."""
    text = one_line(field_name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    if not text.strip():
        raise ValidationError(field_name, f"{text!r} is not a path")
    if len(os.fsencode(text)) > MAX_PATH_CHARACTERS or any(
        len(os.fsencode(part)) > MAX_PATH_PART_CHARACTERS for part in text.split("/")
    ):
        raise ValidationError(
            field_name,
            f"{text[:40]!r}... is longer than a path can be ({MAX_PATH_CHARACTERS} bytes, "
            f"{MAX_PATH_PART_CHARACTERS} between two /)",
        )
    return text


def parse_path(field_name: str, value: Any) -> str:
    """A directory path, made absolute after ``~`` expansion; no spaces or shell characters."""
    text = os.path.abspath(os.path.expanduser(path_text(field_name, value)))
    return matching(
        field_name,
        path_text(field_name, text),
        SAFE_PATH,
        "a path of letters, digits and _ . / + @ % = , : - (no spaces or shell characters)",
    )


_JOB_PATH = re.compile(r"(?!-)(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z0-9_./+@%=,:-])+")


def parse_job_path(field_name: str, value: Any) -> str:
    """A path the job's shell expands, such as ``$TMPDIR/dask`` or ``/scratch/${USER}``: its ``$NAME`` and
    ``${NAME}`` kept for the compute node, a path without them made absolute as :func:`parse_path` does; no other
    shell character, so that it is safe inside double quotes."""
    text = path_text(field_name, value)
    if "$" not in text:
        return parse_path(field_name, text)
    return matching(
        field_name, text, _JOB_PATH, "a path of letters, digits, _ . / + @ % = , : - and $NAME or ${NAME} references"
    )


def shell_text(field_name: str, value: Any) -> str:
    """Shell code of one line or more (a prologue's item, which dask-jobqueue writes as it is given): each of its
    lines printable, as :func:`one_line` takes it."""
    if isinstance(value, str):
        for line in value.split("\n"):
            one_line(field_name, line)
        return value
    return one_line(field_name, value)


def parse_shell_lines(field_name: str, value: Any) -> tuple[str, ...]:
    """The user's shell lines (:func:`parse_lines`), an item of several lines taken whole (:func:`shell_text`)."""
    return parse_lines(field_name, value, shell_text)


def parse_lines(field_name: str, value: Any, line: Callable[[str, Any], str] = one_line) -> tuple[str, ...]:
    """A list of single-line strings (a lone string is one line; ``line`` reads each). A set of lines is taken
    too, as dask-jobqueue writes each item it iterates over: YAML's set (a mapping whose values are all null:
    ``job-extra: {'-C h20'}``), in its order, and a Python set, sorted; a mapping with a value is refused
    (dask-jobqueue would drop the value and write the key alone)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    elif isinstance(value, (Mapping, set, frozenset, Sequence)) and len(value) > MAX_LIST_ITEMS:
        raise ValidationError(field_name, f"{len(value)} items; gpujobqueue accepts at most {MAX_LIST_ITEMS}")
    elif isinstance(value, Mapping):
        valued = {key: item for key, item in value.items() if item is not None}
        if valued:
            raise ValidationError(
                field_name,
                f"expected a list of strings, got a mapping with values ({shown(valued)}): dask-jobqueue writes "
                "only its keys, the values dropped; give each line whole in a list",
            )
        value = list(value)
    elif isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    if not isinstance(value, Sequence):
        raise ValidationError(field_name, f"expected a list of strings, got {shown(value)}")
    return tuple(line(f"{field_name}[{i}]", item) for i, item in enumerate(value))


def parse_needles(field_name: str, value: Any) -> tuple[str, ...]:
    """``job_directives_skip``: strings to look for in directive lines; a blank one (it would match every line)
    refused."""
    needles = parse_lines(field_name, value)
    for i, needle in enumerate(needles):
        if not needle.strip():
            raise ValidationError(
                f"{field_name}[{i}]",
                f"{needle!r} would match every directive; give the text of the directives to leave out",
            )
    return needles


def scalar_text(field_name: str, value: Any) -> str:
    """A value written as text where a mapping's values go: a string as it is, a whole or finite
    number as Python writes it; None, True/False, lists, mappings and bytes have no one spelling."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValidationError(field_name, f"expected a string or a number, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(field_name, f"expected a finite number, got {shown(value)}")
    return one_line(field_name, value if isinstance(value, str) else str(value))


def parse_environment(field_name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """A mapping of environment variable names to single-line values (strings or numbers)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, f"expected a mapping of NAME to value, got {shown(value)}")
    if len(value) > MAX_LIST_ITEMS:
        raise ValidationError(field_name, f"{len(value)} variables; gpujobqueue accepts at most {MAX_LIST_ITEMS}")
    out = []
    for name, raw in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ValidationError(
                field_name, f"{shown(name)} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
            )
        out.append((name, scalar_text(f"{field_name}[{name}]", raw)))
        if name == NIC_MAP_VARIABLE:  # read in the job (preloads/nic_affinity.py): refuse a bad map before submitting
            try:
                parse_pinned_map(out[-1][1])
            except ValueError as error:
                raise ValidationError(f"{field_name}[{name}]", str(error)) from None
    return tuple(out)


# A raw SLURM memory value, as job_mem takes it and sbatch --mem reads it: a whole number of MB (4000), or of K, M,
# G or T in either case, with a B after the unit or not (60G, 120GB, 64g: binary units).
parse_slurm_memory_text = matching_parser(
    re.compile(r"[0-9]{1,20}(?:[KMGTkmgt][Bb]?)?"), "a SLURM memory value such as '4000', '512M' or '60G'"
)


def per_node(field_name: str, per_job: int, nodes: int) -> int:
    """A per-job amount (dask-jobqueue's ``cores``, ``memory``) shared evenly by the job's nodes."""
    if per_job % nodes:
        raise ValidationError(
            field_name,
            f"{per_job} per job cannot be shared evenly by {nodes} nodes; give a multiple of {nodes}, or the "
            "per-GPU keyword",
        )
    return per_job // nodes
