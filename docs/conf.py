"""Sphinx configuration of gpujobqueue's documentation.

Build: ``python3 -m sphinx -W --keep-going -b html docs docs/_build/html``.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# The package of this source tree, not another installed copy.
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))

import gpujobqueue  # noqa: E402

project = "gpujobqueue"
author = "the gpujobqueue authors"
copyright = "the gpujobqueue authors"
version = release = gpujobqueue.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx_click",
    "gpujobqueue_docs",  # _ext/: the site table and rendered job scripts, made at build time
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "site-research"]
templates_path = []

# Markdown: heading anchors so that pages can link to each other's sections.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# API reference: our own members only (the dask-jobqueue and distributed docstrings we
# inherit are not numpydoc and would break -W).
autodoc_default_options = {}  # members are named page by page, never inherited ones
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_show_inherited_class_members = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_title = f"gpujobqueue {release}"
html_static_path = []
html_theme_options = {
    "description": "Dask GPU workers through SLURM, PBS Pro, LSF and Grid Engine",
    "fixed_sidebar": False,
}
