"""Launchers as objects, and each batch system's native launcher for jobs of several nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.sizes import SMALL_JOB, with_job_size, with_size_options

from gpujobqueue import LocalGPUCluster, LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster
from gpujobqueue.batch import names as batch_names
from gpujobqueue.cli import main
from gpujobqueue.errors import ValidationError
from gpujobqueue.jobs.launchers import LAUNCHER_OBJECTS, LAUNCHERS, NODE_RANK_VARIABLE, LaunchContext
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class

TWO_NODES = LaunchContext(
    nodes=2,
    cpus_per_node=8,
    gpus_per_node=4,
    launcher_args=("--x=1 2",),
    node_file_variable="PBS_NODEFILE",
)


@pytest.mark.parametrize(
    "name, command, rank",
    [
        ("srun", "srun --ntasks=2 --ntasks-per-node=1 --cpus-per-task=8 '--x=1 2' \\", "${SLURM_PROCID:-0}"),
        ("ibrun", "ibrun '--x=1 2' \\", "${PMI_RANK:-${MV2_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}}"),
        (
            "mpiexec-pals",
            "mpiexec -n 2 --ppn 1 --depth 8 --cpu-bind depth '--x=1 2' \\",
            "${PALS_RANKID:-${PMI_RANK:-0}}",
        ),
        (
            "mpiexec-openmpi",
            "mpiexec -n 2 -npernode 1 --bind-to none --hostfile \"$PBS_NODEFILE\" '--x=1 2' \\",
            "${OMPI_COMM_WORLD_RANK:-0}",
        ),
        ("mpiexec-mpich", "mpiexec -n 2 -ppn 1 -f \"$PBS_NODEFILE\" '--x=1 2' \\", "${PMI_RANK:-0}"),
        (
            "jsrun",
            "jsrun --nrs 2 --rs_per_host 1 --tasks_per_rs 1 --cpu_per_rs 8 --gpu_per_rs 4 --bind rs '--x=1 2' \\",
            "${JSM_NAMESPACE_RANK:-${OMPI_COMM_WORLD_RANK:-0}}",
        ),
        (
            "pbsdsh",
            '    pbsdsh -n "${node_index[$node]}" \'--x=1 2\' -- "${task[@]}" &',
            f"${{{NODE_RANK_VARIABLE}:-0}}",
        ),
        (
            "blaunch",
            '    blaunch \'--x=1 2\' "$host" "$(printf \'%q \' "${task[@]}")" &',
            f"${{{NODE_RANK_VARIABLE}:-0}}",
        ),
        (
            "qrsh-inherit",
            '    qrsh -inherit -nostdin \'--x=1 2\' "$host" "$(printf \'%q \' "${task[@]}")" &',
            f"${{{NODE_RANK_VARIABLE}:-0}}",
        ),
    ],
)
def test_each_launcher_object_writes_its_command_for_two_nodes(name, command, rank):
    launcher = LAUNCHER_OBJECTS[name]
    lines = launcher.start_lines(TWO_NODES)
    assert command in lines, f"{name}: {lines}"
    assert launcher.rank_expression == rank
    assert all("\n" not in line for line in lines)
    text = "\n".join(["node_task=(bash /dev/null)", *lines])
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0, text


def test_every_launcher_is_an_object_and_runs_under_the_batch_systems_that_name_it():
    assert set(LAUNCHERS) == set(LAUNCHER_OBJECTS) and LAUNCHERS[0] == "direct"
    named = set()
    for batch in batch_names():
        system = cluster_class(batch).batch_system
        named.update(system.launcher_names())
        assert all(launcher.name in system.launcher_names() for launcher in system.launchers)
        assert all(launcher is LAUNCHER_OBJECTS[launcher.name] for launcher in system.launchers)
        if system.native_launcher is not None:
            assert system.native_launcher in system.launcher_names(), f"{batch}'s native launcher is one of its own"
    assert named == set(LAUNCHERS) - {"direct"}, "every launcher runs under some batch system"
    assert "pbsdsh" not in SLURMGPUCluster.batch_system.launcher_names()
    with pytest.raises(ValueError):
        LAUNCHER_OBJECTS["direct"].start_lines(TWO_NODES)


@pytest.mark.parametrize(
    "cluster_cls, extra, native",
    [
        (SLURMGPUCluster, {}, "srun"),
        (PBSGPUCluster, {}, "pbsdsh"),
        (LSFGPUCluster, {"lsf_units": "mb"}, "blaunch"),
        (SGEGPUCluster, {"parallel_environment": "smp", "gpu_request": "none"}, "qrsh-inherit"),
    ],
)
def test_a_job_of_several_nodes_without_a_launcher_uses_its_batch_systems_own(cluster_cls, extra, native):
    assert cluster_cls.batch_system.native_launcher == native
    plan = cluster_cls.parse_keywords(with_job_size({"nodes": 2, "gpus_per_node": 2, **extra}))
    request, launch = plan.request, plan.launch
    assert (request.nodes, launch.launcher, launch.task_launcher.name) == (2, native, native)
    plan = cluster_cls.parse_keywords(with_job_size({"gpus_per_node": 2, **extra}))
    one = plan.launch
    assert one.launcher == "direct", "a one-node job starts its workers directly"
    first = cluster_cls.batch_system.launcher_names()[0]
    given = first if first != "jsrun" else "mpiexec-openmpi"
    keywords = with_job_size({"nodes": 2, "gpus_per_node": 2, "launcher": given, **extra})
    plan = cluster_cls.parse_keywords(keywords)
    chosen = plan.launch
    assert chosen.launcher == given, "a launcher given wins over the native one"


def test_a_sites_launcher_wins_over_the_native_one():
    plan = PBSGPUCluster.parse_keywords({"site": "polaris", "nodes": 2, "account": "MyProject"})
    launch = plan.launch
    assert launch.launcher == "mpiexec-pals"


def test_qrsh_inherit_needs_a_parallel_environment_and_nothing_without_a_native_launcher_is_guessed():
    with pytest.raises(ValidationError) as info:
        SGEGPUCluster.parse_keywords(with_job_size({"nodes": 2, "gpus_per_node": 2, "gpu_request": "none"}))
    assert info.value.field == "parallel_environment"
    with pytest.raises(ValidationError) as info:
        LocalGPUCluster.parse_keywords({"nodes": 2})
    assert info.value.field == "launcher"


def test_render_slurm_of_four_nodes_needs_no_launcher_and_uses_srun():
    result = CliRunner().invoke(main, ["render", "slurm", *with_size_options(["--nodes", "4", "--gpus-per-node", "2"])])
    assert result.exit_code == 0, result.output
    assert "#SBATCH --nodes=4" in result.stdout
    assert 'srun --ntasks=4 --ntasks-per-node=1 --cpus-per-task=2 \\\n    "${node_task[@]}" &' in result.stdout
    assert 'node_rank="${SLURM_PROCID:-0}"' in result.stdout


# Strict stand-ins for the per-host launchers: each checks its command line as the real one takes it,
# refuses a host outside the job's allocation, records the host, and runs the task with an emptied
# environment (the task gets only what the script passes), through a shell where the real one uses one.
STAND_INS = {
    "pbsdsh": r'''
[ "$1" = -n ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$3" = -- ] ||
    { echo "pbsdsh: usage: pbsdsh -n node -- program" >&2; exit 2; }
host=$(sed -n "$(($2 + 1))p" "$PBS_NODEFILE"); [ -n "$host" ] || { echo "pbsdsh: node $2 not in the job" >&2; exit 1; }
echo "$host" >> "$RESULTS/hosts"; shift 3
exec env -i PATH=/usr/bin:/bin "$@"''',
    "blaunch": r'''
[ $# -eq 2 ] || { echo "blaunch: expected a host and a command" >&2; exit 2; }
case " $LSB_MCPU_HOSTS " in *" $1 "*) ;; *) echo "blaunch: $1 is not a host of the job" >&2; exit 1 ;; esac
echo "$1" >> "$RESULTS/hosts"
exec env -i PATH=/usr/bin:/bin /bin/sh -c "$2"''',
    "qrsh": r'''
[ "$1" = -inherit ] && [ "$2" = -nostdin ] && [ -n "$JOB_ID" ] ||
    { echo "qrsh: expected -inherit -nostdin in a job" >&2; exit 2; }
cut -d' ' -f1 "$PE_HOSTFILE" | grep -qx "$3" || { echo "qrsh: $3 is not a host of the job" >&2; exit 1; }
echo "$3" >> "$RESULTS/hosts"; shift 3
exec env -i PATH=/usr/bin:/bin /bin/sh -c "$*"''',
}
# Stand-ins for the launchers that start every task of a job at once, each task its rank in the
# launcher's variable: srun, ibrun, jsrun and MPICH's and PALS's mpiexec pass the whole environment on;
# Open MPI's (-npernode) passes the variables named by -x alone.
RANKED_STAND_IN = r"""
import os, subprocess, sys

