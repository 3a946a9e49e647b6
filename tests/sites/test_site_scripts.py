"""Every shipped site's default job script: a golden file, and accepted by the batch system it
is written for.  SLURM sites go to the real ``sbatch --test-only`` and Grid Engine sites to the
real ``qsub -w v`` of the test fixtures, once their site-specific values (partition, constraint,
GPU type, node size) are mapped to the fixture's; PBS and LSF sites go to the emulators'
grammars, configured as the site's server (its queues, limits and node)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from emulators import lsf as lsf_emulator
from emulators import pbs as pbs_emulator
from emulators.common import Rejected
from site_samples import SAMPLE_HOSTNAMES, SHIPPED, UNRELATED_HOSTNAMES, site_job_script

from gpujobqueue.sites import detect_site, load_site

GOLDEN = Path(__file__).parents[1] / "golden" / "sites"
BY_SCHEDULER = {name: load_site(name).scheduler for name in SHIPPED}


def sites_of(scheduler):
    return [name for name in SHIPPED if BY_SCHEDULER[name] == scheduler]


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.config/gpujobqueue/sites override


# -- golden files ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_site_script_matches_its_golden_file(name):
    text = site_job_script(name)
    path = GOLDEN / f"{name}.sh"
    if os.environ.get("GPUJOBQUEUE_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from {path}; GPUJOBQUEUE_UPDATE_GOLDEN=1 rewrites it"


def test_every_site_golden_file_is_a_shipped_site():
    assert sorted(p.stem for p in GOLDEN.glob("*.sh")) == SHIPPED


@pytest.mark.parametrize("name", ["perlmutter", "polaris", "summit", "tsubame4"])
def test_render_site_on_the_command_line_gives_the_golden_script(name):
    args = [
        "--walltime",
        "00:30:00",
        "--python",
        "python3",
        "--name",
        "w",
        "--scheduler-address",
        "tls://10.0.0.1:8786",
    ]
    golden = (GOLDEN / f"{name}.sh").read_text()
    account = re.search(r"^(?:#SBATCH --account=|#PBS -[AP] |#BSUB -P |#\$ -[PAg] )(\S+)$", golden, re.M)
    if account:
        args += ["--account", account.group(1)]
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", name, *args], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == golden


# -- SLURM: the real sbatch -----------------------------------------------------------------


def fit_to_fixture_slurm(text, slurm):
    """Map a site's partition, constraint, GPU type and node size to the fixture's, and its cluster
    (``--clusters``, wICE) to the fixture's only one; every other directive is left as the site wrote it."""

    def directive(match):
        key, value = match.group(1), match.group(2)
        if key == "clusters":  # the fixture is one cluster without slurmdbd, which --clusters would query
            return f"# --clusters={value}: the fixture's one cluster"
        if key == "partition":
            value = slurm.partition
        elif key == "constraint":
            value = slurm.feature
        elif key in ("gres", "gpus-per-node"):
            *kind, count = value.split(":")
            if len(kind) == (2 if key == "gres" else 1):
                kind[-1] = slurm.gpu_type
            value = ":".join([*kind, str(min(int(count), slurm.gpu_count))])
        elif key == "cpus-per-task":
            value = str(min(int(value), slurm.cpus))
        elif key == "mem":
            value = f"{slurm.real_memory_mb // 2}M"
        return f"#SBATCH --{key}={value}"

    return re.sub(r"^#SBATCH --([a-z-]+)=(\S+)$", directive, text, flags=re.M)


def test_the_slurm_mapping_changes_only_site_values():
    text = (
        "#SBATCH --partition=GPU\n#SBATCH --gres=gpu:v100-32:8\n#SBATCH --gres=gpu:4\n#SBATCH --qos=regular\n"
        "#SBATCH --account=m1234_g\n#SBATCH --clusters=wice\n"
    )

    class Fixture:
        partition, feature, gpu_type, gpu_count, cpus, real_memory_mb = "gpu", "gpu", "h200", 4, 2, 8000

    assert fit_to_fixture_slurm(text, Fixture) == (
        "#SBATCH --partition=gpu\n#SBATCH --gres=gpu:h200:4\n#SBATCH --gres=gpu:4\n#SBATCH --qos=regular\n"
        "#SBATCH --account=m1234_g\n"
        "# --clusters=wice: the fixture's one cluster\n"
    )


@pytest.mark.slurm
@pytest.mark.parametrize("name", sites_of("slurm"))
def test_slurm_site_script_is_accepted_by_the_real_sbatch(slurm, tmp_path, name):
    path = tmp_path / "job.sh"
    path.write_text(fit_to_fixture_slurm((GOLDEN / f"{name}.sh").read_text(), slurm))
    result = subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and "to start at" in result.stderr, (
        f"sbatch --test-only refused {name}:\n{result.stderr}\n{path.read_text()}"
    )
    assert not slurm.squeue_ids()


# -- PBS and LSF: the emulators, configured as the site ---------------------------------------


def _size(value):
    return value.lower().replace("ib", "")  # 512GB -> 512gb, 96GiB -> 96g (PBS sizes are binary)


def pbs_server_of(site):
    """A PBS server with the site's queues, their walltime limits and the site's node."""
    node = site.data["node"]
    queues = {}
    for name, queue in site.data["queues"].items():
        limits = {"walltime": queue["max_walltime"]} if queue.get("max_walltime") else {}
        queues[queue.get("partition") or name] = {"resources_max": limits}
    default = site.queue(site.data["default_queue"])
    config = pbs_emulator.default_config(
        "pbspro",
        ncpus=node["cpus"],
        ngpus=node["gpus"],
        mem=_size(node["memory"]),
        queues=queues,
        default_queue=default.get("partition") or site.data["default_queue"],
    )
    # The chunk resources the site's select lines carry (HLRS' node_type), as its server defines them
    known = {resource["name"] for resource in config.custom_resources}
    chunk = dict(site.data.get("directives", {}).get("chunk_resources", {}))
    for queue in site.data["queues"].values():
        chunk.update(queue.get("chunk_resources", {}))
    config.custom_resources += [
        {"name": name, "type": "string", "level": "chunk"} for name in chunk if name not in known
    ]
    return config


