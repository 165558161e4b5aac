"""Sphinx configuration of fedtheory's documentation site (``make docs``; the ``docs`` extra installs what it needs).

The guides are the Markdown pages of this folder (MyST), the notebooks are rendered with the figures they hold
(myst-nb, not executed here: the test suite executes them), and the API reference is generated from the docstrings of
every name the public modules export (``__all__``; numpydoc). Built with warnings as errors and nitpicky references
on the public API; types of other libraries (numpy, sympy, torch, ...) are not resolved (no intersphinx: nothing is
downloaded at build time) and are listed in ``nitpick_ignore_regex``.
"""
from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from sphinx.util import logging  # noqa: E402

import fedtheory  # noqa: E402

LOGGER = logging.getLogger(__name__)

project = "fedtheory"
author = "fedtheory developers"
copyright = "2026, fedtheory developers"
release = fedtheory.__version__
version = fedtheory.PLUGIN_API

extensions = [
    "myst_nb",  # Markdown pages (MyST) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "worst-instances", "**.ipynb_checkpoints", "api/generated/*.rst.txt"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks hold their outputs; tests/test_notebooks.py executes them
suppress_warnings = []

autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True,
                           "member-order": "bysource"}  # a face's names in the order of its __all__
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|sp|sympy|torch|pd|pandas|scipy|matplotlib|jinja2|typing|collections|pathlib|os)\..*"),
    (r"py:.*", r"(Any|Callable|Iterable|Iterator|Mapping|Sequence|Protocol|Path|PathLike|TextIO|ndarray|Expr)"),
    (r"py:class", r"(int|float|str|bool|dict|list|tuple|set|frozenset|object|bytes|None|complex)"),
    (r"py:class", r"(optional|default.*|array-like|array_like|callable|mapping|sequence|iterable)"),
]

html_theme = "pydata_sphinx_theme"
html_title = f"fedtheory {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path: list[str] = []


def _copy_notebooks(app):
    """The notebooks live in notebooks/ (where users run them); the site renders copies (docs/notebooks/, ignored).
    A notebook's link to a page, ``../docs/PAGE.md`` from notebooks/, is ``../PAGE.md`` from the copy."""
    out = HERE / "notebooks"
    out.mkdir(exist_ok=True)
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = nb.read_text(encoding="utf-8").replace("](../docs/", "](../")
        target = out / nb.name
        if not target.exists() or target.read_text(encoding="utf-8") != text:  # unchanged: no rebuild of the page
            target.write_text(text, encoding="utf-8")


def _constant_doc(name: str, obj) -> tuple[list[str] | None, str | None]:
    """The ``#:`` comment above the definition of an exported constant (autodoc finds it only in the module that
    assigns it, not in the face that re-exports it), and the module that assigns it."""
    from sphinx.errors import PycodeError
    from sphinx.pycode import ModuleAnalyzer

    where = None
    for modname, mod in sorted(sys.modules.items()):
        if not modname.startswith("fedtheory") or mod is None or getattr(mod, name, None) is not obj:
            continue
        try:
            analyzer = ModuleAnalyzer.for_module(modname)
        except PycodeError:
            continue
        doc = analyzer.find_attr_docs().get(("", name))
        if doc:
            return list(doc), modname
        if re.search(rf"^{re.escape(name)}\s*[:=]", analyzer.code, re.M):
            where = modname
    return None, where


def _document_constants(app, docname, source):
    """An API page (``api/FACE``) gets an entry for every constant its face exports (the names ``:exclude-members:``
    leaves to another page aside): its text is the ``#:`` comment at the constant's definition, written once, in the
    code (automodule itself finds it only for a constant assigned in the face's own module). An exported constant
    without one is a warning (an error in ``make docs``)."""
    if not docname.startswith("api/") or docname == "api/index":
        return
    face = "fedtheory." + docname[len("api/"):]
    mod = importlib.import_module(face)
    left = re.search(r":exclude-members:(.*)", source[0])
    excluded = {n.strip() for n in left.group(1).split(",")} if left else set()
    entries = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if callable(obj) or inspect.ismodule(obj) or name in excluded:
            continue
        doc, where = _constant_doc(name, obj)
        if where == face:  # assigned in the face's own module: automodule documents it from its comment
            continue
        if doc is None:
            LOGGER.warning(f"{face} exports the constant {name} without a doc comment: write '#: what it is' above "
                           f"its definition{f' in {where}' if where else ''}", location=docname)
            continue
        lines = [f".. py:data:: {name}", f"   :module: {face}"]
        if isinstance(obj, (str, int, float)) and len(repr(obj)) <= 60:
            lines.append(f"   :value: {obj!r}")
        entries += lines + [""] + [f"   {ln}" for ln in doc] + [""]
    if entries:
        source[0] += "\n```{eval-rst}\n" + "\n".join(entries) + "\n```\n"


def setup(app):
    app.connect("builder-inited", _copy_notebooks)
    app.connect("source-read", _document_constants)
