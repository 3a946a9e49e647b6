"""A batch system added from outside the package: Flux, defined in this file alone.

``Flux`` below is all it takes (docs/contributing.md follows it): ``#flux:`` directives from a header
template of its own text with a filter of its own, ``flux batch`` / ``flux jobs`` / ``flux cancel`` and
the parsing of their answers, a keyword and an options class of its own, a GPU request style and the
parser of the GPU line users write by hand, and a launcher of its own, ``flux run``. Registered at run
time (:func:`gpujobqueue.batch.register`) or declared as an entry point of the group
``gpujobqueue.batch_systems`` by another distribution, it is listed where the built-in ones are: the
registry, the site schema, dask config, ``gpujobqueue render``. A cluster runs against stand-in
``flux`` commands written into a folder on PATH: ``flux batch`` starts the script in the background,
``flux run`` starts a task per node, ``flux jobs`` answers states, ``flux cancel`` ends the job.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from conftest import wait_until
from dask.distributed import Client

from gpujobqueue import GPUCluster, ValidationError
from gpujobqueue.batch import batch_system, names, register, unregister
from gpujobqueue.batch.base import BatchSystem
from gpujobqueue.handwritten.gpu_parsers import HandWrittenGPUs, written_count
from gpujobqueue.jobs.job_status import JobStatus, unlisted
from gpujobqueue.jobs.launchers import LaunchContext, Launcher
from gpujobqueue.jobs.request import JobRequest
from gpujobqueue.plan import site_problems
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings.config import UnknownSettingWarning
from gpujobqueue.settings.keywords import TEXT, Keyword

TESTS = Path(__file__).resolve().parents[1]


class FluxRun(Launcher):
    """``flux run``: one task per node of the job's allocation, ``FLUX_TASK_RANK`` its rank."""

    name = "flux-run"
    rank_variables = ("FLUX_TASK_RANK",)

    def command(self, context: LaunchContext) -> str:
        return f"flux run --nodes={context.nodes} --ntasks={context.nodes} --cores-per-task={context.cpus_per_node}"


@dataclasses.dataclass(frozen=True)
class FluxOptions:
    """Flux's own settings of a job: the bank charged."""

    bank: str | None = None


def flux_minutes(seconds: int) -> str:
    """A walltime as ``flux batch --time-limit`` takes it: whole minutes, rounded up."""
    return f"{math.ceil(seconds / 60)}m"


FLUX_HEADER = """{% extends "job.sh.j2" %}
{% block directives %}
#flux: --job-name={{ request.job_name }}
#flux: --nodes={{ request.nodes }}
#flux: --ntasks={{ request.nodes }}
#flux: --cores-per-task={{ request.cpus_per_node }}
{%- if request.gpu_request == "gpus-per-task" %}
#flux: --gpus-per-task={{ request.gpus_per_node }}
{%- endif %}
{%- if request.queue %}
#flux: --queue={{ request.queue }}
{%- endif %}
{%- if request.options.bank %}
#flux: --bank={{ request.options.bank }}
{%- endif %}
#flux: --time-limit={{ request.walltime | flux_minutes }}
#flux: --output=flux-{{ "{{id}}" }}.out
{%- endblock %}"""
_GPUS_BY_HAND = re.compile(r"\s*(?:-g|--gpus-per-task)(?:=|\s+)(\S+)\s*")


