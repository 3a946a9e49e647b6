"""The cluster constructor's own keywords, each checked and refused by name before anything starts."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import logging
import os
from typing import Any, Mapping

from distributed import Scheduler
from tornado.ioloop import IOLoop

from ..errors import ValidationError, shown
from ..security.dashboard import dashboard_options
from ..settings import config
from ..settings.validation import check_bounded, parse_count, parse_name, parse_path
from .adaptive import GPUAdaptive
from .job import GPUJob

# distributed's silence_logs: a level of the logging module, by name or number.
_LOG_LEVELS = ("debug", "info", "warning", "warn", "error", "critical", "fatal")


def check_cluster_keywords(
    *,
    dashboard_address: Any,
    host: Any,
    job_cls: Any,
    loop: Any,
    scheduler_cls: Any,
    asynchronous: Any,
    silence_logs: Any,
    config_name: Any,
) -> None:
    """Refuse, by name (:class:`ValidationError`), a constructor keyword distributed or dask-jobqueue could not use."""
    if dashboard_address is not None:  # dask-jobqueue's rule, and its words
        raise ValidationError(
            "dashboard_address",
            "pass 'dashboard_address' through 'scheduler_options', "
            f"e.g. scheduler_options={{'dashboard_address': {shown(dashboard_address)}}}",
        )
    if host is not None:  # dask-jobqueue's rule too
        raise ValidationError("host", "pass 'host' through 'scheduler_options', e.g. scheduler_options={'host': ...}")
    if job_cls is not None and not (isinstance(job_cls, type) and issubclass(job_cls, GPUJob)):
        raise ValidationError("job_cls", f"expected a gpujobqueue job class (a GPUJob), got {shown(job_cls)}")
    if scheduler_cls is not None and not callable(scheduler_cls):
        raise ValidationError("scheduler_cls", f"expected a scheduler class, got {shown(scheduler_cls)}")
    if loop is not None and not (isinstance(loop, IOLoop) and loop.asyncio_loop.is_running()):
        raise ValidationError("loop", f"expected a running tornado IOLoop or None, got {shown(loop)}")
    if not isinstance(asynchronous, bool):  # distributed takes any true value for True ("no" too)
        raise ValidationError("asynchronous", f"expected True or False, got {shown(asynchronous)}")
    if asynchronous and loop is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise ValidationError(
                "asynchronous", "asynchronous=True makes the cluster inside a running event loop (await it there)"
            ) from None
    if not (silence_logs is None or silence_logs is False):
        if isinstance(silence_logs, str):
            if silence_logs.lower() not in _LOG_LEVELS:
                raise ValidationError("silence_logs", f"{shown(silence_logs)} is not a logging level; use 'error'")
        else:
            parse_count("silence_logs", silence_logs, maximum=logging.CRITICAL)
    if config_name is not None:
        parse_name("config_name", config_name)


def shared_directory(batch: str, given: Any) -> str:
    """The folder of the private folder: ``shared_temp_directory``, else its config, else the current one."""
    if given is not None:
        return parse_path("shared_temp_directory", given)
    configured, field = config.batch_settings(batch).get("shared_temp_directory", (None, None))
    return os.getcwd() if configured is None else parse_path(field, configured)


def keywords_taken(cls: type) -> set[str] | None:
    """The keywords ``cls(...)`` takes, following ``**kwargs`` up its classes' ``__init__``; None: any keyword."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        parameters = inspect.signature(klass.__init__).parameters.values()
        names |= {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            return names
    return None


def check_adapt_keywords(given: Mapping[str, Any]) -> None:
    """Refuse, by name, a keyword of ``adapt()`` that its ``Adaptive`` neither takes nor hands on."""
    adaptive_cls = given.get("Adaptive", GPUAdaptive)
    taken = keywords_taken(adaptive_cls) if isinstance(adaptive_cls, type) else None
    if taken is not None:
        handed_on = set(inspect.signature(Scheduler.workers_to_close).parameters) - {"self", "target", "key"}
        config.check_keywords(given, {*taken, *handed_on, "Adaptive"} - {"cluster", "scaling", "attribute"})


def scheduler_options(
    batch: str, given: Any, scheduler_cls: Any = None, where: str = "this host"
) -> tuple[dict[str, Any], str | None]:
    """The scheduler's options (given, else configured), checked, and the dashboard's address or None."""
    field = "scheduler_options"
    if given is None:
        given, field = config.batch_settings(batch).get("scheduler_options", (None, field))
    check_bounded(field, given)
    if given is not None and not isinstance(given, Mapping):
        raise ValidationError(field, f"expected a mapping of scheduler option to value, got {shown(given)}")
    taken = keywords_taken(scheduler_cls) if isinstance(scheduler_cls, type) else None
    for name, value in (given or {}).items():
        if not isinstance(name, str) or (taken is not None and name not in taken):
            close = difflib.get_close_matches(str(name), sorted(taken or ()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValidationError(field, f"{shown(name)} is not an option of the scheduler{hint}")
        if name in ("host", "interface", "dashboard_address") and value is not None and value is not False:
            if not isinstance(value, str):
                raise ValidationError(f"{field}[{name}]", f"expected a string, got {shown(value)}")
        if name == "dashboard" and value is not None and not isinstance(value, bool):
            raise ValidationError(f"{field}[dashboard]", f"expected True or False, got {shown(value)}")
        if name == "port" and value is not None:
            parse_count(f"{field}[port]", value, maximum=65535)
    return dashboard_options(given, where)
