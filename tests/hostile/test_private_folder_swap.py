"""Issue 40, point 2: a folder the package made is used only once checked to be the one it made, and is
removed without following or waiting on what another user put at its name.

A job of several nodes writes its node part into a 0700 folder of the submit directory, which each node's
task opened again by its name: in a group-writable, non-sticky submit directory a group member renamed the
folder, put his own at its name, and his node.sh ran as the user on every node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from gpujobqueue.plan.scripts import job_script_for

KEYWORDS = {"gpus_per_node": 1, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}

# srun's stand-in: the group member's swap happens between the folder's making and the tasks' start;
# then it starts the task on each of two "nodes".
FAKE_SRUN = textwrap.dedent("""\
    #!/bin/bash
    while [[ "$1" == --* ]]; do shift; done
    made=$(echo "$SUBMIT"/.gpujobqueue-p*)
    mv "$made" "$made.renamed"
    mkdir "$made"
    printf 'touch %q\\n' "$MARKER" > "$made/node.sh"
    chmod "$PLANTED_MODE" "$made"
    chown -R "$PLANTED_OWNER" "$made"
    status=0
    for rank in 0 1; do SLURM_PROCID=$rank "$@" || status=$?; done
    exit $status
""")


@pytest.mark.parametrize(
    "owner, mode",
    [("65534", "755"), (str(os.getuid()), "700")],
    ids=["another-users-folder", "a-folder-of-the-same-user-and-mode"],
)
def test_a_node_runs_no_node_part_from_a_folder_put_at_the_private_folders_name(tmp_path, owner, mode):
    submit, bin_dir = tmp_path / "submit", tmp_path / "bin"
    submit.mkdir(mode=0o777)
    os.chmod(submit, 0o777)  # group-writable and not sticky: a common project layout
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "srun").chmod(0o755)
    script = job_script_for(
        "slurm", {**KEYWORDS, "nodes": 2, "launcher": "srun"}, name="w", tls=False, scheduler="tcp://127.0.0.1:1"
    )
    marker = tmp_path / "planted-node-part-ran"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SUBMIT": str(submit),
        "MARKER": str(marker),
        "PLANTED_OWNER": owner,
        "PLANTED_MODE": mode,
    }
    job = subprocess.run(["bash", "-c", script], cwd=submit, env=env, capture_output=True, text=True, timeout=60)
    assert not marker.exists(), "the planted node.sh ran"
    assert job.returncode != 0, job.stderr
    assert "is not the private folder made for this job" in job.stderr, job.stderr
    assert "nothing in it is used" in job.stderr


def test_the_node_part_is_written_only_into_the_folder_the_job_made(tmp_path):
    # The swap comes before the first node writes node.sh, and the planted folder's node.sh is a link to a
    # file of the user's: nothing is written through it (the exports: PATH, PYTHONPATH, environment values).
    script = job_script_for(
        "slurm", {**KEYWORDS, "nodes": 2, "launcher": "srun"}, name="w", tls=False, scheduler="tcp://127.0.0.1:1"
    )
    swap = 'mv "$node_dir" "$node_dir.renamed"; mkdir -m 700 "$node_dir"; ln -s "$PWD/clobbered" "$node_dir/node.sh"\n'
    script = script.replace("\nGPUJOBQUEUE_NODE_PART\n", f"\nGPUJOBQUEUE_NODE_PART\n{swap}", 1)
    assert swap in script
    (tmp_path / "clobbered").write_text("the user's file\n")
    job = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert job.returncode != 0 and "is not the private folder made for this job" in job.stderr, job.stderr
    assert (tmp_path / "clobbered").read_text() == "the user's file\n"
    (renamed,) = tmp_path.glob("*.renamed")
    assert list(renamed.iterdir()) == []


def test_closing_a_cluster_folder_does_not_wait_on_a_fifo_planted_at_its_name(tmp_path):
    from gpujobqueue.security.owned_folders import remove_owned_folder

    folder = tmp_path / ".gpujobqueue-folder"
    folder.mkdir(mode=0o700)
    (folder / "scheduler.json").write_text("{}")
    folder.rename(tmp_path / "renamed")
    os.mkfifo(folder)
    done = threading.Event()
    started = time.monotonic()
    worker = threading.Thread(target=lambda: (remove_owned_folder(str(folder)), done.set()), daemon=True)
    worker.start()
    assert done.wait(10), "closing waited on the FIFO"
    assert time.monotonic() - started < 2
    assert folder.exists() and (tmp_path / "renamed" / "scheduler.json").exists(), "what was put there is left"


def test_closing_a_folder_removes_it_with_what_is_in_it_and_follows_no_link_in_it(tmp_path):
    from gpujobqueue.security.owned_folders import remove_owned_folder

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "f").write_text("x")
    (folder / "link").symlink_to(outside)
    os.mkfifo(folder / "fifo")
    remove_owned_folder(str(folder))
    assert not folder.exists() and (outside / "keep").exists()
    remove_owned_folder(str(folder))  # gone already: nothing to do


def test_a_clusters_close_removes_its_folder_without_blocking_on_a_fifo(tmp_path):
    # The cluster's private folder in shared_temp_directory, swapped for a FIFO before close.
    code = textwrap.dedent(f"""
        import os, time
        from gpujobqueue import LocalGPUCluster
        cluster = LocalGPUCluster(gpus_per_node=1, devices=["0"], memory_per_gpu="512MiB",
                                  shared_temp_directory={str(tmp_path)!r}, scheduler="job")
        folder = cluster._private_folder()
        os.rename(folder, folder + ".renamed")
        os.mkfifo(folder)
        started = time.monotonic()
        cluster.close()
        print("closed in", time.monotonic() - started)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.split()[-1]) < 30


