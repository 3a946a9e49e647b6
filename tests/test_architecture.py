"""The house rules that a test can hold: what a batch system knows lives in its ``BatchSystem``.

Each module of ``gpujobqueue/batch/`` (but ``base`` and the registry) declares one
:class:`~gpujobqueue.batch.base.BatchSystem`, registered through the entry-point group
``gpujobqueue.batch_systems``, and declares everything the rest of the package reads of it: nothing
outside ``gpujobqueue/batch/`` asks a batch system for an attribute with a default (``getattr(cls,
"launchers", ())``), and no code and no template names a batch system as a value (a string ``"slurm"``,
``"pbs"``, ``"lsf"``, ``"sge"``, ``"local"`` or another registered name; a template's ``batch ==``): such
code would branch on a name instead of asking the batch system. A word that is a batch system's name
and also a value of another vocabulary (the scheduler placement ``"local"``) is written once, as the
value of a module constant, and used through it.
"""

from __future__ import annotations

import ast
import configparser
import re
from collections import Counter
from pathlib import Path

import pytest

import gpujobqueue
from gpujobqueue.batch import batch_systems
from gpujobqueue.batch import names as batch_names
from gpujobqueue.batch.base import BatchSystem

ROOT = Path(__file__).resolve().parents[1]


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _module_constants(tree: ast.Module) -> dict[int, str]:
    """id of the string constant of each module-level ``NAME = "word"`` to ``NAME``."""
    return {
        id(node.value): node.targets[0].id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }


