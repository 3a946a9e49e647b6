"""Reading a site file's YAML safely, in one bounded pass, and each key path's line number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import FileRefusedError
from ..security.files import read_bounded_text
from ..settings.limits import (
    MAX_SITE_DEPTH,
    MAX_SITE_FILE_BYTES,
    MAX_SITE_ITEMS,
    MAX_SITE_NUMBER_CHARS,
    MAX_SITE_VALUES,
)
from .errors import SiteConfigError, dotted_key


class RefusedYAMLError(yaml.MarkedYAMLError):
    """Valid YAML that a site file may not hold; ``problem`` says what, ``problem_mark`` where."""

    def __init__(self, problem: str, mark: yaml.Mark):
        super().__init__(problem=problem, problem_mark=mark)


class SiteLoader(yaml.SafeLoader):
    """A safe loader bounded for site files: no alias, bounded nesting and values, keys given once."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.values = 0
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):  # an alias can expand a small file into a huge object
            raise RefusedYAMLError(
                f"YAML alias *{event.anchor}: site files may not use aliases (anchors and *references); "
                "write the value out",
                event.start_mark,
            )
        self.values += 1
        if self.values > MAX_SITE_VALUES:
            raise RefusedYAMLError(
                f"more than {MAX_SITE_VALUES} values; a site file is a page of YAML (gpujobqueue.settings.limits)",
                event.start_mark,
            )
        nested = isinstance(event, yaml.CollectionStartEvent)
        self.depth += nested
        if self.depth > MAX_SITE_DEPTH:
            raise RefusedYAMLError(f"nested more than {MAX_SITE_DEPTH} levels deep", event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= nested


def _construct_mapping(loader: SiteLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):  # a complex key (? [a, b]): no key of a site is one
            kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
            raise RefusedYAMLError(f"a key must be text, not {kind}", key_node.start_mark)
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first on line {seen[key]})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader: SiteLoader, node: yaml.ScalarNode) -> int:
    if len(node.value) > MAX_SITE_NUMBER_CHARS:  # Python refuses to convert over 4300 digits, and none is needed
        raise RefusedYAMLError(
            f"a number of {len(node.value)} characters; a site file's numbers have at most {MAX_SITE_NUMBER_CHARS}",
            node.start_mark,
        )
    return loader.construct_yaml_int(node)


def _construct_other(loader: SiteLoader, node: yaml.Node) -> None:
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    raise RefusedYAMLError(
        f"the tag {tag} is not used in site files, which hold text, numbers, true/false, null, lists and mappings",
        node.start_mark,
    )


_JSON_TYPES = ("null", "bool", "float", "str", "seq")
# Only JSON's types are built: a !!set, !!binary, !!timestamp or !!omap is refused by its tag, naming its line.
SiteLoader.yaml_constructors = {
    f"tag:yaml.org,2002:{name}": yaml.SafeLoader.yaml_constructors[f"tag:yaml.org,2002:{name}"] for name in _JSON_TYPES
}
SiteLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
SiteLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
SiteLoader.add_constructor(None, _construct_other)
# Dates stay text: the checks name a bad one's key, where PyYAML's conversion raises a bare ValueError.
SiteLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _printable(path: Path, text: str) -> str:
    """``text`` if it holds only printable characters, tabs and line ends, else a FileRefusedError."""
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), 1):  # a byte-order mark YAML allows
        line = line.removesuffix("\r").replace("\t", " ")
        if not line.isprintable():
            bad = next(c for c in line if not c.isprintable())
            column = line.index(bad) + 1
            raise FileRefusedError(
                path,
                f"character U+{ord(bad):04X} in column {column} is not printable text; a site file holds "
                "printable characters, tabs and line ends",
                number,
            )
    return text


def load_site_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """The file's data and node tree (None when empty), or a SiteConfigError naming line and key."""
    try:
        text = _printable(path, read_bounded_text(path, MAX_SITE_FILE_BYTES, "a site file"))
    except FileRefusedError as error:
        raise SiteConfigError(path, "", error.line, error.message) from None
    loader = SiteLoader(text)
    node = None
    try:
        node = loader.get_single_node()
        crowded = _crowded(node) if node is not None else None
        if crowded is None:
            return (loader.construct_document(node) if node is not None else None), node
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        line = mark.line + 1 if mark else None
        key = ""
        if node is not None and line is not None:  # composed but not built: name the key on that line
            key = dotted_key(max((p for p, at in line_index(node).items() if at == line), key=len, default=()))
        message = problem if isinstance(error, RefusedYAMLError) else f"not valid YAML: {problem}"
        raise SiteConfigError(path, key, line, message) from None
    finally:
        loader.dispose()
    key, count = crowded
    message = (
        f"{count} items; a list or mapping of a site file holds at most {MAX_SITE_ITEMS} (gpujobqueue.settings.limits)"
    )
    raise SiteConfigError(path, dotted_key(key), line_index(node).get(key), message)


def _crowded(node: yaml.Node, prefix: tuple = ()) -> tuple[tuple, int] | None:
    """The key path and count of the first list or mapping of more than :data:`MAX_SITE_ITEMS` items, or None."""
    if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        return None
    if len(node.value) > MAX_SITE_ITEMS:
        return prefix, len(node.value)
    if isinstance(node, yaml.SequenceNode):
        children = list(enumerate(node.value))
    else:
        children = [(getattr(key, "value", "?"), value) for key, value in node.value]
    return next((found for key, child in children if (found := _crowded(child, prefix + (key,)))), None)


def line_index(node: yaml.Node, prefix: tuple = (), index: dict | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line, from a composed YAML node tree."""
    index = {} if index is None else index
    index.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):  # refused when built; no path names it
                continue
            path = prefix + (key_node.value,)
            index[path] = key_node.start_mark.line + 1
            line_index(value_node, path, index)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_index(item, prefix + (i,), index)
    return index
