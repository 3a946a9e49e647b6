"""Issue 44, point 5: the machines a GPU user expects, JUPITER Booster, Jean Zay, Snellius, MareNostrum 5 ACC
and Hunter, then PDC's Dardel (the 46th real machine), each rendering what its centre (or, where no centre page
was read, the material listed as unconfirmed) says: GPUs per node, the GPU request, the queues' limits and node
counts.

Edges written out by hand from the pages cited in the site files, not computed from the files."""

from __future__ import annotations

import warnings

import pytest
from site_samples import SHIPPED

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import QueueRefusedError, SiteConfigError, fact_groups, load_site
from gpujobqueue.sites.schema import unconfirmed_keys

FIVE = ("jupiter-booster", "jean-zay", "snellius", "marenostrum5-acc", "hunter")
MACHINES = (*FIVE, "dardel")
ACCOUNTS = {"jupiter-booster": "mybudget", "marenostrum5-acc": "ehpc123", "dardel": "naiss2026-5-123"}


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")


def keywords(name: str, **more):
    return {"python": "python3", **({"account": ACCOUNTS[name]} if name in ACCOUNTS else {}), **more}


def script(name: str, **more) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        return job_script_for(name, keywords(name, **more), name="w", scheduler="tls://10.0.0.1:8786")


def queue_of(name: str, **more) -> str:
    site = load_site(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, **keywords(name, **more)})
    return plan.site_queue


def test_the_machines_of_issue_44_ship_as_real_machines():
    # 40 real machines before the five, 45 with them; Dardel makes the issue's "at least 46"
    real = [name for name in SHIPPED if load_site(name).data["status"] != "generic"]
    assert set(MACHINES) <= set(real) and len(real) >= 46, sorted(real)


@pytest.mark.parametrize(
    ("name", "scheduler", "gpus", "model", "vendor", "mode"),
    [
        ("jupiter-booster", "slurm", 4, "GH200", "nvidia", "dask-cuda"),
        ("jean-zay", "slurm", 4, "V100", "nvidia", "dask-cuda"),
        ("snellius", "slurm", 4, "A100", "nvidia", "dask-cuda"),
        ("marenostrum5-acc", "slurm", 4, "H100", "nvidia", "dask-cuda"),
        ("hunter", "pbs", 4, "MI300A", "amd", "per-device"),
        ("dardel", "slurm", 8, "MI250X GCD", "amd", "per-device"),  # PDC: four MI250X, two GCDs each
    ],
)
def test_each_machine_has_its_gpus_per_node_and_worker_mode(name, scheduler, gpus, model, vendor, mode):
    site = load_site(name)
    node = site.data["node"]
    assert site.scheduler == scheduler and site.data["status"] == "production"
    assert (node["gpus"], node["gpu_model"], node["gpu_vendor"], site.data["worker"]["mode"]) == (
        gpus,
        model,
        vendor,
        mode,
    )


@pytest.mark.parametrize("name", MACHINES)
def test_each_source_gives_the_day_read_and_the_date_of_its_content(name):
    for source in load_site(name).data["sources"]:
        assert source["checked"] == "2026-12-07", source["url"]
        assert "version_date" in source and source["version_date"] <= source["checked"], source["url"]


@pytest.mark.parametrize("name", ["marenostrum5-acc", "hunter"])
def test_a_machine_no_centre_page_covers_lists_every_fact_group_as_unconfirmed(name):
    data = load_site(name).data
    listed = {key for line in data["unconfirmed"] for key in unconfirmed_keys(line)}
    for group in fact_groups(data):
        assert any(group == key or group.startswith(key + ".") for key in listed), group


# -- JUPITER Booster (JSC) ---------------------------------------------------------------------


def test_jupiter_asks_the_booster_partition_for_4_gh200_with_gres():
    text = script("jupiter-booster", walltime="01:00:00")
    assert "#SBATCH --partition=booster\n" in text and "#SBATCH --gres=gpu:4\n" in text
    assert "#SBATCH --cpus-per-task=288\n" in text and "#SBATCH --account=mybudget\n" in text


def test_jupiter_refuses_a_job_larger_than_the_machine():
    # JSC: "~6000 standard compute nodes", 25 Booster Dragonfly+ groups of 240 nodes
    assert queue_of("jupiter-booster", nodes=6000, walltime="01:00:00") == "booster"
    with pytest.raises(QueueRefusedError, match="allows 6000"):
        queue_of("jupiter-booster", nodes=6001, walltime="01:00:00")


# -- Jean Zay (IDRIS) --------------------------------------------------------------------------


