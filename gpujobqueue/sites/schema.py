"""The site schema, with the registered batch systems' enums filled in, and its errors as SiteConfigErrors."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..batch import batch_systems
from ..settings.keywords import site_schema_fragment
from .errors import SiteConfigError, dotted_key

SCHEMA_FILE = Path(__file__).parent.parent / "site_schema.yaml"


def schemas() -> tuple[dict, dict]:
    """The full schema, and a copy without required keys (for override files), for the batch systems registered."""
    return _schemas(tuple(system for system in batch_systems().values() if system.takes_sites))


def registry_enums(systems: tuple) -> dict[tuple[str, ...], list[str]]:
    """The schema's enums that the batch systems ``systems`` give, by the path of the key they hold."""
    styles = list(dict.fromkeys(style for system in systems for style in system.gpu_request_styles))
    forms = [*styles, *dict.fromkeys(form for system in systems for form in system.rejectable_gpu_forms)]
    launchers = ["direct", *dict.fromkeys(name for system in systems for name in system.launcher_names())]
    enums = {
        ("scheduler",): [system.name for system in systems],
        ("gpu_request", "style"): styles,
        ("gpu_request", "rejects", "items"): list(dict.fromkeys(forms)),
        ("launcher", "name"): launchers,
    }
    for system in systems:
        for key, values in system.site_enums.items():
            path = tuple(key.split("."))
            enums[path] = list(dict.fromkeys([*enums.get(path, []), *values]))
    return enums


@functools.lru_cache(maxsize=8)
def _schemas(systems: tuple) -> tuple[dict, dict]:
    full = yaml.safe_load(SCHEMA_FILE.read_text())
    for keys, value_schema in site_schema_fragment(
        [keyword for system in systems for keyword in system.setting_names()]
    ):
        node = full
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(keys[-1], value_schema)
    for path, values in registry_enums(systems).items():
        node = full
        for key in path:
            node = node[key] if key == "items" else node["properties"][key]
        node["enum"] = values

    def drop_required(node):
        if isinstance(node, dict):
            # the keyword (a list of names), not a property that happens to be called "required"
            return {k: drop_required(v) for k, v in node.items() if not (k == "required" and isinstance(v, list))}
        if isinstance(node, list):
            return [drop_required(v) for v in node]
        return node

    return full, drop_required(full)


def schema_errors(data: Any, schema: dict, path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    errors = []
    for error in jsonschema.Draft202012Validator(schema).iter_errors(data):
        key = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for extra in sorted(set(error.instance) - allowed, key=str):
                known = ", ".join(sorted(allowed))
                errors.append(
                    SiteConfigError(
                        path,
                        dotted_key(key + (extra,)),
                        lines.get(key + (extra,)),
                        f"unknown key; known keys here: {known}",
                    )
                )
            continue
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            errors.append(
                SiteConfigError(
                    path,
                    dotted_key(key + (missing,)),
                    lines.get(key),
                    f"required key missing (in {dotted_key(key) or 'the file'})",
                )
            )
            continue
        errors.append(SiteConfigError(path, dotted_key(key), lines.get(key), error.message))
    return sorted(errors, key=lambda e: (e.line or 0, e.key))


@functools.lru_cache(maxsize=1)
def top_level_keys() -> frozenset[str]:
    return frozenset(schemas()[0]["properties"])


_KEYS_PREFIX = re.compile(r"^([a-z_][A-Za-z0-9_.-]*(?:, *[a-z_][A-Za-z0-9_.-]*)*): ")


def unconfirmed_keys(line: str) -> list[str]:
    """The keys an ``unconfirmed`` line names before its colon (``queues.debug, node.cpus: why``), or none."""
    match = _KEYS_PREFIX.match(line)
    if not match or match.group(1).split(".")[0].split(",")[0] not in top_level_keys():
        return []
    return [key.strip() for key in match.group(1).split(",")]