def batch_names_in_code(root: Path = ROOT, names: tuple[str, ...] | None = None) -> list[tuple[str, int, str]]:
    """(file, line, name) of each batch system's name written as a string value outside gpujobqueue/batch/.

    Docstrings are not values. A name written as the whole value of a module constant (``SCHEDULER_HERE =
    "local"``: another vocabulary's word) is not one either, where it is the only place that word is written
    and the constant's own name does not name a batch system.
    """
    names = batch_names() if names is None else names
    uses, homonyms = [], []
    for path in sorted((root / "gpujobqueue").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("gpujobqueue/batch/"):
            continue
        tree = ast.parse(path.read_text(), relative)
        docstrings, constants = _docstrings(tree), _module_constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings:
                constant = constants.get(id(node))
                named_batch = constant is not None and re.search(rf"BATCH|{'|'.join(names).upper()}", constant)
                (homonyms if constant and not named_batch else uses).append((relative, node.lineno, node.value))
    written = Counter(name for _, _, name in uses + homonyms)
    return sorted(uses + [use for use in homonyms if written[use[2]] > 1])


_JINJA_TAG = re.compile(r"\{[{%](.*?)[}%]\}", re.DOTALL)


def batch_branches_in_templates(root: Path = ROOT, names: tuple[str, ...] | None = None) -> list[tuple[str, int, str]]:
    """(file, line, tag) of each Jinja tag that compares ``batch`` or names a batch system."""
    names = batch_names() if names is None else names
    branch = re.compile(r"\bbatch\s*(?:==|!=|\bin\b|\bnot\s+in\b)|[\"'](?:" + "|".join(names) + r")[\"']")
    found = []
    for path in sorted((root / "templates").rglob("*.j2")):
        text = path.read_text()
        for match in _JINJA_TAG.finditer(text):
            if branch.search(match.group(1)):
                line = text.count("\n", 0, match.start()) + 1
                found.append((path.relative_to(root).as_posix(), line, match.group(0)))
    return found


def defaulted_batch_reads(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, call) of each ``getattr``/``hasattr`` of a BatchSystem attribute outside gpujobqueue/batch/:
    every such read is a typed attribute with its default in the base class, read as one."""
    declared = {name for name in dir(BatchSystem) if not name.startswith("__")} - {"name"}  # every object's word
    found = []
    for path in sorted((root / "gpujobqueue").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("gpujobqueue/batch/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), relative)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in declared
            ):
                found.append((relative, node.lineno, ast.unparse(node)))
    return found


def test_no_code_outside_the_batch_modules_names_a_batch_system():
    uses = batch_names_in_code()
    assert not uses, (
        "batch-system names used as values outside gpujobqueue/batch/; ask the batch system "
        "(gpujobqueue.batch.batch_system(name)) for what it knows instead:\n"
        + "\n".join(f"{path}:{line}: {name!r}" for path, line, name in uses)
    )


def test_no_template_branches_on_a_batch_system_name():
    found = batch_branches_in_templates()
    assert not found, "templates branching on a batch system's name; branch on a value its module gives:\n" + "\n".join(
        f"{path}:{line}: {tag}" for path, line, tag in found
    )


def test_no_module_asks_a_batch_system_for_an_attribute_with_a_default():
    found = defaulted_batch_reads()
    assert not found, "read BatchSystem attributes as declared, not through getattr/hasattr:\n" + "\n".join(
        f"{path}:{line}: {call}" for path, line, call in found
    )


def test_the_scans_find_what_they_forbid(tmp_path):
    """The scanners see the forms they forbid (so the tests above can fail), and the homonym rule holds
    a word written once as a constant, not twice, nor a constant named after a batch system."""
    (tmp_path / "gpujobqueue" / "batch").mkdir(parents=True)
    planted = (
        '"""Docstrings may say "slurm"."""\nPLACE = "local"\nSLURM_NAME = "slurm"\n'
        'if batch == "pbs":\n    x = getattr(job_cls, "runs_jobs_here", False)\n'
    )
    (tmp_path / "gpujobqueue" / "mod.py").write_text(planted)
    (tmp_path / "gpujobqueue" / "batch" / "pbs.py").write_text('name = "pbs"\nx = getattr(c, "launchers", ())\n')
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.sh.j2").write_text('echo slurm\n{% if batch == "sge" %}x{% endif %}\n')
    names = ("slurm", "pbs", "sge", "local")
    found = batch_names_in_code(tmp_path, names)
    assert found == [("gpujobqueue/mod.py", 3, "slurm"), ("gpujobqueue/mod.py", 4, "pbs")]
    (tmp_path / "gpujobqueue" / "other.py").write_text('if placement == "local":\n    pass\n')
    assert ("gpujobqueue/mod.py", 2, "local") in batch_names_in_code(tmp_path, names), "a homonym written twice"
    assert [(path, line) for path, line, _ in batch_branches_in_templates(tmp_path, names)] == [
        ("templates/t.sh.j2", 2)
    ]
    assert [(path, line) for path, line, _ in defaulted_batch_reads(tmp_path)] == [("gpujobqueue/mod.py", 5)]


def defaulted_job_reads(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, call) of each ``getattr`` with a default in gpujobqueue/runtime/ that reads a job: an
    attribute the job book's ``BookJob`` declares (or an entry's ``job``), or any attribute of an object named
    as a job (``job``, ``entry``, ``self.scheduler_job``). The book's jobs carry what it reads, set by their
    ``__init__``: such a read is a typed attribute, read as one."""
    from gpujobqueue.runtime.jobbook import BookJob

    declared = {name for name in [*vars(BookJob), *BookJob.__annotations__] if not name.startswith("_")} | {"job"}
    found = []
    for path in sorted((root / "gpujobqueue" / "runtime").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), relative)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"):
                continue
            if len(node.args) < 3:
                continue
            of_a_job = re.search(r"(?:job|entry)$", ast.unparse(node.args[0]))
            attribute = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
            if of_a_job or attribute in declared:
                found.append((relative, node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_runtime_module_reads_a_job_through_getattr_with_a_default():
    found = defaulted_job_reads()
    assert not found, "read a job's attributes as BookJob declares them, not through getattr:\n" + "\n".join(
        f"{path}:{line}: {call}" for path, line, call in found
    )


def test_the_job_read_scan_finds_a_planted_read(tmp_path):
    """The scan sees a job's declared attribute read with a default, and any read of an object named as a job;
    a getattr without a default, another object's attribute and a module outside runtime/ are left alone."""
    (tmp_path / "gpujobqueue" / "runtime").mkdir(parents=True)
    (tmp_path / "gpujobqueue" / "runtime" / "watch.py").write_text(
        'when = getattr(self.book.job(name), "submitted_at", None)\n'
        'hosted = getattr(entry, "pool", "gpu")\n'
        'held = getattr(self, "scheduler_job", None)\n'
        'job_id = getattr(job, "job_id")\n'
        'callback = getattr(self.adaptive, "periodic_callback", None)\n'
    )
    (tmp_path / "gpujobqueue" / "elsewhere.py").write_text('job_id = getattr(job, "job_id", None)\n')
    assert [(path, line) for path, line, _ in defaulted_job_reads(tmp_path)] == [
        ("gpujobqueue/runtime/watch.py", 1),
        ("gpujobqueue/runtime/watch.py", 2),
    ]


def _entry_points() -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    text = parser["options.entry_points"]["gpujobqueue.batch_systems"]
    return dict(line.replace(" ", "").split("=") for line in text.strip().splitlines())


def test_each_batch_module_declares_one_batch_system_registered_through_its_entry_point():
    """docs/contributing.md's recipe, held for gpujobqueue's own: each module of gpujobqueue/batch/ but the base
    and the registry declares one BatchSystem named after the module, and setup.cfg declares it in the group."""
    declared = _entry_points()
    modules = sorted(path.stem for path in (ROOT / "gpujobqueue" / "batch").glob("*.py") if path.stem != "__init__")
    modules.remove("base")
    assert sorted(declared) == modules, "one entry point per batch module"
    for name in modules:
        tree = ast.parse((ROOT / "gpujobqueue" / "batch" / f"{name}.py").read_text())
        classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        systems = [cls for cls in classes if issubclass(getattr(gpujobqueue.batch, name).__dict__[cls], BatchSystem)]
        assert len(systems) == 1, (name, systems)
        assert declared[name] == f"gpujobqueue.batch.{name}:{systems[0]}"
        assert batch_systems()[name].__name__ == systems[0], "the installed metadata agrees with setup.cfg"


@pytest.mark.parametrize("batch", batch_names())
def test_each_batch_system_declares_what_the_rest_of_the_package_reads(batch):
    """The recipe of docs/contributing.md ("Adding a batch system"), held for every registered batch system."""
    from gpujobqueue.batch import DEFAULT_BATCH
    from gpujobqueue.runtime.factory import cluster_class

    system = batch_systems()[batch]
    system.check_declaration()  # name, commands, styles, Keyword and Launcher objects, the native launcher
    assert system.name == batch and system.__module__ == f"gpujobqueue.batch.{batch}"
    cluster = cluster_class(batch)
    assert cluster.batch_system is system and cluster.job_cls.batch_system is system
    assert cluster.__name__ == f"{system.__name__}GPUCluster" and cluster.__doc__.startswith(system.cluster_doc[:40])
    assert (ROOT / "templates" / (system.template_name or f"{batch}.sh.j2")).is_file()
    if system.runs_jobs_here:
        assert batch == DEFAULT_BATCH and not system.launchers, (
            "the embedded batch system: one-node jobs on this machine"
        )
        assert not system.takes_sites
        return
    assert re.fullmatch(r"[A-Z][A-Z_]*", system.job_id_variable) and system.status_command
    assert system.walltime_directives and all(d.startswith(system.directive_prefix) for d in system.walltime_directives)
    assert set(system.site_settings(entry={}, gpu={}, directives={})) <= set(system.keywords)
    assert system.installed_version.__func__ is not BatchSystem.installed_version.__func__


def _import_time_graph() -> dict[str, set[str]]:
    """gpujobqueue's modules and the gpujobqueue modules each imports when it is imported (not inside functions,
    not under TYPE_CHECKING)."""
    root = Path(gpujobqueue.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = ["gpujobqueue", *path.relative_to(root).with_suffix("").parts]
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        pending = list(ast.parse(path.read_text()).body)
        while pending:
            node = pending.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                pending += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
                pending += [statement for handler in getattr(node, "handlers", []) for statement in handler.body]
            elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("gpujobqueue")):
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
                base = f"{base}.{node.module}" if node.level and node.module else base or node.module
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    graph[name].add(target if target in modules else base)
            elif isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names if alias.name in modules}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target] if target in path else [node, target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_module_imports_one_that_imports_it_back_at_import_time():
    graph = _import_time_graph()
    assert "gpujobqueue.plan" in graph["gpujobqueue.runtime.cluster"]  # the graph sees relative imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
    assert (
        _cycle({**graph, "gpujobqueue.errors": graph["gpujobqueue.errors"] | {"gpujobqueue.runtime.cluster"}})
        is not None
    )


def _static_graph() -> dict[str, set[str]]:
    """gpujobqueue's modules and the gpujobqueue modules each imports anywhere in its text, inside functions too.

    ``from .pkg import name`` leads to ``pkg.name`` where that is a module, else to the module that ``pkg``'s
    ``__init__`` re-exports ``name`` from, else to ``pkg`` itself. A package's ``__init__`` has edges to the
    submodules it re-exports (importing the package runs them); a submodule's implicit import of its parent package is
    not an edge.
    """
    root = Path(gpujobqueue.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = ["gpujobqueue", *path.relative_to(root).with_suffix("").parts]
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items()}

    def imported(name: str) -> list[tuple[str, str | None]]:
        """(module, name imported from it or None) of each intra-package import of module ``name``."""
        package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
        found = []
        for node in ast.walk(trees[name]):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("gpujobqueue.")):
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
                base = ".".join(filter(None, [base, node.module]))
                found += [(base, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(alias.name, None) for alias in node.names if alias.name in modules]
        return found

    reexported = {
        name: {alias: source for source, alias in imported(name) if source in modules}
        for name, path in modules.items()
        if path.name == "__init__.py"
    }
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for source, alias in imported(name):
            target = (
                f"{source}.{alias}" if f"{source}.{alias}" in modules else reexported.get(source, {}).get(alias, source)
            )
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def test_no_import_cycle_even_counting_imports_inside_functions():
    graph = _static_graph()
    assert "gpujobqueue.routing" not in graph and "gpujobqueue.sites.routing" in graph["gpujobqueue.sites.admission"]
    cycle = _cycle(graph)
    assert cycle is None, "an import cycle (counting imports inside functions): " + " -> ".join(cycle)
    planted = {**graph, "gpujobqueue.errors": graph["gpujobqueue.errors"] | {"gpujobqueue.runtime.job"}}
    assert _cycle(planted) is not None  # the search sees a cycle through a module every other one imports


MAX_FUNCTION_LINES = 70


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines but for its docstring's (a docstring says what it does; it is not what it does)."""
    body = node.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1
    return node.end_lineno - node.lineno + 1 - ((body[1].lineno - body[0].lineno) if has_doc else 0)


def long_functions(root: Path) -> list[str]:
    """``file:line name (lines)`` of each function of the package over :data:`MAX_FUNCTION_LINES`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and function_lines(node) > MAX_FUNCTION_LINES:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({function_lines(node)})")
    return found


def test_no_function_is_over_seventy_lines(tmp_path):
    assert long_functions(ROOT / "gpujobqueue") == []
    body = "\n".join(f"    x{i} = {i}" for i in range(70))
    (tmp_path / "long.py").write_text(f'def f():\n    """Says what it does."""\n{body}\n')
    assert long_functions(tmp_path) == ["long.py:1 f (71)"]


MAX_MODULE_LINES = 450


def test_no_module_is_over_450_lines():
    long = {
        str(path.relative_to(ROOT)): count
        for path in sorted((ROOT / "gpujobqueue").rglob("*.py"))
        if (count := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by what their parts are): {long}"


# A private name that another class's code may read, with why. Keep it short: give the class a public method instead.
PRIVATE_READS_ALLOWED = {
    "_repr_html_": "IPython's display protocol: an object shown in a notebook defines it, its container calls it",
}
_READERS = ("getattr", "hasattr", "setattr", "delattr")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _names_of_own_classes(tree: ast.AST) -> set[str]:
    """The attribute names a module's classes define: their methods and class attributes, and what
    their methods assign to ``self`` or ``cls``."""
    names = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for statement in cls.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(statement.name)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names |= {target.id for target in targets if isinstance(target, ast.Name)}
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return names


def _is_own_object(node: ast.AST) -> bool:
    """``self``, ``cls`` or ``super()``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "super"
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _private_accesses(tree: ast.AST) -> list[tuple[int, str, str, bool]]:
    """(line, object, name, stored) of each ``x._name`` and ``getattr(x, "_name")`` where x is not
    ``self``, ``cls`` or ``super()`` (dunders aside)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner, name, stored = node.value, node.attr, isinstance(node.ctx, ast.Store)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _READERS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
        ):
            owner, name, stored = node.args[0], node.args[1].value, node.func.id == "setattr"
        else:
            continue
        if not _is_own_object(owner):
            found.append((node.lineno, ast.unparse(owner), name, stored))
    return found


def private_reads_of_other_classes(root: Path = ROOT) -> list[str]:
    """``file:line: object._name`` of each private attribute a module reads (or writes) on an object
    that is not its own: not ``self``/``cls``, and a name its own classes do not define. A name a
    module attaches to another's object itself (a preload's task kept on the server) is its own,
    unless a class of the package defines that name."""
    trees = {
        path.relative_to(root).as_posix(): ast.parse(path.read_text())
        for path in sorted((root / "gpujobqueue").rglob("*.py"))
    }
    defined = {path: _names_of_own_classes(tree) for path, tree in trees.items()}
    found = []
    for path, tree in trees.items():
        accesses = _private_accesses(tree)
        others = set().union(*(names for other, names in defined.items() if other != path))
        own = defined[path] | {name for _, _, name, stored in accesses if stored and name not in others}
        found += [
            f"{path}:{line}: {owner}.{name}"
            for line, owner, name, _ in accesses
            if name not in own and name not in PRIVATE_READS_ALLOWED
        ]
    return found


def test_no_module_reads_another_class_private_attributes():
    found = private_reads_of_other_classes()
    assert not found, (
        "private attributes read on another class's objects; give that class a public method or property "
        "(or pass what is needed explicitly):\n" + "\n".join(found)
    )
    used = {
        name
        for path in (ROOT / "gpujobqueue").rglob("*.py")
        for _, _, name, _ in _private_accesses(ast.parse(path.read_text()))
    }
    assert set(PRIVATE_READS_ALLOWED) <= used, (
        f"allowed names no module reads (remove them): {set(PRIVATE_READS_ALLOWED) - used}"
    )


def test_the_private_read_scan_finds_a_planted_read(tmp_path):
    """The scan sees the forms it forbids, and leaves a module's own private names alone."""
    (tmp_path / "gpujobqueue").mkdir()
    (tmp_path / "gpujobqueue" / "owner.py").write_text(
        "class Cluster:\n    def __init__(self):\n        self._book = {}\n        self._spare = 1\n"
    )
    (tmp_path / "gpujobqueue" / "reader.py").write_text(
        "class Watch:\n"
        "    def __init__(self, cluster):\n"
        "        self._seen = set()\n"
        "        self.cluster = cluster\n"
        "    def look(self, other):\n"
        "        other._seen.add(self._seen)\n"  # its own class's name, on another instance: allowed
        "        server._preload_task = 1\n"  # a name it attaches itself: allowed
        "        _local = super()._start()\n"  # its inherited hook: allowed
        "        print(server._preload_task, self.__dict__, other._repr_html_(), _local)\n"
        "        self.cluster._spare = owner._helper()\n"  # another class's name set; a module's private function
        "        return self.cluster._book, getattr(self.cluster, '_spare', None)\n"
    )
    assert private_reads_of_other_classes(tmp_path) == [
        "gpujobqueue/reader.py:10: self.cluster._spare",
        "gpujobqueue/reader.py:10: owner._helper",
        "gpujobqueue/reader.py:11: self.cluster._book",
        "gpujobqueue/reader.py:11: self.cluster._spare",
    ]


