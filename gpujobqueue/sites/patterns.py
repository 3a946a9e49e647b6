"""Site regular expressions: refusing those that could backtrack for long, matching on bounded text."""

from __future__ import annotations

import functools
import re
from typing import Any

from ..settings.limits import MAX_PATTERN_CHOICES, MAX_PATTERN_INPUT

try:
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # Python < 3.11
    import sre_parse as _sre  # type: ignore[no-redef]

_REPEATS = tuple(
    getattr(_sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre, name)
)
_GROUPS = tuple(getattr(_sre, name) for name in ("SUBPATTERN", "ATOMIC_GROUP") if hasattr(_sre, name))
_REFUSED = {
    _sre.GROUPREF: "a backreference",
    _sre.GROUPREF_EXISTS: "a conditional group",
    _sre.ASSERT: "a lookahead or lookbehind",
    _sre.ASSERT_NOT: "a lookahead or lookbehind",
}


class _Slow(Exception):
    """What makes a pattern slow to match."""


def _choices(items: Any, inside_repeat: bool = False) -> int:
    """An upper bound on the ways ``items`` (a parsed pattern) can match at one place."""
    ways = 1
    for op, av in items:
        if op in _REFUSED:
            raise _Slow(f"{_REFUSED[op]} is not accepted in site patterns")
        if op in _REPEATS:
            low, high, body = av
            if inside_repeat:
                raise _Slow("a repeat inside a repeat (such as (a+)+) can take exponential time")
            _choices(body, True)
            ways *= max(min(high, MAX_PATTERN_INPUT) - low + 1, 1)
        elif op is _sre.BRANCH:
            if inside_repeat:
                raise _Slow("a repeated alternation (such as (a|aa)+) can take exponential time")
            ways *= sum(_choices(branch) for branch in av[1])
        elif op in _GROUPS:
            ways *= _choices(av[-1], inside_repeat)
        ways = min(ways, MAX_PATTERN_CHOICES + 1)  # past the bound, how far past does not matter
    return ways


@functools.lru_cache(maxsize=256)
def _problem(pattern: str) -> str | None:
    try:
        ways = _choices(_sre.parse(pattern))
    except re.error as problem:
        return f"not a regular expression: {problem}"
    except _Slow as problem:
        return str(problem)
    if ways > MAX_PATTERN_CHOICES:
        return (
            f"it can try more than {MAX_PATTERN_CHOICES:,} ways to match (its repeats' counts times its "
            "alternations' branches), so a near miss takes long: at most three unbounded repeats' worth"
        )
    return None


def pattern_problem(pattern: Any) -> str | None:
    """Why a site's regular expression could take too long to match (``re`` backtracks), or None: a pattern may not
    nest repeats (``(a+)+``, ``(a|aa)+``), hold a backreference, lookaround or conditional group, or have more than
    :data:`~gpujobqueue.settings.limits.MAX_PATTERN_CHOICES` ways to match; the message names its first 60 characters.
    """
    if not isinstance(pattern, str):
        return "not a string"
    problem = _problem(pattern)
    if problem is None:
        return None
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    return f"the pattern {shown}: {problem}"


def pattern_matches(pattern: str, text: str) -> bool:
    """``re.fullmatch`` of a checked site pattern on at most ``MAX_PATTERN_INPUT`` characters; longer never matches."""
    if len(text) > MAX_PATTERN_INPUT or pattern_problem(pattern):
        return False
    return re.fullmatch(pattern, text) is not None
