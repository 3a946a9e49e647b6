"""Directives gpujobqueue writes that dask-jobqueue users also write by hand (issue 31's corpus:
slurm_argo_deepmsi_lazyslide's ``--time=12:00:00`` beside no walltime keyword, slurm_nomelt_hyak_config's
``--nodes=1`` and ``--ntasks-per-node=1``). dask-jobqueue writes its own line first and the user's after, so
the batch system takes the user's; gpujobqueue plans its workers' lifetime from the walltime. A walltime
written by hand in the batch system's syntax is the job's walltime when no walltime keyword is given, and is
written once; one that contradicts the keyword is refused naming both. SLURM's ``--nodes`` and
``--ntasks-per-node`` are written once where the user's line says the same, refused where it contradicts."""

from __future__ import annotations

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class

WALLTIME_LINE = {"slurm": "#SBATCH --time=", "pbs": "#PBS -l walltime=", "lsf": "#BSUB -W ", "sge": "#$ -l h_rt="}
TWELVE_HOURS = 12 * 3600


def plan_and_script(batch: str, **keywords):
    keywords = with_job_size(keywords)
    return make_plan(cluster_class(batch), keywords), job_script_for(batch, keywords, name="job-7")


def walltime_lines(batch: str, script: str) -> list[str]:
    return [line for line in script.split("\n") if line.startswith(WALLTIME_LINE[batch])]


def lifetime(script: str) -> int:
    line = next(line for line in script.split("\n") if "WORKER__LIFETIME__DURATION=" in line)
    return int(line.split("=")[1].rstrip("s"))


@pytest.mark.parametrize(
    "batch, line, written",
    [
        ("slurm", "--time=12:00:00", "#SBATCH --time=12:00:00"),
        ("slurm", "-t 12:00:00", "#SBATCH --time=12:00:00"),
        ("slurm", "-t 720", "#SBATCH --time=12:00:00"),  # sbatch reads a bare number as minutes
        ("slurm", "--time 0-12", "#SBATCH --time=12:00:00"),
        ("pbs", "-l walltime=12:00:00", "#PBS -l walltime=12:00:00"),
        ("pbs", "-l walltime=43200", "#PBS -l walltime=12:00:00"),  # qsub reads seconds
        ("lsf", "-W 12:00", "#BSUB -W 12:00"),  # bsub -W [hours:]minutes
        ("lsf", "-W 720", "#BSUB -W 12:00"),
        ("lsf", "-W 11:60", "#BSUB -W 12:00"),  # minutes past 59, as bsub takes them
        ("sge", "-l h_rt=12:00:00", "#$ -l h_rt=12:00:00"),
        ("sge", "-l h_rt=43200", "#$ -l h_rt=12:00:00"),
    ],
)
def test_a_walltime_written_by_hand_is_the_jobs_walltime_written_once(batch, line, written):
    plan, script = plan_and_script(batch, job_extra_directives=[line])
    assert plan.request.walltime == TWELVE_HOURS
    assert walltime_lines(batch, script) == [written]
    assert lifetime(script) == plan.request.worker_lifetime == TWELVE_HOURS - 600  # not 1710 s of a 12-h job


def test_the_lazyslide_snippet_s_workers_live_the_twelve_hours_sbatch_gives_them():
    plan, script = plan_and_script(
        "slurm", cores=8, processes=1, memory="64 GB", job_extra_directives=["--gres=gpu:1", "--time=12:00:00"]
    )
    assert (plan.request.walltime, plan.request.gpus_per_node) == (TWELVE_HOURS, 1)
    assert walltime_lines("slurm", script) == ["#SBATCH --time=12:00:00"]
    assert "#SBATCH --gres=gpu:1" in script.split("\n")
    assert plan.sources["walltime"] == "job_extra_directives[1]"


@pytest.mark.parametrize(
    "batch, walltime, line",
    [
        ("slurm", "12:00:00", "--time=720"),
        ("pbs", "12:00:00", "-l walltime=43200"),
        ("lsf", "12:00", "-W 720"),
        ("sge", "43200", "-l h_rt=12:00:00"),
    ],
)
def test_the_same_walltime_as_the_keyword_is_written_once(batch, walltime, line):
    plan, script = plan_and_script(batch, walltime=walltime, job_extra_directives=[line])
    assert plan.request.walltime == TWELVE_HOURS and len(walltime_lines(batch, script)) == 1


@pytest.mark.parametrize(
    "batch, line",
    [("slurm", "--time=12:00:00"), ("pbs", "-l walltime=12:00:00"), ("lsf", "-W 12:00"), ("sge", "-l h_rt=12:00:00")],
)
def test_a_walltime_that_contradicts_the_keyword_is_refused_naming_both(batch, line):
    with pytest.raises(
        ValidationError, match=f"walltime='01:00:00' but job_extra_directives\\[0\\] '{line}'"
    ) as refused:
        make_plan(cluster_class(batch), with_job_size({"walltime": "01:00:00", "job_extra_directives": [line]}))
    assert refused.value.field == "walltime"


@pytest.mark.parametrize(
    "batch, line, kept",
    [
        ("pbs", "-l walltime=12:00:00,software=abc", "#PBS -l software=abc"),
        ("sge", "-l h_vmem=4G,h_rt=12:00:00", "#$ -l h_vmem=4G"),
        ("slurm", "--time=12:00:00 --mail-type=END", "#SBATCH --mail-type=END"),
        ("lsf", "-W 12:00 -u me@example.org", "#BSUB -u me@example.org"),
    ],
)
def test_the_rest_of_a_line_with_a_walltime_stays(batch, line, kept):
    plan, script = plan_and_script(batch, job_extra_directives=[line])
    assert plan.request.walltime == TWELVE_HOURS and len(walltime_lines(batch, script)) == 1
    assert kept in script.split("\n")