def test_rendering_a_script_imports_neither_distributed_nor_dask_jobqueue():
    # `gpujobqueue render` and the CLI's other commands that start nothing: before, the batch registry's LSF
    # module imported dask-jobqueue (and distributed with it) and the plan imported distributed's
    # deploy classes, about 0.3 s of CPU in every such command. (An LSF script's memory is written by
    # dask-jobqueue's own lsf_format_bytes_ceil, which imports them.)
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from gpujobqueue.cli import main\n"
        "for batch in ('slurm', 'pbs', 'sge'):\n"
        "    result = CliRunner().invoke(main, ['render', batch, '--gpus-per-node', '2', '--cores', '8', "
        "'--memory', '16GB'])\n"
        "    assert result.exit_code == 0, result.output\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('distributed', 'dask_jobqueue'))}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


# --- Issue 41: each keyword is parsed by its declaration alone


def _declared_parsers() -> set[str]:
    from gpujobqueue.settings.keywords import documented_keywords

    declared = [
        *documented_keywords(),
        *(keyword for system in batch_systems().values() for keyword in system.keywords),
    ]
    return {str(keyword) for keyword in declared if keyword.parse is not None}


def _batch_keywords() -> set[str]:
    """Every batch system's own keywords, with a parser or without: in gpujobqueue/batch none is parsed by hand."""
    return {str(keyword) for system in batch_systems().values() for keyword in system.keywords}


