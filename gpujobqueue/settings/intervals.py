"""How often a cluster's own loops run, and how many times, from dask config (``gpujobqueue.*``)
or ``adapt()``'s keywords: each bounded (:mod:`gpujobqueue.settings.limits`) and refused naming its key
outside the bounds, before the cluster starts (:func:`check_configured`)."""

from __future__ import annotations

from typing import Any

from . import config
from .limits import (
    MAX_ADAPT_WAIT_COUNT,
    MAX_INTERVAL_SECONDS,
    MAX_QUERY_TIMEOUT_SECONDS,
    MAX_REPLACE_FAILURES,
    MIN_JOB_POLL_SECONDS,
    MIN_LOOK_SECONDS,
    MIN_QUERY_TIMEOUT_SECONDS,
)
from .validation import parse_duration, parse_positive_int


def _seconds(key: str, fewest: float, most: float) -> float:
    """``gpujobqueue.<key>`` (:func:`gpujobqueue.settings.config.setting`) in seconds, from ``fewest`` to ``most``."""
    return parse_duration(f"gpujobqueue.{key}", config.setting(key), fewest, most)


def job_poll_interval() -> float:
    """Seconds between two status queries of a cluster's jobs (``gpujobqueue.job-poll-interval``:
    1 s to 1 h, the batch system's controller being shared)."""
    return _seconds("job-poll-interval", MIN_JOB_POLL_SECONDS, MAX_INTERVAL_SECONDS)


def query_timeout() -> float:
    """Seconds a status query may go unanswered before it is stopped (``gpujobqueue.query-timeout``,
    1 s to 1 h)."""
    return _seconds("query-timeout", MIN_QUERY_TIMEOUT_SECONDS, MAX_QUERY_TIMEOUT_SECONDS)


def usage_sample_interval() -> float | None:
    """Seconds between two samples of the workers' busyness (``gpujobqueue.usage.sample-interval``,
    0.1 s to 1 h); None where sampling is off (``false``, ``0``, ``off``)."""
    value = config.setting("usage.sample-interval")
    if value in (None, False) or str(value).strip().lower() in ("false", "0", "off"):
        return None
    return _seconds("usage.sample-interval", MIN_LOOK_SECONDS, MAX_INTERVAL_SECONDS)


def max_failures() -> int:
    """Jobs in a row that may end before their workers connect before the replacing stops, and unanswered
    asks in a row of a batch system that never answered before ``wait_for_workers`` raises
    (``gpujobqueue.replace.max-failures``, 1 to 100)."""
    return parse_positive_int(
        "gpujobqueue.replace.max-failures", config.setting("replace.max-failures"), MAX_REPLACE_FAILURES
    )


def adapt_interval(value: Any = None, field: str = "interval") -> float:
    """Seconds between two looks of ``adapt()``: ``value`` (its ``interval``), else
    ``gpujobqueue.adapt.interval``; 0.1 s to 1 h."""
    if value is None:
        return _seconds("adapt.interval", MIN_LOOK_SECONDS, MAX_INTERVAL_SECONDS)
    return parse_duration(field, value, MIN_LOOK_SECONDS, MAX_INTERVAL_SECONDS)


def adapt_wait_count(value: Any = None, field: str = "wait_count") -> int:
    """Looks at a lower need before ``adapt()`` scales down: ``value`` (its ``wait_count``), else
    ``gpujobqueue.adapt.wait-count``; 1 to 10,000."""
    if value is None:
        value, field = config.setting("adapt.wait-count"), "gpujobqueue.adapt.wait-count"
    return parse_positive_int(field, value, MAX_ADAPT_WAIT_COUNT)


def check_configured() -> None:
    """Read every one of these from dask config, so that a bad value is refused (a ValidationError naming its key)
    when a cluster is planned, not when its loop first runs."""
    job_poll_interval()
    query_timeout()
    usage_sample_interval()
    max_failures()
    adapt_interval()
    adapt_wait_count()
