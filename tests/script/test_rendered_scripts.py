"""Every rendered PBS and LSF script is accepted by the emulators' parsers (the real grammars),
every rendered Grid Engine script by the real qsub; scripts a batch system would refuse are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from emulators import lsf as lsf_emulator
from emulators import pbs as pbs_emulator
from emulators.common import Rejected
from fixtures.sizes import with_job_size, with_size_options

from gpujobqueue.plan.scripts import job_script_for

GOLDEN = Path(__file__).parents[1] / "golden"


def _pbs_config(flavor: str):
    # The golden scripts ask for a Polaris-sized node (64 cores, 4 GPUs) in queues named gpu and debug.
    queues = json.loads(json.dumps(pbs_emulator.default_config(flavor).queues))
    queues.setdefault("gpu", {})
    queues.setdefault("debug", {})
    return pbs_emulator.default_config(flavor, ncpus=64, mem="512gb", queues=queues)


def _lsf_config():
    queues = {name: dict(q) for name, q in lsf_emulator.default_config().queues.items()}
    queues.setdefault("gpu", {})
    return lsf_emulator.default_config(ncpus=64, ngpus=6, mem="512gb", queues=queues)


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("pbs-*.sh")))
def test_golden_pbs_script_is_accepted_by_the_pbs_grammar(golden):
    flavor = "torque" if "torque" in golden else "pbspro"
    parsed = pbs_emulator.parse_submission((GOLDEN / golden).read_text(), (), _pbs_config(flavor))
    assert parsed is not None


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("lsf-*.sh")))
def test_golden_lsf_script_is_accepted_by_the_lsf_grammar(golden):
    parsed = lsf_emulator.parse_submission((GOLDEN / golden).read_text(), (), _lsf_config())
    assert parsed is not None


def render(batch, *args):
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", batch, *with_size_options(args)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


PBS_RENDERINGS = {
    "select, every option": [
        "--gpus-per-node",
        "4",
        "--cpus-per-gpu",
        "8",
        "--memory-per-gpu",
        "60GiB",
        "--queue",
        "debug",
        "--account",
        "MyProject",
        "--chunk-resource",
        "system=polaris",
        "--place",
        "scatter:excl",
        "--filesystems",
        "home:eagle",
        "--gpu-type",
        "a100",
        "--walltime",
        "00:59:00",
        "--log-directory",
        "/tmp/logs",
        "--job-extra-directives",
        "-m n",
    ],
    "select, exclusive": ["--gpus-per-node", "2", "--exclusive"],
    "queue implies GPUs": ["--gpus-per-node", "4", "--gpu-request", "none"],
    "resource_spec": ["--resource-spec", "select=1:ncpus=32:ngpus=4:system=polaris"],
}
LSF_RENDERINGS = {
    "-gpu, every option": [
        "--gpus-per-node",
        "4",
        "--cpus-per-gpu",
        "8",
        "--memory-per-gpu",
        "60GiB",
        "--queue",
        "normal",
        "--account",
        "ABC123",
        "--gpu-mode",
        "shared",
        "--gpu-type",
        "TeslaV100",
        "--lsf-units",
        "mb",
        "--exclusive",
        "--walltime",
        "02:30:00",
        "--log-directory",
        "/tmp/logs",
        "--job-extra-directives",
        "-B",
    ],
    "csm": [
        "--gpus-per-node",
        "6",
        "--cores",
        "42",
        "--gpu-request",
        "csm",
        "--queue",
        "batch",
        "--account",
        "ABC123",
        "--walltime",
        "00:30:00",
    ],
    "ncpus": ["--gpus-per-node", "2", "--ncpus", "8", "--lsf-units", "gb", "--memory", "16GiB"],
}


@pytest.mark.parametrize("case", sorted(PBS_RENDERINGS))
def test_rendered_pbs_script_is_accepted(case):
    pbs_emulator.parse_submission(render("pbs", *PBS_RENDERINGS[case]), (), _pbs_config("pbspro"))


@pytest.mark.parametrize("case", sorted(LSF_RENDERINGS))
def test_rendered_lsf_script_is_accepted(case):
    lsf_emulator.parse_submission(render("lsf", *LSF_RENDERINGS[case]), (), _lsf_config())


@pytest.mark.parametrize(
    "batch, args, refusal",
    [
        # What the grammars refuse, reached through values gpujobqueue passes on unchecked.
        ("pbs", ["--queue", "nosuchqueue"], "unknown queue"),
        ("pbs", ["--chunk-resource", "colour=blue"], "unknown resource"),
        ("pbs", ["--queue", "debug", "--walltime", "02:00:00"], "resource limits"),
        (
            "pbs",
            ["--job-extra-directives", "-l ncpus=2"],
            "cannot be used with",
        ),  # -l ngpus=2 is taken over (hand_written_gpus)
        ("lsf", ["--queue", "nosuchqueue"], "no such queue"),
        ("lsf", ["--queue", "short", "--walltime", "01:00:00"], "runlimit"),
        (
            "lsf",
            ["--gpu-request", "csm", "--queue", "batch", "--account", "ABC123", "--job-extra-directives", "-n 4"],
            "-n is no longer supported",
        ),
    ],
)
def test_the_grammars_refuse_what_the_batch_system_refuses(batch, args, refusal):
    text = render(batch, "--gpus-per-node", "2", *args)
    parse, config = (
        (pbs_emulator.parse_submission, _pbs_config("pbspro"))
        if batch == "pbs"
        else (lsf_emulator.parse_submission, _lsf_config())
    )
    with pytest.raises(Rejected) as info:
        parse(text, (), config)
    assert refusal in info.value.message.lower()


def test_job_script_for_matches_the_cli():
    assert render("sge", "--gpus-per-node", "2") == job_script_for(
        "sge", with_job_size({"gpus_per_node": 2}), name="gpujobqueue-worker"
    )


# Grid Engine: the real qsub verifies each rendering against the fixture's queues, complexes,
# parallel environment and project (`-w v` submits nothing).
SGE_RENDERINGS = {
    "complex, every option": [
        "--gpus-per-node",
        "4",
        "--cores",
        "2",
        "--parallel-environment",
        "smp",
        "--queue",
        "gpu.q",
        "--account",
        "gpujq",
        "--resource-spec",
        "h_vmem=1G",
        "--walltime",
        "02:00:00",
        "--log-directory",
        "/tmp/logs",
        "--job-extra-directives",
        "-m n",
    ],
    "complex, one GPU per slot": ["--gpus-per-node", "2", "--cores", "2", "--parallel-environment", "smp"],
    "complex, no parallel environment": ["--gpus-per-node", "2"],
    "job consumable": [
        "--gpus-per-node",
        "2",
        "--cores",
        "8",
        "--parallel-environment",
        "smp",
        "--gpu-consumable",
        "job",
        "--gpu-complex",
        "gpus",
    ],
    "resource type": ["--gpus-per-node", "4", "--gpu-request", "resource-type", "--resource-type", "rt_F"],
    "queue implies GPUs": [
        "--gpus-per-node",
        "2",
        "--gpu-request",
        "none",
        "--queue",
        "debug.q",
        "--walltime",
        "00:20:00",
    ],
    "exclusive": ["--gpus-per-node", "2", "--exclusive"],
}


def qsub_verify(sge, text, tmp_path, *options):
    path = tmp_path / "job.sh"
    path.write_text(text)
    return sge.run("qsub", "-w", "v", *options, str(path), cwd=tmp_path, check=False)


# The fixture has one host with one rt_F: a two-node golden is verified with qsub's own -l
# (which wins over the script's) asking for the one node there is.
SGE_ONE_HOST_STAND_IN = {"sge-2-nodes-resource-type-mpiexec-openmpi.sh": ("-l", "rt_F=1")}


@pytest.mark.sge
@pytest.mark.parametrize("case", sorted(SGE_RENDERINGS))
def test_rendered_sge_script_is_accepted_by_the_real_qsub(sge, tmp_path, case):
    result = qsub_verify(sge, render("sge", *SGE_RENDERINGS[case]), tmp_path)
    assert result.returncode == 0 and "found suitable queue" in result.stdout, (
        f"qsub -w v refused {case}:\n{result.stdout}{result.stderr}"
    )
    assert not sge.job_ids(), "-w v must not queue anything"


@pytest.mark.sge
@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("sge-*.sh")))
def test_golden_sge_script_is_accepted_by_the_real_qsub(sge, tmp_path, golden):
    result = qsub_verify(sge, (GOLDEN / golden).read_text(), tmp_path, *SGE_ONE_HOST_STAND_IN.get(golden, ()))
    assert result.returncode == 0 and "found suitable queue" in result.stdout, (
        f"qsub -w v refused {golden}:\n{result.stdout}{result.stderr}"
    )


@pytest.mark.sge
@pytest.mark.parametrize(
    "args, refusal",
    [
        (["--gpus-per-node", "5"], "offers only hc:gpu=4"),
        (
            ["--gpus-per-node", "4", "--cores", "2", "--parallel-environment", "smp", "--gpu-consumable", "job"],
            "no suitable queues",
        ),  # a per-slot complex asked per job: 8 GPUs
        (["--queue", "debug.q", "--walltime", "01:00:00"], 'cannot run in queue "debug.q"'),
        (["--account", "nosuchproject"], "does not exist"),
    ],
)
def test_the_real_qsub_refuses_what_grid_engine_cannot_run(sge, tmp_path, args, refusal):
    result = qsub_verify(sge, render("sge", *args), tmp_path)
    assert result.returncode != 0 and refusal in result.stdout + result.stderr, result.stdout + result.stderr
