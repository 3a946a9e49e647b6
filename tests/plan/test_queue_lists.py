"""A list of queues where the batch system takes one (issue 31's corpus: psweep's
``queue="some_queue,some_other_queue"``): sbatch's ``--partition`` and Grid Engine's ``qsub -q``
take a comma-separated list, LSF's ``bsub -q`` a space-separated list in quotes; PBS's ``qsub -q``
takes one destination. Each name is checked as a single queue is; a list is refused, naming
``queue``, where the batch system takes none, or written in another system's separator."""

from __future__ import annotations

import warnings

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import load_site

QUEUE_LINE = {"slurm": "#SBATCH --partition=", "sge": "#$ -q ", "lsf": "#BSUB -q ", "pbs": "#PBS -q "}


def queue_lines(batch: str, queue: str) -> list[str]:
    script = job_script_for(batch, with_job_size({"queue": queue}), name="job-7")
    return [line for line in script.split("\n") if line.startswith(QUEUE_LINE[batch])]


@pytest.mark.parametrize(
    "batch, queue, line",
    [
        ("slurm", "some_queue,some_other_queue", "#SBATCH --partition=some_queue,some_other_queue"),
        ("slurm", "gpu,gpu-preempt,a100.x", "#SBATCH --partition=gpu,gpu-preempt,a100.x"),
        ("sge", "gpu.q,all.q", "#$ -q gpu.q,all.q"),
        ("lsf", "short long", '#BSUB -q "short long"'),
        ("lsf", '"short long"', '#BSUB -q "short long"'),  # as a dask-jobqueue user had to write it
    ],
)
def test_a_list_of_queues_is_written_as_the_batch_system_reads_it(batch, queue, line):
    assert queue_lines(batch, queue) == [line]


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge"])
def test_one_queue_is_written_as_before(batch):
    assert queue_lines(batch, "gpu") == [QUEUE_LINE[batch] + "gpu"]


def test_the_plan_keeps_the_list_as_sbatch_reads_it():
    plan = make_plan(cluster_class("slurm"), with_job_size({"queue": "some_queue,some_other_queue"}))
    assert plan.request.queue == "some_queue,some_other_queue"


@pytest.mark.parametrize(
    "batch, queue, says",
    [
        ("pbs", "workq,gpu", "qsub takes one: give one queue"),
        ("pbs", "workq gpu", "qsub takes one"),
        ("lsf", "short,long", "bsub reads separated by spaces: give queue='short long'"),
        ("slurm", "gpu gpu2", "sbatch reads separated by commas: give queue='gpu,gpu2'"),
        ("sge", "gpu.q, all.q", "give queue='gpu.q,all.q'"),
        ("slurm", "gpu,,cpu", "empty"),
        ("slurm", "gpu,", "empty"),
        ("slurm", ",gpu", "empty"),
        ("sge", "gpu.q,", "empty"),
        ("lsf", "short  long", "empty"),
        ("lsf", " short", "empty"),
        ("slurm", "gpu,-x", "-x"),
        ("slurm", "gpu,$(id)", "not accepted"),
        ("lsf", 'short "long"', "not accepted"),
        ("sge", "gpu.q,all.q;id", "not accepted"),
    ],
)
def test_a_list_the_batch_system_does_not_read_is_refused_naming_queue(batch, queue, says):
    with pytest.raises(ValidationError, match=says) as refused:
        make_plan(cluster_class(batch), with_job_size({"queue": queue}))
    assert refused.value.field == "queue"


def test_a_single_bad_name_keeps_its_message():
    with pytest.raises(ValidationError, match="use letters, digits and _ . \\+ -") as refused:
        make_plan(cluster_class("pbs"), with_job_size({"queue": "gpu;id"}))
    assert refused.value.field == "queue"


def test_a_site_queue_is_still_mapped_to_its_partition():
    site = load_site("generic-slurm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generic site's unconfirmed values
        plan = make_plan(cluster_class("slurm"), {"site": site, "queue": "gpu", "gpus_per_node": 1})
    assert plan.request.queue == "gpu"
