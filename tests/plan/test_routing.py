"""Queues chosen by the job (issue 20): node-count walltime bins, the queue a site picks when
none is named, and the refusal of a named queue that cannot take the job, naming one that can.

Each site's edges are written out by hand from its centre's tables (docs/site-research/), not
computed from the site file: the largest node count and walltime each queue or bin takes, and one past it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
from site_samples import SHIPPED

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import QueueRefusedError, SiteConfigError, load_site

SITES = Path(__file__).parents[1] / "sites"
ACCOUNT = "abc123"


def parse(site_name: str, **keywords):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts and the like
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, "account": ACCOUNT, **keywords})
        return plan.settings, plan.request, plan.launch


# (site, nodes, walltime) -> the queue the site chooses, or ("refused", field, words the error holds)
EDGES = [
    # Polaris: default debug (1-2 nodes, 1 h); prod 10-496 nodes in bins small 10-24 / 3 h, medium 25-99 / 6 h,
    # large 100-496 / 24 h; capacity 1-4 nodes, 168 h; debug-scaling, preemptable and demand never chosen.
    ("polaris", 2, "01:00:00", "debug"),
    ("polaris", 2, "01:01:00", "capacity"),
    ("polaris", 3, "01:00:00", "capacity"),
    ("polaris", 4, "7-00:00:00", "capacity"),
    ("polaris", 4, "7-00:01:00", ("refused", "walltime", "over the capacity queue's limit of 168:00:00")),
    ("polaris", 5, "01:00:00", ("refused", "queue", "name queue='debug-scaling'")),
    ("polaris", 9, "01:01:00", ("refused", "queue", "name queue='preemptable'")),
    ("polaris", 10, "03:00:00", "prod"),
    # preemptable (1-10 nodes, 72 h) is never chosen, but takes it: the error says to name it
    ("polaris", 10, "03:01:00", ("refused", "queue", "limit of 03:00:00 for jobs of 10-24 nodes (small)")),
    ("polaris", 11, "03:01:00", ("refused", "walltime", "limit of 03:00:00 for jobs of 10-24 nodes (small)")),
    ("polaris", 24, "03:00:00", "prod"),
    ("polaris", 24, "03:01:00", ("refused", "walltime", "limit of 03:00:00 for jobs of 10-24 nodes (small)")),
    ("polaris", 25, "06:00:00", "prod"),
    ("polaris", 99, "06:00:00", "prod"),
    ("polaris", 99, "06:01:00", ("refused", "walltime", "limit of 06:00:00 for jobs of 25-99 nodes (medium)")),
    ("polaris", 100, "24:00:00", "prod"),
    ("polaris", 496, "24:00:00", "prod"),
    ("polaris", 496, "24:01:00", ("refused", "walltime", "over the prod queue's limit of 24:00:00")),
    ("polaris", 497, "01:00:00", ("refused", "nodes", "the prod queue allows 496")),
    # Frontier: default batch, bins 1-91 / 2 h, 92-183 / 6 h, 184-1881, 1882-5644, 5645-9472 / 12 h;
    # extended up to 64 nodes, 24 h; the debug QOS never chosen.
    ("frontier", 91, "02:00:00", "batch"),
    ("frontier", 91, "02:01:00", ("refused", "walltime", "limit of 02:00:00 for jobs of 1-91 nodes (bin5)")),
    ("frontier", 64, "02:01:00", "extended"),
    ("frontier", 64, "24:00:00", "extended"),
    ("frontier", 64, "24:01:00", ("refused", "walltime", "over the extended queue's limit of 24:00:00")),
    ("frontier", 92, "06:00:00", "batch"),
    ("frontier", 183, "06:00:00", "batch"),
    ("frontier", 183, "06:01:00", ("refused", "walltime", "limit of 06:00:00 for jobs of 92-183 nodes (bin4)")),
    ("frontier", 184, "12:00:00", "batch"),
    ("frontier", 1881, "12:00:00", "batch"),
    ("frontier", 1882, "12:00:00", "batch"),
    ("frontier", 5644, "12:00:00", "batch"),
    ("frontier", 5645, "12:00:00", "batch"),
    ("frontier", 9472, "12:00:00", "batch"),
    ("frontier", 9472, "12:01:00", ("refused", "walltime", "over the batch queue's limit of 12:00:00")),
    ("frontier", 9473, "01:00:00", ("refused", "nodes", "the batch queue allows 9472")),
    # Aurora (user-guides 11dbfa65, 2026-06-29 or later; issue 33): default capacity, 1-16 nodes, 168 h; prod
    # 256-10,624 nodes, bins small 256-1024 / 12 h, medium 1025-1999 / 18 h, large 2000-10,624 / 24 h;
    # debug-scaling 2-256 / 1 h and next-eval 1-2112 / 24 h (PR 1277, 2026-08-28) never chosen; tiny removed.
    ("aurora", 1, "01:00:00", "capacity"),
    ("aurora", 16, "168:00:00", "capacity"),
    ("aurora", 16, "168:01:00", ("refused", "walltime", "over the capacity queue's limit of 168:00:00")),
    ("aurora", 17, "01:00:00", ("refused", "queue", "name queue='debug-scaling'")),
    ("aurora", 255, "01:00:00", ("refused", "queue", "name queue='debug-scaling'")),
    ("aurora", 256, "12:00:00", "prod"),
    ("aurora", 256, "12:01:00", ("refused", "queue", "limit of 12:00:00 for jobs of 256-1024 nodes (small)")),
    ("aurora", 1025, "18:00:00", "prod"),
    ("aurora", 1999, "18:01:00", ("refused", "queue", "limit of 18:00:00 for jobs of 1025-1999 nodes (medium)")),
    ("aurora", 2000, "24:00:00", "prod"),
    ("aurora", 10624, "24:00:00", "prod"),
    ("aurora", 10624, "24:01:00", ("refused", "walltime", "over the prod queue's limit of 24:00:00")),
    ("aurora", 10625, "01:00:00", ("refused", "nodes", "the prod queue allows 10624")),
    # Snellius (SURF, issue 44): default gpu_a100, 63 nodes; gpu_h100 (88 nodes) never chosen; the GPU queue 120 h.
    ("snellius", 63, "120:00:00", "gpu_a100"),
    ("snellius", 63, "120:01:00", ("refused", "walltime", "over the gpu_a100 queue's limit of 120:00:00")),
    ("snellius", 64, "01:00:00", ("refused", "queue", "name queue='gpu_h100'")),
    # JUPITER Booster (JSC, issue 44): booster, the machine's ~6000 nodes (25 groups of 240); 24 h unconfirmed.
    ("jupiter-booster", 6000, "24:00:00", "booster"),
    ("jupiter-booster", 6000, "24:01:00", ("refused", "walltime", "over the booster queue's limit of 24:00:00")),
    ("jupiter-booster", 6001, "01:00:00", ("refused", "nodes", "the booster queue allows 6000")),
    # Dardel (PDC, issue 44): gpu, its 62 GPU nodes, whole nodes for at most 24 hours.
    ("dardel", 62, "24:00:00", "gpu"),
    ("dardel", 62, "24:01:00", ("refused", "walltime", "over the gpu queue's limit of 24:00:00")),
    ("dardel", 63, "01:00:00", ("refused", "nodes", "the gpu queue allows 62")),
]


@pytest.mark.parametrize("site, nodes, walltime, expected", EDGES, ids=[f"{s}-{n}-{w}" for s, n, w, _ in EDGES])
def test_the_site_chooses_the_queue_that_takes_the_job_at_each_edge(site, nodes, walltime, expected):
    if isinstance(expected, str):
        _, request, _ = parse(site, nodes=nodes, walltime=walltime)
        assert request.queue == expected
        return
    _, field, words = expected
    with pytest.raises(QueueRefusedError) as info:
        parse(site, nodes=nodes, walltime=walltime)
    assert isinstance(info.value, ValidationError) and isinstance(info.value, SiteConfigError)
    assert info.value.field == field, str(info.value)
    assert words in str(info.value)
    assert info.value.path.endswith(f"{site}.yaml") and info.value.key.startswith("queues.")


def test_the_choice_is_logged_and_written_in_the_script(caplog):
    with caplog.at_level(logging.INFO, logger="gpujobqueue"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        script = job_script_for("polaris", {"nodes": 12, "walltime": "03:00:00", "account": ACCOUNT}, name="w")
    why = "queue prod: 12 nodes, 03:00:00 fit its 10-24 node bin (small, max 03:00:00)"
    assert "#PBS -q prod\n" in script and f"# The site chose the {why}.\n" in script
    assert f"site polaris chose {why}" in caplog.text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        script = job_script_for("frontier", {"nodes": 10, "walltime": "04:00:00", "account": ACCOUNT}, name="w")
    assert "#SBATCH --partition=extended\n" in script
    why = "queue extended: 10 nodes, 04:00:00 fit its limits (1-64 nodes, max 24:00:00)"
    assert f"# The site chose the {why}.\n" in script


def test_a_named_queue_gets_no_comment_and_the_default_queue_without_bins_none_either():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = job_script_for(
            "polaris", {"queue": "prod", "nodes": 12, "walltime": "03:00:00", "account": ACCOUNT}, name="w"
        )
        default = job_script_for("polaris", {"account": ACCOUNT}, name="w")
    assert "#PBS -q prod\n" in named and "site chose" not in named
    assert "#PBS -q debug\n" in default and "site chose" not in default


@pytest.mark.parametrize(
    "site, queue, nodes, walltime, taker",
    [
        ("polaris", "debug", 12, "03:00:00", "prod"),
        ("polaris", "prod", 4, "02:00:00", "capacity"),
        ("polaris", "prod", 12, "06:00:00", None),
        ("frontier", "batch", 10, "04:00:00", "extended"),
        ("frontier", "extended", 100, "06:00:00", "batch"),
        ("aurora", "prod", 100, "01:00:00", "debug-scaling"),  # prod from 256 nodes since 2026-02-17/18
    ],
)
def test_a_named_queue_that_cannot_take_the_job_names_the_one_that_can(site, queue, nodes, walltime, taker):
    with pytest.raises(QueueRefusedError) as info:
        parse(site, queue=queue, nodes=nodes, walltime=walltime)
    if taker is None:
        assert info.value.field == "walltime"
        assert f"no queue of {site} takes {nodes} nodes for {walltime}" in str(info.value)
        return
    assert info.value.field == "queue", str(info.value)
    assert f"queue {taker!r} takes it (queue={taker!r})" in str(info.value)
    _, request, _ = parse(site, queue=taker, nodes=nodes, walltime=walltime)  # and it does
    assert request.queue == taker


def test_a_named_queue_is_used_even_when_another_comes_first():
    _, request, _ = parse("polaris", queue="preemptable", nodes=4, walltime="72:00:00")
    assert request.queue == "preemptable" and request.queue_choice is None


MINIMAL = SITES / "good" / "minimal.yaml"
NO_GPU_QUEUE = """\
  cpu:
    gpus: false
    max_walltime: "2-00:00:00"
    max_nodes: 64