def lsf_server_of(site):
    """An LSF cluster with the site's queues, run limits, CSM queues and node."""
    node, csm = site.data["node"], site.data["gpu_request"]["style"] == "csm"
    queues = {}
    for name, queue in site.data["queues"].items():
        limits = {"run_limit_min": _minutes(queue["max_walltime"])} if queue.get("max_walltime") else {}
        queues[queue.get("partition") or name] = {**limits, "csm": csm, "exclusive": queue.get("whole_node", True)}
    return lsf_emulator.default_config(
        ncpus=node["cpus"],
        ngpus=node["gpus"],
        mem=_size(node["memory"]),
        queues=queues,
        default_queue=site.data["default_queue"],
    )


def _minutes(walltime):
    hours, minutes, *_ = (int(part) for part in walltime.split(":"))
    return hours * 60 + minutes


@pytest.mark.parametrize("name", sites_of("pbs"))
def test_pbs_site_script_is_accepted_by_the_pbs_grammar(name):
    site = load_site(name)
    parsed = pbs_emulator.parse_submission((GOLDEN / f"{name}.sh").read_text(), (), pbs_server_of(site))
    assert parsed.queue == (site.queue(site.data["default_queue"]).get("partition") or site.data["default_queue"])


@pytest.mark.parametrize("name", sites_of("lsf"))
def test_lsf_site_script_is_accepted_by_the_lsf_grammar(name):
    site = load_site(name)
    parsed = lsf_emulator.parse_submission((GOLDEN / f"{name}.sh").read_text(), (), lsf_server_of(site))
    assert parsed.queue == site.data["default_queue"]


# -- Grid Engine: the real qsub -------------------------------------------------------------


def fit_to_fixture_sge(text, sge):
    """Map a site's resource type and queue to the fixture's (``rt_F``, ``gpu.q``), and TSUBAME's group
    option (``-g``, its qsub's and not Grid Engine's) to a comment."""
    text = re.sub(r"^#\$ -g (\S+)$", r"# -g \1: TSUBAME's group option", text, flags=re.M)
    text = re.sub(r"^#\$ -l (?!h_rt=|gpu=)[A-Za-z_]+=1$", "#$ -l rt_F=1", text, flags=re.M)
    return re.sub(r"^#\$ -q \S+$", "#$ -q gpu.q", text, flags=re.M)


@pytest.mark.sge
@pytest.mark.parametrize("name", sites_of("sge"))
def test_sge_site_script_is_accepted_by_the_real_qsub(sge, tmp_path, name):
    path = tmp_path / "job.sh"
    path.write_text(fit_to_fixture_sge((GOLDEN / f"{name}.sh").read_text(), sge))
    result = sge.run("qsub", "-w", "v", str(path), cwd=tmp_path, check=False)
    assert result.returncode == 0 and "found suitable queue" in result.stdout, (
        f"qsub -w v refused {name}:\n{result.stdout}{result.stderr}"
    )
    assert not sge.job_ids()


# -- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLE_HOSTNAMES))
def test_detection_picks_the_site_for_each_of_its_login_nodes(name):
    for host in SAMPLE_HOSTNAMES[name]:
        site = detect_site([host])
        assert site is not None and site.name == name, f"{host}: {site and site.name}"


def test_every_site_with_hostnames_has_samples():
    assert {name for name in SHIPPED if load_site(name).data.get("hostnames")} == set(SAMPLE_HOSTNAMES)


@pytest.mark.parametrize("host", UNRELATED_HOSTNAMES)
def test_detection_picks_no_site_for_other_machines(host):
    assert detect_site([host]) is None


def test_no_login_node_matches_two_sites():
    patterns = {other: load_site(other).data.get("hostnames", []) for other in SHIPPED}
    for name, hosts in SAMPLE_HOSTNAMES.items():
        for host in hosts:
            matching = [other for other in SHIPPED for pattern in patterns[other] if re.fullmatch(pattern, host)]
            assert set(matching) == {name}, f"{host} matches {matching}"


# -- the checks above can fail --------------------------------------------------------------


@pytest.mark.slurm
def test_an_unmapped_site_partition_is_refused_by_the_real_sbatch(slurm, tmp_path):
    path = tmp_path / "job.sh"
    path.write_text((GOLDEN / "bridges2.sh").read_text())
    result = subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode != 0 and "invalid partition" in result.stderr.lower()


@pytest.mark.parametrize(
    "name, change, refusal",
    [
        ("polaris", ("walltime=00:30:00", "walltime=02:00:00"), "resource limits"),  # debug allows 1 hour
        ("aurora", ("system=aurora", "system=aurora:colour=blue"), "unknown resource"),
        ("summit", ("#BSUB -q batch", "#BSUB -q nosuchqueue"), "no such queue"),
    ],
)
def test_the_site_configured_grammars_refuse_what_the_site_refuses(name, change, refusal):
    text = (GOLDEN / f"{name}.sh").read_text()
    assert change[0] in text
    site = load_site(name)
    parse, server = (
        (lsf_emulator.parse_submission, lsf_server_of(site))
        if site.scheduler == "lsf"
        else (pbs_emulator.parse_submission, pbs_server_of(site))
    )
    with pytest.raises(Rejected) as info:
        parse(text.replace(*change), (), server)
    assert refusal in info.value.message.lower()
