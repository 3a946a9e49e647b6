"""Site facts that change the rendered script (issue 20's schema gaps): the account flag per site
(ABCI's -P, TSUBAME's -g), sites that refuse a memory request (TACC), typed --gpus=TYPE:N, the
SLURM cluster a site's jobs go to (wICE's -M wice) in sbatch's header and in squeue and scancel,
and per-queue extra directives and resource types."""

from __future__ import annotations

import os
import stat
import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import wait_until

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.errors import GPUJobQueueError, ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import SiteConfigError, load_site

MINIMAL = (Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml").read_text()


def site_file(tmp_path: Path, text: str = MINIMAL, *, replace: tuple[str, str] = ("", ""), add: str = "") -> Path:
    """minimal.yaml with one string replaced and lines added, as tmp_path/minimal.yaml."""
    path = tmp_path / "minimal.yaml"
    path.write_text(text.replace(*replace) + textwrap.dedent(add) if replace[0] else text + textwrap.dedent(add))
    return path


def script(site, **keywords) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts and the like
        return job_script_for(str(site), {"walltime": "00:30:00", "python": "python3", **keywords}, name="w")


def header(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def parse(site, **keywords):
    site = load_site(str(site))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, **keywords})
        return plan.settings, plan.request, plan.launch


# -- 1. the account flag --------------------------------------------------------------------------


def test_abci3_gives_its_group_with_dash_p():
    lines = header(script("abci3", account="gab12345"), "#PBS")
    assert "#PBS -P gab12345" in lines
    assert not any(line.startswith("#PBS -A") for line in lines)


def test_abci3_requires_its_group():
    with pytest.raises(GPUJobQueueError) as error:
        parse("abci3")
    assert "account" in str(error.value)


def test_tsubame4_gives_its_group_with_dash_g():
    lines = header(script("tsubame4", account="tga-lab"), "#$")
    assert "#$ -g tga-lab" in lines
    assert not any(line.startswith("#$ -P") for line in lines)


def test_an_account_flag_the_batch_system_cannot_express_is_refused(tmp_path):
    path = site_file(tmp_path, add="account:\n  flag: -g\n")  # a SLURM site: only --account
    with pytest.raises(SiteConfigError) as error:
        load_site(str(path))
    assert error.value.key == "account.flag" and "--account" in str(error.value)


def test_the_default_account_flags_stay(tmp_path):
    assert "#SBATCH --account=abc123" in script(site_file(tmp_path), account="abc123")
    assert "#PBS -A MyProject" in script("polaris", account="MyProject")


# -- 2. sites that refuse a memory request ---------------------------------------------------------

REFUSES_MEMORY = """\
  memory_request: false
  memory_request_refused: "the centre: with --mem the scheduler will not accept your job"
"""


def refusing_site(tmp_path: Path) -> Path:
    # worker.memory_per_gpu sizes the workers; the site's node takes no --mem
    return site_file(
        tmp_path,
        replace=("  memory: 8GB\n", "  memory: 8GB\n" + REFUSES_MEMORY),
        add="",
    )


def test_a_site_that_refuses_memory_renders_no_mem_line(tmp_path):
    path = refusing_site(tmp_path)
    text = path.read_text().replace("  mode: per-device\n", "  mode: per-device\n  memory_per_gpu: 2GB\n")
    path.write_text(text)
    rendered = script(path)
    assert not [line for line in header(rendered, "#SBATCH") if "--mem" in line]
    # the workers' memory limits still use the node's share: 2 GB each
    assert "--memory-limit 2000000000" in rendered


@pytest.mark.parametrize("keyword", [{"memory": "4GB"}, {"memory_per_gpu": "1GB"}, {"job_mem": "4G"}])
def test_a_memory_request_on_such_a_site_is_refused_with_the_centres_reason(tmp_path, keyword):
    with pytest.raises(ValidationError) as error:
        parse(refusing_site(tmp_path), **keyword)
    assert error.value.field == next(iter(keyword))
    assert "will not accept your job" in str(error.value)


