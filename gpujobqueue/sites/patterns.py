"""Site regular expressions (``hostnames``, ``account.pattern``): refusing those that could
backtrack for long, and matching them on bounded text."""

from __future__ import annotations

import re
from typing import Any

from ..limits import MAX_PATTERN_INPUT, MAX_PATTERN_REPEATS


def pattern_problem(pattern: Any) -> str | None:
    """Why a site's regular expression could take too long to match, or None.

    Python's ``re`` backtracks: a repeat over something that can itself repeat or branch
    (``(a+)+``, ``(a|aa)+``) takes exponential time on a near miss, and many unbounded repeats
    in a row polynomial time. So a site pattern may repeat only single characters and
    character classes (``\\w+``, ``[0-9]{4}``, ``(ab)+``), hold at most
    :data:`~gpujobqueue.limits.MAX_PATTERN_REPEATS` unbounded repeats, and no backreference;
    and it is matched against at most :data:`~gpujobqueue.limits.MAX_PATTERN_INPUT` characters.
    That bounds a match to about 128**3 steps, well under a second.
    """
    if not isinstance(pattern, str):
        return "not a string"
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    try:
        tree = parser.parse(pattern)
    except re.error as problem:
        return f"not a regular expression: {problem}"
    constants = parser  # the opcodes live beside the parser
    repeats = (constants.MAX_REPEAT, constants.MIN_REPEAT) + (
        (constants.POSSESSIVE_REPEAT,) if hasattr(constants, "POSSESSIVE_REPEAT") else ()
    )
    unbounded = 0

    def walk(items, inside_repeat: bool) -> str | None:
        nonlocal unbounded
        for op, av in items:
            if op in repeats:
                low, high, body = av
                if inside_repeat:
                    return "a repeat inside a repeat (such as (a+)+) can take exponential time"
                if high == constants.MAXREPEAT or high > 64:
                    unbounded += 1
                found = walk(body, True)
            elif op is constants.BRANCH:
                if inside_repeat:
                    return "a repeated alternation (such as (a|aa)+) can take exponential time"
                found = next((p for p in (walk(branch, inside_repeat) for branch in av[1]) if p), None)
            elif op is constants.SUBPATTERN:
                found = walk(av[-1], inside_repeat)
            elif op in (constants.ASSERT, constants.ASSERT_NOT):
                found = walk(av[1], inside_repeat)
            elif op in (constants.GROUPREF, constants.GROUPREF_EXISTS):
                return "backreferences are not accepted in site patterns"
            else:
                found = None
            if found:
                return found
        return None

    found = walk(tree, False)
    if found:
        return found
    if unbounded > MAX_PATTERN_REPEATS:
        return f"{unbounded} unbounded repeats; a site pattern may hold {MAX_PATTERN_REPEATS}"
    return None


def pattern_matches(pattern: str, text: str) -> bool:
    """``re.fullmatch`` of a site pattern (checked by :func:`pattern_problem` when its file was
    read) on at most :data:`~gpujobqueue.limits.MAX_PATTERN_INPUT` characters; longer text never matches."""
    if len(text) > MAX_PATTERN_INPUT or pattern_problem(pattern):
        return False
    return re.fullmatch(pattern, text) is not None
