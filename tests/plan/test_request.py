"""Parsing and validation of what a job asks for."""

import datetime

import pytest

from gpujobqueue import GPUJobQueueError, JobRequest, ValidationError
from gpujobqueue.batch.slurm import SLURM, format_slurm_memory
from gpujobqueue.settings.validation import parse_size
from gpujobqueue.settings.walltimes import format_walltime, parse_walltime


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("01:30:00", 5400),
        ("100:00:00", 360000),
        ("1-00:00:00", 86400),
        ("2-12", 2 * 86400 + 12 * 3600),
        ("0-00:30", 1800),
        ("45", 2700),
        ("10:30", 630),
    ],
)
def test_walltime_forms(text, seconds):
    assert parse_walltime("walltime", text) == seconds


def test_walltime_timedelta_and_round_trip():
    assert parse_walltime("walltime", datetime.timedelta(hours=2)) == 7200
    assert format_walltime(5400) == "01:30:00"
    assert format_walltime(90061) == "1-01:01:01"


@pytest.mark.parametrize(
    "text", ["25:99", "1:2:3:4", "01:60:00", "1-24:00:00", "abc", "00:00:00", "-5", "1h", "01:00:00\n#SBATCH -A x"]
)
def test_bad_walltime_names_field_and_forms(text):
    with pytest.raises(ValidationError) as info:
        parse_walltime("walltime", text)
    assert info.value.field == "walltime"
    assert "walltime" in str(info.value)
    assert isinstance(info.value, GPUJobQueueError)


@pytest.mark.parametrize(
    "text, nbytes", [("60GiB", 60 * 2**30), ("512 MB", 512 * 10**6), ("2TB", 2 * 10**12), (2**20, 2**20)]
)
def test_sizes(text, nbytes):
    assert parse_size("memory", text) == nbytes


@pytest.mark.parametrize("text", ["lots", "-1GB", "0", True, "1GB\n"])
def test_bad_sizes(text):
    with pytest.raises(ValidationError, match="memory"):
        parse_size("memory", text)


def test_slurm_memory_rounds_up_in_binary_units():
    assert format_slurm_memory(60 * 2**30) == "60G"
    assert format_slurm_memory(1536 * 2**20) == "1536M"
    assert format_slurm_memory(10**9) == "954M"


def test_request_from_settings_derives_cpus_and_memory_per_gpu():
    request = JobRequest.from_settings(
        {"gpus_per_node": 4, "cpus_per_gpu": 8, "memory_per_gpu": "60GiB", "walltime": "02:00:00", "queue": "gpu"}
    )
    assert request.cpus_per_node == 32
    assert request.memory_per_node == 240 * 2**30
    assert request.walltime == 7200
    assert request.queue == "gpu"
    assert request.gpus_per_job == 4


@pytest.mark.parametrize(
    "settings, field",
    [
        ({"gpus_per_node": 0}, "gpus_per_node"),
        ({"gpus_per_node": -2}, "gpus_per_node"),
        ({"gpus_per_node": "four"}, "gpus_per_node"),
        ({"gpus_per_node": True}, "gpus_per_node"),
        ({"job_name": "ok\nbad"}, "job_name"),
        ({"job_name": "a;rm -rf ~"}, "job_name"),
        ({"job_name": "$(reboot)"}, "job_name"),
        ({"job_name": "has space"}, "job_name"),
        ({"account": "m1234 -p debug"}, "account"),
        ({"queue": "gpu`id`"}, "queue"),
        ({"walltime": "25:99"}, "walltime"),
        ({"memory": "many"}, "memory"),
        ({"cores": 4, "cpus_per_gpu": 2}, "cores"),
        ({"memory": "1GB", "memory_per_gpu": "1GB"}, "memory"),
        ({"gpu_request": "gpu-please"}, "gpu_request"),
        ({"job_extra_directives": ["--qos=a\n#SBATCH --qos=b"]}, "job_extra_directives[0]"),
        ({"environment": {"BAD NAME": "x"}}, "environment"),
        ({"log_directory": "/tmp/a b"}, "log_directory"),
        ({"exclusive": "sometimes"}, "exclusive"),
    ],
)
def test_bad_request_names_the_field(settings, field):
    with pytest.raises(ValidationError) as info:
        JobRequest.from_settings(settings)
    assert info.value.field == field
    assert str(info.value).startswith(field + ":")


@pytest.mark.parametrize(
    "settings, field",
    [({"constraint": "gpu; reboot"}, "constraint"), ({"qos": "a b"}, "qos"), ({"job_mem": "10 G"}, "job_mem")],
)
def test_bad_slurm_options_name_the_field(settings, field):
    with pytest.raises(ValidationError) as info:
        SLURM.parse_options(settings, None)
    assert info.value.field == field
    assert str(info.value).startswith(field + ":")