def test_a_grid_engine_line_with_gpus_and_a_walltime_gives_both():
    plan, script = plan_and_script("sge", job_extra_directives=["-l gpu=2,h_rt=12:00:00"])
    assert (plan.request.gpus_per_node, plan.request.walltime) == (2, TWELVE_HOURS)
    assert walltime_lines("sge", script) == ["#$ -l h_rt=12:00:00"]


def test_a_pbs_select_line_with_a_walltime_gives_both():
    plan, script = plan_and_script(
        "pbs", job_extra_directives=["-l select=1:ncpus=8:ngpus=2:mem=16gb,walltime=12:00:00"]
    )
    assert (plan.request.gpus_per_node, plan.request.walltime) == (2, TWELVE_HOURS)
    assert walltime_lines("pbs", script) == ["#PBS -l walltime=12:00:00"]
    assert "#PBS -l select=1:ncpus=8:ngpus=2:mem=16gb" in script.split("\n")


def test_with_the_generated_walltime_skipped_the_users_line_stays_and_the_lifetime_follows_it():
    plan, script = plan_and_script("slurm", job_directives_skip=["--time"], job_extra_directives=["--time=00:10:00"])
    assert walltime_lines("slurm", script) == ["#SBATCH --time=00:10:00"]
    assert plan.request.walltime == 600 and lifetime(script) == plan.request.worker_lifetime


def test_with_the_generated_walltime_skipped_a_keyword_that_says_otherwise_is_refused():
    keywords = {"walltime": "01:00:00", "job_directives_skip": ["--time"], "job_extra_directives": ["--time=00:10:00"]}
    with pytest.raises(ValidationError, match="walltime='01:00:00' but") as refused:
        make_plan(cluster_class("slurm"), with_job_size(keywords))
    assert refused.value.field == "walltime"


def test_two_walltimes_written_by_hand_that_differ_are_refused_naming_both():
    with pytest.raises(ValidationError, match="'--time=12:00:00' and job_extra_directives\\[1\\] '-t 01:00:00'"):
        make_plan(cluster_class("slurm"), with_job_size({"job_extra_directives": ["--time=12:00:00", "-t 01:00:00"]}))


@pytest.mark.parametrize(
    "batch, line, says",
    [
        ("slurm", "--time=UNLIMITED", "not a walltime"),
        ("lsf", "-W 60/hostA", "host"),
        ("pbs", "-l walltime=1:00:00.5", "not a walltime"),
    ],
)
def test_a_walltime_gpujobqueue_cannot_read_is_refused_naming_the_line(batch, line, says):
    with pytest.raises(ValidationError, match=says) as refused:
        make_plan(cluster_class(batch), with_job_size({"job_extra_directives": [line]}))
    assert refused.value.field == "job_extra_directives[0]"


@pytest.mark.parametrize(
    "lines, nodes",
    [
        (["--nodes=1", "--ntasks-per-node=1"], None),
        (["-N 1", "--tasks-per-node=1"], None),
        (["--nodes=2"], 2),
        (["--nodes 1 --ntasks-per-node 1 --hint=multithread"], None),
    ],
)
def test_slurm_nodes_and_tasks_the_user_writes_as_gpujobqueue_does_are_written_once(lines, nodes):
    keywords = {"job_extra_directives": lines, **({"nodes": nodes} if nodes else {})}
    plan, script = plan_and_script("slurm", **keywords)
    directives = [line for line in script.split("\n") if line.startswith("#SBATCH ")]
    assert (
        directives.count(f"#SBATCH --nodes={nodes or 1}") == 1 and directives.count("#SBATCH --ntasks-per-node=1") == 1
    )
    assert not [line for line in directives if line.startswith(("#SBATCH -N", "#SBATCH --tasks-per-node"))]
    assert ("#SBATCH --hint=multithread" in directives) == any("--hint" in line for line in lines)


@pytest.mark.parametrize(
    "keywords, field, says",
    [
        (
            {"job_extra_directives": ["--nodes=2"]},
            "job_extra_directives[0]",
            "asks for 2 nodes but the job has nodes=1",
        ),
        ({"nodes": 2, "job_extra_directives": ["-N 3"]}, "nodes", "nodes=2 but job_extra_directives[0] '-N 3'"),
        ({"job_extra_directives": ["--ntasks-per-node=4"]}, "job_extra_directives[0]", "one task per node"),
    ],
)
def test_slurm_nodes_or_tasks_that_contradict_the_job_are_refused(keywords, field, says):
    with pytest.raises(ValidationError, match=says.replace("[", "\\[").replace("]", "\\]")) as refused:
        make_plan(cluster_class("slurm"), with_job_size(keywords))
    assert refused.value.field == field


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge"])
def test_each_form_knows_the_line_its_template_writes(batch):
    # job_directives_skip is matched against these lines, to leave the user's own line where ours is skipped.
    system = cluster_class(batch).batch_system
    plan, script = plan_and_script(batch, walltime="1-02:03:00", nodes=1)
    values = {"walltime": plan.request.walltime, "nodes": 1, "tasks_per_node": 1}
    assert system.directive_forms
    for form in system.directive_forms:
        assert form.generated(values[form.setting]) in script.split("\n"), form.setting
