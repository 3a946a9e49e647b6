"""Validation helpers: each parses one value a user gives (a size, a walltime, a name, a path, lines)
and raises :class:`~gpujobqueue.errors.ValidationError` naming the field when it is not accepted."""

from __future__ import annotations

import datetime
import math
import os
import re
import unicodedata
from typing import Any, Mapping, Sequence

from dask.utils import parse_bytes, parse_timedelta

from .errors import ValidationError
from .limits import MAX_MEMORY_BYTES, MAX_WALLTIME_SECONDS
from .preloads.nic_affinity import MAP_VARIABLE as NIC_MAP_VARIABLE
from .preloads.nic_affinity import parse_pinned_map

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
# SLURM constraint expressions: features joined by & | , with counts and brackets.
_CONSTRAINT = re.compile(r"(?!-)[A-Za-z0-9_.&|,:*\[\]()-]{1,256}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SAFE_PATH = re.compile(r"(?!-)[A-Za-z0-9_./+@%=,:-]+")
_WALLTIME_FORMS = "HH:MM:SS, D-HH:MM:SS, D-HH:MM, D-HH, MM:SS or MM"


def given_or(value: Any, default: Any) -> Any:
    """``value`` unless it was not given (None): ``0`` and ``""`` are given, and checked."""
    return default if value is None else value


def one_line(field_name: str, value: str) -> str:
    """``value``, a string of one printable line; else a ValidationError naming ``field_name``."""
    if not isinstance(value, str):
        raise ValidationError(field_name, f"expected a string, got {type(value).__name__} {value!r}")
    if any(c in value for c in "\n\r\0"):
        raise ValidationError(field_name, f"{value!r} must be a single line (no newline, carriage return or NUL)")
    # Other control characters and Unicode's line separators: some readers of the script
    # (Python's splitlines, editors) break lines there, and no value needs them.
    if any((unicodedata.category(c) == "Cc" and c != "\t") or c in "\u2028\u2029" for c in value):
        raise ValidationError(field_name, f"{value!r} holds a control character or line separator; give printable text")
    return value


def matching(field_name: str, value: Any, pattern: re.Pattern, accepted: str) -> str:
    """``value``, one line that ``pattern`` matches whole; else a ValidationError saying ``accepted``."""
    value = one_line(field_name, value)
    if not pattern.fullmatch(value):
        raise ValidationError(field_name, f"{value!r} is not accepted; use {accepted}")
    return value


def parse_constraint(field_name: str, value: Any) -> str:
    """A SLURM ``--constraint``: feature names joined by ``& | ,``, with counts and brackets."""
    return matching(
        field_name, value, _CONSTRAINT, "SLURM feature names joined by & | , (no spaces or shell characters)"
    )


def parse_name(field_name: str, value: Any) -> str:
    """A job or worker name: letters, digits and ``_ . + -``, starting with a letter or digit."""
    return matching(
        field_name, value, _SAFE_NAME, "letters, digits and _ . + - (at most 128, no spaces or shell characters)"
    )


def parse_word(field_name: str, value: Any) -> str:
    """An account, partition or QoS name."""
    return matching(field_name, value, _SAFE_WORD, "letters, digits and _ . + - (no spaces or shell characters)")


def parse_positive_int(field_name: str, value: Any, maximum: int | None = None) -> int:
    """A strictly positive integer (``True``/``False`` refused), at most ``maximum`` when given."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValidationError(field_name, f"expected a positive integer, got {value!r}")
    if (
        isinstance(value, str) and len(value.strip()) > 20
    ):  # int() of a long digit string is slow, and no count needs it
        raise ValidationError(field_name, f"expected a positive integer, got {value[:40]!r}...")
    try:
        number = int(value)
    except ValueError:
        raise ValidationError(field_name, f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise ValidationError(field_name, f"expected a positive integer (1 or more), got {value!r}")
    if maximum is not None and number > maximum:
        raise ValidationError(
            field_name, f"{number} is more than the {maximum} gpujobqueue accepts (gpujobqueue.limits)"
        )
    return number


def parse_duration(field_name: str, value: Any, fewest: float, most: float, unit: str = "seconds") -> float:
    """A duration in seconds from ``fewest`` to ``most``: a number (of ``unit``), a dask
    duration (``"90s"``, ``"2min"``, ``"500ms"``) or a :class:`datetime.timedelta`;
    ``True``/``False`` refused.

    Raises
    ------
    ValidationError
        Naming ``field_name``: not a duration, or outside the bounds (nan, a 30-digit number).
    """
    try:
        if isinstance(value, bool) or (isinstance(value, str) and len(value) > 40):
            raise ValueError(value)
        if isinstance(value, datetime.timedelta):
            seconds = value.total_seconds()
        elif isinstance(value, (int, float)):
            seconds = parse_timedelta(value, default=unit)
        else:
            seconds = parse_timedelta(one_line(field_name, value).strip(), default=unit)
    except (ValueError, KeyError, TypeError, OverflowError):
        raise ValidationError(
            field_name, f"{value!r} is not a duration; use {unit} (60) or a dask duration ('90s', '2min')"
        ) from None
    if seconds is None or not fewest <= seconds <= most:  # nan too
        raise ValidationError(
            field_name, f"{value!r}: expected a duration from {_seconds_text(fewest)} to {_seconds_text(most)}"
        )
    return float(seconds)


def _seconds_text(seconds: float) -> str:
    for size, unit in ((86400, "days"), (3600, "hours"), (60, "minutes")):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:g} {unit}" if seconds != size else f"1 {unit[:-1]}"
    return f"{seconds:g} s"


def parse_bool(field_name: str, value: Any) -> bool:
    """``True``/``False``, or their spellings in config files and environment variables."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise ValidationError(field_name, f"expected true or false, got {value!r}")


# The automatic walltime margin: 5 % of the walltime, within these bounds (seconds), and
# never more than a quarter of the walltime, so short jobs spend most of it working.
MARGIN_FRACTION = 20  # 1/20 = 5 %
MARGIN_FEWEST_SECONDS = 20
MARGIN_MOST_SECONDS = 600


def default_walltime_margin(walltime: int) -> int:
    """Seconds before the walltime at which workers retire: 5 % of the walltime, at least 20 s
    and at most 10 minutes, and never more than a quarter of the walltime.

    Examples
    --------
    >>> [default_walltime_margin(w) for w in (60, 120, 600, 3600, 86400)]
    [15, 20, 30, 180, 600]
    """
    share = min(max(walltime // MARGIN_FRACTION, MARGIN_FEWEST_SECONDS), MARGIN_MOST_SECONDS)
    return min(share, walltime // 4)


def parse_walltime_margin(field_name: str, value: Any, walltime: int | None) -> int | None:
    """``walltime_margin``: ``"auto"``/None (the default), False or 0 (off), or a duration
    (``"5m"``, ``"00:05:00"``, seconds) shorter than the walltime; a job without a walltime
    (``walltime`` None) takes none but the default or off."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if (
        value is False
        or value == 0
        or (isinstance(value, str) and value.strip().lower() in ("false", "off", "0", "no"))
    ):
        return 0
    if isinstance(value, bool):  # True: the default
        return None
    if walltime is None:
        raise ValidationError(
            field_name, f"{value!r}: these jobs have no walltime for the workers to retire before; give walltime too"
        )
    try:
        if isinstance(value, str) and len(value) > 40:
            raise ValueError(value)
        seconds = (
            int(value)
            if isinstance(value, (int, float)) or str(value).strip().isdigit()
            else int(parse_timedelta(str(value).strip()))
        )
    except (ValueError, KeyError, TypeError, OverflowError):
        try:
            seconds = parse_walltime(field_name, value)
        except ValidationError:
            raise ValidationError(
                field_name, f"{value!r} is not a duration; use 'auto', False, seconds, '5m' or 'HH:MM:SS'"
            ) from None
    if not 0 <= seconds < walltime:
        raise ValidationError(
            field_name,
            f"{value!r}: the workers must retire after they start and before the walltime "
            f"({format_walltime(walltime)}) ends the job",
        )
    return seconds


def parse_walltime(field_name: str, value: Any) -> int:
    """Parse a batch walltime into seconds.

    Accepts SLURM's forms: ``HH:MM:SS``, ``D-HH:MM:SS``, ``D-HH:MM``, ``D-HH``, ``MM:SS``
    and ``MM`` (minutes), or a :class:`datetime.timedelta`.

    Examples
    --------
    >>> parse_walltime("walltime", "01:30:00")
    5400
    >>> parse_walltime("walltime", "1-00:00:00")
    86400
    >>> parse_walltime("walltime", "45")
    2700
    """
    if isinstance(value, datetime.timedelta):
        seconds = int(value.total_seconds())
        if seconds < 1:
            raise ValidationError(field_name, f"{value!r} is not a positive duration")
        return _bounded_walltime(field_name, value, seconds)
    text = one_line(field_name, value).strip()
    match = re.fullmatch(r"(?:(\d{1,12})-)?(\d{1,12})(?::(\d{1,12}))?(?::(\d{1,12}))?", text)
    if not match:
        raise ValidationError(field_name, f"{value!r} is not a walltime; use {_WALLTIME_FORMS}")
    days, first, second, third = match.groups()
    numbers = [int(x) for x in (first, second, third) if x is not None]
    if days is not None:  # D-HH[:MM[:SS]]
        hours, minutes, seconds = (numbers + [0, 0])[:3]
        bounds_ok = hours < 24 and minutes < 60 and seconds < 60
        total = int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    elif len(numbers) == 3:  # HH:MM:SS
        hours, minutes, seconds = numbers
        bounds_ok = minutes < 60 and seconds < 60
        total = hours * 3600 + minutes * 60 + seconds
    elif len(numbers) == 2:  # MM:SS
        minutes, seconds = numbers
        bounds_ok = seconds < 60
        total = minutes * 60 + seconds
    else:  # MM
        bounds_ok = True
        total = numbers[0] * 60
    if not bounds_ok:
        raise ValidationError(
            field_name, f"{value!r} has a field out of range; use {_WALLTIME_FORMS} with minutes and seconds below 60"
        )
    if total < 1:
        raise ValidationError(field_name, f"{value!r} is not a positive duration")
    return _bounded_walltime(field_name, value, total)


def _bounded_walltime(field_name: str, value: Any, seconds: int) -> int:
    if seconds > MAX_WALLTIME_SECONDS:
        raise ValidationError(
            field_name,
            f"{value!r} is longer than {MAX_WALLTIME_SECONDS // 86400} days, the longest walltime gpujobqueue accepts",
        )
    return seconds


def format_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def format_hours_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS`` with hours past 24 (PBS ``walltime``, Grid Engine ``h_rt``)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def parse_size(field_name: str, value: Any, maximum: int = MAX_MEMORY_BYTES) -> int:
    """Parse a memory size such as ``60GiB``, ``60 GB`` or a number of bytes into bytes (at most ``maximum``)."""
    if isinstance(value, bool):
        raise ValidationError(field_name, f"expected a size such as '60GiB', got {value!r}")
    if isinstance(value, (int, float)):
        number = value
    else:
        text = one_line(field_name, value)
        try:
            if len(text) > 40:
                raise ValueError(text)
            number = parse_bytes(text)
        except (ValueError, TypeError, OverflowError):
            raise ValidationError(
                field_name, f"{value!r} is not a size; use a number with a unit such as '60GiB', '512 MB' or '2TB'"
            ) from None
    if not math.isfinite(number):  # nan and inf, given or parsed from '1e400'
        raise ValidationError(
            field_name, f"{value!r} is not a size; give a finite number of bytes or a size such as '60GiB'"
        )
    number = int(number)
    if number < 1:
        raise ValidationError(field_name, f"{value!r} is not a positive size")
    if number > maximum:
        raise ValidationError(
            field_name, f"{value!r} is more than {maximum // 2**40} TiB, the largest size gpujobqueue accepts here"
        )
    return number


def parse_path(field_name: str, value: Any) -> str:
    """A directory path, made absolute after ``~`` expansion; no spaces or shell characters."""
    text = one_line(field_name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    text = os.path.abspath(os.path.expanduser(text))
    return matching(
        field_name, text, SAFE_PATH, "a path of letters, digits and _ . / + @ % = , : - (no spaces or shell characters)"
    )


_JOB_PATH = re.compile(r"(?!-)(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z0-9_./+@%=,:-])+")


def parse_job_path(field_name: str, value: Any) -> str:
    """A path the job's shell expands, such as ``$TMPDIR/dask`` or ``/scratch/${USER}``.

    Variable references (``$NAME``, ``${NAME}``) are kept for the compute node to expand;
    a path without them is made absolute as :func:`parse_path` does. No other shell
    character is accepted, so the value is safe inside double quotes.
    """
    text = one_line(field_name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    if "$" not in text:
        return parse_path(field_name, text)
    return matching(
        field_name, text, _JOB_PATH, "a path of letters, digits, _ . / + @ % = , : - and $NAME or ${NAME} references"
    )


def parse_lines(field_name: str, value: Any) -> tuple[str, ...]:
    """A list of single-line strings (a lone string is one line)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence):
        raise ValidationError(field_name, f"expected a list of strings, got {value!r}")
    if len(value) > MAX_LIST_ITEMS:
        raise ValidationError(field_name, f"{len(value)} items; gpujobqueue accepts at most {MAX_LIST_ITEMS}")
    return tuple(one_line(f"{field_name}[{i}]", line) for i, line in enumerate(value))


MAX_LIST_ITEMS = 1000  # lines of a prologue, extra directives, worker arguments


def parse_needles(field_name: str, value: Any) -> tuple[str, ...]:
    """``job_directives_skip``: strings to look for in directive lines; an empty or blank one
    would match every line, so it is refused."""
    needles = parse_lines(field_name, value)
    for i, needle in enumerate(needles):
        if not needle.strip():
            raise ValidationError(
                f"{field_name}[{i}]",
                f"{needle!r} would match every directive; give the text of the directives to leave out",
            )
    return needles


def parse_environment(field_name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """A mapping of environment variable names to single-line values."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, f"expected a mapping of NAME to value, got {value!r}")
    out = []
    for name, raw in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ValidationError(field_name, f"{name!r} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
        out.append((name, one_line(f"{field_name}[{name}]", str(raw))))
        if name == NIC_MAP_VARIABLE:  # read in the job (preloads/nic_affinity.py): refuse a bad map before submitting
            try:
                parse_pinned_map(out[-1][1])
            except ValueError as error:
                raise ValidationError(f"{field_name}[{name}]", str(error)) from None
    return tuple(out)


def parse_slurm_memory_text(field_name: str, value: Any) -> str:
    """A raw SLURM memory value such as ``10G`` or ``4000`` (MB), as ``job_mem`` takes it."""
    return matching(
        field_name, value, re.compile(r"\d+[KMGT]?"), "a SLURM memory value such as '4000', '512M' or '60G'"
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
