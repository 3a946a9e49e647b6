"""Issues 29 and 30: the code the workers load is gpujobqueue's installed modules, preloaded by name
(gpujobqueue.preloads.*), never script text in a process's arguments; `render --standalone` writes
them into the job for nodes without the package; the default script holds no Python."""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import psutil
from click.testing import CliRunner
from dask.distributed import Client

import gpujobqueue.preloads as preloads
from gpujobqueue import LocalGPUCluster
from gpujobqueue.cli import main
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.script.run import ClientRun

TOKEN = "gpujobqueue-planted-token-9b27d4"


def arguments_of_the_process_tree() -> dict[int, list[str]]:
    """Each live descendant of this process and its arguments, as /proc/<pid>/cmdline gives them to every user."""
    found = {}
    for process in psutil.Process().children(recursive=True):
        try:
            found[process.pid] = process.cmdline()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def test_no_process_of_a_local_cluster_has_script_text_or_an_environment_value_in_its_arguments(tmp_path, monkeypatch):
    # Every preload: the watchdog (workers, CPU worker, the scheduler of scheduler="job") and the per-device
    # pinning of the nannies. No GPU is needed: distributed's NVML would refuse the stand-in devices.
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")
    keywords = dict(
        gpus_per_node=2,
        devices=["0", "1"],
        worker_mode="per-device",
        memory_per_gpu="512MiB",
        death_timeout=20,
        scheduler="job",
        cpu_pool={"processes": 1},
        environment={"GPUJOBQUEUE_TEST_TOKEN": TOKEN},
        shared_temp_directory=str(tmp_path),
    )
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2, cpu_workers=1)
        client.wait_for_workers(3, timeout=120)
        watching = client.run(lambda dask_worker: getattr(dask_worker, "_gpujobqueue_watchdog", None) is not None)
        assert list(watching.values()) == [True] * 3, "each worker preloaded the watchdog"
        scheduler_watches = client.run_on_scheduler(
            lambda dask_scheduler: getattr(dask_scheduler, "_gpujobqueue_watchdog", None) is not None
        )
        assert scheduler_watches, "the job's scheduler preloaded the watchdog"
        devices = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert sorted(devices.values()) == ["", "0", "1"], (
            "each GPU worker pinned to its device, the CPU worker to none"
        )
        assert set(client.run(lambda: os.environ.get("GPUJOBQUEUE_TEST_TOKEN")).values()) == {TOKEN}
        arguments = arguments_of_the_process_tree()
    # The jobs' scripts, the scheduler, the worker commands (nannies) and their workers.
    assert len(arguments) >= 7, arguments
    with_text = {pid: [word[:60] for word in words if "\n" in word] for pid, words in arguments.items()}
    assert {pid: words for pid, words in with_text.items() if words} == {}, "script text in a process's arguments"
    assert [words for words in arguments.values() if any(TOKEN in word for word in words)] == []


def test_the_default_slurm_script_for_four_gpus_is_at_most_120_lines_with_no_python_in_it():
    command = [
        "render",
        "slurm",
        "--gpus-per-node",
        "4",
        "--cores",
        "32",
        "--memory",
        "240GB",
        "--walltime",
        "01:00:00",
    ]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 120, len(lines)
    assert [line for line in lines if re.search("(?<!<)<<(?!<)", line)] == [], (
        "a here-document: text for another program"
    )
    assert "    --preload gpujobqueue.preloads.watchdog \\" in lines
    # Every block (lines between blank lines) still says what it does.
    blocks = "\n".join(lines).split("\n\n")
    assert [block for block in blocks if not any(line.startswith("#") for line in block.splitlines())] == []


def test_each_preload_is_a_module_of_its_own_that_imports_nothing_of_gpujobqueue():
    # So that --standalone can write it whole, for nodes without the package.
    for name in preloads.PRELOADS:
        tree = ast.parse(preloads.source(name))
        imported = [
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        ]
        assert not [module for module in imported if not module or module.startswith("gpujobqueue")], name
    assert not [line for line in Path(preloads.__file__).read_text().splitlines() if "import ." in line]


# A python where gpujobqueue cannot be imported (a compute node without it): every import of it fails.
BLOCKER = """
import sys

class NotInstalledHere:
    def find_spec(self, name, path=None, target=None):
        if name == "gpujobqueue" or name.startswith("gpujobqueue."):
            raise ModuleNotFoundError(f"No module named {name!r}: not installed on this node")
        return None

sys.meta_path.insert(0, NotInstalledHere())
"""
CLIENT = """
import json, os, stat
import psutil
from distributed import Client

def facts(dask_worker):
    try:
        import gpujobqueue  # noqa: F401
        importable = True
    except ImportError:
        importable = False
    return {
        "name": dask_worker.name,
        "watchdog": getattr(dask_worker, "_gpujobqueue_watchdog", None) is not None,
        "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpujobqueue": importable,
        "preloads": [preload.name for preload in dask_worker.preloads],
    }

with Client() as client:
    workers = sorted(client.run(facts).values(), key=lambda worker: worker["name"])
folder = os.environ["GPUJOBQUEUE_TLS_DIR"]  # the job's private folder
modes = {name: oct(stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode)) for name in os.listdir(folder)}
job = psutil.Process(os.getppid())
arguments = [process.cmdline() for process in [job, *job.children(recursive=True)]]
print(json.dumps({
    "workers": workers,
    "folder": [folder, oct(stat.S_IMODE(os.stat(folder).st_mode))],
    "modes": modes,
    "with_newline": [word[:60] for words in arguments for word in words if "\\n" in word],
}))
"""