class Flux(BatchSystem):
    """Flux: ``flux batch``, ``flux jobs``, ``flux cancel``."""

    name = "flux"
    cluster_doc = """A Dask cluster of GPU workers submitted to Flux.

    Parameters
    ----------
    bank : str
        ``--bank``.
    """
    directive_prefix = "#flux:"
    template_source = FLUX_HEADER
    template_filters = {"flux_minutes": flux_minutes}
    walltime_directives = ("#flux: --time-limit",)
    submit_command = "flux batch"
    status_command = "flux jobs"
    cancel_command = "flux cancel"
    job_id_variable = "FLUX_JOB_ID"
    job_id_regexp = r"^(?P<job_id>f\w+)$"
    ended_states = frozenset({"INACTIVE"})
    keywords = (Keyword("bank", TEXT, doc="The Flux bank charged (--bank)."),)
    gpu_request_styles = ("gpus-per-task", "none")
    launchers = (FluxRun(),)
    native_launcher = "flux-run"

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> FluxOptions:
        return FluxOptions(bank=settings.get("bank"))

    @classmethod
    def site_settings(
        cls, *, entry: Mapping[str, Any], gpu: Mapping[str, Any], directives: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {"bank": entry.get("qos")}  # the site file's per-queue word, as Flux's bank

    @classmethod
    def parse_gpu_directive(
        cls, field_name: str, text: str, nodes: int, settings: Mapping[str, Any]
    ) -> HandWrittenGPUs | None:
        match = _GPUS_BY_HAND.fullmatch(text)
        if match is None:
            return None
        return HandWrittenGPUs(field_name, text, written_count(field_name, text, match.group(1)), None, "gpus-per-task")

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        return f"--gpus-per-task={count}" if style == "gpus-per-task" else None

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        return ["flux", "jobs", "--no-header", "--format={id.f58} {state}", *job_ids]

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0:
            return None
        listed = {}
        for line in out.splitlines():
            job_id, _, state = line.partition(" ")
            listed[job_id] = JobStatus(job_id, state, ended=state in cls.ended_states)
        return {job_id: listed.get(job_id) or unlisted(job_id) for job_id in job_ids}

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        return [job.log_file(f"flux-{job.job_id}.out")]


@pytest.fixture
def flux():
    """Flux, registered for the test alone."""
    register(Flux)
    yield Flux
    unregister(Flux.name)


SMALL = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}


def header(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("#flux:")]


def test_the_registry_lists_a_batch_system_registered_at_run_time_and_forgets_it(flux):
    assert batch_system("flux") is Flux and names()[-1] == "flux"
    cluster_cls = cluster_class("flux")
    assert cluster_cls.__name__ == "FluxGPUCluster" and cluster_cls.batch_system is Flux
    assert "bank : str" in cluster_cls.__doc__ and "gpus_per_node" in cluster_cls.__doc__, "its keywords and the shared"
    assert cluster_cls.job_cls.__name__ == "FluxGPUJob" and cluster_cls.job_cls.batch_system is Flux
    with pytest.raises(ValueError, match="taken"):
        register(type("Other", (Flux,), {}))
    unregister("flux")
    with pytest.raises(ValidationError, match="'flux' is not a batch system"):
        batch_system("flux")
    with warnings.catch_warnings():  # its config section went with it: no other cluster is told of a stray key
        warnings.simplefilter("error", UnknownSettingWarning)
        job_script_for("local", SMALL, name="w")


def test_a_class_that_declares_too_little_is_refused_naming_what_it_lacks():
    class Half(BatchSystem):
        name = "half"
        submit_command = "half-submit"

    with pytest.raises(TypeError, match="cancel_command.*status_command and job_id_variable"):
        register(Half)
    with pytest.raises(TypeError, match="not a gpujobqueue.batch.base.BatchSystem"):
        register(dict)


def test_its_script_has_its_own_header_its_filter_and_its_launcher(flux):
    script = job_script_for("flux", {**SMALL, "gpus_per_node": 2, "bank": "physics", "queue": "pdebug"}, name="w")
    assert header(script) == [
        "#flux: --job-name=dask-worker",
        "#flux: --nodes=1",
        "#flux: --ntasks=1",
        "#flux: --cores-per-task=2",
        "#flux: --gpus-per-task=2",
        "#flux: --queue=pdebug",
        "#flux: --bank=physics",
        "#flux: --time-limit=10m",
        "#flux: --output=flux-{{id}}.out",
    ]
    two = job_script_for("flux", {**SMALL, "nodes": 2, "gpus_per_node": 1}, name="w")
    assert 'flux run --nodes=2 --ntasks=2 --cores-per-task=1 \\\n    "${node_task[@]}" &' in two, "native launcher"
    assert 'node_rank="${FLUX_TASK_RANK:-0}"' in two
    with pytest.raises(ValidationError) as refused:  # its walltime directive, which a skip may not drop
        job_script_for("flux", {**SMALL, "job_directives_skip": ["--time-limit"]}, name="w")
    assert refused.value.field == "job_directives_skip"
    with pytest.raises(ValidationError, match="does not start tasks on the nodes of a flux job") as refused:
        job_script_for("flux", {**SMALL, "nodes": 2, "launcher": "srun"}, name="w")
    with pytest.raises(Exception, match="FluxGPUCluster"):  # an unknown keyword, named with the class
        job_script_for("flux", {**SMALL, "qos": "x"}, name="w")