name, args = sys.argv[1], sys.argv[2:]
command = args[args.index("bash") :]
environment = dict(os.environ)
if name == "srun":
    tasks, rank = int(next(a.split("=")[1] for a in args if a.startswith("--ntasks="))), "SLURM_PROCID"
elif name == "ibrun":  # its tasks are the job's, from SLURM
    tasks, rank = int(os.environ["SLURM_NNODES"]), "PMI_RANK"
elif name == "jsrun":
    tasks, rank = int(args[args.index("--nrs") + 1]), "JSM_NAMESPACE_RANK"
else:
    tasks = int(args[args.index("-n") + 1])
    rank = "PALS_RANKID" if "--ppn" in args else "OMPI_COMM_WORLD_RANK" if "-npernode" in args else "PMI_RANK"
    if rank == "OMPI_COMM_WORLD_RANK":
        named = [args[i + 1] for i, a in enumerate(args[: args.index("bash")]) if a == "-x"]
        environment = {"PATH": "/usr/bin:/bin", **{n: os.environ[n] for n in named if n in os.environ}}
tasks = [subprocess.Popen(command, env={**environment, rank: str(r)}) for r in range(tasks)]
sys.exit(max(task.wait() for task in tasks))
"""
# Each stand-in first records its own command line, as the OS would show it to every user.
RECORD_ARGUMENTS = 'printf "%s\\0" "${0##*/}" "$@" > "$RESULTS/argv-${0##*/}-$$"'


def install_stand_ins(bin_dir: Path) -> None:
    """Every launcher's stand-in in ``bin_dir``, each recording its arguments in ``$RESULTS``."""
    bin_dir.mkdir(exist_ok=True)
    ranked = bin_dir / "ranked-launcher.py"
    ranked.write_text(RANKED_STAND_IN)
    bodies = {**STAND_INS, **{name: f'exec {sys.executable} {ranked} {name} "$@"' for name in RANKED}}
    for command, body in bodies.items():
        (bin_dir / command).write_text(f"#!/bin/bash\n{RECORD_ARGUMENTS}\n{body.lstrip()}\n")
        (bin_dir / command).chmod(0o755)


