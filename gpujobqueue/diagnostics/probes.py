"""What ``gpujobqueue check`` reads off this machine, one probe per thing (packages, UCX's transports, the batch
commands and whose they are, the job this runs in), judging nothing (:mod:`.judge` does)."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..batch import batch_system, batch_systems

# Distribution names differ by CUDA major version; the first one installed is reported.
DISTRIBUTIONS = {
    "distributed-ucxx": ("distributed-ucxx-cu13", "distributed-ucxx-cu12", "distributed-ucxx"),
    "ucxx": ("ucxx-cu13", "ucxx-cu12", "ucxx"),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "cudf": ("cudf-cu13", "cudf-cu12", "cudf"),
    "rmm": ("rmm-cu13", "rmm-cu12", "rmm"),
    "pynvml": ("nvidia-ml-py", "pynvml"),
}
PACKAGES = ("dask", "distributed", "dask-jobqueue", "dask-cuda", *DISTRIBUTIONS)
MODULES = {"dask-jobqueue": "dask_jobqueue", "dask-cuda": "dask_cuda", "distributed-ucxx": "distributed_ucxx"}
# Importing these proves more than their metadata does (dask-cuda without cuda-bindings
# installs but does not import), and they are cheap enough to import here.
IMPORT_CHECKED = ("dask-cuda", "distributed-ucxx")


@dataclass
class Package:
    """An installed distribution: its version, and the import error where it was import-checked."""

    name: str
    version: str | None
    import_error: str | None = None
    distribution: str | None = None  # the distribution found, e.g. cupy-cuda12x

    @property
    def missing(self) -> str | None:
        """Why it cannot be used (not installed, or installed but not importing), or None where it can."""
        if not self.version:
            return "not installed"
        return f"{self.version} installed but does not import: {self.import_error}" if self.import_error else None


def submitting() -> list[str]:
    """The batch systems that submit to a batch server, in the registry's order."""
    return [name for name, system in batch_systems().items() if not system.runs_jobs_here]


def commands(batch: str, optional: bool = False) -> tuple[str, ...]:
    """The commands a batch system's clusters submit, watch and cancel with (and, ``optional``, the others)."""
    system = batch_system(batch)
    return (system.submit_command, system.status_command, system.cancel_command) + (
        system.optional_commands if optional else ()
    )


def package(name: str) -> Package:
    """The first installed distribution of a package, and its import error where it is import-checked."""
    version = found = None
    for distribution in DISTRIBUTIONS.get(name, (name,)):
        try:
            version, found = importlib.metadata.version(distribution), distribution
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    import_error = None
    if version and name in IMPORT_CHECKED:
        try:
            importlib.import_module(MODULES[name])
        except Exception as error:  # an installed package that fails to import, for any reason
            import_error = f"{type(error).__name__}: {error}"
    return Package(name, version, import_error, found)


def _ucx_info_path() -> str | None:
    on_path = shutil.which("ucx_info")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("libucx")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "bin" / "ucx_info"
        if candidate.is_file():
            return str(candidate)
    return None


# What distributed-ucxx will use: the transports of a UCX context made by ucxx itself.
_UCXX_TRANSPORTS = "import ucxx; ucxx.init(); print('transports:', *sorted(ucxx.get_active_transports()))"


def ucx_resources() -> tuple[str | None, list[str] | None]:
    """(where the transports were read, the transports), or (None, None) without UCX. ucxx is asked first, in a
    child process, as the workers load UCX; the libucx wheel's ``ucx_info -d`` (which lists ``self`` alone) only
    where ucxx is missing."""
    if importlib.util.find_spec("ucxx") is not None:
        try:
            done = subprocess.run(  # its code on stdin, not in the arguments
                [sys.executable, "-"], input=_UCXX_TRANSPORTS, capture_output=True, text=True, timeout=120, cwd="/"
            )
        except (OSError, subprocess.SubprocessError):
            done = None
        found = [line for line in (done.stdout.splitlines() if done else []) if line.startswith("transports:")]
        if found:
            return "ucxx", found[-1].split()[1:]
    ucx_info = _ucx_info_path()
    if ucx_info is None:
        return None, None
    try:
        out = subprocess.run([ucx_info, "-d"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return ucx_info, list(dict.fromkeys(re.findall(r"^#\s+Transport:\s+(\S+)", out, re.MULTILINE)))


def batch_versions() -> dict[str, str]:
    """Which batch systems' commands these are: PBS and Grid Engine share qsub, qstat and qdel."""
    run_once = functools.cache(lambda command: _first_line(list(command)))  # whichever batch systems ask

    def first_line(command: list[str]) -> str | None:
        return run_once(tuple(command))

    versions = {batch: batch_system(batch).installed_version(first_line) for batch in submitting()}
    return {batch: version for batch, version in versions.items() if version is not None}


def _first_line(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return None
    # Grid Engine prints its usage on stdout; sbatch's DNS complaints go to stderr.
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def job_of() -> str | None:
    """The batch system whose job this runs in (its job variables are set), or None."""
    for batch in submitting():
        system = batch_system(batch)
        if all(os.environ.get(variable) for variable in (system.job_id_variable, *system.job_also_sets)):
            return batch
    return None
