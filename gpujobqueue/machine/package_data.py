"""The folders shipped with the package: the job-script templates and the site files."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def package_data_dir(name: str) -> Path:
    """Folder of data shipped with the package (``templates`` or ``site-configs``): ``gpujobqueue/templates``,
    ``gpujobqueue/site_configs`` in an installed package, at its top level in a source checkout."""

    installed = importlib.resources.files("gpujobqueue") / name.replace("-", "_")
    if installed.is_dir():
        return Path(str(installed))
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"gpujobqueue's {name} folder is missing: looked in {installed} and {checkout}")
