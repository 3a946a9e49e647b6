"""Ctrl-C keeps Python's meaning (``KeyboardInterrupt``, and an exit as Ctrl-C ends Python) in a program that
imports gpujobqueue, wherever it imports dask-jobqueue, whose ``runner`` module sets SIGINT to ``sys.exit()``
(status 0). From gpujobqueue's import on, that module is run without setting it, and where it was set before,
Python's handler is given back; a handler the program set is left alone.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import signal
import sys
import threading
from typing import Any, Iterator

_RUNNER = "dask_jobqueue.runner"


@contextlib.contextmanager
def _without_runner_handler() -> Iterator[None]:
    """While it runs, ``signal.signal`` skips a handler defined in dask-jobqueue's runner module."""
    set_handler = signal.signal

    def all_but_the_runners(signalnum: int, handler: Any) -> Any:
        if getattr(handler, "__module__", None) == _RUNNER:
            return signal.getsignal(signalnum)
        return set_handler(signalnum, handler)

    signal.signal = all_but_the_runners
    try:
        yield
    finally:
        signal.signal = set_handler


class _RunnerFinder(importlib.abc.MetaPathFinder):
    """Finds dask-jobqueue's runner module as Python's path finder does, and runs it without its handler."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _RUNNER:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def run_without_handler(module: Any) -> None:
                with _without_runner_handler():
                    run(module)

            spec.loader.exec_module = run_without_handler  # type: ignore[method-assign]
        return spec


def keep_python_sigint() -> None:
    """Run dask-jobqueue's runner module, whenever it is imported, without its SIGINT handler, and
    give Python's back where the runner set it already (in the main thread, the one that may)."""
    if not any(isinstance(finder, _RunnerFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RunnerFinder())
    handler = signal.getsignal(signal.SIGINT)
    if getattr(handler, "__module__", None) == _RUNNER and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
