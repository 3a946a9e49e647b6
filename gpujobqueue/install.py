"""Which install line gives a working GPU stack, and whether a worker's python has one.

The ``cuda12`` and ``cuda13`` extras of setup.cfg each hold one CUDA major version's stack
(dask-cuda 26.x with the dask it pins, cupy, cuda-bindings); ``cuda`` is ``cuda12``, which
also runs on CUDA 13 drivers (a driver runs the CUDA versions up to its own). The driver's
CUDA version (``nvidia-smi`` prints it top right) picks the extra.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import warnings

# CUDA major version of the driver -> the extra built for it.
CUDA_EXTRAS = {12: "cuda12", 13: "cuda13"}
DEFAULT_CUDA_MAJOR = 12  # the extra `cuda` is an alias of `cuda12`
# The probe's exit status when the python ran but could not import dask_cuda.
_CANNOT_IMPORT = 3
_PROBE = "\n".join(
    [
        "import sys",
        "try:",
        "    import dask_cuda",
        "except Exception as e:",
        "    print(repr(e))",
        f"    sys.exit({_CANNOT_IMPORT})",
    ]
)


def cuda_major(cuda_version: str | None) -> int | None:
    """The major version of a CUDA version string such as ``"13.0"``; None if unreadable."""
    try:
        return int(str(cuda_version).split(".")[0])
    except ValueError:
        return None


def install_line(cuda_version: str | None = None, *, ucx: bool = False, python: str | None = None) -> str:
    """The ``pip install`` command of the stack for a driver of ``cuda_version``.

    Parameters
    ----------
    cuda_version : str, optional
        The driver's CUDA version (``"12.4"``, ``"13.0"``). Unknown: the line for each major
        version, and where to read the driver's.
    ucx : bool
        Add the matching ``ucx`` extra (distributed-ucxx).
    python : str, optional
        Install with ``python -m pip`` of this interpreter instead of ``pip``.

    Returns
    -------
    str
    """
    pip = f"{python} -m pip" if python else "pip"
    major = cuda_major(cuda_version)
    if major is not None and major < min(CUDA_EXTRAS):
        return (
            f"the driver's CUDA {cuda_version} is older than dask-cuda 26.x supports (CUDA {min(CUDA_EXTRAS)}); "
            f"ask for a newer NVIDIA driver"
        )

    def line(m: int) -> str:
        extras = CUDA_EXTRAS[m] + (f",ucx{m}" if ucx else "")
        return f"{pip} install 'gpujobqueue[{extras}]'"

    if major is None:
        return f"{line(12)} (CUDA 12 driver; {line(13)} for CUDA 13: nvidia-smi shows the driver's CUDA version)"
    return line(min(major, max(CUDA_EXTRAS)))


def machine_extra() -> str | None:
    """The CUDA extra for this machine's NVIDIA driver; None where there is no NVIDIA GPU."""
    from .gpus import machine_gpus

    machine = machine_gpus()
    if not machine.gpus:
        return None
    major = cuda_major(machine.cuda_driver_version)
    if major is None or major < min(CUDA_EXTRAS):
        return CUDA_EXTRAS[DEFAULT_CUDA_MAJOR]
    return CUDA_EXTRAS[min(major, max(CUDA_EXTRAS))]


@functools.lru_cache(maxsize=None)
def dask_cuda_import_error(python: str) -> str | None:
    """Why ``python`` cannot import dask_cuda, or None where it can or this cannot tell.

    Runs ``python`` once (per interpreter and process) with a probe that exits with its own
    status only when the import fails; a ``python`` not found on this machine (a compute
    node's path), one that is not Python, or one that hangs is not judged.
    """
    executable = shutil.which(python)
    if executable is None or not os.access(executable, os.X_OK):
        return None
    try:
        # The probe's code on stdin ("-"), not in the arguments that every user can read.
        probe = subprocess.run([executable, "-"], input=_PROBE, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if probe.returncode != _CANNOT_IMPORT:
        return None
    return probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else "import failed"


def warn_if_no_dask_cuda(python: str, cuda_version: str | None = None) -> bool:
    """Warn at once where the workers' ``python`` cannot import dask_cuda; say whether it warned.

    Parameters
    ----------
    python : str
        The interpreter the job script runs the dask-cuda workers with.
    cuda_version : str, optional
        This machine's driver CUDA version, for the install line.
    """
    error = dask_cuda_import_error(python)
    if error is None:
        return False
    if cuda_version is None:
        from .gpus import machine_gpus

        cuda_version = machine_gpus().cuda_driver_version
    warnings.warn(
        f"the workers' python {python} cannot import dask_cuda ({error}): its dask-cuda workers would fail "
        f"only after the jobs' queue wait. Install it there: {install_line(cuda_version, python=python)}; "
        f"or give worker_mode='per-device'",
        UserWarning,
        stacklevel=3,
    )
    return True
