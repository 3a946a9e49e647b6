"""The sites package (issue 19): small modules, each saying what it holds, in an order without cycles,
and every name that ``gpujobqueue.sites`` and ``gpujobqueue.queue_routing`` (now ``sites.routing``) gave before
still there."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gpujobqueue" / "sites"
MAX_LINES = 450

# The public names of gpujobqueue/sites.py and gpujobqueue/queue_routing.py before they became a package.
SITES_NAMES = (
    "SCHEMA_FILE",
    "SYSTEM_SITE_DIR",
    "USER_SITE_DIR",
    "SITE_PATH_VARIABLE",
    "SiteConfigError",
    "QueueRefusedError",
    "RetiredSiteWarning",
    "warn_if_retired",
    "sources_text",
    "pattern_problem",
    "pattern_matches",
    "read_site_file",
    "FACT_GROUPS",
    "unconfirmed_keys",
    "fact_groups",
    "unsourced_groups",
    "Site",
    "site_directories",
    "site_files",
    "load_site",
    "detect_site",
    "DETECTED",
    "choose_site",
    "site_table",
    "site_settings",
    "node_memory_bytes",
    "check_request",
    "route_queue",
    "UnconfirmedSiteFactsWarning",
    "unconfirmed_facts",
    "unconfirmed_warning",
    "warn_unconfirmed",
)
ROUTING_NAMES = (
    "WalltimeBin",
    "Refusal",
    "parse_node_range",
    "walltime_bins",
    "bin_of",
    "has_gpus",
    "routable",
    "routing_order",
    "nodes_text",
    "refusal",
    "fit_text",
    "queues_taking",
    "bin_problems",
)


def _modules() -> dict[str, ast.Module]:
    assert PACKAGE.is_dir(), "gpujobqueue/sites is a package"
    return {path.stem: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.glob("*.py"))}


def _package_imports(tree: ast.Module) -> set[str]:
    """The package's modules a module imports anywhere (at the top, in functions, under TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpujobqueue.sites."):
            found.add(node.module.split(".")[2])
    return found


def test_each_module_is_small_and_says_what_it_holds():
    modules = _modules()
    assert len(modules) > 5
    for name, tree in modules.items():
        lines = (PACKAGE / f"{name}.py").read_text().count("\n")
        assert lines <= MAX_LINES, f"sites/{name}.py has {lines} lines"
        assert ast.get_docstring(tree), f"sites/{name}.py has no docstring saying what it holds"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 70:
                assert ast.get_docstring(node), f"sites/{name}.py: {node.name} is over 70 lines without a docstring"


def test_the_modules_import_each_other_without_a_cycle():
    modules = _modules()
    graph = {name: _package_imports(tree) - {"__init__"} for name, tree in modules.items() if name != "__init__"}
    assert all(target in graph for targets in graph.values() for target in targets), graph
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join(path + (name,))}"
        if name not in done:
            for target in sorted(graph[name]):
                visit(target, path + (name,))
            done.add(name)

    for name in graph:
        visit(name, ())
    # The order the issue asks for: loading below finding and settings, admission above loading.
    assert "registry" not in graph["load"] and "admission" not in graph["load"]
    assert "load" in graph["registry"] and "admission" not in graph["registry"]


@pytest.mark.parametrize(
    ("module", "names"), [("gpujobqueue.sites", SITES_NAMES), ("gpujobqueue.sites.routing", ROUTING_NAMES)]
)
def test_the_old_import_paths_still_give_every_name(module, names):
    imported = importlib.import_module(module)
    assert [name for name in names if not hasattr(imported, name)] == []
    from gpujobqueue.sites import routing

    if module == "gpujobqueue.sites.routing":
        assert all(getattr(imported, name) is getattr(routing, name) for name in names)
