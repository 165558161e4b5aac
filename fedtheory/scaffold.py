"""``fedtheory new-paper NAME``: a skeleton paper plug-in to start from (records, checks, a test, packaging)."""
from __future__ import annotations

import importlib.util
import keyword
import sys
from pathlib import Path
from typing import Iterable, Mapping

from ._validation import ParameterError

__all__ = ["shadowed", "write_skeleton"]

_RECORDS = '''"""{name}: the paper's statements, encoded once in sympy. Cite the source (file/section/equation) of each."""
import sympy as sp

from fedtheory.theory import Bound, Condition, SymbolSet, register

PAPER = "{name}"
SOURCE = "<paper, year>"  # e.g. "Li et al., ICLR 2020"

# Every symbol declares its dimension in the loss f and the parameter w (docs/extending.md, "Dimensions"):
# L, mu: f/w^2; a step size: w^2/f; sigma, G: f/w; f(w^0) - f*: f; ||w - w*||^2: w^2; counts and ratios: 1.
# strict=True makes a symbol without one an error; without it you get a warning and the units verdict 'unknown'.
S = SymbolSet(PAPER, strict=True)
L = S.add("L", "smoothness of f", dim="f/w^2")
mu = S.add("mu", "strong convexity of f", dim="f/w^2")
eta = S.add("eta", "step size", dim="w^2/f")
T = S.add("T", "rounds", integer=True, dim="1")
D = S.add("D", "initial optimality gap f(w^0) - f*", sp.Interval(0, sp.oo), dim="f")

# Replace with your theorem. This one is gradient descent's textbook rate, so the skeleton's check holds.
THM1 = register(Bound(
    id=f"{{PAPER}}.thm1", paper=PAPER, title="Convergence of the optimality gap", source=f"{{SOURCE}}, Thm 1",
    symbols=S, assumptions=("L_smooth", "strongly_convex(mu)"),
    lhs="opt_error", lhs_description="f(w^T) - f* (simulator measure opt_error at t = T)",
    # what the left side is fixes its trivial bound, (L/2) max ||w - w*||^2 over the points the run visited, and so
    # whether the bound says anything (docs/verdict-rules.md; fedtheory.checks.TRIVIAL_BOUNDS)
    lhs_kind="opt_error",
    expr=(1 - eta * mu) ** T * D,
    conditions=(Condition("eta_le_1_over_L", sp.Le(eta, 1 / L), source=f"{{SOURCE}}, Thm 1"),),
))
'''

_CHECKS = '''"""{name}: checks that measure the left sides of the records in ``records.py``."""
import numpy as np

from fedtheory.checks import Session, assess_bound, check
from fedtheory.sim import Exact, RunConfig, fedavg, heterogeneous_least_squares, simulate

from . import records as R


@check(f"{{R.PAPER}}.thm1", R.PAPER, "bound", measures=("opt_error",), problems=("least squares, 1 client",),
       algorithms=("FedAvg, K = 1 (gradient descent)",), seeds="1 (deterministic)")
def thm1(session: Session):
    """f(w^T) - f* of full-batch gradient descent at eta = 1/L against the bound."""
    p = heterogeneous_least_squares(n_clients=1, dim=5, samples_per_client=40, random_state=session.seed)
    c = p.constants
    L, mu = c["L"].value, c["mu"].value
    w0 = session.initial_point(p, scale=3.0)
    T = 50
    tr = simulate(p, fedavg(), RunConfig(rounds=T, local_steps=1, lr=1 / L, oracle=Exact()), session.seeds(1),
                  w0=w0, measures=("opt_error", "visited_max_dist2"))
    values = {{"L": L, "mu": mu, "eta": 1 / L, "T": T, "D": float(tr["opt_error"][0, 0])}}
    return [assess_bound(R.THM1, [values], tr["opt_error"][-1], problem="least_squares(1x5x40)",
                         params={{"setting": "eta = 1/L"}},
                         trivial={{"L": L, "visited_max_dist2": tr["visited_max_dist2"][0]}})]
'''