# sbatch reads --mem as a whole number of MB, or of K, M, G or T (either case) with a B after the unit or not
# (Slurm's str_to_mbytes); dask-jobqueue writes job_mem as given, SDSC Comet's jobqueue.yaml as job-mem: 120GB.
@pytest.mark.parametrize("text", ["4000", "512M", "60G", "120GB", "120gb", "64g", "1024k", "1024KB", "2T", "2Tb"])
def test_job_mem_takes_what_sbatch_mem_takes_and_writes_it_as_given(text):
    from gpujobqueue.plan.scripts import job_script_for

    assert SLURM.parse_options({"job_mem": text}, None).job_mem == text
    script = job_script_for("slurm", {"job_mem": text, "cores": 4}, name="job", tls=False)
    assert f"#SBATCH --mem={text}" in script.splitlines()


@pytest.mark.parametrize("text", ["10 G", "10GiB", "10GBB", "10Bytes", "G", "10B", "-1G", "1.5G", "10P"])
def test_job_mem_refuses_what_sbatch_mem_refuses(text):
    with pytest.raises(ValidationError) as info:
        SLURM.parse_options({"job_mem": text}, None)
    assert info.value.field == "job_mem" and "such as '4000', '512M' or '60G'" in str(info.value)


def test_booleans_from_config_text():
    assert JobRequest.from_settings({"exclusive": "false"}).exclusive is False
    assert JobRequest.from_settings({"exclusive": "yes"}).exclusive is True


def test_job_paths_keep_variables_for_the_node():
    from gpujobqueue.settings.validation import parse_job_path

    assert parse_job_path("local_directory", "$TMPDIR/dask") == "$TMPDIR/dask"
    assert parse_job_path("local_directory", "/scratch/${USER}/dask") == "/scratch/${USER}/dask"
    for bad in ("$(reboot)", "`id`", "$TMPDIR; rm -rf ~", '$TMPDIR"x', "${A:-/tmp}"):
        with pytest.raises(ValidationError, match="local_directory"):
            parse_job_path("local_directory", bad)


@pytest.mark.parametrize(
    "walltime, margin",
    [
        ("00:01:00", 15),  # a quarter of a minute
        ("00:02:00", 20),  # the least margin: a 2-minute job works 100 s, not 60
        ("00:10:00", 30),  # 5 %
        ("01:00:00", 180),
        ("1-00:00:00", 600),  # at most ten minutes
    ],
)
def test_the_automatic_walltime_margin_is_5_percent_within_20_s_to_10_min_and_a_quarter_at_most(walltime, margin):
    request = JobRequest.from_settings({"walltime": walltime, "gpus_per_node": 1})
    assert request.walltime - request.worker_lifetime == margin
    assert request.lifetime_stagger == margin // 4


# dask-jobqueue writes the walltime as given, so a bare number means what the batch system reads it as:
# minutes to sbatch --time and bsub -W, seconds to PBS's -l walltime and Grid Engine's -l h_rt.
@pytest.mark.parametrize(
    "batch, walltime, line",
    [
        ("slurm", "1500", "#SBATCH --time=1-01:00:00"),
        ("lsf", "1500", "#BSUB -W 25:00"),
        ("pbs", "1500", "#PBS -l walltime=00:25:00"),
        ("sge", "1500", "#$ -l h_rt=00:25:00"),
        ("sge", "1500000", "#$ -l h_rt=416:40:00"),  # dask-jobqueue's Grid Engine example
        ("pbs", "10:30", "#PBS -l walltime=00:10:30"),  # minutes:seconds on PBS as on SLURM
        ("sge", "01:00:00", "#$ -l h_rt=01:00:00"),
    ],
)
def test_a_bare_number_walltime_is_in_the_unit_its_batch_system_reads(batch, walltime, line):
    from fixtures.sizes import with_job_size

    from gpujobqueue.plan.scripts import job_script_for

    script = job_script_for(batch, with_job_size({"walltime": walltime}), name="job", tls=False)
    assert line in script.splitlines()


def test_a_walltime_in_seconds_is_bounded_as_every_walltime():
    from gpujobqueue.plan.scripts import job_script_for

    with pytest.raises(ValidationError) as info:
        job_script_for("sge", {"walltime": str(366 * 86400), "cores": 1, "memory": "1GB"}, name="job")
    assert info.value.field == "walltime" and "365 days" in str(info.value)
