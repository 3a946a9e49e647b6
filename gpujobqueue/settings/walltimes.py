"""Walltimes: read in SLURM's forms (:func:`parse_walltime`), written as each batch system writes
them, and the margin before the walltime at which the workers retire (:func:`parse_walltime_margin`)."""

from __future__ import annotations

import datetime
import re
from typing import Any

from ..errors import ValidationError
from .limits import MAX_WALLTIME_SECONDS
from .validation import one_line, parse_seconds, shown

_WALLTIME_FORMS = (
    "HH:MM:SS, D-HH:MM:SS, D-HH:MM, D-HH, MM:SS or a bare number (minutes on SLURM and LSF, seconds on PBS and "
    "Grid Engine, as each reads one)"
)

MARGIN_FRACTION = 20  # 1/20 = 5 %
MARGIN_FEWEST_SECONDS = 20
MARGIN_MOST_SECONDS = 600


def default_walltime_margin(walltime: int) -> int:
    """Seconds before the walltime at which workers retire: 5 % of the walltime, at least 20 s and at most 10
    minutes, and never more than a quarter of the walltime, so that short jobs spend most of it working:

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
        seconds = parse_seconds(field_name, value, 0, MAX_WALLTIME_SECONDS)
    except ValidationError:
        try:
            seconds = parse_walltime(field_name, value)
        except ValidationError:
            raise ValidationError(
                field_name, f"{shown(value)} is not a duration; use 'auto', False, seconds, '5m' or 'HH:MM:SS'"
            ) from None
    if not 0 <= seconds < walltime:
        raise ValidationError(
            field_name,
            f"{value!r}: the workers must retire after they start and before the walltime "
            f"({format_walltime(walltime)}) ends the job",
        )
    return seconds


def parse_walltime(field_name: str, value: Any, number_unit: int = 60) -> int:
    """A batch walltime in seconds (at most a year), in SLURM's forms (``HH:MM:SS``, ``D-HH:MM:SS``, ``D-HH:MM``,
    ``D-HH``, ``MM:SS``, a bare number) or a :class:`datetime.timedelta`; a ValidationError naming ``field_name``
    and the forms. A bare number counts ``number_unit`` seconds: 60 where the batch system reads minutes (SLURM's
    ``--time``, LSF's ``-W``), 1 where it reads seconds (PBS's ``walltime``, Grid Engine's ``h_rt``).

    >>> parse_walltime("walltime", "01:30:00"), parse_walltime("walltime", "1-00:00:00")
    (5400, 86400)
    >>> parse_walltime("walltime", "45"), parse_walltime("walltime", "1500000", number_unit=1)
    (2700, 1500000)
    """
    if isinstance(value, datetime.timedelta):
        return _bounded_walltime(field_name, value, int(value.total_seconds()))
    text = one_line(field_name, value).strip()
    match = re.fullmatch(r"(?:([0-9]{1,12})-)?([0-9]{1,12})(?::([0-9]{1,12}))?(?::([0-9]{1,12}))?", text)
    if not match:
        raise ValidationError(field_name, f"{value!r} is not a walltime; use {_WALLTIME_FORMS}")
    days, *clock = match.groups()
    numbers = [int(x) for x in clock if x is not None]
    if days is None and len(numbers) == 1:  # a bare number: minutes or seconds, as the batch system reads it
        total = numbers[0] * number_unit
    else:  # D-HH[:MM[:SS]], HH:MM:SS or MM:SS: each field after the first below 60, a day's hours below 24
        fields = (numbers + [0, 0])[:3] if days is not None else numbers
        if any(field >= 60 for field in fields[1:]) or (days is not None and fields[0] >= 24):
            raise ValidationError(
                field_name,
                f"{value!r} has a field out of range; use {_WALLTIME_FORMS} with minutes and seconds below 60",
            )
        total = int(days or 0) * 86400 + sum(field * 60**i for i, field in enumerate(reversed(fields)))
    return _bounded_walltime(field_name, value, total)


def _bounded_walltime(field_name: str, value: Any, seconds: int) -> int:
    if seconds < 1:
        raise ValidationError(field_name, f"{value!r} is not a positive duration")
    if seconds > MAX_WALLTIME_SECONDS:
        raise ValidationError(
            field_name,
            f"{value!r} is longer than {MAX_WALLTIME_SECONDS // 86400} days, the longest walltime gpujobqueue accepts",
        )
    return seconds


def format_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on."""
    days, rest = divmod(seconds, 86400)
    return f"{days}-{format_hours_walltime(rest)}" if days else format_hours_walltime(rest)


def format_hours_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS`` with hours past 24 (PBS ``walltime``, Grid Engine ``h_rt``)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"
