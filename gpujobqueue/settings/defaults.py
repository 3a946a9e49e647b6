"""gpujobqueue's dask config defaults (gpujobqueue/gpujobqueue.yaml), registered with dask when the package is
imported, as dask-jobqueue and dask-cuda register theirs: ``dask.config.get("gpujobqueue")`` answers after
``import gpujobqueue``. dask and a 2 KB YAML file alone (a few ms where dask is imported, as in every worker
process that preloads a module of the package)."""

from __future__ import annotations

from pathlib import Path

import dask.config
import yaml

DEFAULTS_FILE = Path(__file__).parents[1] / "gpujobqueue.yaml"
PACKAGE_DEFAULTS = yaml.safe_load(DEFAULTS_FILE.read_text())
dask.config.update_defaults(PACKAGE_DEFAULTS)