def test_a_standalone_script_runs_its_workers_where_python_cannot_import_gpujobqueue(tmp_path):
    blocker, temp = tmp_path / "blocker", tmp_path / "tmp"
    blocker.mkdir(), temp.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    # The blocker first, then whatever path the dependencies come from here (on the GPU machine
    # they are installed on PYTHONPATH): only gpujobqueue is missing.
    python.write_text(f'#!/bin/sh\nPYTHONPATH={blocker}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    assert subprocess.run([str(python), "-c", "import gpujobqueue"], capture_output=True).returncode == 1
    (tmp_path / "client.py").write_text(CLIENT)
    keywords = dict(gpus_per_node=2, worker_mode="per-device", death_timeout=20, nic_affinity=True, python=str(python))
    run = ClientRun.from_command_line(str(tmp_path / "client.py"), workers_timeout=120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # with --standalone, that python needs no gpujobqueue: no warning
        script = job_script_for("local", keywords, name="w", run=run, standalone=True)
    environment = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "0,1",
        "TMPDIR": str(temp),
        "DASK_DISTRIBUTED__DIAGNOSTICS__NVML": "False",
    }
    (tmp_path / "job.sh").write_text(script)
    done = subprocess.run(
        ["bash", "job.sh"], env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    folder, folder_mode = facts["folder"]
    expected = [f"{folder}/gpujobqueue_watchdog.py"]
    assert facts["workers"] == [
        {"name": f"w-{i}", "watchdog": True, "device": str(i), "gpujobqueue": False, "preloads": expected}
        for i in (0, 1)
    ]
    # The preloads were files 0600 of the job's 0700 folder, which the job removed at its end.
    assert folder_mode == "0o700" and folder.startswith(str(temp))
    preload_files = {name: mode for name, mode in facts["modes"].items() if name.endswith(".py")}
    assert preload_files == {f"gpujobqueue_{name}.py": "0o600" for name in ("watchdog", "pin_device", "nic_affinity")}
    assert not os.path.exists(folder)
    assert facts["with_newline"] == [], "script text in a process's arguments"
    for i in (0, 1):  # each nanny chose its worker's card (here: none to choose from) and said so
        assert f"gpujobqueue: worker w-{i} (GPU {i}): " in done.stderr


def test_a_standalone_scripts_preload_files_are_the_modules_text(tmp_path):
    script = job_script_for(
        "slurm",
        {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "gpus_per_node": 2, "worker_mode": "per-device"},
        name="w",
        standalone=True,
    )
    # Run the lines that write them, with the private folder made as the script makes it.
    start = script.index("job_stat=")
    end = script.index(') || { echo "gpujobqueue: could not write the preloads') + 1
    written = tmp_path / "written"
    (tmp_path / "tmp").mkdir()
    command = f'{script[start:end]}\ncp -a "$private_dir" {written}'
    done = subprocess.run(
        ["bash", "-c", command], env={**os.environ, "TMPDIR": str(tmp_path / "tmp")}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    for name in ("watchdog", "pin_device"):
        path = written / preloads.standalone_file_name(name)
        assert path.read_text() == preloads.source(name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.stat().st_mode) == 0o700
    assert not list((tmp_path / "tmp").iterdir()), "the EXIT trap removes the private folder"


def test_a_workers_preloads_import_neither_the_clusters_nor_dask_jobqueue():
    # Each worker process and each nanny imports its preload by module name: before, that imported the whole
    # package (the clusters, dask-jobqueue, the sites), about 0.2 s of CPU in every such process.
    code = (
        "import sys, signal\n"
        "before = signal.getsignal(signal.SIGINT)\n"  # ignored where a shell started this with &
        "import gpujobqueue.preloads.pin_device, gpujobqueue.preloads.watchdog\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('dask_jobqueue', 'gpujobqueue.runtime', "
        "'gpujobqueue.sites', 'gpujobqueue.batch')))\n"
        "print(heavy)\n"
        "import gpujobqueue.runtime.job\n"  # dask-jobqueue's SIGINT handler is given back whoever imports it
        "print(signal.getsignal(signal.SIGINT) is before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "True"], done.stdout + done.stderr


def test_a_cluster_class_first_used_in_a_thread_imports_there():
    # The public names are imported when first used, maybe in a thread (the xdist controller imports a warning's
    # module in one); dask-jobqueue sets a SIGINT handler at its import, which only the main thread may do: the
    # run ended with an INTERNALERROR, "signal only works in main thread".
    code = (
        "import signal, threading\n"
        "before = signal.getsignal(signal.SIGINT)\n"  # ignored where a shell started this with &
        "import gpujobqueue\n"
        "failed = []\n"
        "def use():\n"
        "    try:\n"
        "        gpujobqueue.SLURMGPUCluster, gpujobqueue.LocalFallbackWarning\n"
        "    except Exception as error:\n"
        "        failed.append(repr(error))\n"
        "thread = threading.Thread(target=use)\n"
        "thread.start()\n"
        "thread.join()\n"
        "print(failed, signal.getsignal(signal.SIGINT) is before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] True", done.stdout + done.stderr