RANKED = ("srun", "ibrun", "jsrun", "mpiexec")


def job_environment(tmp_path: Path, bin_dir: Path, results: Path) -> dict[str, str]:
    """A job of two hosts, n1 and n2, as each batch system describes it to its script."""
    (tmp_path / "nodefile").write_text("n1\nn1\nn2\nn2\n")  # two MPI processes per host
    (tmp_path / "pe_hostfile").write_text("n1 4 gpu.q@n1 UNDEFINED\nn2 4 gpu.q@n2 UNDEFINED\n")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "RESULTS": str(results),
        "PBS_NODEFILE": str(tmp_path / "nodefile"),
        "LSB_MCPU_HOSTS": "n1 4 n2 4",
        "JOB_ID": "7",
        "PE_HOSTFILE": str(tmp_path / "pe_hostfile"),
        "SLURM_NNODES": "2",
    }


@pytest.mark.parametrize("name", ["pbsdsh", "blaunch", "qrsh-inherit"])
def test_a_per_host_launcher_starts_the_node_script_once_on_each_host_with_its_rank_alone(tmp_path, name):
    bin_dir, results = tmp_path / "bin", tmp_path / "results"
    results.mkdir()
    install_stand_ins(bin_dir)
    node_script = tmp_path / "node.sh"
    node_script.write_text(
        'echo "$GPUJOBQUEUE_NODE_RANK|${SECRET-unset}" > "%s/rank-$GPUJOBQUEUE_NODE_RANK"\n' % results
    )
    context = LaunchContext(nodes=2, cpus_per_node=4, gpus_per_node=1)
    script = "\n".join(
        [
            f"node_task=(bash {node_script})",
            *LAUNCHER_OBJECTS[name].start_lines(context),
            'for pid in "${worker_pids[@]}"; do wait "$pid" || exit 3; done',
        ]
    )
    env = {**job_environment(tmp_path, bin_dir, results), "SECRET": "not passed"}
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert sorted((results / "hosts").read_text().split()) == ["n1", "n2"], "one task on each host"
    for rank in (0, 1):  # the launcher passes the rank and nothing of the script's environment
        assert (results / f"rank-{rank}").read_text() == f"{rank}|unset\n"