"""


def test_a_queue_without_gpus_is_never_chosen_and_refused_when_named(tmp_path, monkeypatch):
    text = MINIMAL.read_text().replace("default_queue: gpu\n", NO_GPU_QUEUE + "default_queue: gpu\n")
    (tmp_path / "minimal.yaml").write_text(text)
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    with pytest.raises(QueueRefusedError) as info:  # 8 nodes: only the CPU queue has that many
        parse("minimal", nodes=8)
    assert info.value.field == "nodes" and "cpu" not in str(info.value).split("(", 1)[1]
    with pytest.raises(QueueRefusedError) as info:
        parse("minimal", queue="cpu")
    assert info.value.key == "queues.cpu.gpus" and "no GPUs; queue 'gpu' takes it" in str(info.value)
    assert info.value.field == "queue"


def test_routing_false_and_debug_queues_are_left_out_unless_routing_true(tmp_path, monkeypatch):
    # minimal: gpu (default, 4 nodes, 24 h), debug (1 node, 30 min). A job over gpu's walltime:
    long_queue = "  long:\n    max_walltime: 2-00:00:00\n    max_nodes: 1\n    routing: false\n"
    text = MINIMAL.read_text().replace("default_queue: gpu\n", long_queue + "default_queue: gpu\n")
    (tmp_path / "minimal.yaml").write_text(text)
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    with pytest.raises(QueueRefusedError, match="name queue='long', which takes it"):
        parse("minimal", walltime="1-00:01:00")
    (tmp_path / "minimal.yaml").write_text(text.replace("routing: false", "routing: true"))
    assert parse("minimal", walltime="1-00:01:00")[1].queue == "long"
    # a debug queue is chosen only with routing: true (gpu's walltime is 24 h, so shorten it)
    shorter = MINIMAL.read_text().replace('max_walltime: "1-00:00:00"', 'max_walltime: "00:10:00"')
    (tmp_path / "minimal.yaml").write_text(shorter)
    with pytest.raises(QueueRefusedError, match="name queue='debug'"):
        parse("minimal", walltime="00:20:00")
    (tmp_path / "minimal.yaml").write_text(shorter.replace("max_nodes: 1\n", "max_nodes: 1\n    routing: true\n"))
    assert parse("minimal", walltime="00:20:00")[1].queue == "debug"


@pytest.mark.parametrize(
    "name, key, words",
    [
        ("overlapping-walltime-bins", "queues.gpu.walltime_by_nodes.1.nodes", "overlaps bin 0 (1-2)"),
        ("walltime-bin-past-max-nodes", "queues.gpu.walltime_by_nodes.1.nodes", "leaves the queue's own node range"),
    ],
)
def test_bins_that_overlap_or_leave_the_queue_are_refused_by_the_file_check(name, key, words):
    with pytest.raises(SiteConfigError) as info:
        load_site(SITES / "broken" / f"{name}.yaml")
    problems = getattr(info.value, "errors", [info.value])
    assert any(p.key == key and words in p.message for p in problems), [str(p) for p in problems]


@pytest.mark.parametrize(
    "bins, key, words",
    [
        ('[{nodes: 3-2, max_walltime: "01:00:00"}]', "queues.gpu.walltime_by_nodes.0.nodes", "1 <= N <= M"),
        (
            '[{nodes: 1-4, max_walltime: "2-00:00:00"}]',
            "queues.gpu.walltime_by_nodes.0.max_walltime",
            "over the queue's max_walltime",
        ),
        ('[{nodes: 1-4, max_walltime: "25:99"}]', "queues.gpu.walltime_by_nodes.0.max_walltime", ""),
        ('[{nodes: "1-4", max_walltime: "01:00:00", extra: 1}]', "queues.gpu.walltime_by_nodes.0.extra", "unknown key"),
    ],
)
def test_a_bin_that_does_not_parse_is_refused_naming_its_key(tmp_path, bins, key, words):
    path = tmp_path / "minimal.yaml"
    with_bins = f"    max_nodes: 4\n    walltime_by_nodes: {bins}\n"
    path.write_text(MINIMAL.read_text().replace("    max_nodes: 4\n", with_bins, 1))
    with pytest.raises(SiteConfigError) as info:
        load_site(path)
    problems = getattr(info.value, "errors", [info.value])
    assert any(p.key == key and words in p.message for p in problems), [str(p) for p in problems]


def test_a_job_in_a_gap_between_bins_is_refused(tmp_path, monkeypatch):
    bins = '[{nodes: 1, max_walltime: "02:00:00"}, {nodes: 3-4, max_walltime: "1-00:00:00"}]'
    text = MINIMAL.read_text().replace("    max_nodes: 4\n", f"    max_nodes: 4\n    walltime_by_nodes: {bins}\n", 1)
    (tmp_path / "minimal.yaml").write_text(text)
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    assert parse("minimal", nodes=1, walltime="02:00:00")[1].queue == "gpu"
    in_no_bin = r"2 nodes per job is in none of the gpu queue's node-count bins \(1, 3-4\)"
    with pytest.raises(QueueRefusedError, match=in_no_bin):
        parse("minimal", nodes=2)
    assert parse("minimal", nodes=4, walltime="1-00:00:00")[1].queue == "gpu"


# -- the routed scripts go to the PBS emulator, set up with Polaris' queues and their limits --


def polaris_server():
    """A PBS server with Polaris' queues, each with its node-count and walltime limits
    (``resources_min/max.nodect``, ``resources_max.walltime``), and Polaris' node."""
    from emulators import pbs as pbs_emulator

    site = load_site("polaris")
    node, queues = site.data["node"], {}
    for name, queue in site.data["queues"].items():
        queues[name] = {
            "resources_max": {"walltime": queue["max_walltime"], "nodect": queue["max_nodes"]},
            "resources_min": {"nodect": queue.get("min_nodes", 1)},
        }
    memory = node["memory"].lower().replace("ib", "")  # 503GiB -> 503gb: PBS sizes are binary
    return pbs_emulator.default_config(
        "pbspro", ncpus=node["cpus"], ngpus=node["gpus"], mem=memory, queues=queues, default_queue="debug"
    )