def test_jean_zay_asks_no_memory_and_its_cores_with_hyperthreading_off():
    # IDRIS: --mem, --mem-per-cpu and --mem-per-gpu are disabled; 156 GB / 40 cores, 10 cores per V100
    text = script("jean-zay", walltime="01:00:00", gpus_per_node=1)
    assert "#SBATCH --partition=gpu_p13\n" in text and "#SBATCH --gres=gpu:1\n" in text
    assert "#SBATCH --cpus-per-task=10\n" in text and "#SBATCH --hint=nomultithread\n" in text
    assert "#SBATCH --mem" not in text
    with pytest.raises(ValidationError, match="désactivées sur Jean Zay"):
        script("jean-zay", walltime="01:00:00", memory="100GB")


def test_jean_zay_sends_a_job_past_20_hours_to_qos_t4_and_refuses_one_past_100():
    assert queue_of("jean-zay", walltime="20:00:00") == "gpu_p13"
    assert queue_of("jean-zay", walltime="100:00:00") == "gpu_p13-t4"
    assert "#SBATCH --qos=qos_gpu-t4\n" in script("jean-zay", walltime="30:00:00")
    with pytest.raises(QueueRefusedError, match="100:00:00"):
        queue_of("jean-zay", walltime="100:01:00")


@pytest.mark.parametrize(
    ("queue", "constraint", "gpus", "cpus"),
    [("gpu_p5", "a100", 8, 64), ("gpu_p6", "h100", 4, 96)],  # IDRIS' examples: 8 x 8 cores, 4 x 24 cores
)
def test_jean_zay_s_a100_and_h100_partitions_ask_their_constraint_gpus_and_cores(queue, constraint, gpus, cpus):
    text = script("jean-zay", queue=queue, walltime="01:00:00")
    assert f"#SBATCH --partition={queue}\n" in text and f"#SBATCH --constraint={constraint}\n" in text
    assert f"#SBATCH --gres=gpu:{gpus}\n" in text and f"#SBATCH --cpus-per-task={cpus}\n" in text
    assert queue_of("jean-zay", walltime="01:00:00") == "gpu_p13"  # never chosen over the default


# -- Snellius (SURF) ---------------------------------------------------------------------------


def test_snellius_asks_a_quarter_node_per_a100_and_charges_128_sbu_per_gpu_hour():
    # SURF: the smallest gpu_a100 allocation is "18 cores + 1 GPU + 120 GiB RAM"; 128 SBU per GPU hour
    text = script("snellius", walltime="01:00:00", gpus_per_node=1)
    assert "#SBATCH --partition=gpu_a100\n" in text and "#SBATCH --gpus-per-node=1\n" in text
    assert "#SBATCH --cpus-per-task=18\n" in text and "#SBATCH --mem=120G\n" in text
    charge = load_site("snellius").charge("gpu_a100")
    assert (charge.unit, charge.factor) == ("gpu-hour", 128)


@pytest.mark.parametrize(("queue", "nodes"), [("gpu_a100", 63), ("gpu_h100", 88)])
def test_snellius_refuses_a_job_larger_than_its_partition(queue, nodes):
    assert queue_of("snellius", queue=queue, nodes=nodes, walltime="120:00:00") == queue
    with pytest.raises(QueueRefusedError, match=f"allows {nodes}"):
        queue_of("snellius", queue=queue, nodes=nodes + 1, walltime="01:00:00")
    with pytest.raises(QueueRefusedError, match="120:00:00"):
        queue_of("snellius", queue=queue, walltime="120:01:00")


def test_snellius_h100_nodes_have_64_cores_and_720_gib():
    text = script("snellius", queue="gpu_h100", walltime="01:00:00")
    assert "#SBATCH --cpus-per-task=64\n" in text and "#SBATCH --mem=720G\n" in text


# -- MareNostrum 5 ACC (BSC, from TRUBA's translation) -------------------------------------------


def test_marenostrum5_acc_names_the_qos_of_the_allocation_on_partition_acc():
    text = script("marenostrum5-acc", walltime="01:00:00")
    assert "#SBATCH --partition=acc\n#SBATCH --account=ehpc123\n#SBATCH --qos=acc_ehpc\n" in text
    assert "#SBATCH --gres=gpu:4\n" in text and "#SBATCH --cpus-per-task=80\n" in text


