"""The site facts issue 44 (sites v4) corrected, each written out by hand from the centre's page named beside it,
not computed from the site files."""

from __future__ import annotations

import warnings

from gpujobqueue.plan.scripts import job_script_for


def script(site_name: str, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        return job_script_for(site_name, {"walltime": "01:00:00", **keywords}, name="w")


def test_betzy_accel_jobs_ask_for_their_memory_at_most_what_a_gpu_pays_for():
    # NRIS "Job Scripts on Betzy" (UNINETTSigma2/documentation jobs/job_scripts/betzy_job_scripts.html @7af3f4c4,
    # 2026-06-10 or later): accel jobs "must specify ... the amount of memory memory per cpu or GPU". "Projects and
    # accounting" (@1205b91e): a GPU is 16 billing units and a GiB 0.1294237, so up to 123.6 GiB per GPU costs no more
    # than the GPU; "Job Types on Betzy": 494.5 GiB per node for jobs.
    whole = script("betzy", account="nn9999k")
    assert "#SBATCH --gpus=4\n" in whole and "#SBATCH --mem=492G\n" in whole  # 4 x 123 GiB (Slurm's G is GiB)
    one = script("betzy", account="nn9999k", gpus_per_node=1)
    assert "#SBATCH --gpus=1\n" in one and "#SBATCH --mem=123G\n" in one
