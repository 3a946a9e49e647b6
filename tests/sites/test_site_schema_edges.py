"""The site schema's patterns hold a value in full: a trailing line break (which a bare ``$``
lets through in Python's regular expressions) is refused where the file is loaded, naming the
key, not later where a script is written."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from gpujobqueue.sites import SiteConfigError, load_site

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "gpujobqueue" / "site_schema.yaml"


def _patterns(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


def test_no_schema_pattern_ends_in_a_dollar():
    loose = [pattern for pattern in _patterns(yaml.safe_load(SCHEMA.read_text())) if pattern.endswith("$")]
    assert not loose, f"end these with \\Z, which no trailing line break passes: {loose}"


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda d: d.update(clusters="wice\n"), "clusters"),
        (lambda d: d.update(clusters="w" * 129), "clusters"),
        (lambda d: d["queues"].update({"gpu\n": dict(d["queues"]["gpu"])}), "queues"),
        (lambda d: d.setdefault("environment", {}).update({"FOO\n": "1"}), "environment"),
        (lambda d: d.setdefault("directives", {}).update(extra=["--exclusive\n"]), "directives.extra"),
    ],
)
def test_a_trailing_line_break_or_an_overlong_word_is_refused_at_load_naming_the_key(tmp_path, change, key):
    data = yaml.safe_load((ROOT / "site-configs" / "wice.yaml").read_text())
    data["name"] = "hostile"
    change(data)
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SiteConfigError) as refused:
        load_site(str(path))
    assert key in str(refused.value), refused.value
