"""The documentation site builds (issue 47): ``sphinx-build -W -n`` on docs/, every warning an error and every
reference on the public API resolved (nitpicky), as ``make docs`` builds it; and its API reference documents every
name the public faces export (their ``__all__``). Skipped, with the reason, where the ``docs`` extra is not installed
(``pip install -e '.[docs]'``; ``make`` installs it)."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FACES = ["fedtheory.theory", "fedtheory.sim", "fedtheory.checks", "fedtheory.worst", "fedtheory.worst.pep",
         "fedtheory.latex", "fedtheory.plugins", "fedtheory.validation", "fedtheory.testing"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    for module in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme"):
        pytest.importorskip(module, reason=f"the docs extra is not installed (no {module}): pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q", "-E",
                          "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
                         capture_output=True, text=True, timeout=900)
    return run, out / "html"


def test_the_site_builds_without_a_warning(site):
    run, html = site
    warnings = [ln for ln in (run.stdout + run.stderr).splitlines() if ln.strip()]
    assert run.returncode == 0 and not warnings, (f"sphinx-build -W -n exited {run.returncode} with "
                                                  f"{len(warnings)} line(s):\n" + "\n".join(warnings[:60]))
    assert (html / "index.html").is_file() and (html / "api" / "index.html").is_file()


def test_every_page_is_on_the_site(site):
    """Every docs/*.md page and every notebook is rendered (a page outside every toctree is a warning, above)."""
    _, html = site
    pages = [p.stem for p in (ROOT / "docs").glob("*.md")]
    missing = [p for p in pages if not (html / f"{p}.html").is_file()]
    missing += [f"notebooks/{nb.stem}" for nb in (ROOT / "notebooks").glob("*.ipynb")
                if not (html / "notebooks" / f"{nb.stem}.html").is_file()]
    assert not missing, missing


def test_the_notebooks_show_their_figures(site):
    """The notebooks are rendered from their stored outputs (not executed at build time): each shows its figures."""
    _, html = site
    bare = [nb.stem for nb in (ROOT / "notebooks").glob("*.ipynb")
            if '"image/png"' in nb.read_text()
                                and "_images/" not in (html / "notebooks" / f"{nb.stem}.html").read_text()]
    assert not bare, f"notebooks whose figures are missing on the site: {bare}"


@pytest.mark.parametrize("face", FACES)
def test_the_api_reference_documents_every_exported_name(site, face):
    """Each name of a face's ``__all__`` has its entry (an anchor ``fedtheory.FACE.NAME``) on an API page: a name two
    faces export is documented on one of them (the other page leaves it out)."""
    run, html = site
    ids = set()
    for page in (html / "api").glob("*.html"):
        ids |= set(re.findall(r'id="(fedtheory[\w.]*)"', page.read_text()))
    mod = importlib.import_module(face)
    others = [f for f in FACES if f != face and set(importlib.import_module(f).__all__) & set(mod.__all__)]
    missing = [n for n in mod.__all__ if f"{face}.{n}" not in ids
               and not any(f"{o}.{n}" in ids for o in others)]
    assert not missing, f"{len(missing)} name(s) of {face} not in the API reference: {', '.join(missing)}"