# Lonestar6's guide has no sbatch table of its own: it sends readers to Stampede3's ("--mem: Not available. If you
# attempt to use this option, the scheduler will not accept your job"; TACC/TACC-Docs docs/hpc/lonestar6.md @ 3679c023,
# docs/hpc/3stampede/running.md @ 7d81a41a).
@pytest.mark.parametrize("name", ["frontera", "lonestar6", "stampede3", "vista"])
def test_tacc_sites_refuse_a_memory_request(name):
    assert not [line for line in header(script(name), "#SBATCH") if "--mem" in line]
    with pytest.raises(ValidationError) as error:
        parse(name, memory="10GB")
    assert error.value.field == "memory" and "scheduler will not accept" in str(error.value)


@pytest.mark.parametrize(
    "line", ["--mem=10G", "--mem 10G", "--mem-per-cpu=2G", "--mem-per-gpu=40G", " --mem=0", "--mem"]
)
def test_a_memory_directive_given_as_an_extra_line_is_refused_there_too(line):
    with pytest.raises(ValidationError) as error:
        parse("vista", job_extra_directives=[line])
    assert error.value.field == "job_extra_directives" and "scheduler will not accept" in str(error.value)


@pytest.mark.parametrize("line", ["--mail-type=END", "--mem-bind=local", "--mem_bind=local"])
def test_other_extra_lines_pass_on_a_site_that_refuses_memory(line):
    assert f"#SBATCH {line}" in header(script("vista", job_extra_directives=[line]), "#SBATCH")


# -- 3. typed GPU requests --------------------------------------------------------------------------


def gpus_site(tmp_path: Path, gpu_type: str | None = "h200") -> Path:
    style = "gpu_request:\n  style: gpus\n" + (f"  type: {gpu_type}\n" if gpu_type else "")
    return site_file(tmp_path, replace=("gpu_request:\n  style: gpus-per-node\n", style))


def test_style_gpus_renders_slurms_typed_total(tmp_path):
    assert "#SBATCH --gpus=h200:4" in header(script(gpus_site(tmp_path)), "#SBATCH")
    # --gpus counts the job's GPUs, which SLURM may spread unevenly: a job of several nodes asks per node
    two_nodes = header(script(gpus_site(tmp_path), nodes=2, launcher="srun", gpus_per_node=2), "#SBATCH")
    assert "#SBATCH --gpus-per-node=h200:2" in two_nodes and not [line for line in two_nodes if "--gpus=" in line]


def test_style_gpus_without_a_type(tmp_path):
    assert "#SBATCH --gpus=4" in header(script(gpus_site(tmp_path, None)), "#SBATCH")