@pytest.mark.parametrize(
    "nodes, walltime, queue",
    [(2, "01:00:00", "debug"), (4, "7-00:00:00", "capacity"), (24, "03:00:00", "prod"), (496, "24:00:00", "prod")],
)
def test_the_routed_script_is_accepted_by_a_pbs_server_with_polaris_queues(nodes, walltime, queue):
    from emulators import pbs as pbs_emulator
    from emulators.common import Rejected

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        script = job_script_for("polaris", {"nodes": nodes, "walltime": walltime, "account": ACCOUNT}, name="w")
    server = polaris_server()
    parsed = pbs_emulator.parse_submission(script, (), server)
    assert parsed.queue == queue and parsed.nodect == nodes
    # the same job sent to the default queue, as it went before the site chose: the server refuses it
    if queue != "debug":
        with pytest.raises(Rejected, match="violates queue"):
            pbs_emulator.parse_submission(script.replace(f"#PBS -q {queue}\n", "#PBS -q debug\n"), (), server)


def test_a_routed_queue_is_resolved_once(monkeypatch):
    """Issue 41, point 3: the site queue is routed once, by the job's shape, and the keywords resolved once for it
    (they were resolved for the default queue first, then again for the queue routing chose)."""
    from gpujobqueue.plan import plan as plan_module

    calls = []
    resolve = plan_module.resolve_request
    monkeypatch.setattr(plan_module, "resolve_request", lambda *args: calls.append(args[2]) or resolve(*args))
    _settings, request, _launch = parse("polaris", nodes=10, walltime="03:00:00")
    assert request.queue == "prod"
    assert calls == ["prod"]


@pytest.mark.parametrize("site_name", SHIPPED)
def test_no_site_queue_sets_what_routing_reads(site_name):
    """The job's shape (nodes, walltime) is read before a queue is chosen: no shipped site's queue may set them, by a
    keyword or by a directive of its own."""
    from gpujobqueue.batch import batch_system
    from gpujobqueue.handwritten.directives import find
    from gpujobqueue.sites import site_settings

    site = load_site(site_name)
    system = batch_system(site.scheduler)
    for queue in site.data["queues"]:
        settings = site_settings(site, queue)
        assert settings.get("nodes") is None and settings.get("walltime") is None, queue
        assert find(system, settings.get("job_extra_directives") or []) == [], queue
