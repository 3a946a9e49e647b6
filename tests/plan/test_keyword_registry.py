"""One source per keyword (issue 30, point 6): the keyword registry (gpujobqueue/settings/keywords.py) is the
only place a keyword's facts are written. The dask config sections, the cluster classes' docstrings,
``render``'s options and the site schema's keyword properties are made from it: each test here fails
where one of them drifts from the registry, and a keyword added to the registry at run time is in all
four (and is taken by the plan) with no other edit."""

from __future__ import annotations

import copy
import re

import click
import dask.config
import pytest
import yaml

import gpujobqueue.settings.keywords as keywords_module
from gpujobqueue.batch import batch_systems, command_line_keywords
from gpujobqueue.batch import names as batch_names
from gpujobqueue.cli.main import render
from gpujobqueue.cli.render import keyword_options
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings import config, defaults
from gpujobqueue.settings.cluster_parameters import shared_parameters, with_shared_parameters
from gpujobqueue.settings.keywords import CLUSTER, INT, PROCESSES, Computed, Keyword, documented_keywords
from gpujobqueue.sites import schema as site_schema

_ENTRY = re.compile(r"^    (?! )(?P<names>[A-Za-z_*][A-Za-z0-9_*, ]*?)(?: : .*)?$")


def _entries(doc: str) -> dict[str, list[str]]:
    """A class docstring's Parameters entries: each name documented to the texts of its entries."""
    lines = doc.split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == "Parameters") + 2
    end = next((i for i in range(start, len(lines) - 1) if lines[i + 1].strip().startswith("---")), len(lines))
    entries: dict[str, list[str]] = {}
    current: list[str] = []
    for line in lines[start:end]:
        match = _ENTRY.match(line)
        if match:
            current = [line]
            for name in match["names"].split(","):
                entries.setdefault(name.strip(), []).append("")
            names = [name.strip() for name in match["names"].split(",")]
        elif current:
            for name in names:
                entries[name][-1] += " " + line.strip()
    return entries


def _keywords_of(system) -> tuple[Keyword, ...]:
    return (*system.setting_names(), PROCESSES, *CLUSTER)


@pytest.mark.parametrize("batch", batch_names())
def test_every_keyword_has_one_docstring_entry_with_its_default(batch):
    cluster = cluster_class(batch)
    entries = _entries(cluster.__doc__)
    own_docs = _entries(batch_systems()[batch].cluster_doc)
    for keyword in _keywords_of(cluster.batch_system):
        assert len(entries.get(keyword, [])) == 1, f"{batch}: {keyword} has {len(entries.get(keyword, []))} entries"
        text = " ".join(entries[keyword][0].split())
        if keyword in own_docs and keyword.doc.split()[0] not in text:  # the batch system's own words for it
            assert "default" in text.lower(), f"{batch}: {keyword}'s entry says no default"
        else:
            assert " ".join(keyword.default_doc.split()) in text, f"{batch}: {keyword}'s entry lacks its default"


@pytest.mark.parametrize("batch", batch_names())
def test_every_keyword_has_one_config_key_and_the_section_no_other(batch):
    system = batch_systems()[batch]
    section = dask.config.get(f"gpujobqueue.{batch}")
    expected = {keyword.replace("_", "-") for keyword in system.setting_names()} | {
        name.replace("_", "-") for name in config.CLUSTER_SETTINGS
    }
    assert set(section) == expected
    packaged = yaml.safe_load(defaults.DEFAULTS_FILE.read_text())["gpujobqueue"]
    assert batch not in packaged, "a batch system's section is generated, not written in gpujobqueue.yaml"


def test_every_keyword_with_an_option_has_exactly_one_and_those_without_say_why():
    params = {param.name: param for param in render.params if isinstance(param, click.Option)}
    for system in batch_systems().values():
        for keyword in (*system.setting_names(), PROCESSES):
            if keyword.command_line is not None:
                assert keyword not in params and len(keyword.command_line) > 20, keyword
                continue
            assert params[keyword].opts[0] == keyword.options[0].split("/")[0], keyword
    for keyword in command_line_keywords():  # a name two batch systems declare is the first's option
        if keyword.command_line is None:
            assert params[keyword].help == keyword.help, keyword


