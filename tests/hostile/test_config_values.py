"""Issue 40, points 8 and 9: dask config values are refused naming the key the user set.

A bad ``jobqueue.<batch>.*`` value was refused naming gpujobqueue's keyword (``cores``), which the
user never wrote; a whole section set to a list (``jobqueue: [...]``) was dropped without a word;
``gpujobqueue.site`` given a list ended in a raw ``TypeError``.
"""

from __future__ import annotations

import warnings

import dask
import pytest
from fixtures.sizes import with_job_size

from gpujobqueue import GPUCluster, ValidationError
from gpujobqueue.plan.scripts import job_script_for


@pytest.mark.parametrize(
    "key, value, field",
    [
        ("jobqueue.slurm.cores", "x", "jobqueue.slurm.cores"),
        ("jobqueue.slurm.walltime", "soon", "jobqueue.slurm.walltime"),
        ("jobqueue.slurm.job-extra-directives", [1], "jobqueue.slurm.job-extra-directives[0]"),
        ("jobqueue.slurm.extra", ["--nthreads x"], "jobqueue.slurm.extra"),
        ("jobqueue.slurm.env-extra", {"a": 1}, "jobqueue.slurm.env-extra"),
        ("gpujobqueue.slurm.gpus-per-node", "four", "gpujobqueue.slurm.gpus-per-node"),
        ("gpujobqueue.slurm.interface", "eth0;reboot", "gpujobqueue.slurm.interface"),
        pytest.param("jobqueue.slurm.cores", 10**5000, "jobqueue.slurm.cores", id="huge-int"),
    ],
)
def test_a_bad_config_value_is_refused_naming_the_key_set(key, value, field):
    with dask.config.set({key: value}), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValidationError) as info:
            job_script_for("slurm", {"memory": "1GB"} if "cores" in key else with_job_size({}), name="w")
    assert info.value.field == field, info.value
    assert str(info.value).startswith(f"{field}: ")


def test_a_keyword_s_refusal_still_names_the_keyword_where_config_sets_it_too():
    with dask.config.set({"jobqueue.slurm.cores": 4}), pytest.raises(ValidationError) as info:
        job_script_for("slurm", {"cores": "x", "memory": "1GB"}, name="w")
    assert info.value.field == "cores"


@pytest.mark.parametrize("key", ["jobqueue", "jobqueue.slurm", "gpujobqueue", "gpujobqueue.slurm"])
def test_a_config_section_set_to_a_list_is_refused_naming_it(key):
    with dask.config.set({key: ["cores", 4]}), pytest.raises(ValidationError) as info:
        job_script_for("slurm", with_job_size({}), name="w")
    assert info.value.field == key


@pytest.mark.parametrize("value", [["perlmutter"], {"name": "perlmutter"}, pytest.param(10**5000, id="huge-int")])
def test_gpujobqueue_site_given_no_name_is_refused_naming_it(value):
    with dask.config.set({"gpujobqueue.site": value}), pytest.raises(ValidationError) as info:
        GPUCluster()
    assert info.value.field == "gpujobqueue.site"
