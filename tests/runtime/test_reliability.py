"""Nothing leaked, nothing lost, no one else in: on the real SLURM and Grid Engine, the PBS and
LSF emulators and local processes.

- No job is left in the queue after ``close()``, after leaving a ``with`` block by an
  exception, or when the client process exits normally, on SIGINT, SIGTERM or SIGHUP (those
  last four as real subprocesses).
- A scheduler killed outright takes its workers with it within ``death_timeout`` + 10 s.
- A job cancelled in the middle of a computation loses nothing, and adapt replaces it.
- Jobs whose walltime is shorter than the computation retire their workers gracefully
  before it, and adapt replaces them.
- The cluster talks TLS unless told not to; a client without its certificate is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import wait_until
from dask.distributed import Client, as_completed
from distributed.security import Security
from fixtures.processes import proc_cmdline, processes_running
from test_conformance import ALL, COMMON, Backend, _backend, tmp_path_cwd  # noqa: F401  (fixture)

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.security.tls import InsecureClusterWarning

CLASS_NAMES = {
    "local": "LocalGPUCluster",
    "slurm": "SLURMGPUCluster",
    "sge": "SGEGPUCluster",
    "pbs": "PBSGPUCluster",
    "lsf": "LSFGPUCluster",
}


@pytest.fixture(params=ALL)
def any_backend(request) -> Backend:
    return _backend(request, request.param)


def local_jobs_alive(pids) -> list[str]:
    """Local jobs (process groups) that still have a live process: a zombie that its stopped
    client cannot reap holds nothing."""
    groups = {int(pid) for pid in pids}
    alive = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) in groups:  # state, then ppid, then pgrp
                alive.add(int(fields[2]))
    return [pid for pid in pids if int(pid) in alive]


def queue_after(backend: Backend, job_ids) -> list[str]:
    """The given jobs that the batch system still runs or queues (for local: live process groups)."""
    if backend.name == "local":
        return local_jobs_alive(job_ids)
    listed = set(backend.queue_ids())
    return [job_id for job_id in job_ids if job_id in listed or job_id.split(".")[0] in listed]


def _sum_of_squares(n):
    return sum(i * i for i in range(n))


@pytest.mark.parametrize("how", ["close", "exception"])
def test_no_job_is_left_after_close_or_an_exception_in_a_with_block(any_backend, how):
    backend = any_backend
    job_ids = []
    with pytest.raises(RuntimeError, match="user code failed") if how == "exception" else contextlib.nullcontext():
        with backend.cluster() as cluster, Client(cluster) as client:
            cluster.scale(gpus=4)
            client.wait_for_workers(4, timeout=120)
            job_ids = [str(job.job_id) for job in cluster.workers.values()]
            assert client.submit(_sum_of_squares, 10).result() == 285
            if how == "exception":
                raise RuntimeError("user code failed")
    assert len(job_ids) == 2
    wait_until(
        lambda: not queue_after(backend, job_ids),
        60,
        what=lambda: f"jobs {queue_after(backend, job_ids)} to leave the queue",
    )


CLIENT = textwrap.dedent("""
    import json, sys, time
    import gpujobqueue
    from dask.distributed import Client, as_completed

    cluster_cls = getattr(gpujobqueue, sys.argv[1])
    keywords = json.loads(sys.argv[2])
    how = sys.argv[3]
    cluster = cluster_cls(**keywords)
    client = Client(cluster)
    cluster.scale(gpus=4)
    client.wait_for_workers(4, timeout=120)
    assert client.submit(sum, range(5)).result() == 10
    print("READY " + " ".join(str(job.job_id) for job in cluster.workers.values()), flush=True)
    if how == "exit":
        sys.stdin.readline()  # once the test has seen the jobs in the queue
        sys.exit(0)  # neither client nor cluster closed: interpreter exit must cancel the jobs
    if how == "kill-scheduler":
        print("KILL ME", cluster.scheduler_address, flush=True)
    time.sleep(600)