def _at(schema: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        schema = schema[key]
    return schema


def test_the_site_schemas_keyword_properties_are_the_keywords_and_no_others():
    full, _ = site_schema.schemas()
    declared = [keyword for system in batch_systems().values() for keyword in system.setting_names()]
    fragment = keywords_module.site_schema_fragment(declared)
    assert {path[-1] for path, _ in fragment} >= {"mode", "protocol", "nvlink", "prologue", "environment"}
    for path, value_schema in fragment:
        placed = _at(full, path)
        assert {k: v for k, v in placed.items() if k != "enum"} == {
            k: v for k, v in value_schema.items() if k != "enum"
        }
    worker_keys = {
        keyword.site_key.split(".")[1] for keyword in declared if (keyword.site_key or "").startswith("worker.")
    }
    assert set(full["$defs"]["worker_settings"]["properties"]) == worker_keys
    written = yaml.safe_load(site_schema.SCHEMA_FILE.read_text())
    assert "properties" not in written["$defs"]["worker_settings"], "worker settings are written in the YAML again"
    assert set(written["properties"]["network"]["properties"]) == {"ucx"}


@pytest.fixture
def dask_config_restored():
    saved_config, saved_defaults = copy.deepcopy(dask.config.config), copy.deepcopy(dask.config.defaults)
    yield
    dask.config.config.clear()
    dask.config.config.update(saved_config)
    dask.config.defaults[:] = saved_defaults


def test_one_keyword_line_adds_its_option_docstring_entry_config_key_and_schema_property(
    monkeypatch, dask_config_restored
):
    """The measure of point 6: adding a keyword is one line in the registry (a template line uses it)."""
    added = Keyword(
        "gpu_clock", INT, None, 1410, "GPU clock of the workers' devices, in MHz.", site_key="worker.gpu_clock"
    )
    monkeypatch.setattr(keywords_module, "LAUNCH", (*keywords_module.LAUNCH, added))
    system = batch_systems()["slurm"]

    entries = _entries(with_shared_parameters("A cluster.\n    ", shared_parameters()))
    assert entries["gpu_clock"] == [" GPU clock of the workers' devices, in MHz. Default ``1410``."]

    config.add_batch_sections({"slurm": system.setting_names()})
    assert "gpu-clock" in dask.config.get("gpujobqueue.slurm")

    command = keyword_options(click.command()(lambda **options: None))
    option = next(param for param in command.params if param.name == "gpu_clock")
    assert option.opts == ["--gpu-clock"] and option.help == "GPU clock of the workers' devices, in MHz."

    site_schema._schemas.cache_clear()
    try:
        properties = site_schema.schemas()[0]["$defs"]["worker_settings"]["properties"]
        assert properties["gpu_clock"]["type"] == "integer"
    finally:
        site_schema._schemas.cache_clear()

    # and the plan takes it, from the keyword or from dask config, as every keyword
    plan = make_plan(system, {"gpu_clock": 1200, "cores": 4, "memory": "8GB"})
    assert plan.settings["gpu_clock"] == 1200
    with dask.config.set({"gpujobqueue.slurm.gpu-clock": 900}):
        assert make_plan(system, {"cores": 4, "memory": "8GB"}).settings["gpu_clock"] == 900


@pytest.mark.parametrize("name, value, field", [("death_timeout", 61, "death_timeout"), ("nodes", 2, "nodes")])
def test_the_plans_default_is_the_keywords(monkeypatch, name, value, field):
    for group in ("REQUEST", "LAUNCH"):
        registry = getattr(keywords_module, group)
        monkeypatch.setattr(
            keywords_module, group, tuple(k.with_facts(default=value) if k == name else k for k in registry)
        )
    plan = make_plan(batch_systems()["slurm"], {"cores": 4, "memory": "8GB", "launcher": "srun"})
    got = plan.launch.death_timeout if field == "death_timeout" else plan.request.nodes
    assert got == value


_VALUES = ("x", "", " ", -1, 0, "1_0", "٤", 10**9, 4, "4", "01:00:00", "60GiB", True, None, [1], "a b", "a\nb")


@pytest.mark.parametrize(
    "system, keyword",
    [
        (system, keyword)
        for system in batch_systems().values()
        if system.name != "local"
        for keyword in system.setting_names()
        if keyword.parse is not None
    ],
    ids=str,
)
def test_a_keywords_parser_refuses_what_the_plan_refuses_with_the_same_words(system, keyword):
    base = {"cpus_per_gpu": 2, "memory_per_gpu": "4GB", "launcher": system.launcher_names()[0]}
    for value in _VALUES:
        if value is None:
            continue
        try:
            keyword.parse(keyword, keyword.taken(value))  # the declaration's reading: a number as text where declared
        except ValidationError as refused:
            with pytest.raises(ValidationError) as plan_refused:
                make_plan(system, {**base, keyword: value})
            field = plan_refused.value.field  # a list's item is named with its index: job_extra_directives[0]
            assert field.split("[")[0] == keyword and str(plan_refused.value) == str(refused), (keyword, value)


def test_computed_defaults_say_how_and_dask_jobqueue_keys_exist():
    import dask_jobqueue  # noqa: F401  (its config defaults are registered on import)

    for keyword in documented_keywords():
        if isinstance(keyword.default, Computed):
            assert len(keyword.default.how) > 10, keyword
    for system in batch_systems().values():
        if system.name in dask.config.get("jobqueue"):
            for keyword in (*system.keywords, *documented_keywords()):
                if keyword.jobqueue_key is not None:
                    assert any(keyword.jobqueue_key in section for section in dask.config.get("jobqueue").values()), (
                        keyword
                    )