# A worker's python that records what it was started with, where and how, and ends.
WORKER_STAND_IN = r"""
import json, os, stat, sys

if sys.argv[1:3] != ["-P", "-m"]:
    sys.exit(0)  # the plan's check of the workers' python: not judged
parent = [word.decode() for word in open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0")[:-1]]
# The node part's file, which bash runs from the private folder (and holds open as its fd 255).
script_fd = f"/proc/{os.getppid()}/fd/255"
node_file = os.readlink(script_fd) if os.path.exists(script_fd) else None
record = {
    "argv": sys.argv[1:],
    "token": os.environ.get("GPUJOBQUEUE_TEST_TOKEN"),
    "parent": parent,
    "modes": [oct(stat.S_IMODE(os.stat(path).st_mode)) for path in (node_file, os.path.dirname(node_file))]
    if node_file
    else None,
}
with open(os.path.join(RESULTS, f"worker-{os.getpid()}"), "w") as file:
    json.dump(record, file)
"""
# (batch system, launcher, its keywords): every launcher of jobs of several nodes.
MULTI_NODE = [
    ("slurm", "srun", {}),
    ("slurm", "ibrun", {}),
    ("slurm", "mpiexec-openmpi", {}),
    ("slurm", "mpiexec-mpich", {}),
    ("pbs", "mpiexec-pals", {}),
    ("pbs", "pbsdsh", {}),
    ("lsf", "jsrun", {"lsf_units": "mb", "gpu_request": "csm"}),
    ("lsf", "blaunch", {"lsf_units": "mb"}),
    ("sge", "qrsh-inherit", {"parallel_environment": "smp", "gpu_request": "none"}),
]


@pytest.mark.parametrize("batch, launcher, extra", MULTI_NODE, ids=[launcher for _, launcher, _ in MULTI_NODE])
def test_no_launcher_is_given_an_environment_value_or_script_text_and_every_node_starts_its_workers(
    tmp_path, batch, launcher, extra
):
    token = "gpujobqueue-planted-token-3c9e41"
    bin_dir, results, tls = tmp_path / "bin", tmp_path / "results", tmp_path / "tls"
    results.mkdir(), tls.mkdir()
    install_stand_ins(bin_dir)
    python = bin_dir / "python"
    python.write_text(f"#!{sys.executable}\nRESULTS = {str(results)!r}\n{WORKER_STAND_IN}")
    python.chmod(0o755)
    for name in ("ca.pem", "cert.pem", "key.pem"):  # the job checks that the credentials are there
        (tls / name).write_text("")
    keywords = {
        **SMALL_JOB,
        "nodes": 2,
        "gpus_per_node": 1,
        "worker_mode": "per-device",
        "nanny": False,
        "launcher": launcher,
        "python": str(python),
        "environment": {"GPUJOBQUEUE_TEST_TOKEN": token},
        **extra,
    }
    script = job_script_for(batch, keywords, name="w", scheduler="tls://10.0.0.1:8786", tls_directory=str(tls))
    run = subprocess.run(
        ["bash", "-c", script],
        env=job_environment(tmp_path, bin_dir, results),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    launched = [path.read_bytes().split(b"\0")[:-1] for path in results.glob("argv-*")]
    assert launched, "no launcher ran"
    for words in launched:
        text = [word.decode() for word in words]
        assert not [word for word in text if token in word], f"an environment value in {launcher}'s arguments: {text}"
        assert not [word for word in text if "\n" in word or "dask_worker" in word], f"script text in {text}"
    assert run.returncode == 0, run.stderr
    workers = [json.loads(path.read_text()) for path in results.glob("worker-*")]
    names = sorted(worker["argv"][worker["argv"].index("--name") + 1] for worker in workers)
    assert names == ["w-0", "w-1"], "each node starts its worker, named by its rank"
    for worker in workers:
        assert worker["token"] == token, "the node's workers get the job's environment"
        assert not [word for word in worker["argv"] if token in word]
        assert worker["parent"][0] == "bash" and worker["modes"] == ["0o600", "0o700"], worker
    assert not list(tmp_path.glob(".gpujobqueue-*")), "the node script's private folder is left behind"


def test_a_per_host_launcher_refuses_a_job_with_another_number_of_hosts(tmp_path):
    (tmp_path / "nodefile").write_text("n1\n")
    script = "\n".join(["node_task=(bash /dev/null)", *LAUNCHER_OBJECTS["pbsdsh"].start_lines(TWO_NODES)])
    env = {"PATH": "/usr/bin:/bin", "PBS_NODEFILE": str(tmp_path / "nodefile")}
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "has 1 hosts, not 2" in result.stderr


def test_the_emulators_accept_the_native_scripts_of_two_nodes(pbs, lsf):
    pbs_script = job_script_for(PBSGPUCluster.job_cls.batch, {**SMALL_JOB, "nodes": 2, "gpus_per_node": 1}, name="w")
    assert "pbsdsh -n" in pbs_script
    assert pbs.parse(pbs_script).nodect == 2
    lsf_keywords = {**SMALL_JOB, "nodes": 2, "gpus_per_node": 1, "lsf_units": "mb"}
    lsf_script = job_script_for(LSFGPUCluster.job_cls.batch, lsf_keywords, name="w")
    assert 'blaunch "$host"' in lsf_script
    assert lsf.parse(lsf_script).slots >= 2
    for script in (pbs_script, lsf_script):
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
