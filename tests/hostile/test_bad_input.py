"""Bad input gets an error naming the field, and nothing reaches the batch system.

A table of keywords (directive and shell injection through every field that reaches a script
among them), command-line options and broken site files, each tried against the real SLURM
with sbatch counted: each is refused with the field's name, no sbatch runs and the queue
stays empty. Then a property test: any string accepted for a free-text field appears in the
script only shell-quoted, and adds no directive.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.sizes import with_job_size, with_size_options
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpujobqueue import GPUCluster, GPUJobQueueError, SLURMGPUCluster, ValidationError
from gpujobqueue.plan.scripts import job_script_for

pytestmark = pytest.mark.slurm

INJECTION = "\n#SBATCH --qos=high"  # a second directive smuggled into a value

BAD_KEYWORDS = [
    ({"walltime": "1h"}, "walltime"),
    ({"walltime": "01:00:00" + INJECTION}, "walltime"),
    ({"gpus_per_node": 0}, "gpus_per_node"),
    ({"gpus_per_node": "four"}, "gpus_per_node"),
    ({"cpus_per_gpu": -1}, "cpus_per_gpu"),
    ({"memory": "lots"}, "memory"),
    ({"memory_per_gpu": "1GB; rm -rf ~"}, "memory_per_gpu"),
    ({"job_name": "dask" + INJECTION}, "job_name"),
    ({"job_name": "two words"}, "job_name"),
    ({"job_name": "$(id)"}, "job_name"),
    ({"account": "m1234; rm -rf ~"}, "account"),
    ({"account": "m1234" + INJECTION}, "account"),
    ({"queue": "gpu $(reboot)"}, "queue"),
    ({"qos": "high`id`"}, "qos"),
    ({"constraint": "gpu;reboot"}, "constraint"),
    ({"job_extra_directives": ["--comment=x" + INJECTION]}, "job_extra_directives[0]"),
    ({"job_directives_skip": ["--time\n"]}, "job_directives_skip[0]"),
    # A prologue item may hold several lines, as dask-jobqueue writes it (issue 42; a `;` was always taken): a
    # carriage return or another control character is what no line of the user's shell holds.
    ({"job_script_prologue": ["module load cuda\rrm -rf ~"]}, "job_script_prologue[0]"),
    ({"job_script_epilogue": ["echo done" + INJECTION]}, "job_script_epilogue[0]"),
    ({"environment": {"TWO WORDS": "1"}}, "environment"),
    ({"environment": {"A;B": "1"}}, "environment"),
    ({"environment": {"1A": "1"}}, "environment"),
    ({"environment": {"PATH" + INJECTION: "1"}}, "environment"),
    ({"environment": {"A": "x" + INJECTION}}, "environment[A]"),
    ({"environment": ["A=1"]}, "environment"),
    ({"environment": {"GPUJOBQUEUE_NIC_MAP": "0=mlx5_0:1,mlx5_1:1"}}, "environment[GPUJOBQUEUE_NIC_MAP]"),
    ({"log_directory": "/tmp/logs; rm -rf ~"}, "log_directory"),
    ({"log_directory": "/tmp/$(id)"}, "log_directory"),
    ({"local_directory": "/tmp/two words"}, "local_directory"),
    ({"worker_extra_args": ["--preload" + INJECTION]}, "worker_extra_args[0]"),
    ({"gpu_request": "gres;"}, "gpu_request"),
    ({"gpu_type": "a100 --qos=high"}, "gpu_type"),
    ({"interface": "eth0;reboot"}, "interface"),
    ({"protocol": "http"}, "protocol"),
    ({"worker_mode": "both"}, "worker_mode"),
    ({"python": "python3; rm -rf ~"}, "python"),
    ({"nthreads": 0}, "nthreads"),
    ({"death_timeout": "soon"}, "death_timeout"),
    ({"shebang": "bash"}, "shebang"),
    ({"exclusive": "maybe"}, "exclusive"),
    ({"walltime": "01:00:00", "walltime_margin": "2h"}, "walltime_margin"),
    ({"nodes": 0}, "nodes"),
    ({"visibility_variable": "CUDA;rm"}, "visibility_variable"),
    ({"job_mem": "4G;x"}, "job_mem"),
    ({"launcher": "srun;x", "nodes": 2}, "launcher"),
    ({"job_array": "yes please"}, "job_array"),
    ({"security": "on"}, "security"),
    ({"gpus_per_node": 2, "processes": 3}, "processes"),
    ({"nosuch_keyword": 1}, "nosuch_keyword"),
    # against a site's facts: more GPUs than its nodes have, an unknown queue, a walltime over the limit
    ({"site": "perlmutter", "gpus_per_node": 8}, "gpus_per_node"),
    ({"site": "perlmutter", "queue": "nosuchqueue"}, "queue"),
    ({"site": "perlmutter", "queue": "debug", "walltime": "02:00:00"}, "walltime"),
]


@pytest.fixture
def nothing_submitted(slurm, counted):
    """After the test: no sbatch ran and SLURM's queue is empty."""
    yield
    assert counted.count("sbatch") == 0, "a job was submitted"
    assert not slurm.squeue_ids(), slurm.squeue_ids()