@pytest.mark.parametrize(
    ("queue", "nodes", "walltime"),
    [
        ("acc_ehpc", 100, "72:00:00"),
        ("acc_resb", 50, "48:00:00"),
        ("acc_resc", 10, "24:00:00"),
        ("acc_debug", 8, "02:00:00"),
    ],
)
def test_marenostrum5_acc_qos_limits(queue, nodes, walltime):
    assert queue_of("marenostrum5-acc", queue=queue, nodes=nodes, walltime=walltime) == queue
    with pytest.raises(QueueRefusedError, match=f"allows {nodes}"):
        queue_of("marenostrum5-acc", queue=queue, nodes=nodes + 1, walltime="01:00:00")
    with pytest.raises(QueueRefusedError, match=walltime):
        queue_of("marenostrum5-acc", queue=queue, walltime=walltime[:-2] + "01")


# -- Hunter (HLRS) -----------------------------------------------------------------------------


def test_hunter_asks_whole_mi300a_nodes_and_starts_one_rocm_worker_per_apu():
    text = script("hunter", walltime="01:00:00")
    assert "#PBS -l select=1:ncpus=96:node_type=mi300a\n" in text
    assert "ngpus" not in text and "#PBS -q" not in text  # no -q: HLRS' routing queue
    assert "ROCR_VISIBLE_DEVICES" in text and "CUDA_VISIBLE_DEVICES" not in text and "dask_cuda" not in text
    assert "--nworkers 4" in text and "--preload-nanny gpujobqueue.preloads.pin_device" in text


def test_hunter_refuses_a_job_past_24_hours_and_keeps_the_test_queue_to_25_minutes():
    assert queue_of("hunter", walltime="24:00:00") == "routing"
    with pytest.raises(QueueRefusedError, match="24:00:00"):
        queue_of("hunter", walltime="24:01:00")
    assert "#PBS -q test\n" in script("hunter", queue="test", walltime="00:25:00")
    with pytest.raises(QueueRefusedError, match="00:25:00"):
        queue_of("hunter", queue="test", walltime="00:26:00")
    with pytest.raises(QueueRefusedError, match="allows 188"):
        queue_of("hunter", nodes=189, walltime="01:00:00")


# -- Dardel (PDC, KTH) -------------------------------------------------------------------------


def test_dardel_asks_partition_gpu_with_its_naiss_allocation_and_no_gpu_request():
    # PDC's GPU example: -A naissYYYY-X-XX, -p gpu, --nodes=1, no --gres/--gpus; one 64-core EPYC per node
    text = script("dardel", walltime="01:00:00")
    assert "#SBATCH --partition=gpu\n#SBATCH --account=naiss2026-5-123\n" in text
    assert "#SBATCH --cpus-per-task=64\n" in text
    assert "--gres" not in text and "--gpus" not in text and "#SBATCH --mem" not in text
    assert "module load rocm\nmodule load craype-accel-amd-gfx90a\n" in text


def test_dardel_starts_one_rocm_worker_per_gcd():
    text = script("dardel", walltime="01:00:00")
    assert "ROCR_VISIBLE_DEVICES" in text and "CUDA_VISIBLE_DEVICES" not in text and "dask_cuda" not in text
    assert "--nworkers 8" in text and "--preload-nanny gpujobqueue.preloads.pin_device" in text


def test_dardel_refuses_a_job_without_an_allocation():
    # PDC: "The -A flag must be specified, or the submission will fail"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SiteConfigError, match="Invalid partition or qos specification"):
            job_script_for(
                "dardel", {"python": "python3", "walltime": "01:00:00"}, name="w", scheduler="tls://10.0.0.1:8786"
            )


def test_dardel_refuses_a_job_past_24_hours_or_past_its_62_gpu_nodes():
    # PDC: "GPU node | 62 | 512 GB | gpu", partition gpu "Maximum job time 24 hours", whole nodes
    assert queue_of("dardel", nodes=62, walltime="24:00:00") == "gpu"
    with pytest.raises(QueueRefusedError, match="24:00:00"):
        queue_of("dardel", walltime="24:01:00")
    with pytest.raises(QueueRefusedError, match="allows 62"):
        queue_of("dardel", nodes=63, walltime="01:00:00")
    assert load_site("dardel").data["queues"]["gpu"]["whole_node"] is True


@pytest.mark.parametrize(("date", "problem"), [("2026-02-30", "is not a date"), ("2999-01-01", "is in the future")])
def test_a_source_s_version_date_is_checked(tmp_path, monkeypatch, date, problem):
    (tmp_path / "snellius.yaml").write_text(
        f'sources:\n  - url: https://servicedesk.surf.nl/\n    checked: "2026-12-07"\n    version_date: "{date}"\n'
        "    covers: [node]\n"
    )
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    with pytest.raises(SiteConfigError, match=f"snellius.yaml:4: sources.0.version_date: '?{date}'? {problem}"):
        load_site("snellius")