@pytest.mark.parametrize("bad", ["h200;rm", "a b", "h200:2", "-x"])
def test_a_gpu_type_that_is_not_a_safe_token_is_refused(bad):
    with pytest.raises(ValidationError) as error:
        SLURMGPUCluster.parse_keywords({"gpu_type": bad, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB"})
    assert error.value.field == "gpu_type"


def test_kestrel_asks_for_gpus_as_its_centre_documents():
    lines = header(script("kestrel", account="abc123"), "#SBATCH")
    assert "#SBATCH --gpus=4" in lines and not [line for line in lines if "--gres" in line]


@pytest.mark.slurm
@pytest.mark.parametrize(
    "keywords", [{"gpu_request": "gpus"}, {"gpu_request": "gpus-per-node"}, {"gpu_request": "gres"}]
)
def test_typed_requests_are_accepted_by_sbatch_and_a_wrong_type_is_not(slurm, tmp_path, keywords):
    def test_only(gpu_type):
        text = job_script_for(
            "slurm",
            {**keywords, "gpu_type": gpu_type, "gpus_per_node": 2, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB"},
            name="w",
            scheduler="tcp://127.0.0.1:8786",
            tls=False,
        )
        path = tmp_path / f"{gpu_type}.sh"
        path.write_text(text)
        return slurm.run("sbatch", "--test-only", str(path))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        good, bad = test_only(slurm.gpu_type), test_only("v100")
    assert good.returncode == 0, good.stderr
    assert bad.returncode != 0
    assert not slurm.squeue_ids()


# -- 4. the cluster a site's jobs go to (wICE: -M wice) --------------------------------------------


def clusters_site(tmp_path: Path, name: str = "wice") -> Path:
    return site_file(tmp_path, add=f"clusters: {name}\n")


def test_the_sites_cluster_is_in_sbatchs_header(tmp_path):
    assert "#SBATCH --clusters=wice" in header(script(clusters_site(tmp_path)), "#SBATCH")


def test_wice_names_its_cluster_once():
    lines = header(script("wice", account="lp_myproject"), "#SBATCH")
    assert lines.count("#SBATCH --clusters=wice") == 1


def test_clusters_is_refused_where_the_batch_system_has_none(tmp_path):
    pbs = MINIMAL.replace("scheduler: slurm", "scheduler: pbs").replace("style: gpus-per-node", "style: select")
    pbs = pbs.replace("name: srun", "name: mpiexec-pals")
    with pytest.raises(SiteConfigError) as error:
        load_site(str(site_file(tmp_path, pbs, add="clusters: wice\n")))
    assert error.value.key == "clusters"


FAKE_SLURM = """\
#!/bin/sh
# {name}: a SLURM of two clusters, like KU Leuven's: only -M/--clusters=wice reaches the job
echo "{name} $*" >> {log}
case "$*" in *--clusters=wice*|*"-M wice"*) wice=1;; *) wice=;; esac
case {name} in
  sbatch) [ -n "$wice" ] || grep -q '^#SBATCH --clusters=wice' "$1" || {{ echo "sbatch: no cluster" >&2; exit 1; }}
          echo "Submitted batch job 4242 on cluster wice";;
  squeue) if [ -n "$wice" ] && [ ! -e {root}/cancelled ]; then echo "CLUSTER: wice"; echo "4242|PENDING|Resources|"
          elif [ -n "$wice" ]; then echo "CLUSTER: wice"; fi;;
  scancel) [ -n "$wice" ] && touch {root}/cancelled || {{ echo "scancel: error: Invalid job id 4242" >&2; exit 1; }};;
  *) exit 1;;
esac
"""


def fake_slurm(root: Path) -> Path:
    folder = root / "bin"
    folder.mkdir()
    for name in ("sbatch", "squeue", "scancel", "scontrol", "sacct"):
        path = folder / name
        path.write_text(FAKE_SLURM.format(name=name, log=root / "calls.log", root=root))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def test_squeue_and_scancel_name_the_sites_cluster(tmp_path, monkeypatch):
    folder = fake_slurm(tmp_path)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    clusters_site(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SLURMGPUCluster(site="minimal", protocol="tcp", python="python3") as cluster:
            cluster.scale(jobs=1)
            wait_until(lambda: [row for row in cluster.jobs if row.state == "PENDING"], timeout=30)
            (row,) = list(cluster.jobs)
            assert row.job_id == "4242" and row.reason == "Resources"
            cluster.scale(jobs=0)
            wait_until(lambda: (tmp_path / "cancelled").exists(), timeout=30)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert any(call.startswith("squeue") and "--clusters=wice" in call for call in calls)
    assert any(call.startswith("scancel") and "--clusters=wice" in call for call in calls)


def test_squeue_cluster_header_lines_are_not_jobs():
    statuses = SLURMGPUCluster.batch_system.interpret_statuses(["7", "8"], 0, "CLUSTER: wice\n7|RUNNING|None|n1\n", "")
    assert statuses["7"].state == "RUNNING" and statuses["8"].state != "RUNNING"


# -- 5. per-queue extra directives and resource types ------------------------------------------------


def test_a_queues_extra_directives_go_to_its_jobs_only(tmp_path):
    path = site_file(tmp_path, replace=("    max_nodes: 1\n", "    max_nodes: 1\n    extra: [--reservation=dbg]\n"))
    assert "#SBATCH --reservation=dbg" in header(script(path, queue="debug"), "#SBATCH")
    assert "#SBATCH --reservation=dbg" not in header(script(path, queue="gpu"), "#SBATCH")


def test_a_queues_resource_type_replaces_the_sites():
    assert "#$ -l node_h=1" in header(script("tsubame4", queue="node_h", account="tga-lab"), "#$")
    assert "#$ -l node_f=1" in header(script("tsubame4", account="tga-lab"), "#$")
