"""Which install line gives a working GPU stack, and whether a worker's python has one.

The ``cuda12`` and ``cuda13`` extras of setup.cfg each hold one CUDA major version's stack
(dask-cuda 26.x with the dask it pins, cupy, cuda-bindings); ``cuda`` is ``cuda12``, which
also runs on CUDA 13 drivers (a driver runs the CUDA versions up to its own). The driver's
CUDA version (``nvidia-smi`` prints it top right) picks the extra.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import warnings
from pathlib import Path

from .._version import __version__
from ..preloads import PRELOADS, module_name
from ..security.files import _size

# CUDA major version of the driver -> the extra built for it.
CUDA_EXTRAS = {12: "cuda12", 13: "cuda13"}
DEFAULT_CUDA_MAJOR = 12  # the extra `cuda` is an alias of `cuda12`
PRELOAD_MODULES = tuple(module_name(preload) for preload in PRELOADS)
# What the probe prints before its findings (JSON), where the python ran it: one line, so that a
# python that is not Python, or fails before, is not judged.
_PROBE_MARK = "gpujobqueue-worker-python-probe "
# Where the probe's findings give the python's own version (major, minor): no module's name.
_VERSION_KEY = " python"
# Modules a cluster's start finds on the workers' python's path without importing them: dask_cuda's import
# loads the CUDA stack (about 2 s on a GPU node, added to every cluster's start), and on a login node
# without GPUs it may fail where the compute nodes are fine; its own import errors show in the job's log.
# `gpujobqueue check` imports it (thorough).
FOUND_NOT_IMPORTED = ("dask_cuda",)
# Run by the workers' python with the needs as arguments, those only to find marked "find:": which of them
# it cannot import (or find), and each imported one's version (its __version__).
_PROBE = "\n".join(
    [
        "import importlib, importlib.util, json, sys",
        "found = {}",
        "for name in sys.argv[1:]:",
        "    find = name.startswith('find:')",
        "    name = name[len('find:'):] if find else name",
        "    try:",
        "        if find:",
        "            if importlib.util.find_spec(name) is None:",
        "                raise ModuleNotFoundError(f'No module named {name!r}', name=name)",
        "            found[name] = [None, None]",
        "        else:",
        "            found[name] = [None, getattr(importlib.import_module(name), '__version__', None)]",
        "    except Exception as e:",
        "        found[name] = [repr(e), None]",
        f"found[{_VERSION_KEY!r}] = sys.version_info[:2]",
        f"print({_PROBE_MARK!r} + json.dumps(found))",
    ]
)


class WorkerPythonWarning(UserWarning):
    """The workers' python cannot run them: it lacks dask_cuda, gpujobqueue's preloads, or this gpujobqueue."""


def cuda_major(cuda_version: str | None) -> int | None:
    """The major version of a CUDA version string such as ``"13.0"``; None if unreadable."""
    try:
        return int(str(cuda_version).split(".")[0])
    except ValueError:
        return None


def install_source() -> str:
    """Where this gpujobqueue came from, as ``pip install`` takes it: the checkout it runs from (a source tree with
    setup.cfg), else the folder or wheel its install records (PEP 610's ``direct_url.json``), else the package
    index's name."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "setup.cfg").is_file():
        return str(checkout)
    try:
        recorded = json.loads(importlib.metadata.distribution("gpujobqueue").read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        recorded = {}
    url = recorded.get("url", "")
    return urllib.parse.unquote(url.removeprefix("file://")) if url.startswith("file://") else "gpujobqueue"


def install_line(cuda_version: str | None = None, *, ucx: bool = False, python: str | None = None) -> str:
    """The ``pip install`` command of the stack for a driver of ``cuda_version`` (``"12.4"``; None: the line for
    each major version, and where to read the driver's), with the ``ucx`` extra (distributed-ucxx) where ``ucx``,
    through ``python -m pip`` where ``python`` is given; from where this gpujobqueue came (:func:`install_source`)."""
    pip = f"{python} -m pip" if python else "pip"
    source = install_source()
    major = cuda_major(cuda_version)
    if major is not None and major < min(CUDA_EXTRAS):
        return (
            f"the driver's CUDA {cuda_version} is older than dask-cuda 26.x supports (CUDA {min(CUDA_EXTRAS)}); "
            f"ask for a newer NVIDIA driver"
        )

    def line(m: int) -> str:
        extras = CUDA_EXTRAS[m] + (f",ucx{m}" if ucx else "")
        return f"{pip} install {shlex.quote(f'{source}[{extras}]')}"

    if major is None:
        return f"{line(12)} (CUDA 12 driver; {line(13)} for CUDA 13: nvidia-smi shows the driver's CUDA version)"
    return line(min(major, max(CUDA_EXTRAS)))


def machine_extra() -> str | None:
    """The CUDA extra for this machine's NVIDIA driver (``cuda12``, ``cuda13``); None where there is no NVIDIA GPU.
    ``bash .ci/demo`` installs it."""
    from .gpus import machine_gpus

    machine = machine_gpus()
    if not machine.gpus:
        return None
    major = cuda_major(machine.cuda_driver_version)
    if major is None or major < min(CUDA_EXTRAS):
        return CUDA_EXTRAS[DEFAULT_CUDA_MAJOR]
    return CUDA_EXTRAS[min(major, max(CUDA_EXTRAS))]


# The probe's answer is one line of a few hundred bytes: a python that prints more, or answers later, is
# not judged (one that printed 8 GB was read whole, then raised MemoryError; one that hung cost 60 s a render).
PROBE_OUTPUT_LIMIT = 1 << 20  # 1 MiB
PROBE_TIMEOUT = 15.0  # seconds: the probe imports distributed, slower from a cold shared file system
# Why the probe of a python (by the name it was given) could not judge it, as a phrase after its name.
_PROBE_FAILURES: dict[str, str] = {}
# The version (major, minor) of each python the probe heard from.
_PYTHON_VERSIONS: dict[str, tuple[int, int]] = {}


@functools.lru_cache(maxsize=None)
def probe_imports(
    python: str, modules: tuple[str, ...], find_only: tuple[str, ...] = ()
) -> dict[str, tuple[str | None, str | None]] | None:
    """What ``python`` makes of importing each of ``modules`` (of finding it, for those also in
    ``find_only``): ``{module: (error or None, its __version__ or None)}``; None where this cannot tell.
    Runs ``python`` once per interpreter and modules (per process), in ``/``: a python reading code on
    stdin imports from its current directory first, where anybody may have put a ``gpujobqueue``. A
    ``python`` not found on this machine (a compute node's path), one that is not Python, one that prints
    more than :data:`PROBE_OUTPUT_LIMIT` or answers after :data:`PROBE_TIMEOUT` seconds is not judged
    (the last two are noted for :func:`warn_if_worker_python_lacks`)."""
    executable = shutil.which(python)
    if executable is None or not os.access(executable, os.X_OK):
        return None
    names = [f"find:{module}" if module in find_only else module for module in modules]
    output = _run_probe(python, os.path.abspath(executable), names)
    for line in reversed(output.splitlines()):
        if line.startswith(_PROBE_MARK):
            try:
                found = json.loads(line[len(_PROBE_MARK) :])
                _PYTHON_VERSIONS[python] = (int(found[_VERSION_KEY][0]), int(found[_VERSION_KEY][1]))
                return {module: (found[module][0], found[module][1]) for module in modules}
            except (ValueError, KeyError, IndexError, TypeError):
                return None
    return None


def python_version(python: str) -> tuple[int, int] | None:
    """The (major, minor) version of ``python``, from its probe (:func:`probe_imports`); None where it
    cannot be probed."""
    if python not in _PYTHON_VERSIONS:
        probe_imports(python, ())
    return _PYTHON_VERSIONS.get(python)


def _run_probe(python: str, executable: str, names: list[str]) -> str:
    """What ``executable`` prints running the probe (its code on stdin, not in the arguments that every
    user can read), read to :data:`PROBE_OUTPUT_LIMIT` and for :data:`PROBE_TIMEOUT` seconds at most;
    "" where it cannot run, prints more, or answers later (noted in ``_PROBE_FAILURES``)."""
    try:
        process = subprocess.Popen(
            [executable, "-", *names],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        return ""
    try:
        with contextlib.suppress(OSError):
            process.stdin.write(_PROBE.encode())  # small: the pipe holds it whether or not it is read
            process.stdin.close()
        output, failure = _read_bounded(process.stdout.fileno(), PROBE_OUTPUT_LIMIT, PROBE_TIMEOUT)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
    _PROBE_FAILURES.pop(python, None)
    if failure is not None:
        _PROBE_FAILURES[python] = failure
    return output.decode(errors="replace")


def _read_bounded(fd: int, limit: int, timeout: float) -> tuple[bytes, str | None]:
    """Read ``fd`` to its end: (the bytes, None), or (b"", why) past ``limit`` bytes or ``timeout`` seconds."""
    chunks, size, deadline = [], 0, time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return b"", f"did not answer gpujobqueue's probe of its imports within {timeout:g} s"
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), None
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"", f"printed more than {_size(limit)} to gpujobqueue's probe of its imports"


def worker_python_problems(python: str, *, dask_cuda: bool, gpujobqueue: bool, thorough: bool = False) -> list[str]:
    """What the workers' ``python`` (the interpreter the job script runs them with) lacks, each a phrase after
    "the workers' python P": dask_cuda (where ``dask_cuda``: the workers are dask-cuda's), gpujobqueue's preloads
    or gpujobqueue of this version (where ``gpujobqueue``: they preload :mod:`gpujobqueue.preloads` by module
    name, not ``--standalone``); [] where it has all or this cannot tell. ``thorough`` imports dask_cuda too
    (``gpujobqueue check``), where a cluster's start and ``render`` only find it (``FOUND_NOT_IMPORTED``)."""
    modules = (("dask_cuda",) if dask_cuda else ()) + (PRELOAD_MODULES + ("gpujobqueue",) if gpujobqueue else ())
    found = probe_imports(python, modules, () if thorough else FOUND_NOT_IMPORTED) if modules else None
    if found is None:
        return []
    problems = []
    if dask_cuda and found["dask_cuda"][0] is not None:
        problems.append(f"cannot import dask_cuda ({_last_line(found['dask_cuda'][0])})")
    if gpujobqueue:
        missing = next((found[m][0] for m in PRELOAD_MODULES if found[m][0] is not None), None)
        version = found["gpujobqueue"][1]
        if missing is not None:
            problems.append(f"cannot import gpujobqueue's preloads ({_last_line(missing)})")
        elif version != __version__:
            problems.append(f"has gpujobqueue {version}, not {__version__} as here")
    return problems


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else "import failed"


def warn_if_worker_python_lacks(
    python: str, *, dask_cuda: bool, gpujobqueue: bool, cuda_version: str | None = None, stacklevel: int = 3
) -> bool:
    """Warn at once where the workers' ``python`` cannot run them (:func:`worker_python_problems`, whose
    arguments it takes), naming that python and how to install what it lacks (for a driver of ``cuda_version``,
    by default this machine's); say whether it warned."""
    problems = worker_python_problems(python, dask_cuda=dask_cuda, gpujobqueue=gpujobqueue)
    if not problems and python in _PROBE_FAILURES:
        warnings.warn(
            f"the workers' python {python} {_PROBE_FAILURES[python]}: what it imports is not checked",
            WorkerPythonWarning,
            stacklevel=stacklevel,
        )
        return True
    if not problems:
        return False
    if problems[0].startswith("cannot import dask_cuda"):
        if cuda_version is None:
            from .gpus import machine_gpus

            cuda_version = machine_gpus().cuda_driver_version
        fix = f"Install it there: {install_line(cuda_version, python=python)}; or give worker_mode='per-device'"
    else:
        fix = (
            f"Install gpujobqueue there: {python} -m pip install 'gpujobqueue=={__version__}'; or, for a script "
            "you render, gpujobqueue render --standalone writes the preloads into the job"
        )
    warnings.warn(
        f"the workers' python {python} {' and '.join(problems)}: its workers would fail only after the jobs' queue "
        f"wait (they preload gpujobqueue.preloads.* by name). {fix}",
        WorkerPythonWarning,
        stacklevel=stacklevel,
    )
    return True


class WorkerPythonCheck:
    """:func:`warn_if_worker_python_lacks` of ``python``, ``dask_cuda`` and ``gpujobqueue``, its probe run in a
    thread from when this is made, so that what starts meanwhile (a cluster's scheduler) need not wait for it;
    :meth:`warn` waits for it and warns."""

    def __init__(self, python: str, *, dask_cuda: bool, gpujobqueue: bool):
        self._python, self._needs = python, {"dask_cuda": dask_cuda, "gpujobqueue": gpujobqueue}
        # probe_imports keeps its answer: warn() then reads it without running the python again.
        self._probe = threading.Thread(
            target=worker_python_problems, args=(python,), kwargs=self._needs, name="gpujobqueue-probe", daemon=True
        )
        self._probe.start()

    def warn(self) -> bool:
        """Wait for the probe; warn as :func:`warn_if_worker_python_lacks` does, and say whether it warned."""
        self._probe.join()
        return warn_if_worker_python_lacks(self._python, stacklevel=4, **self._needs)
