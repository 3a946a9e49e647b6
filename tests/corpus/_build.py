"""Build one corpus snippet's cluster with dask-jobqueue or with gpujobqueue, submitting nothing.

Each build runs in a folder of its own (its working directory and ``HOME``), under the snippet's
dask configuration; the batch systems' commands are replaced on ``PATH``, for the whole process, by
stand-ins that record each call and answer as a batch system that queued the job (a snippet that passes ``n_workers``
submits while it is built). The cluster's scheduler starts in this process, as both packages
start it; the cluster is closed before the build returns.
"""

from __future__ import annotations

import copy
import os
import stat
import sys
import tempfile
import traceback
import types
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import dask
import yaml

SUBMIT_ANSWERS = {
    "sbatch": 'if [ "$1" = "--parsable" ]; then echo 4242; else echo "Submitted batch job 4242"; fi',
    "qsub": 'if [ "$CORPUS_BATCH" = sge ]; then echo \'Your job 4242 ("corpus") has been submitted\'; '
    "else echo 4242.corpus-server; fi",
    "bsub": "echo 'Job <4242> is submitted to queue <normal>.'",
}
OTHER_COMMANDS = (
    "squeue scancel sacct scontrol sinfo srun salloc qstat qdel qhost qconf qacct pbsnodes qmgr "
    "bjobs bkill bqueues bhosts lsid lsload"
).split()


@dataclass
class Built:
    """What one way of building a snippet gave."""

    ok: bool
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    script: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    workers: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


def write_stand_ins(folder: Path) -> None:
    """Executables named as the batch systems' commands: record the call, queue nothing."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in [*SUBMIT_ANSWERS, *OTHER_COMMANDS]:
        answer = SUBMIT_ANSWERS.get(name, ":")
        text = (
            "#!/bin/sh\n"
            "# corpus harness stand-in: no batch system is reached from here\n"
            'echo "$(basename "$0") $*" >> "${CORPUS_CALLS:-/dev/null}"\n'
            'case " $* " in *" --version "*|*" -V "*) exit 1 ;; esac\n'
            f"{answer}\n"
        )
        path = folder / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def namespaces() -> dict[str, types.SimpleNamespace]:
    """The names a snippet imports, from dask-jobqueue as written and from gpujobqueue (the import changed)."""
    import dask_jobqueue
    import dask_jobqueue.local

    import gpujobqueue

    return {
        "dask-jobqueue": types.SimpleNamespace(
            SLURMCluster=dask_jobqueue.SLURMCluster,
            PBSCluster=dask_jobqueue.PBSCluster,
            LSFCluster=dask_jobqueue.LSFCluster,
            SGECluster=dask_jobqueue.SGECluster,
            LocalCluster=dask_jobqueue.local.LocalCluster,
        ),
        "gpujobqueue": types.SimpleNamespace(
            SLURMCluster=gpujobqueue.SLURMGPUCluster,
            PBSCluster=gpujobqueue.PBSGPUCluster,
            LSFCluster=gpujobqueue.LSFGPUCluster,
            SGECluster=gpujobqueue.SGEGPUCluster,
            LocalCluster=gpujobqueue.LocalGPUCluster,
        ),
    }


def snippet_config(snippet: types.ModuleType) -> dict[str, Any]:
    """The dask configuration the snippet relies on, merged into the current one as dask merges a YAML file."""
    text = getattr(snippet, "CONFIG_YAML", None)
    if not text:
        return {}
    merged = copy.deepcopy(dask.config.config)
    dask.config.update(merged, yaml.safe_load(text))
    return merged


def put_stand_ins_first(stand_ins: Path) -> None:
    """The stand-ins first on PATH for the rest of the process: a cluster's background task or exit
    hook that runs a batch command later reaches a stand-in too, never a real batch system."""
    os.environ["PATH"] = f"{stand_ins}{os.pathsep}{os.environ.get('PATH', '')}"


@contextmanager
def isolated(batch: str):
    """A folder as working directory and HOME; both restored after."""
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="corpus-build-") as folder:
        os.chdir(folder)
        os.environ["HOME"] = folder
        os.environ["CORPUS_BATCH"] = batch
        os.environ["CORPUS_CALLS"] = str(Path(folder) / "batch-calls.txt")
        try:
            yield Path(folder)
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)


def one_line(error: BaseException) -> str:
    """The exception's type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".strip()


def cluster_facts(cluster: Any) -> dict[str, Any]:
    """Workers per job and GPUs per job as each package plans them."""
    facts: dict[str, Any] = {}
    launch, request = getattr(cluster, "launch", None), getattr(cluster, "request", None)
    if launch is not None and request is not None:
        facts["mode"] = launch.mode
        facts["gpus_per_job"] = launch.gpus_per_node * request.nodes
        facts["workers_per_job"] = launch.workers_per_node * request.nodes
    else:
        job = getattr(cluster, "_dummy_job", None)
        if job is not None:
            facts["workers_per_job"] = job.worker_processes
    return facts


def build(
    snippet: types.ModuleType,
    module: types.SimpleNamespace,
    inspect_workers: Callable[[str], list[dict[str, Any]]],
) -> Built:
    """Build the snippet's cluster one way, read its job script and worker lines, close it."""
    with isolated(snippet.BATCH) as folder, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = snippet_config(snippet)
        cluster = None
        with dask.config.set(config):  # closing reads the configuration too
            try:
                cluster = snippet.make(module)
                script = cluster.job_script()
                built = Built(ok=True, script=script, facts=cluster_facts(cluster))
                built.workers = inspect_workers(script)
            except Exception as error:  # a snippet that one package refuses is a result, not a harness failure
                built = Built(ok=False, error=one_line(error))
                if os.environ.get("CORPUS_TRACEBACKS"):
                    traceback.print_exc(file=sys.stderr)
            finally:
                if cluster is not None:
                    try:
                        cluster.close()
                    except Exception as error:
                        built.warnings.append(f"close(): {one_line(error)}")
        calls = folder / "batch-calls.txt"
        built.calls = calls.read_text().splitlines() if calls.exists() else []
    built.warnings.extend(
        f"{warning.category.__name__}: {str(warning.message).strip().splitlines()[0]}" for warning in caught
    )
    return built