""")


def _signals_as_a_terminal_leaves_them(ignored: tuple[int, ...] = ()) -> None:
    """In the client process, before it starts: the signals these tests send at their default
    action, as a login shell leaves them, whatever the test run inherited (``nohup`` ignores
    SIGHUP, a shell's ``&`` SIGINT), and ``ignored`` ignored."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)


def start_client(
    tmp_path: Path, backend: Backend, how: str, ignored: tuple[int, ...] = (), **extra
) -> tuple[subprocess.Popen, list[str]]:
    """A client process that makes a cluster of two jobs, waits for their workers, prints the
    job ids, then exits or waits for a signal (those in ``ignored`` ignored from its start)."""
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    keywords = {**COMMON, **backend.keywords, **extra}
    process = subprocess.Popen(
        [sys.executable, str(script), CLASS_NAMES[backend.name], json.dumps(keywords), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(tmp_path),
        env=os.environ.copy(),
        preexec_fn=lambda: _signals_as_a_terminal_leaves_them(ignored),
    )
    line = process.stdout.readline()
    if not line.startswith("READY"):
        process.kill()
        raise AssertionError(f"the client process did not start its cluster: {line}{process.stderr.read()}")
    return process, line.split()[1:]


@pytest.mark.parametrize("how", ["exit", "SIGINT", "SIGTERM", "SIGHUP"])
def test_no_job_is_left_when_the_client_process_ends(any_backend, tmp_path, how):
    backend = any_backend
    process, job_ids = start_client(tmp_path, backend, how)
    try:
        assert len(job_ids) == 2 and not set(job_ids) - set(queue_after(backend, job_ids)), "both jobs run"
        if how == "exit":
            process.stdin.write("exit now\n")
            process.stdin.flush()
        else:
            process.send_signal(getattr(signal, how))
        process.wait(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = process.stderr.read()
    if how == "SIGTERM" or how == "SIGHUP":
        assert process.returncode == -getattr(signal, how), f"the process should end as the signal ends it:\n{stderr}"
    if how == "SIGINT":  # as Python ends on an uncaught KeyboardInterrupt: killed by SIGINT, a shell's 130
        assert process.returncode == -signal.SIGINT, f"the process should end as Ctrl-C ends Python:\n{stderr}"
        assert "KeyboardInterrupt" in stderr, stderr
    wait_until(
        lambda: not queue_after(backend, job_ids),
        60,
        what=lambda: f"jobs {queue_after(backend, job_ids)} to leave the queue after {how}:\n{stderr[-3000:]}",
    )


def test_an_ignored_sighup_leaves_the_cluster_running_as_nohup_asks(tmp_path, request):
    # nohup ignores SIGHUP so that a closed terminal does not end the command: gpujobqueue leaves an
    # ignored signal alone, and the cluster keeps its jobs until the client ends otherwise.
    backend = _backend(request, "local")
    process, job_ids = start_client(tmp_path, backend, "wait", ignored=(signal.SIGHUP,))
    try:
        process.send_signal(signal.SIGHUP)
        time.sleep(5)
        assert process.poll() is None, f"SIGHUP ended the client:\n{process.stderr.read()}"
        assert sorted(queue_after(backend, job_ids)) == sorted(job_ids), "the jobs outlived the SIGHUP"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
    wait_until(lambda: not queue_after(backend, job_ids), 60, what="the jobs to leave after SIGTERM")


SIGINT_CLIENT = textwrap.dedent("""
    import signal, sys, time
    if sys.argv[1] == "handler-set-after-dask-jobqueue":
        import dask_jobqueue

        def own_handler(signum, frame):
            print("OWN HANDLER", flush=True)
            sys.exit(3)

        signal.signal(signal.SIGINT, own_handler)
    import gpujobqueue
    print("READY", flush=True)
    time.sleep(60)
""")


@pytest.mark.parametrize("first", ["gpujobqueue", "handler-set-after-dask-jobqueue"])
def test_ctrl_c_raises_keyboard_interrupt_once_gpujobqueue_is_imported(tmp_path, first):
    script = tmp_path / "client.py"
    script.write_text(SIGINT_CLIENT)
    process = subprocess.Popen(
        [sys.executable, str(script), first],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_signals_as_a_terminal_leaves_them,
    )
    try:
        assert process.stdout.readline().strip() == "READY", process.stderr.read()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    if first == "gpujobqueue":
        assert process.returncode == -signal.SIGINT, f"Ctrl-C should end the process as it ends Python:\n{stderr}"
        assert "KeyboardInterrupt" in stderr, stderr
    else:  # a handler the program set is the program's: gpujobqueue leaves it
        assert (process.returncode, stdout.strip()) == (3, "OWN HANDLER"), stderr


def test_workers_leave_within_death_timeout_when_the_scheduler_is_killed(any_backend, tmp_path):
    backend = any_backend
    death_timeout = COMMON["death_timeout"]
    process, job_ids = start_client(tmp_path, backend, "kill-scheduler")
    said, scheduler = process.stdout.readline().strip().rsplit(" ", 1)
    assert said == "KILL ME"
    workers_before = dask_worker_processes(scheduler)
    process.kill()  # SIGKILL: no atexit, no handler; the scheduler in it is gone at once
    killed = time.monotonic()
    process.wait()
    wait_until(
        lambda: not queue_after(backend, job_ids),
        death_timeout + 10,
        what=lambda: f"jobs {queue_after(backend, job_ids)} to end within death_timeout + 10 s",
    )
    assert workers_before and not dask_worker_processes(scheduler), (
        f"worker processes {dask_worker_processes(scheduler)} outlived their scheduler"
    )
    assert time.monotonic() - killed <= death_timeout + 10


def dask_worker_processes(scheduler: str) -> list[int]:
    """The dask worker processes of this test's scheduler (every job of these tests runs on this
    machine); another test's or another user's workers are not counted."""
    return [
        pid
        for pid in processes_running(scheduler)
        if any(command in proc_cmdline(pid) for command in ("distributed.cli.dask_worker", "dask_cuda.cli"))
    ]


def _slow_square(x):
    time.sleep(0.5)
    return x * x


@pytest.mark.slurm
def test_a_job_cancelled_mid_computation_loses_nothing_and_adapt_replaces_it(slurm, counted):
    with SLURMGPUCluster(**COMMON, queue="gpu") as cluster, Client(cluster) as client:
        cluster.adapt(minimum_gpus=4, maximum_gpus=4, interval="500ms", wait_count=4)
        client.wait_for_workers(4, timeout=120)
        first_jobs = {name: str(job.job_id) for name, job in cluster.workers.items()}
        futures = client.map(_slow_square, range(60), pure=False, resources={"GPU": 1})
        wait_until(lambda: sum(f.done() for f in futures) >= 10, 60, what="ten results")
        victim_name, victim = next(iter(first_jobs.items()))
        subprocess.run(["scancel", victim], check=True)
        assert client.gather(futures) == [x * x for x in range(60)]
        wait_until(
            lambda: (
                len(cluster.worker_spec) == 2
                and victim_name not in cluster.worker_spec
                and len(client.scheduler_info()["workers"]) == 4
            ),
            90,
            what=lambda: f"a replacement for {victim_name}: spec {list(cluster.worker_spec)}",
        )
        assert counted.count("sbatch") == 3, "two jobs, and one replacement"
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")


def _two_seconds_of_work(i):
    time.sleep(2)
    return i + 1


def _jobs_retired_gracefully(log_directory: Path) -> list[str]:
    if not log_directory.is_dir():
        return []
    # Retired by the cluster's handover (gpujobqueue/runtime/handover.py: through the scheduler, as adapt retires
    # workers) or by the workers' own lifetime, whichever came first.
    return sorted(
        path.name
        for path in log_directory.iterdir()
        if re.search(r"Reason: (scheduler-remove-worker|worker-lifetime-reached)", path.read_text(errors="replace"))
    )


@pytest.mark.long
@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_a_computation_longer_than_the_walltime_retires_workers_gracefully(slurm, counted, tmp_path):
    # One-minute jobs: workers retire 45 s (+/- 3 s) after they start (margin: a quarter of the
    # walltime). The computation goes on, sixteen two-second tasks in flight, until two jobs have
    # retired (at most 600 tasks, about 150 s on eight workers), so it outlasts the first jobs
    # however fast the machine is; a fixed amount of work raced the lifetime. Adapt keeps the GPUs
    # by replacing retiring jobs early, within its maximum of four two-GPU jobs: never more are held.
    # The jobs ask for no GPU (the partition stands for GPUs): the one node has four, and a
    # replacement must be able to start beside the job it replaces, as on a real machine,
    # so that the leaving workers have somewhere to hand their results.
    log_directory = tmp_path / "logs"
    keywords = {**COMMON, "gpu_request": "none", "walltime": "00:01:00", "log_directory": str(log_directory)}
    with SLURMGPUCluster(**keywords, queue="gpu") as cluster, Client(cluster) as client:
        cluster.adapt(minimum_gpus=4, maximum_gpus=8, interval="1s", wait_count=4)
        held, done = [], threading.Event()

        def sample_jobs_held():
            while not done.is_set():
                held.append(len(cluster.worker_spec))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample_jobs_held)
        sampler.start()
        try:
            submitted = 16
            computing = as_completed(
                client.map(_two_seconds_of_work, range(submitted), pure=False, resources={"GPU": 1})
            )
            results = []
            for future in computing:
                results.append(future.result())
                if submitted < 600 and len(_jobs_retired_gracefully(log_directory)) < 2:
                    computing.add(client.submit(_two_seconds_of_work, submitted, pure=False, resources={"GPU": 1}))
                    submitted += 1
        finally:
            done.set()
            sampler.join()
        assert sorted(results) == list(range(1, submitted + 1))
        assert max(held) <= 4, f"adapt(maximum_gpus=8) held {max(held)} two-GPU jobs at once"
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")
    logs = {path.name: path.read_text(errors="replace") for path in log_directory.iterdir()}
    assert not [name for name, text in logs.items() if "DUE TO TIME LIMIT" in text], "a job reached its walltime"
    retired = _jobs_retired_gracefully(log_directory)
    assert len(retired) >= 2, f"workers retired gracefully in {retired} after {submitted} tasks"
    assert counted.count("sbatch") >= 4, "retiring jobs were replaced"
    print(
        f"{submitted} tasks, {counted.count('sbatch')} jobs, {len(retired)} retired gracefully, "
        f"at most {max(held)} held at once"
    )


def test_tls_by_default_refuses_a_client_without_the_certificate(slurm, counted, tmp_path):
    import asyncio

    from distributed.comm import connect

    with SLURMGPUCluster(**COMMON, queue="gpu", shared_temp_directory=str(tmp_path)) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        folder = cluster._private_directory
        assert folder and os.path.dirname(folder) == str(tmp_path) and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        files = sorted(os.listdir(folder))
        assert any("key" in name for name in files), files
        assert all(stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) == 0o600 for name in files), files
        with pytest.raises((OSError, TimeoutError)):
            asyncio.run(asyncio.wait_for(connect(cluster.scheduler_address.replace("tls://", "tcp://"), timeout=3), 5))
        host, port = cluster.scheduler_address[len("tls://") :].rsplit(":", 1)
        no_certificate = ssl.create_default_context()
        no_certificate.check_hostname, no_certificate.verify_mode = (
            False,
            ssl.CERT_NONE,
        )  # trusts any server, shows no certificate
        with pytest.raises((ssl.SSLError, OSError)):
            with socket.create_connection((host, int(port)), timeout=5) as raw, no_certificate.wrap_socket(raw) as tls:
                tls.sendall(b"\0" * 8)
                assert tls.recv(8), "the scheduler closes the connection"
        with pytest.raises((OSError, TimeoutError)):
            Client(cluster.scheduler_address, security=Security.temporary(), timeout=5)  # a certificate of another CA
        with Client(cluster) as client:
            cluster.scale(gpus=2)
            client.wait_for_workers(2, timeout=120)
            assert client.submit(_sum_of_squares, 4).result() == 14
            assert all(w.startswith("tls://") for w in client.scheduler_info()["workers"])
    assert not os.path.exists(folder), "the credentials leave with the cluster"


def test_plain_tcp_must_be_asked_for_and_warns(slurm, counted):
    with pytest.warns(InsecureClusterWarning, match="anyone who can reach"):
        cluster = SLURMGPUCluster(**COMMON, queue="gpu", security=False)
    with cluster:
        assert cluster.scheduler_address.startswith("tcp://")


HUNG_CLIENT_MODES = [
    pytest.param("local", "local", "per-device", id="local-per-device"),
    pytest.param("slurm", "local", "per-device", id="slurm-per-device"),
    pytest.param("slurm", "local", "per-device-no-nanny", id="slurm-per-device-no-nanny"),
    pytest.param("slurm", "job", "per-device", id="slurm-scheduler-job"),
    pytest.param("sge", "local", "per-device", id="sge-per-device"),
]


@pytest.mark.parametrize("backend_name, scheduler, mode", HUNG_CLIENT_MODES)
def test_a_stopped_client_releases_its_jobs_within_death_timeout_and_a_minute(
    request, tmp_path, backend_name, scheduler, mode
):
    # SIGSTOP freezes the client (and the scheduler in it, or the cluster that owns the
    # scheduler job): its sockets stay open and the kernel still completes handshakes, so
    # only the missing replies tell the workers, or the job's scheduler, that it is gone.
    backend = _backend(request, backend_name)
    death_timeout = 10
    extra = {"death_timeout": death_timeout, "scheduler": scheduler}
    if mode == "per-device-no-nanny":
        extra["nanny"] = False
    process, job_ids = start_client(tmp_path, backend, "stop", **extra)
    try:
        assert job_ids and not set(job_ids) - set(queue_after(backend, job_ids)), "the jobs run"
        process.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        wait_until(
            lambda: not queue_after(backend, job_ids),
            death_timeout + 60,
            interval=1,
            what=lambda: f"jobs {queue_after(backend, job_ids)} of a stopped client to end in death_timeout + 60 s",
        )
        released = time.monotonic() - stopped
        print(
            f"\n{backend_name} scheduler={scheduler} {mode}: {len(job_ids)} jobs released {released:.1f} s "
            f"after SIGSTOP (death_timeout={death_timeout})"
        )
        assert released <= death_timeout + 60
    finally:
        process.kill()
        process.wait()
