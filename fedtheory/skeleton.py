"""``fedtheory new-paper NAME``: a skeleton paper plug-in to start from (records, checks, a test, packaging)."""
from __future__ import annotations

import importlib.util
import keyword
import os
import shlex
import sys
from pathlib import Path
from typing import Iterable, Mapping

from ._validation import ParameterError
from .files import user_dir_mode

__all__ = ["MAX_NAME_LENGTH", "check_directory", "check_name", "shadowed", "write_skeleton"]

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
'''  # noqa: E501 - the text of the code it writes, kept as it runs

_CHECKS = '''"""{name}: checks that measure the left sides of the records in ``records.py``."""
import numpy as np

from fedtheory.checks import Session, assess_bound, certify, check
from fedtheory.sim import ClientSampling, Exact, RunConfig, fedavg, heterogeneous_least_squares, simulate

from . import records as R


@check(f"{{R.PAPER}}.thm1", R.PAPER, "bound", measures=("opt_error",), problems=("least squares, 1 client",),
       algorithms=("FedAvg, K = 1 (gradient descent)",), seeds="1 (deterministic)")
def thm1(session: Session):
    """f(w^T) - f* of full-batch gradient descent at eta = 1/L against the bound."""
    p = heterogeneous_least_squares(n_clients=1, dim=5, samples_per_client=40, random_state=session.seed)
    oracle = Exact()
    # the assumptions are checked, not declared: the problem certifies L and mu (exact), or the row is not applicable
    cert = certify(R.THM1, problem=p, oracle=oracle, sampling=ClientSampling(1))
    L = cert.values["L"]
    w0 = session.initial_point(p, scale=3.0)
    T = 50
    tr = simulate(p, fedavg(), RunConfig(rounds=T, local_steps=1, lr=1 / L, oracle=oracle), session.seeds(1),
                  w0=w0, measures=("opt_error", "visited_max_dist2"))
    values = {{"eta": 1 / L, "T": T, "D": float(tr["opt_error"][0, 0])}}  # L and mu: the certified constants
    return [assess_bound(R.THM1, [values], tr["opt_error"][-1], problem="least_squares(1x5x40)",
                         params={{"setting": "eta = 1/L"}}, certification=cert,
                         trivial={{"L": L, "visited_max_dist2": tr["visited_max_dist2"][0]}})]
'''

def worked_check(name: str) -> str:
    """The text of the skeleton's ``checks.py`` for the paper ``name``: one worked bound check (a certified
    problem, a run, ``assess_bound``), the shape ``new-paper --from-latex`` offers to adapt."""
    return _CHECKS.format(name=name)


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
'''  # noqa: E501 - the text of the code it writes, kept as it runs

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


#: The longest NAME: it is the paper's record-id prefix (ids have at most fedtheory.theory.MAX_ID_LENGTH characters:
#: NAME.thm1.units must fit) and part of file names (tests/test_NAME.py: a file name has at most 255 bytes).
MAX_NAME_LENGTH = 64
_NAME_RULE = (f"a lower-case ASCII Python identifier (a-z, 0-9, _; not starting with a digit) of at most "
              f"{MAX_NAME_LENGTH} characters, e.g. scaffold2020")


def check_name(name: str, taken: Iterable[str] = ()) -> None:
    """A ParameterError naming NAME unless it can be a new paper's name: NAME_RULE (ASCII: it becomes a TOML key and
    a file name), not a loaded paper's name (``taken``), not the name of a module it would shadow."""
    ascii_ident = isinstance(name, str) and name.isascii() and name.isidentifier()
    if not ascii_ident or keyword.iskeyword(name) or not name.islower() or len(name) > MAX_NAME_LENGTH:
        raise ParameterError("NAME", name, _NAME_RULE)
    if name in set(taken):
        raise ParameterError("NAME", name, "a name no loaded paper has (it is a built-in or installed paper's: its "
                             "record ids would collide); e.g. " + name + "2")
    clash = shadowed(name)
    if clash is not None:
        raise ParameterError("NAME", name, f"a name that shadows no module (it would shadow {clash}); e.g. "
                             f"{name}_paper")


def check_directory(directory: str) -> Path:
    """``directory`` as a Path if it is an existing folder in which a folder can be created; else a ParameterError
    naming --dir (a missing folder is not made: a typo would otherwise create folders anywhere, even under /)."""
    import tempfile

    d = Path(directory)
    if not d.exists():
        raise ParameterError("--dir", directory, "an existing folder (it does not exist; create it first, e.g. "
                             f"{shlex.join(['mkdir', '-p', directory])})")
    if not d.is_dir():
        raise ParameterError("--dir", directory, "a folder, not a file")
    try:
        probe = tempfile.mkdtemp(dir=d, prefix=".fedtheory-probe.")
    except OSError as exc:
        raise ParameterError("--dir", directory, f"a folder where folders can be created ({exc.strerror or exc})") \
            from None
    os.rmdir(probe)
    return d


def write_skeleton(name: str, directory: str = ".", *, taken: Iterable[str] = (),
                   files: Mapping[str, str] | None = None) -> Path:
    """Write ``directory/NAME/`` with ``src/NAME/{records,checks,__init__}.py``, ``tests/test_NAME.py`` and a
    ``pyproject.toml`` that declares the ``fedtheory.papers`` entry point. Returns the new folder.

    NAME becomes a top-level package and the prefix of the paper's record ids, so it is refused when it names a
    paper in ``taken`` (the papers already registered: ``fedtheory new-paper`` passes the built-in and installed
    ones) or would shadow a module (``os``, ``numpy``, ``fedtheory``, ...): either way the plug-in would fail to
    load. Everything is validated first (``check_name``, ``check_directory``), then written whole or not at all:
    the files go to a hidden folder beside NAME/, which is renamed to NAME/ once complete (a failure removes it).

    ``files`` replaces the text of some of the files, by key: ``records``, ``checks``, ``test`` (``fedtheory new-paper
    NAME --from-latex FILE`` writes the records drafted from the LaTeX); a text is written as given (no format)."""
    import shutil
    import tempfile

    given = dict(files or {})
    unknown = sorted(set(given) - {"records", "checks", "test"})
    if unknown:
        raise ParameterError("files", unknown, "keys among records, checks, test")
    check_name(name, taken)
    d = check_directory(directory)
    root = d / name
    if root.exists():
        raise ParameterError("NAME", name, f"a name for a new folder ({root} exists)")
    stage = Path(tempfile.mkdtemp(dir=d, prefix=f".{name}.new."))
    try:
        pkg = stage / "src" / name
        pkg.mkdir(parents=True)
        (stage / "tests").mkdir()
        texts = {pkg / "__init__.py": _INIT.format(name=name), stage / "pyproject.toml": _PYPROJECT.format(name=name)}
        for key, path, template in (("records", pkg / "records.py", _RECORDS), ("checks", pkg / "checks.py", _CHECKS),
                                    ("test", stage / "tests" / f"test_{name}.py", _TEST)):
            texts[path] = given[key] if key in given else template.format(name=name)
        for path, text in texts.items():
            path.write_text(text, encoding="utf-8")
        os.chmod(stage, user_dir_mode())  # mkdtemp makes it 0700: the folder a user makes gets the umask
        if root.exists():  # made meanwhile: never replaced
            raise ParameterError("NAME", name, f"a name for a new folder ({root} exists)")
        os.rename(stage, root)
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(exc, OSError):
            why = exc.strerror or str(exc)
            raise ParameterError("--dir", directory, f"a folder where the skeleton can be written ({why}: nothing was "
                                 "written)") from None
        raise
    return root