def test_a_gpu_line_written_by_hand_in_its_syntax_is_adopted(flux):
    script = job_script_for("flux", {**SMALL, "job_extra_directives": ["-g 3", "--exclusive"]}, name="w")
    assert header(script).count("#flux: --gpus-per-task=3") == 1 and "#flux: --exclusive" in header(script)
    assert "#flux: -g 3" not in script and "# Generated by gpujobqueue: 3 GPU worker(s)" in script
    with pytest.raises(ValidationError, match="gpus_per_node=2 but job_extra_directives"):
        job_script_for("flux", {**SMALL, "gpus_per_node": 2, "job_extra_directives": ["-g 3"]}, name="w")


def test_its_config_section_and_a_site_of_it_are_read(flux, tmp_path, monkeypatch):
    import dask

    with dask.config.set({"gpujobqueue.flux.queue": "pbatch", "gpujobqueue.flux.bank": "chem"}):
        script = job_script_for("flux", SMALL, name="w")
    assert "#flux: --queue=pbatch" in script and "#flux: --bank=chem" in script
    site = (TESTS / "sites" / "good" / "minimal.yaml").read_text()
    site = site.replace("scheduler: slurm", "scheduler: flux").replace("style: gpus-per-node", "style: gpus-per-task")
    site = site.replace("name: srun", "name: flux-run").replace("max_nodes: 1\n", "max_nodes: 1\n    qos: lab\n")
    (tmp_path / "minimal.yaml").write_text(site)
    assert site_problems(tmp_path / "minimal.yaml") == [], "the schema's enums hold flux, its style and launcher"
    script = job_script_for(str(tmp_path / "minimal.yaml"), {"queue": "debug", "walltime": "00:20:00"}, name="w")
    assert "#flux: --gpus-per-task=4" in script and "#flux: --bank=lab" in script, "the site's facts and hook"
    unregister("flux")
    assert any("scheduler" in problem for problem in site_problems(tmp_path / "minimal.yaml"))


class SubmitDescription(Flux):
    """A batch system whose job is a submit description with the script beside it (HTCondor's way)."""

    name = "described"

    @classmethod
    def submission(cls, script: str, request: JobRequest) -> str:
        body = script.replace("\n", "\\n").replace('"', '\\"')
        return f'request_gpus = {request.gpus_per_node}\nexecutable = /bin/bash\nscript = "{body}"\nqueue\n'


def test_a_batch_system_may_write_a_submit_description_instead_of_a_script(tmp_path):
    register(SubmitDescription)
    try:
        job = cluster_class("described").job_cls("tcp://10.0.0.1:8786", name="w-0", **SMALL, gpus_per_node=2)
        with job.job_file() as path:
            text = Path(path).read_text()
        assert text.startswith("request_gpus = 2\nexecutable = /bin/bash\n") and text.endswith("queue\n")
        assert "#flux: --gpus-per-task=2" in text and text.count("\n") == 4, "the script is one value of it"
    finally:
        unregister("described")


