"""Site configs: the schema refuses broken files by file, key and line; lookup, overrides,
detection, and the request checked against the site before anything is submitted."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from site_samples import SHIPPED, site_job_script

import gpujobqueue.sites as sites_module
from gpujobqueue import GPUCluster, PBSGPUCluster, SLURMGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import SiteConfigError, UnconfirmedSiteFactsWarning, detect_site, load_site, site_files

SITES = Path(__file__).parents[1] / "sites"
BROKEN = sorted((SITES / "broken").glob("*.yaml"))
MINIMAL = SITES / "good" / "minimal.yaml"


def gpujobqueue(*args):
    return subprocess.run([sys.executable, "-m", "gpujobqueue.cli", *args], capture_output=True, text=True, timeout=120)


def test_there_are_at_least_fifteen_broken_files():
    assert len(BROKEN) >= 15


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_check_names_the_file_key_and_line_of_a_broken_site(path):
    key, line, words = re.search(r"^# expect: (\S+) @ (\d+) : (.+)$", path.read_text(), re.M).groups()
    result = gpujobqueue("check", str(path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{path}:{line}: {key}: " in result.stderr, result.stderr
    assert words in result.stderr, result.stderr


def test_check_accepts_a_good_file():
    result = gpujobqueue("check", str(MINIMAL))
    assert result.returncode == 0 and f"ok: {MINIMAL}" in result.stdout, result.stderr


@pytest.fixture
def site_path(tmp_path, monkeypatch):
    """An empty GPUJOBQUEUE_SITE_PATH folder and an empty user folder (HOME moved to tmp_path)."""
    folder = tmp_path / "sites"
    folder.mkdir()
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return folder


def test_a_site_on_the_site_path_is_found(site_path):
    shutil.copy(MINIMAL, site_path / "minimal.yaml")
    assert "minimal" in site_files()
    site = load_site("minimal")
    assert site.data["node"]["gpus"] == 4 and site.files == [str(site_path / "minimal.yaml")]


def test_overrides_merge_in_precedence_order(site_path, tmp_path, monkeypatch):
    base, override = tmp_path / "base", tmp_path / "override"
    base.mkdir(), override.mkdir()
    shutil.copy(MINIMAL, base / "minimal.yaml")
    (override / "minimal.yaml").write_text(
        "# an admin's local change\nqueues:\n  debug:\n    max_walltime: '01:00:00'\nnode:\n  gpus: 8\n"
    )
    # (the site path's folders come last in the lookup, after the package, /etc and the user's folder)
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", f"{base}:{override}")
    site = load_site("minimal")
    assert site.files == [str(base / "minimal.yaml"), str(override / "minimal.yaml")]
    assert site.data["node"]["gpus"] == 8 and site.data["node"]["cpus"] == 8  # field by field
    assert site.data["queues"]["debug"] == {"max_walltime": "01:00:00", "max_nodes": 1}
    assert site.where("node", "gpus") == f"{override / 'minimal.yaml'}:6"
    assert site.where("node", "cpus") == f"{base / 'minimal.yaml'}:14"
    shown = gpujobqueue("show", "minimal")
    assert f"# file 2: {override / 'minimal.yaml'}\n" in shown.stdout  # each file named once, values point at them
    assert re.search(r"gpus: 8 .*# file 2, line 6$", shown.stdout, re.M), shown.stdout


def test_a_broken_override_is_refused_with_its_own_file_and_line(site_path, tmp_path, monkeypatch):
    base, override = tmp_path / "base", tmp_path / "override"
    base.mkdir(), override.mkdir()
    shutil.copy(MINIMAL, base / "minimal.yaml")
    (override / "minimal.yaml").write_text("node:\n  gpus: lots\n")
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", f"{base}:{override}")
    with pytest.raises(SiteConfigError) as info:
        load_site("minimal")
    assert (info.value.path, info.value.key, info.value.line) == (str(override / "minimal.yaml"), "node.gpus", 2)


@pytest.fixture
def minimal(site_path):
    shutil.copy(MINIMAL, site_path / "minimal.yaml")
    return site_path / "minimal.yaml"


@pytest.mark.parametrize(
    "keywords, key, line, words",
    [
        ({"gpus_per_node": 8}, "node.gpus", 12, "gpu jobs get at most 4 GPUs per node"),
        (
            {"queue": "debug", "walltime": "01:00:00"},
            "queues.debug.max_walltime",
            23,
            "over the debug queue's limit of 00:30:00",
        ),
        ({"queue": "premium"}, "queues", 18, "has no queue 'premium'"),
        ({"cores": 16, "cpus_per_gpu": None}, "node.cpus", 14, "gpu nodes have 8"),
    ],
)
def test_a_request_the_site_cannot_run_is_refused_naming_file_and_key(minimal, keywords, key, line, words):
    with pytest.raises(SiteConfigError) as info:
        SLURMGPUCluster.parse_keywords({"site": "minimal", **keywords})
    assert (info.value.path, info.value.key, info.value.line) == (str(minimal), key, line), str(info.value)
    assert words in str(info.value)


def test_account_rules_name_the_site_file(site_path):
    text = MINIMAL.read_text() + "account:\n  required: true\n  pattern: '[a-z][0-9]+_g'\n  hint: use the _g account\n"
    (site_path / "minimal.yaml").write_text(text)
    with pytest.raises(SiteConfigError, match=r"minimal.yaml:\d+: account.required: .*use the _g account"):
        SLURMGPUCluster.parse_keywords({"site": "minimal"})
    with pytest.raises(SiteConfigError, match=r"account.pattern: .*'m1234' does not match"):
        SLURMGPUCluster.parse_keywords({"site": "minimal", "account": "m1234"})
    plan = SLURMGPUCluster.parse_keywords({"site": "minimal", "account": "m1234_g"})
    request = plan.request
    assert request.account == "m1234_g"


def test_a_gpu_form_the_site_rejects_is_refused(site_path):
    text = MINIMAL.read_text().replace("  style: gpus-per-node\n", "  style: none\n  rejects: [gres, gpus-per-task]\n")
    (site_path / "minimal.yaml").write_text(text)
    with pytest.raises(SiteConfigError, match="gpu_request.rejects: .*refuses GPU requests of the 'gres' form"):
        SLURMGPUCluster.parse_keywords({"site": "minimal", "gpu_request": "gres"})


BIG_QUEUE = """\
  big:
    max_walltime: "04:00:00"
    extra: [--comment=big]
    gpu_request: {type: h100}
    node: {gpus: 8, cpus: 64, gpu_vendor: nvidia}
    worker: {mode: dask-cuda, cpus_per_gpu: 8}
