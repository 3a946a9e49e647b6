"""Launchers: how a job script of several nodes starts one task per node, and how a task knows its node.

Each launcher is an object (Parsl's way): its name, the shell lines that start the node part once per
node, and the variables that give a task its rank (= its node); a batch system says which it offers
(:attr:`~gpujobqueue.batch.base.BatchSystem.launchers`). Each task runs ``"${node_task[@]}"``
(templates/launchers/launch.sh.j2), which runs the ``node.sh`` the script wrote into its private folder,
once it is checked still the job's own; so no launcher's arguments hold a variable's value, whatever the
launcher passes of the environment.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

# The variable gpujobqueue sets itself, per host, where a launcher starts one task per host named
# by the script (pbsdsh -n, blaunch <host>, qrsh -inherit <host>) and so gives no rank of its own.
NODE_RANK_VARIABLE = "GPUJOBQUEUE_NODE_RANK"


@dataclass(frozen=True)
class LaunchContext:
    """What a launcher's command lines need to know of the job: its nodes (one task each), cores and GPUs per
    node, more launcher options (a site's ``launcher.args``) and the variable naming the file of its hosts."""

    nodes: int
    cpus_per_node: int
    gpus_per_node: int
    launcher_args: tuple[str, ...] = ()
    node_file_variable: str | None = None

    @property
    def quoted_args(self) -> str:
        """The launcher options as shell words, each after a space."""
        return "".join(f" {shlex.quote(arg)}" for arg in self.launcher_args)


# The command that runs the node part, as the script sets it (templates/launchers/launch.sh.j2).
NODE_TASK = '"${node_task[@]}"'
_RUN_NODE_PART = f"    {NODE_TASK} &"


class Launcher:
    """A way of starting one task per node of a job; subclasses say how."""

    name: str = ""  # the launcher keyword's value
    rank_variables: tuple[str, ...] = ()  # giving a launched task its rank (its node), the launcher's own first
    # The batch script runs on a launch node without the job's GPUs (jsrun): even a one-node job uses the launcher.
    runs_on_launch_node: bool = False
    # The launch command before the launcher arguments: a format of LaunchContext's fields and {hostfile}.
    command_format: str = ""
    # The option naming the file of the job's hosts, where the batch system has one ({hostfile} is then it).
    hostfile_option: str = ""

    def start_lines(self, context: LaunchContext) -> list[str]:
        """Shell lines, each one line, that start the node part (``"${node_task[@]}"``) once on each node in
        the background and leave the pids to wait for in ``worker_pids``."""
        return [
            f"{self.command(context)}{context.quoted_args} \\",
            _RUN_NODE_PART,
            "worker_pids=($!)",
        ]

    def command(self, context: LaunchContext) -> str:
        """The launch command with gpujobqueue's own options, before the launcher arguments."""
        variable = context.node_file_variable
        hostfile = f' {self.hostfile_option} "${variable}"' if self.hostfile_option and variable else ""
        return self.command_format.format(hostfile=hostfile, **vars(context))

    @property
    def rank_expression(self) -> str:
        """Shell expansion of a task's rank: the first of the rank variables that is set, else 0."""
        expression = "0"
        for variable in reversed(self.rank_variables):
            expression = f"${{{variable}:-{expression}}}"
        return expression

    def __repr__(self) -> str:
        return f"<launcher {self.name}>"


class Direct(Launcher):
    """No launcher: the script runs on the job's one node and starts its workers itself."""

    name = "direct"

    def start_lines(self, context: LaunchContext) -> list[str]:
        raise ValueError("the direct launcher starts no tasks: the script starts its one node's workers itself")


class Srun(Launcher):
    """SLURM's ``srun``: one task per node of the allocation; ``SLURM_PROCID`` is the task's rank."""

    name = "srun"
    rank_variables = ("SLURM_PROCID",)
    command_format = "srun --ntasks={nodes} --ntasks-per-node=1 --cpus-per-task={cpus_per_node}"


class Ibrun(Launcher):
    """TACC's ``ibrun``, which takes its tasks from the job's ``#SBATCH --nodes`` and ``--ntasks-per-node=1``."""

    name = "ibrun"
    rank_variables = ("PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")
    command_format = "ibrun"


class MpiexecPals(Launcher):
    """HPE Cray PALS's ``mpiexec`` (PBS Pro machines such as Polaris)."""

    name = "mpiexec-pals"
    rank_variables = ("PALS_RANKID", "PMI_RANK")
    command_format = "mpiexec -n {nodes} --ppn 1 --depth {cpus_per_node} --cpu-bind depth"


class MpiexecOpenMPI(Launcher):
    """Open MPI's ``mpiexec``: it binds each rank to a core unless told not to, and passes on only the
    variables named by ``-x`` (the node part's file sets those its workers need)."""

    name = "mpiexec-openmpi"
    rank_variables = ("OMPI_COMM_WORLD_RANK",)
    command_format, hostfile_option = "mpiexec -n {nodes} -npernode 1 --bind-to none{hostfile}", "--hostfile"


class MpiexecMPICH(Launcher):
    """MPICH's (Hydra's) ``mpiexec``, which passes the whole environment on."""

    name = "mpiexec-mpich"
    rank_variables = ("PMI_RANK",)
    command_format, hostfile_option = "mpiexec -n {nodes} -ppn 1{hostfile}", "-f"


class Jsrun(Launcher):
    """LSF CSM's ``jsrun`` (Summit): one resource set per node holding its GPUs and cores, started from
    a launch node."""

    name = "jsrun"
    rank_variables = ("JSM_NAMESPACE_RANK", "OMPI_COMM_WORLD_RANK")
    runs_on_launch_node = True
    command_format = (
        "jsrun --nrs {nodes} --rs_per_host 1 --tasks_per_rs 1 --cpu_per_rs {cpus_per_node} "
        "--gpu_per_rs {gpus_per_node} --bind rs"
    )


class PerHostLauncher(Launcher):
    """A launcher that starts one task on one host named by the script: the script loops over the job's hosts,
    giving each task its rank in :data:`NODE_RANK_VARIABLE`."""

    rank_variables = (NODE_RANK_VARIABLE,)
    #: Lines that set the array ``hosts`` to the job's distinct hosts, the script's own first.
    host_list_lines: tuple[str, ...] = ()
    #: The command that starts ``"${task[@]}"`` on host ``$host`` (node index ``$node``): the words
    #: before the launcher arguments, and those after.
    spawn: tuple[str, str] = ("", "")

    def start_lines(self, context: LaunchContext) -> list[str]:
        return [
            *self.host_list_lines,
            f'if [ "${{#hosts[@]}}" -ne {context.nodes} ]; then',
            f'    echo "gpujobqueue: {self.name}: the job has ${{#hosts[@]}} hosts, not {context.nodes}:" \\',
            '        "${hosts[*]}" >&2',
            "    exit 1",
            "fi",
            "worker_pids=()",
            'for node in "${!hosts[@]}"; do',
            "    host=${hosts[$node]}",
            f'    task=(env {NODE_RANK_VARIABLE}="$node" {NODE_TASK})',
            f"    {self.spawn[0]}{context.quoted_args}{self.spawn[1]} &",
            "    worker_pids+=($!)",
            "done",
        ]


class Pbsdsh(PerHostLauncher):
    """PBS's ``pbsdsh -n <i> -- program args``, which spawns the program without a shell on the i-th node
    allocated (pbsdsh(1B)), the i-th entry of ``$PBS_NODEFILE``: a host's first entry is its index. Its
    ``PBS_NODENUM`` counts a host once per entry of a Torque ``ppn`` job, so the script gives the rank."""

    name = "pbsdsh"
    host_list_lines = (
        "hosts=(); node_index=()  # each host once, and the index of its first line in $PBS_NODEFILE",
        "line=0",
        "while read -r entry; do",
        '    case " ${hosts[*]} " in *" $entry "*) ;; *) hosts+=("$entry"); node_index+=("$line") ;; esac',
        "    line=$((line + 1))",
        'done < "$PBS_NODEFILE"',
    )
    spawn = ('pbsdsh -n "${node_index[$node]}"', ' -- "${task[@]}"')


class Blaunch(PerHostLauncher):
    """LSF's ``blaunch <host> command``, as ``rsh host command`` (a shell runs it: it goes as one quoted
    string), on each host of ``$LSB_MCPU_HOSTS`` (``host1 slots1 host2 slots2 ...``)."""

    name = "blaunch"
    host_list_lines = (
        'hosts=()  # every other word of "host1 slots1 host2 slots2 ..."',
        'read -r -a mcpu_hosts <<< "$LSB_MCPU_HOSTS"',
        'for ((i = 0; i < ${#mcpu_hosts[@]}; i += 2)); do hosts+=("${mcpu_hosts[i]}"); done',
    )
    spawn = ("blaunch", ' "$host" "$(printf \'%q \' "${task[@]}")"')


class QrshInherit(PerHostLauncher):
    """Grid Engine's ``qrsh -inherit <host> command`` (qrsh(1); the parallel environment needs
    ``control_slaves TRUE``), as rsh's, on each host of ``$PE_HOSTFILE`` (``host slots queue processors``)."""

    name = "qrsh-inherit"
    host_list_lines = (
        'hosts=()  # the first word of each line of "host slots queue processors"',
        'while read -r host _; do hosts+=("$host"); done < "$PE_HOSTFILE"',
    )
    spawn = ("qrsh -inherit -nostdin", ' "$host" "$(printf \'%q \' "${task[@]}")"')


_ALL = (
    Direct(),
    Srun(),
    MpiexecPals(),
    MpiexecOpenMPI(),
    MpiexecMPICH(),
    Jsrun(),
    Ibrun(),
    Pbsdsh(),
    Blaunch(),
    QrshInherit(),
)
LAUNCHER_OBJECTS: dict[str, Launcher] = {launcher.name: launcher for launcher in _ALL}
# The ``launcher`` keyword's values.
LAUNCHERS: tuple[str, ...] = tuple(LAUNCHER_OBJECTS)


def launch_context(request: Any, launch: Any, node_file_variable: str | None) -> LaunchContext:
    """The :class:`LaunchContext` of a job's request and worker launch."""
    return LaunchContext(
        nodes=request.nodes,
        cpus_per_node=request.cpus_per_node,
        gpus_per_node=request.gpus_per_node,
        launcher_args=tuple(launch.launcher_args),
        node_file_variable=node_file_variable,
    )
