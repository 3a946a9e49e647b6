"""Reading a site file's YAML text safely: size, encoding, nesting and alias bounds before parsing,
a loader that refuses duplicate keys and keeps dates as text, and each key path's line number."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import yaml

from ..limits import MAX_SITE_DEPTH, MAX_SITE_FILE_BYTES
from ..validation import read_regular_file
from .errors import SiteConfigError


class UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first on line {seen[key]})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Dates stay text: the checks below name a bad one's key, where PyYAML's own conversion of
# 2026-13-45 raises a bare ValueError; and a date the schema reads is a YYYY-MM-DD string either way.
UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_bounded_text(path: Path) -> str:
    """The file's text, refused before it is parsed when it is too big, not UTF-8, nested too
    deep or uses YAML aliases (which can expand a small file into a huge object).

    Raises
    ------
    SiteConfigError
    """
    try:
        raw = read_regular_file(path, MAX_SITE_FILE_BYTES)
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise SiteConfigError(
                path,
                "",
                None,
                f"over {MAX_SITE_FILE_BYTES // 1024} KiB; a site file is a page of YAML (gpujobqueue.limits)",
            ) from None
        raise SiteConfigError(path, "", None, f"cannot read: {error.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SiteConfigError(
            path, "", line, f"not UTF-8 text: byte {raw[error.start]:#04x} cannot be decoded"
        ) from None
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise SiteConfigError(
                    path,
                    "",
                    event.start_mark.line + 1,
                    f"YAML alias *{event.anchor}: site files may not use aliases (anchors "
                    "and *references); write the value out",
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_SITE_DEPTH:
                    raise SiteConfigError(
                        path, "", event.start_mark.line + 1, f"nested more than {MAX_SITE_DEPTH} levels deep"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass  # reported, with its line, by the loader
    return text


def line_index(node: yaml.Node, prefix: tuple = (), index: dict | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line, from a composed YAML node tree."""
    index = {} if index is None else index
    index.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = prefix + (key_node.value,)
            index[path] = key_node.start_mark.line + 1
            line_index(value_node, path, index)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_index(item, prefix + (i,), index)
    return index