_PARSERS = re.compile(r"parse_(?!keyword\b)\w+|matching|one_line")
_DECLARING = {"declaration.py", "keywords.py", "validation.py"}
# scale()'s own arguments, dask-jobqueue's scale(cores=, memory=): other values than the keywords of those names
_SAME_NAME_OTHER_VALUE = {("gpujobqueue/runtime/scaling.py", "memory"), ("gpujobqueue/runtime/scaling.py", "cores")}


def keywords_parsed_outside_their_declarations(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, keyword) of each call of a validation parser on a declared keyword's own name (with its own
    bounds) outside the declarations: the declaration's parser, through ``parse_keyword`` (or a batch system's
    keyword's ``parse``), is the one reading. In gpujobqueue/batch, where the
    batch systems declare their own keywords, a keyword declared without a parser counts too: its parser belongs in
    its declaration."""
    parsed, in_batch, found = _declared_parsers(), _declared_parsers() | _batch_keywords(), []
    for path in sorted((root / "gpujobqueue").rglob("*.py")):
        if path.name in _DECLARING:
            continue
        declared = in_batch if path.parent == root / "gpujobqueue" / "batch" else parsed
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            where = (str(path.relative_to(root)), node.args[0].value)
            if _PARSERS.fullmatch(called) and where[1] in declared and where not in _SAME_NAME_OTHER_VALUE:
                found.append((where[0], node.lineno, where[1]))
    return found


def test_a_keyword_is_parsed_by_its_declaration_alone():
    assert keywords_parsed_outside_their_declarations() == []


def test_a_keyword_parsed_again_by_hand_is_found(tmp_path):
    package = tmp_path / "gpujobqueue"
    package.mkdir()
    (package / "anywhere.py").write_text('nodes = parse_positive_int("nodes", value, 64)\n')
    assert keywords_parsed_outside_their_declarations(tmp_path) == [("gpujobqueue/anywhere.py", 1, "nodes")]


def test_a_batch_keyword_parsed_by_hand_in_its_batch_system_is_found(tmp_path):
    # PBSOptions.from_settings, before issue 41's third step: place's pattern in code, not in its declaration
    batch = tmp_path / "gpujobqueue" / "batch"
    batch.mkdir(parents=True)
    (batch / "pbs.py").write_text('place = matching("place", get("place"), _PLACE, "PBS placement")\n')
    (batch / "lsf.py").write_text('slots = parse_positive_int("ncpus", settings["ncpus"], 64)\n')
    assert keywords_parsed_outside_their_declarations(tmp_path) == [
        ("gpujobqueue/batch/lsf.py", 1, "ncpus"),
        ("gpujobqueue/batch/pbs.py", 1, "place"),
    ]


def test_the_request_and_launch_carry_no_defaults_of_their_own():
    import dataclasses

    from gpujobqueue.jobs.request import JobRequest
    from gpujobqueue.jobs.workers import WorkerLaunch
    from gpujobqueue.plan.cpu_pool import CPUPool

    later = {"options", "queue_choice", "account_flag"}  # the plan's later steps fill these in
    later |= {"no_partition", "site_queue"}  # the CPU pool's, from its site's queue table
    for cls in (JobRequest, WorkerLaunch, CPUPool):
        for field in dataclasses.fields(cls):
            if field.name not in later:
                assert field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING, field


# The layers, lowest first: a module imports from its own layer or below. The workers' preloads import nothing of the
# package; the foundation is the modules at its top (errors, the version) and the folders of _FOUNDATION_FOLDERS; the
# package's entries (its ``__init__`` and ``__main__``) stand with the command line.
_LAYERS = ("preloads", "", "script", "batch", "sites", "plan", "runtime", "diagnostics", "cli")
_ENTRIES = {"gpujobqueue", "gpujobqueue.__main__"}


# Folders of the foundation, grouped by what they are: the keywords' declarations, validation and config; what this
# machine has; who can get in; what a job asks for and starts; the hand-written directives.
_FOUNDATION_FOLDERS = {"settings", "machine", "security", "jobs", "handwritten"}


def test_the_package_top_holds_a_handful_of_entries():
    """Issue 41, point 5: the modules are in folders that say what they are, not flat in ``gpujobqueue/``."""
    package = Path(gpujobqueue.__file__).parent
    top = sorted(p.name for p in package.iterdir() if p.suffix == ".py")
    assert top == ["__init__.py", "__main__.py", "_version.py", "errors.py"], top
    folders = sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    assert set(folders) == {*_LAYERS[:1], *_LAYERS[2:], *_FOUNDATION_FOLDERS}, folders


def _layer(module: str) -> int:
    if module in _ENTRIES:
        return _LAYERS.index("cli")
    parts = module.split(".")
    folder = parts[1] if len(parts) > 2 or parts[-1] in (*_LAYERS, *_FOUNDATION_FOLDERS) else ""
    return _LAYERS.index("" if folder in _FOUNDATION_FOLDERS else folder)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module -> module`` for each import of a higher layer (:data:`_LAYERS`)."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if _layer(b) > _layer(a))


def test_no_import_runs_back_up_the_layers():
    graph = _static_graph()
    assert upward_imports(graph) == []
    planted = {**graph, "gpujobqueue.script.render": graph["gpujobqueue.script.render"] | {"gpujobqueue.batch.base"}}
    assert upward_imports(planted) == ["gpujobqueue.script.render -> gpujobqueue.batch.base"]


def test_a_package_init_is_an_edge_of_the_cycle_search():
    graph = _static_graph()
    assert "gpujobqueue.sites.registry" in graph["gpujobqueue.sites"]  # importing the package runs its modules
    planted = {**graph, "gpujobqueue.sites.registry": graph["gpujobqueue.sites.registry"] | {"gpujobqueue.plan"}}
    assert _cycle(planted) is not None  # sites/check.py's make_plan, on 04e8fe8: sites -> check -> plan -> sites


# One name a quantity, from the keyword to the script (issue 41): GPUs per node ``gpus_per_node``, workers per node
# ``workers_per_node``, GPUs per worker ``gpus_per_worker``, threads per worker ``nthreads`` (dask's and dask-cuda's
# word). The other names these quantities went by must not come back. The job's ``worker_processes``,
# ``worker_cores`` and ``worker_memory`` stay: dask-jobqueue's Job has them, and users' code reads them.
_OTHER_NAMES = re.compile(r"\blaunch\.gpus\b|\bdevices_per_worker\b|\bthreads_per_worker\b|\bgpus=self\.processes\b")


def other_names_of_a_quantity(root: Path = ROOT) -> list[str]:
    files = [*(root / "gpujobqueue").rglob("*.py"), *(root / "templates").rglob("*.j2")]
    return [
        f"{path.relative_to(root)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _OTHER_NAMES.search(line)
    ]


def test_a_quantity_has_one_name_from_keyword_to_script(tmp_path):
    assert other_names_of_a_quantity() == []
    (tmp_path / "templates").mkdir()
    (tmp_path / "gpujobqueue").mkdir()
    (tmp_path / "templates" / "w.sh.j2").write_text("x\n--nworkers {{ launch.gpus }}\n")
    assert other_names_of_a_quantity(tmp_path) == ["templates/w.sh.j2:2"]
