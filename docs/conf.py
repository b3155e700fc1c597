"""Sphinx configuration of the simd-emu documentation.

Build from the source tree's root: ``python -m sphinx -W -b html docs docs/_build/html``
(``pip install ".[docs]"`` first). The gallery's pictures are made by the build, from the
examples in ``examples/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the packages of this source tree, installed or not
os.environ.setdefault("SIMD_BACKEND", "numpy")  # the same pictures on any machine

project = "simd-emu"
author = "the simd-emu developers"
copyright = "the simd-emu developers"  # noqa: A001 - Sphinx's name

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "simd-emu"
html_static_path = ["_static"]

autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "gallery",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}