@pytest.mark.parametrize(
    "keywords, field", BAD_KEYWORDS, ids=[f"{i}-{field}" for i, (_, field) in enumerate(BAD_KEYWORDS)]
)
def test_a_bad_keyword_is_refused_by_name_and_nothing_is_submitted(nothing_submitted, keywords, field):
    keywords = with_job_size({"queue": "gpu", **keywords}) if "site" not in keywords else keywords
    with pytest.raises(GPUJobQueueError) as info:
        cluster = SLURMGPUCluster(**keywords)
        cluster.scale(gpus=2)  # never reached
    if "site" in keywords:  # a SiteConfigError: the site's file, line and key, and the keyword
        assert "perlmutter.yaml" in str(info.value) and field in str(info.value), str(info.value)
    else:
        assert getattr(info.value, "field", None) == field, str(info.value)
        assert str(info.value).startswith(field), str(info.value)


BAD_OPTIONS = [  # the command line names its options, not the keywords they mirror
    (["--walltime", "1h"], "--walltime: "),
    (["--job-name", "a;b"], "--job-name: "),
    (["--account", "m1234" + INJECTION], "--account: "),
    (["--env", "TWO WORDS=1"], "--env: "),
    (["--env", "NOEQUALS"], "--env"),
    (["--gpus-per-node", "four"], "--gpus-per-node"),
    (["--job-extra-directives", "--comment=x" + INJECTION], "--job-extra-directives[0]: "),
    (["--job-array", "0"], "--job-array: "),
    (["--walltime-margin", "forever"], "--walltime-margin: "),
    (["--gpu-request", "select"], "--gpu-request"),
]


@pytest.mark.parametrize("options, field", BAD_OPTIONS, ids=[field.strip(": ") for _, field in BAD_OPTIONS])
def test_a_bad_command_line_option_is_refused_by_name_and_writes_no_script(nothing_submitted, options, field):
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", "slurm", *with_size_options(options)],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert not result.stdout, "no script is written"
    assert field in result.stderr, result.stderr


BROKEN_SITES = sorted((Path(__file__).parents[1] / "sites" / "broken").glob("*.yaml"))


@pytest.mark.parametrize("path", BROKEN_SITES, ids=[path.stem for path in BROKEN_SITES])
def test_a_broken_site_file_is_refused_naming_the_file_and_nothing_is_submitted(nothing_submitted, path):
    with pytest.raises(GPUJobQueueError) as info:
        cluster = GPUCluster(site=str(path))
        cluster.scale(gpus=2)
    assert path.name in str(info.value), str(info.value)


def test_there_are_at_least_forty_bad_inputs():
    assert len(BAD_KEYWORDS) + len(BAD_OPTIONS) + len(BROKEN_SITES) >= 40


# -- property: what is accepted is quoted ----------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
SIZE = {"cores": 1, "memory": "4GB"}
BASELINE = job_script_for("slurm", SIZE, name="w")


def directives(script: str) -> list[str]:
    return [line for line in script.split("\n") if line.startswith("#SBATCH")]


def script_or_refusal(keywords):
    try:
        return job_script_for("slurm", {**SIZE, **keywords}, name="w")
    except ValidationError:
        return None


def shell_value(line: str, variable: str) -> str:
    """What bash makes of an export line."""
    return subprocess.run(
        ["bash", "-c", f'{line}\nprintf %s "${variable}"'], capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=TEXT)
def test_an_accepted_environment_value_is_in_the_script_only_shell_quoted(value):
    script = script_or_refusal({"environment": {"GPUJQ_VALUE": value}})
    assume(script is not None)
    lines = [line for line in script.split("\n") if "GPUJQ_VALUE" in line]
    assert lines == ["export GPUJQ_VALUE=" + shlex.quote(value)]
    assert shell_value(lines[0], "GPUJQ_VALUE") == value
    assert directives(script) == directives(BASELINE)


@settings(max_examples=150, deadline=None)
@given(value=TEXT)
def test_an_accepted_worker_argument_is_in_the_script_only_shell_quoted(value):
    script = script_or_refusal({"worker_extra_args": ["--preload", value]})
    assume(script is not None)
    lines = script.split("\n")
    at = lines.index("    --preload \\")
    # The list is read as dask-jobqueue joins it, as shell words (issue 31): each word is one quoted word of its own.
    words = shlex.split(f"--preload {value}")[1:]
    assert lines[at + 1 : at + 1 + len(words)] == [f"    {shlex.quote(word)} \\" for word in words], "quoted words"
    assert directives(script) == directives(BASELINE)


@settings(max_examples=150, deadline=None)
@given(value=TEXT)
def test_an_accepted_extra_directive_is_one_directive_line(value):
    script = script_or_refusal({"job_extra_directives": [value]})
    assume(script is not None)
    assert directives(script) == directives(BASELINE) + [f"#SBATCH {value}"]
