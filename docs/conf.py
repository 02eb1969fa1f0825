"""Sphinx configuration of kafkafmt's documentation site.

Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e ".[docs]"`` first).
Guide pages are Markdown (MyST), the API reference is generated from the numpydoc docstrings (autodoc +
numpydoc), the CLI reference from the argparse parsers (sphinx-argparse). ``_ext/apicheck.py`` fails the
build when a public name has no docstring or is missing from the API reference.
"""
import importlib.util
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import kafkafmt  # noqa: E402

project = "kafkafmt"
author = "the kafkafmt authors"
copyright = "the kafkafmt authors, Apache-2.0"
release = version = kafkafmt.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinxarg.ext",
    "apicheck",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# MyST: heading anchors so that [links](page.md#a-heading) resolve; ``{eval-rst}`` blocks for directives
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# sphinx-argparse's domain has no resolve_any_xref, which MyST asks every domain for; links still resolve
suppress_warnings = ["myst.domains"]

# autodoc + numpydoc: one entry per public name, members in source order, no inherited noise
autodoc_default_options = {"members": True, "member-order": "bysource", "undoc-members": False,
                           "show-inheritance": True}
autodoc_typehints = "none"
# the Spark data source subclasses pyspark's DataSource: without pyspark installed (a docs-only venv) the
# reference still builds from the docstrings
autodoc_mock_imports = [] if importlib.util.find_spec("pyspark") else ["pyspark"]
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

html_theme = "pydata_sphinx_theme"
html_title = f"kafkafmt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
}
html_static_path = []
html_show_sourcelink = False