# The stand-in `flux`: batch keeps the script and starts it in a session of its own (its pid in $FLUX_STATE); run
# starts a task per node; jobs answers RUN while the script's session lives, else INACTIVE; cancel ends the session.
FLUX_STAND_IN = r"""#!/bin/bash
state="$FLUX_STATE"
echo "$*" >> "$state/calls.log"
command=$1; shift
case "$command" in
batch)
    count=$(( $(cat "$state/count" 2>/dev/null || echo 0) + 1 )); echo "$count" > "$state/count"
    id="fA$count"
    cp "$1" "$state/$id.sh"  # as a batch system keeps the script it was given
    FLUX_JOB_ID="$id" setsid bash "$state/$id.sh" > "flux-$id.out" 2>&1 < /dev/null &
    echo "$!" > "$state/$id.pid"
    echo "$id" ;;
run)
    tasks=$(printf '%s\n' "$@" | sed -n 's/^--ntasks=//p')
    while [ "${1#--}" != "$1" ]; do shift; done
    pids=()
    for ((rank = 0; rank < tasks; rank++)); do FLUX_TASK_RANK=$rank "$@" & pids+=($!); done
    status=0; for pid in "${pids[@]}"; do wait "$pid" || status=$?; done; exit $status ;;
jobs)
    for id in "$@"; do
        case "$id" in --*) continue ;; esac
        pid=$(cat "$state/$id.pid" 2>/dev/null) || continue
        if kill -0 "$pid" 2>/dev/null; then echo "$id RUN"; else echo "$id INACTIVE"; fi
    done ;;
cancel)
    for id in "$@"; do pid=$(cat "$state/$id.pid" 2>/dev/null) && kill -TERM -- "-$pid" 2>/dev/null; done; exit 0 ;;
*) echo "flux: unknown command $command" >&2; exit 1 ;;
esac
"""


def task_facts(dask_worker) -> dict:
    return {
        "name": dask_worker.name,
        "job": os.environ.get("FLUX_JOB_ID"),
        "rank": os.environ.get("FLUX_TASK_RANK"),
    }


def test_a_cluster_runs_its_jobs_through_stand_in_flux_commands(flux, tmp_path, monkeypatch):
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir(), state.mkdir()
    (bin_dir / "flux").write_text(FLUX_STAND_IN)
    (bin_dir / "flux").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FLUX_STATE", str(state))
    monkeypatch.chdir(tmp_path)
    keywords = {**SMALL, "nodes": 2, "gpus_per_node": 1, "worker_mode": "per-device", "death_timeout": 30}
    with GPUCluster("flux", **keywords) as cluster, Client(cluster) as client:
        assert type(cluster).__name__ == "FluxGPUCluster" and cluster.launch.launcher == "flux-run"
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=120)
        (job,) = cluster.workers.values()
        assert re.fullmatch(r"fA\d+", job.job_id)
        facts = list(client.run(task_facts).values())
        assert {fact["job"] for fact in facts} == {job.job_id}, "the workers run in the job flux batch started"
        assert sorted(fact["rank"] for fact in facts) == ["0", "1"], "flux run started one task per node"
        assert client.submit(sum, range(1000)).result() == sum(range(1000))
        assert [row.state for row in cluster.jobs] == ["RUN"], "flux jobs answered"
        pid = int((state / f"{job.job_id}.pid").read_text())
    calls = (state / "calls.log").read_text().splitlines()
    assert [call.split()[0] for call in calls].count("batch") == 1
    assert f"cancel {job.job_id}" in calls, "the job was cancelled with flux cancel"
    wait_until(lambda: not _alive(pid), 30, what="the job's script and its workers to end")


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_another_distribution_declares_it_through_the_entry_point_group(tmp_path):
    """Without registering anything at run time: a distribution's entry point in the group, found as
    gpujobqueue's own are, and the command line built from the registry takes it, its keyword and its style."""
    info = tmp_path / "gpujobqueue_flux-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpujobqueue-flux\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[gpujobqueue.batch_systems]\nflux = test_new_batch_system:Flux\n")
    program = textwrap.dedent("""
        from click.testing import CliRunner
        from gpujobqueue.batch import names
        from gpujobqueue.cli import main

        print(names())
        result = CliRunner().invoke(main, ["render", "flux", "--cpus-per-gpu", "2", "--memory-per-gpu", "1GiB",
            "--gpu-request", "gpus-per-task", "--bank", "bio", "--no-tls"])
        print(result.exit_code)
        print(result.output)
    """)
    path = os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed, code, *script = done.stdout.splitlines()
    assert "'flux'" in listed and code == "0", done.stdout
    assert "#flux: --bank=bio" in script and "#flux: --gpus-per-task=1" in script