_INIT = '''"""{name}: a fedtheory paper plug-in. Importing it registers the records and the checks."""
from . import checks, records  # noqa: F401
'''

_TEST = '''"""Run with pytest: the plug-in's records load and its checks give the expected verdicts."""
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[1] / "src" / "{name}"


def test_thm1_holds():
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(PLUGIN), "--only",
                          "{name}.thm1", "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"verdict": "holds"' in out.stdout
    assert '"vacuity": "informative"' in out.stdout  # the bound is below its left side's trivial bound


def test_units_consistent():
    """Every record's units check (the check {name}.units every paper gets) holds: no term compares unlike dimensions."""
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(PLUGIN), "--only",
                          "{name}.units", "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"verdict": "holds"' in out.stdout and '"verdict": "violated"' not in out.stdout
'''

_PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
dependencies = ["fedtheory"]

[project.entry-points."fedtheory.papers"]
{name} = "{name}"

[tool.setuptools.packages.find]
where = ["src"]
'''


def shadowed(name: str) -> str | None:
    """What the top-level module name ``name`` would shadow (a built-in or standard-library module, or a module or
    package importable here), or None."""
    if name in sys.builtin_module_names or name in getattr(sys, "stdlib_module_names", ()):
        return f"the standard library's module {name!r}"
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin if spec.origin not in (None, "built-in", "frozen") else \
            ", ".join(spec.submodule_search_locations or []) or spec.origin
        return f"the module {name!r} importable here ({where})"
    return None


def write_skeleton(name: str, directory: str = ".", *, taken: Iterable[str] = (),
                   files: Mapping[str, str] | None = None) -> Path:
    """Write ``directory/NAME/`` with ``src/NAME/{records,checks,__init__}.py``, ``tests/test_NAME.py`` and a
    ``pyproject.toml`` that declares the ``fedtheory.papers`` entry point. Returns the new folder.

    NAME becomes a top-level package and the prefix of the paper's record ids, so it is refused when it names a
    paper in ``taken`` (the papers already registered: ``fedtheory new-paper`` passes the built-in and installed
    ones) or would shadow a module (``os``, ``numpy``, ``fedtheory``, ...): either way the plug-in would fail to
    load.

    ``files`` replaces the text of some of the files, by key: ``records``, ``checks``, ``test`` (``fedtheory new-paper
    NAME --from-latex FILE`` writes the records drafted from the LaTeX); a text is written as given (no format)."""
    given = dict(files or {})
    unknown = sorted(set(given) - {"records", "checks", "test"})
    if unknown:
        raise ParameterError("files", unknown, "keys among records, checks, test")
    if not name.isidentifier() or keyword.iskeyword(name) or not name.islower():
        raise ParameterError("NAME", name, "a lower-case Python identifier (letters, digits, _), e.g. scaffold2020")
    if name in set(taken):
        raise ParameterError("NAME", name, "a name no loaded paper has (it is a built-in or installed paper's: its "
                             "record ids would collide); e.g. " + name + "2")
    clash = shadowed(name)
    if clash is not None:
        raise ParameterError("NAME", name, f"a name that shadows no module (it would shadow {clash}); e.g. "
                             f"{name}_paper")
    root = Path(directory) / name
    if root.exists():
        raise ParameterError("NAME", name, f"a name for a new folder ({root} exists)")
    pkg = root / "src" / name
    pkg.mkdir(parents=True)
    (root / "tests").mkdir()
    texts = {pkg / "__init__.py": _INIT.format(name=name), root / "pyproject.toml": _PYPROJECT.format(name=name)}
    for key, path, template in (("records", pkg / "records.py", _RECORDS), ("checks", pkg / "checks.py", _CHECKS),
                                ("test", root / "tests" / f"test_{name}.py", _TEST)):
        texts[path] = given[key] if key in given else template.format(name=name)
    for path, text in texts.items():
        path.write_text(text)
    return root