RUN_TASKS = textwrap.dedent("""\
    #!/bin/bash
    while [[ "$1" == --* ]]; do shift; done
    status=0
    for rank in 0 1; do SLURM_PROCID=$rank "$@" || status=$?; done
    exit $status
""")
RECORDING_PYTHON = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    if "-m" in sys.argv[1:3]:
        preload = sys.argv[sys.argv.index("--preload") + 1]
        with open(os.path.join({results!r}, f"worker-{{os.getpid()}}"), "w") as out:
            json.dump({{"cwd": os.getcwd(), "preload": preload, "text": open(preload).read()}}, out)
""")


def test_each_node_starts_from_the_checked_folder_back_in_its_directory_with_a_copy_of_the_files(tmp_path):
    # --standalone: the preloads are read on each node from a copy made from the checked folder.
    from gpujobqueue.preloads import source

    submit, bin_dir, results = tmp_path / "submit", tmp_path / "bin", tmp_path / "results"
    for folder in (submit, bin_dir, results):
        folder.mkdir()
    (bin_dir / "srun").write_text(RUN_TASKS)
    (bin_dir / "python").write_text(RECORDING_PYTHON.format(python=sys.executable, results=str(results)))
    for name in ("srun", "python"):
        (bin_dir / name).chmod(0o755)
    keywords = {**KEYWORDS, "nodes": 2, "launcher": "srun", "python": str(bin_dir / "python")}
    script = job_script_for("slurm", keywords, name="w", tls=False, scheduler="tcp://127.0.0.1:1", standalone=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    job = subprocess.run(["bash", "-c", script], cwd=submit, env=env, capture_output=True, text=True, timeout=60)
    assert job.returncode == 0, job.stderr
    workers = [json.loads(path.read_text()) for path in results.iterdir()]
    assert len(workers) == 2
    for worker in workers:
        assert worker["cwd"] == str(submit), "the workers run where the task started"
        assert not worker["preload"].startswith(str(submit)), worker["preload"]
        assert worker["text"] == source("watchdog")
    assert list(submit.iterdir()) == [], "the private folder is removed"