"""


def test_a_queue_may_say_how_its_nodes_and_workers_differ(site_path):
    text = MINIMAL.read_text().replace("default_queue: gpu\n", BIG_QUEUE + "default_queue: gpu\n")
    path = site_path / "minimal.yaml"
    path.write_text(text)
    plan = SLURMGPUCluster.parse_keywords({"site": "minimal", "queue": "big"})
    request, launch = plan.request, plan.launch
    assert (request.gpus_per_node, request.cpus_per_node, launch.mode) == (8, 64, "dask-cuda")
    script = job_script_for("minimal", {"queue": "big"}, name="w")
    assert "#SBATCH --gpus-per-node=h100:8\n" in script and "#SBATCH --comment=big\n" in script
    plan = SLURMGPUCluster.parse_keywords({"site": "minimal"})  # the other queues keep the site's node
    request, launch = plan.request, plan.launch
    assert (request.gpus_per_node, launch.mode) == (4, "per-device")
    line = text.splitlines().index("    node: {gpus: 8, cpus: 64, gpu_vendor: nvidia}") + 1
    with pytest.raises(SiteConfigError) as info:
        SLURMGPUCluster.parse_keywords({"site": "minimal", "queue": "big", "gpus_per_node": 8, "cpus_per_gpu": 9})
    assert (info.value.key, info.value.line) == ("queues.big.node.cpus", line), str(info.value)


def test_the_annotated_template_is_a_valid_site_file():
    result = gpujobqueue("check", str(SITES.parent.parent / "site-configs" / "_template.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_site_values_fill_what_keywords_leave_and_keywords_win(minimal):
    plan = SLURMGPUCluster.parse_keywords({"site": "minimal", "queue": "debug", "walltime": "00:10:00"})
    request, launch = plan.request, plan.launch
    assert (request.queue, request.gpus_per_node, launch.mode) == ("debug", 4, "per-device")
    plan = SLURMGPUCluster.parse_keywords({"site": "minimal", "gpus_per_node": 2})
    request = plan.request
    assert (request.queue, request.gpus_per_node) == ("gpu", 2)
    text = job_script_for("minimal", {"walltime": "00:10:00"}, name="w")
    assert "#SBATCH --partition=gpu\n" in text and "#SBATCH --gpus-per-node=4\n" in text


def test_a_site_of_another_scheduler_is_refused_by_a_batch_class(minimal):
    with pytest.raises(ValidationError, match="minimal runs slurm, not pbs"):
        PBSGPUCluster.parse_keywords({"site": "minimal"})


def test_detection_matches_the_patterns_in_full(minimal):
    assert detect_site(["minimal-login07"]).name == "minimal"
    assert detect_site(["minimal-login07.example.org", "not-minimal-login1"]) is None


def test_gpucluster_without_site_or_batch_falls_back_to_local(site_path, monkeypatch):
    monkeypatch.setattr("gpujobqueue.sites.registry.socket.gethostname", lambda: "a-laptop")
    monkeypatch.setattr("gpujobqueue.sites.registry.socket.getfqdn", lambda: "a-laptop.example.org")
    assert detect_site() is None
    with GPUCluster(gpus_per_node=1, worker_mode="per-device", devices=[0]) as cluster:
        assert type(cluster).__name__ == "LocalGPUCluster"


def test_unknown_site_lists_the_known_ones(minimal):
    with pytest.raises(SiteConfigError, match="no site called 'nosuch'; known sites: .*minimal"):
        load_site("nosuch")


def test_the_user_folder_is_searched_before_the_site_path(site_path, tmp_path):
    user = tmp_path / "home" / ".config" / "gpujobqueue" / "sites"
    user.mkdir(parents=True)
    shutil.copy(MINIMAL, user / "minimal.yaml")
    (site_path / "minimal.yaml").write_text("node:\n  gpus: 2\n")
    site = load_site("minimal")
    assert site.files == [str(user / "minimal.yaml"), str(site_path / "minimal.yaml")]
    assert site.data["node"]["gpus"] == 2


def test_an_override_may_set_account_required(site_path, tmp_path, monkeypatch):
    base = tmp_path / "base"
    base.mkdir()
    shutil.copy(MINIMAL, base / "minimal.yaml")
    (site_path / "minimal.yaml").write_text("account:\n  required: true\n")
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", f"{base}:{site_path}")
    assert load_site("minimal").data["account"] == {"required": True}


def test_every_machine_the_issue_names_ships():
    wanted = {
        "perlmutter",
        "polaris",
        "aurora",
        "frontier",
        "summit",
        "derecho",
        "casper",
        "delta",
        "lonestar6",
        "vista",
        "juwels-booster",
        "alps",
        "lumi-g",
        "bridges2",
        "expanse",
        "abci3",
        "tsubame4",
        "generic-slurm",
        "generic-pbspro",
        "generic-lsf",
        "generic-sge",
        "dgx-slurm",
    }
    assert wanted <= set(SHIPPED), sorted(wanted - set(SHIPPED))


def test_the_sites_command_lists_at_least_thirty_real_machines(monkeypatch):
    """Issue 20: 30 real GPU machines or more, each a site of its own (not generic-*, not dgx-slurm)."""
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "sites"], capture_output=True, text=True, check=True
    )
    listed = {line.split()[0] for line in result.stdout.splitlines()[1:] if line.strip()}
    real = {name for name in listed if name in SHIPPED and load_site(name).data["status"] != "generic"}
    assert "dgx-slurm" not in real and not any(name.startswith("generic-") for name in real)
    assert len(real) >= 30, sorted(real)


ISSUE_33_MACHINES = {
    "anvil": "A100",
    "betzy": "A100",
    "gautschi": "H100",
    "mindwell": "B200",
    "olivia": "GH200",
    "roihu": "GH200",
}


@pytest.mark.parametrize("name", sorted(ISSUE_33_MACHINES))
def test_a_machine_issue_33_adds_ships_with_dated_sources_and_its_gpus(name, monkeypatch):
    """Issue 33, point 4: machines whose centres document enough ship; docs/site-research says what was read."""
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    assert name in SHIPPED
    site = load_site(name)
    assert site.data["status"] == "production" and site.data["node"]["gpu_model"] == ISSUE_33_MACHINES[name]
    assert all(source["version_date"] <= "2026-11-27" for source in site.data["sources"])
    notes = Path(__file__).parents[2] / "docs" / "site-research" / f"{name}.md"
    assert f"site-configs/{name}.yaml" in notes.read_text()


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_site_loads_and_renders_its_default_job(name, monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    site = load_site(name)
    assert site.files[0].endswith(f"{name}.yaml") and site.data["documentation"].startswith("https://")
    text = site_job_script(name)
    prefix = {"slurm": "#SBATCH", "pbs": "#PBS", "lsf": "#BSUB", "sge": "#$"}[site.scheduler]
    assert text.startswith("#!") and f"\n{prefix} " in text
    gpus = site.queue(site.data["default_queue"]).get("gpus_per_node", site.data["node"]["gpus"])
    assert f"{gpus} GPU worker(s)" in text


def _schema_keys(schema, definitions, prefix=""):
    """Every key path the site schema allows, queue entries as queues.NAME (and removed_queues.NAME)."""
    if "$ref" in schema:
        schema = definitions[schema["$ref"].rsplit("/", 1)[1]]
    for part in schema.get("allOf", []):
        yield from _schema_keys(part, definitions, prefix)
    for key, sub in schema.get("properties", {}).items():
        yield prefix + key
        yield from _schema_keys(sub, definitions, prefix + key + ".")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and prefix in ("queues.", "removed_queues."):
        yield from _schema_keys(extra, definitions, prefix + "NAME.")


def test_the_site_config_docs_explain_every_schema_key():

    from gpujobqueue.sites.schema import schemas

    schema, _ = schemas()  # site_schema.yaml with the keyword registry's properties, as sites are checked
    # A queue's node, worker and gpu_request take the keys of the site-level sections.
    keys = {
        key
        for key in _schema_keys(schema, schema["$defs"])
        if not re.match(r"queues\.NAME\.(node|worker|gpu_request)\.", key)
    }
    assert {"node.gpus", "queues.NAME.max_walltime", "queues.NAME.node", "network.ucx.nvlink"} <= keys
    docs = (Path(__file__).parents[2] / "docs" / "site-configs.md").read_text()
    documented = set(re.findall(r"^\| `([A-Za-z_.]+)` \|", docs, flags=re.M))
    assert keys - documented == set(), "keys the docs do not explain"
    assert documented - keys == set(), "keys the docs explain that the schema does not have"
    template = (Path(__file__).parents[2] / "site-configs" / "_template.yaml").read_text()
    top_level = {key for key in keys if "." not in key}
    assert {key for key in top_level if not re.search(rf"^#? ?{key}:", template, flags=re.M)} == set(), (
        "keys the template does not show"
    )


def test_a_site_with_unconfirmed_facts_warns_once_at_render_naming_them(monkeypatch):
    monkeypatch.setattr(sites_module.use_warnings, "_warned_unconfirmed", set())
    with pytest.warns(UnconfirmedSiteFactsWarning) as caught:
        job_script_for("generic-slurm", {}, name="w")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message == (
        "generic-slurm: 3 facts unconfirmed by the centre's documentation: every node value; "
        "the partition name gpu; node/gpu_request/account/default_queue/…; "
        "see gpujobqueue show generic-slurm"
    )
    with warnings.catch_warnings():  # once per site per process
        warnings.simplefilter("error")
        job_script_for("generic-slurm", {}, name="w")
    expected = (
        r"^perlmutter: 11 facts unconfirmed .*: queues; account; .* and \d+ more; "
        r"see gpujobqueue show perlmutter$"
    )
    with pytest.warns(UnconfirmedSiteFactsWarning, match=expected):
        job_script_for("perlmutter", {"account": "m1234_g"}, name="w")


def test_a_cluster_warns_at_start_about_its_sites_unconfirmed_facts(minimal, counted, monkeypatch):
    monkeypatch.setattr(sites_module.use_warnings, "_warned_unconfirmed", set())
    with warnings.catch_warnings():  # a site without unconfirmed facts: no warning
        warnings.simplefilter("error", UnconfirmedSiteFactsWarning)
        SLURMGPUCluster(site="minimal").close()
    minimal.write_text(minimal.read_text() + "unconfirmed:\n  - the partition name gpu (a guess)\n")
    expected = "^minimal: 1 fact unconfirmed by the centre's documentation: the partition name gpu; "
    with pytest.warns(UnconfirmedSiteFactsWarning, match=expected):
        cluster = SLURMGPUCluster(site="minimal")
    cluster.close()
    assert counted.count("sbatch") == 0


def test_the_cli_render_prints_one_warning_line_for_the_unconfirmed_facts():
    result = gpujobqueue("render", "generic-pbspro")
    assert result.returncode == 0 and result.stdout.startswith("#!")
    lines = [line for line in result.stderr.splitlines() if "unconfirmed" in line]
    assert lines == [
        "gpujobqueue: warning: generic-pbspro: 4 facts unconfirmed by the centre's documentation: "
        "node values; workq being the default queue; walltime and node limits of workq; "
        "node/gpu_request/account/directives/…; see gpujobqueue show generic-pbspro"
    ], result.stderr


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_site_leaves_the_ucx_transports_to_ucx(name):
    # dask-cuda 26.x: "Prefer automatic UCX transport selection for routine deployments; set individual UCX
    # transport flags only for transport-specific benchmarking" (docs.nvidia.com/dask-cuda/26.10/examples/ucx/).
    # No centre's documentation asks for given transports, so no shipped site forces them.
    site = load_site(name)
    assert "ucx" not in site.data.get("network", {}), f"{name} forces UCX transports"
    script = site_job_script(name)
    assert (
        "--enable-infiniband" not in script
        and "--enable-nvlink" not in script
        and "DASK_DISTRIBUTED_UCXX__" not in script
    )
