"""The layer contracts of docs/architecture.md, read from the source of the installed package: every ``import``
statement (at module level, inside a function or under ``if TYPE_CHECKING``) and every ``importlib.import_module``
/ ``__import__`` call. Importing ``a.b.c`` also runs the package faces ``a.b`` and ``a`` (their ``__init__.py``), so
an import from outside a package counts as an import of that package's face too: a circle through a face is a
circle that Python runs into.

Point it at another tree by putting that tree first on the path (``PYTHONPATH=/other/checkout pytest
tests/test_layers.py``): it reads the ``fedtheory`` that Python imports.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import fedtheory

PACKAGE = Path(fedtheory.__file__).resolve().parent

# The floors of docs/architecture.md, ground first. A module imports the ground, its own layer, and layers on
# lower floors; never a layer on its own floor or above.
GROUND = ("fedtheory", "_validation", "validation", "_jsonutil", "signals", "deprecation", "files")
FLOORS = (
    ("theory", "sim", "parallel", "skeleton"),
    ("plugins", "scaffold"),  # scaffold: the deprecated name of skeleton (0.2), above it
    ("empirical", "testing"),
    ("checks",),
    ("worst", "report", "latex"),
    ("papers",),
    ("cli",),
)
# Modules that import by a name computed at run time, and what they load: the reader cannot follow these, so each
# is declared here and no other module may do it.
DYNAMIC = {
    "fedtheory.plugins": "the plug-ins a user names (entry points, $FEDTHEORY_PLUGINS, --plugin)",
    "fedtheory.empirical": "its own submodules, on first use of a name (the package face's _LAZY table)",
    "fedtheory.empirical.data": "numpy's and _codecs' classes for the safe unpickler of the CIFAR files",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a package face for an implied import)
    line: int
    implied: bool = False  # the face a submodule import runs, not written

    def __str__(self) -> str:
        how = " (its package face)" if self.implied else ""
        return f"{self.source}:{self.line} -> {self.target}{how}"


def read_modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is a package face)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        face = parts[-1] == "__init__"
        out[".".join(parts[:-1] if face else parts)] = (path, face)
    return out


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def read_imports(root: Path) -> tuple[list[Import], list[tuple[str, int]]]:
    """Every import of one module of the package by another, and the (module, line) of each import by a name
    computed at run time."""
    modules = read_modules(root)
    top = root.name
    imports, dynamic = [], []
    for name, (path, face) in modules.items():
        package = name.split(".") if face else name.split(".")[:-1]
        written: list[tuple[str, int]] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                written += [(a.name, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                for a in node.names:
                    written.append((f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base, node.lineno))
            elif isinstance(node, ast.Call):
                fn = node.func
                called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if called in ("import_module", "__import__") and node.args:
                    arg = node.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        written.append((arg.value, node.lineno))
                    else:
                        dynamic.append((name, node.lineno))
        for target, line in written:
            if target.split(".")[0] != top:
                continue
            while target not in modules:  # 'pkg.mod.name' of an unknown name: the module it names
                target = target.rpartition(".")[0]
            mine = set(_ancestors(name)) | {name}
            if target not in mine:
                imports.append(Import(name, target, line))
            imports += [Import(name, face, line, implied=True) for face in _ancestors(target)
                        if face not in mine and face != target]
    return imports, dynamic


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[0] if len(parts) == 1 else parts[1]


def floor_of(layer: str) -> int:
    if layer in GROUND:
        return 0
    for i, floor in enumerate(FLOORS, 1):
        if layer in floor:
            return i
    raise AssertionError(f"{layer} stands on no floor: add it to docs/architecture.md's layers and to FLOORS here")


def circles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(component: list[str], imports: list[Import]) -> str:
    inside = set(component)
    ties = sorted({str(i) for i in imports if i.source in inside and i.target in inside})
    return "circle of " + ", ".join(component) + ":\n    " + "\n    ".join(ties)


IMPORTS, DYNAMIC_FOUND = read_imports(PACKAGE)


def _offending(source_layers: tuple[str, ...], allowed) -> list[str]:
    return sorted(str(i) for i in IMPORTS
                  if layer_of(i.source) in source_layers and not allowed(layer_of(i.target)))


# ------------------------------------------------------------------------------------ the contracts


def test_theory_imports_nothing_of_the_package_but_the_ground():
    """What papers state is pure sympy: no plug-in discovery, no simulator, no verdicts. Besides validation it may
    import deprecation (the aliases of the names cut from its face in 0.2), which itself imports only
    _validation."""
    assert _offending(("theory",), lambda t: t in ("theory", "fedtheory", "_validation", "_jsonutil",
                                                   "deprecation")) == []
    assert _offending(("deprecation",), lambda t: t in ("fedtheory", "_validation")) == []


def test_sim_never_imports_theory_or_checks():
    assert _offending(("sim",), lambda t: t not in ("theory", "checks")) == []


def test_empirical_never_imports_checks():
    assert _offending(("empirical",), lambda t: t != "checks") == []


def test_no_import_circle():
    found = circles(IMPORTS)
    assert not found, "\n".join(_describe(c, IMPORTS) for c in found)


def test_every_import_goes_down_the_floors():
    """A module imports the ground, its own layer, and the layers on lower floors (docs/architecture.md)."""
    bad = sorted(str(i) for i in IMPORTS if layer_of(i.source) != layer_of(i.target)
                 and floor_of(layer_of(i.target)) >= floor_of(layer_of(i.source)) > 0)
    assert bad == []


def paper_of(module: str) -> str | None:
    """'fedinit' for fedtheory.papers.fedinit and its modules; None for the core (and the papers' face)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "papers" else None


def core_imports_of_papers(imports: list[Import]) -> list[str]:
    """Imports of a paper by the core (every module outside fedtheory/papers/)."""
    return sorted(str(i) for i in imports if layer_of(i.source) != "papers" and paper_of(i.target))


def cross_paper_imports(imports: list[Import]) -> list[str]:
    """Imports of one paper by another."""
    return sorted(str(i) for i in imports if paper_of(i.source) and paper_of(i.target)
                  and paper_of(i.source) != paper_of(i.target))


def private_names_used_by_papers(root: Path) -> list[str]:
    """Every private module or name of the core (a part starting with '_') that a paper imports: a paper uses the
    public API a user's plug-in has."""
    bad = []
    for name, (path, face) in read_modules(root).items():
        if not paper_of(name):
            continue
        package = name.split(".") if face else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(root.name):
                names = [a.name for a in node.names]
                if any(p.startswith("_") for p in node.module.split(".")) or any(n.startswith("_") for n in names):
                    bad.append(f"{name}:{node.lineno} from {node.module} import {', '.join(names)}")
            elif isinstance(node, ast.ImportFrom) and node.level > 1 \
                    and paper_of(".".join(package[:len(package) - node.level + 1] + ["x"])) != paper_of(name):
                bad.append(f"{name}:{node.lineno}: a relative import out of the paper's package (use fedtheory.X)")
            elif isinstance(node, ast.Import):
                bad += [f"{name}:{node.lineno} import {a.name}" for a in node.names
                        if a.name.startswith(root.name) and any(p.startswith("_") for p in a.name.split("."))]
    return sorted(bad)


def test_the_core_imports_no_paper():
    """The core (theory, sim, checks, worst, report, the CLI, ...) knows no paper: papers are plug-ins found through
    the entry points, as a user's are."""
    assert core_imports_of_papers(IMPORTS) == []


def test_papers_do_not_import_each_other():
    assert cross_paper_imports(IMPORTS) == []


def test_papers_use_only_the_public_api():
    """Whatever a built-in paper uses, a user's plug-in can use: no private module or name of the core."""
    assert private_names_used_by_papers(PACKAGE) == []


def test_every_built_in_paper_is_one_package_of_the_plug_in_shape():
    """A paper is one folder: its face registers everything (records, checks, and what else it has), and the
    folders of the core hold no paper's records, checks or worst cases."""
    from fedtheory.plugins import BUILTIN_PAPERS

    papers = sorted(p.name for p in (PACKAGE / "papers").iterdir() if (p / "__init__.py").exists())
    assert papers == sorted(BUILTIN_PAPERS)  # every folder is a registered built-in paper, and every one a folder
    for paper in papers:  # its checks in one file, or a package of them split along the paper's seams
        folder = PACKAGE / "papers" / paper
        assert (folder / "records.py").exists() and ((folder / "checks.py").exists()
                                                     or (folder / "checks" / "__init__.py").exists()), paper
    for layer in ("theory", "checks", "worst", "sim"):
        assert not sorted(f.stem for f in (PACKAGE / layer).glob("*.py") if f.stem in papers), layer


def test_the_paper_contracts_fail_on_a_violation(tmp_path):
    """The three paper contracts catch what they forbid: a core module importing a paper (inside a function too), one
    paper importing another, and a paper importing a private module of the core."""
    pkg = tmp_path / "fedtheory"
    for d in ("", "sim", "papers", "papers/a", "papers/b"):
        (pkg / d).mkdir(exist_ok=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "_validation.py").write_text("X = 1\n")
    (pkg / "sim" / "engine.py").write_text("def f():\n    from ..papers.a import records\n    return records\n")
    (pkg / "papers" / "a" / "records.py").write_text("from fedtheory._validation import X\n")
    (pkg / "papers" / "b" / "checks.py").write_text("from fedtheory.papers.a.records import X\n")
    imports, _ = read_imports(pkg)
    assert core_imports_of_papers(imports) == ["fedtheory.sim.engine:2 -> fedtheory.papers.a (its package face)",
                                               "fedtheory.sim.engine:2 -> fedtheory.papers.a.records"]
    assert cross_paper_imports(imports) == ["fedtheory.papers.b.checks:1 -> fedtheory.papers.a (its package face)",
                                            "fedtheory.papers.b.checks:1 -> fedtheory.papers.a.records"]
    assert private_names_used_by_papers(pkg) == ["fedtheory.papers.a.records:1 from fedtheory._validation import X"]
    # a paper's checks split into a package: '..' stays inside the paper, '...' leaves it
    (pkg / "papers" / "a" / "checks").mkdir()
    (pkg / "papers" / "a" / "checks" / "__init__.py").write_text("from . import bounds\n")
    (pkg / "papers" / "a" / "checks" / "bounds.py").write_text("from .. import records\nfrom ...b import checks\n")
    assert private_names_used_by_papers(pkg) == [
        "fedtheory.papers.a.checks.bounds:2: a relative import out of the paper's package (use fedtheory.X)",
        "fedtheory.papers.a.records:1 from fedtheory._validation import X"]


def test_import_linter_contracts():
    """A second, independent reading of the same contracts by import-linter (its own import graph, grimp):
    ``forbidden`` (no core module imports fedtheory.papers), ``independence`` (the papers), ``layers`` (the floors)."""
    from importlinter import api  # noqa: F401 - the test extra installs it

    core = sorted(m for m in read_modules(PACKAGE) if m.count(".") == 1 and layer_of(m) != "papers")
    papers = sorted({f"fedtheory.papers.{paper_of(m)}" for m in read_modules(PACKAGE) if paper_of(m)})
    floors = [" | ".join(f"fedtheory.{layer}" for layer in floor if (PACKAGE / layer).exists()
                         or (PACKAGE / f"{layer}.py").exists()) for floor in reversed(FLOORS)]
    config = "\n".join([
        "[importlinter]", "root_package = fedtheory", "",
        "[importlinter:contract:core]", "name = The core imports no paper", "type = forbidden",
        "source_modules =", *[f"    {m}" for m in core], "forbidden_modules =", "    fedtheory.papers", "",
        "[importlinter:contract:papers]", "name = Papers do not import each other", "type = independence",
        "modules =", *[f"    {m}" for m in papers], "",
        "[importlinter:contract:floors]", "name = Every import goes down the floors", "type = layers",
        "layers =", *[f"    {f}" for f in floors], ""])
    ini = Path(os.environ.get("TMPDIR", "/tmp")) / f"fedtheory-importlinter-{os.getpid()}.ini"
    ini.write_text(config)
    try:
        out = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                              "sys.exit(lint_imports_command())", "--config", str(ini), "--no-cache"],
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent),
                                                                               os.environ.get("PYTHONPATH", "")])})
    finally:
        ini.unlink()
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout, out.stdout[-2000:]


def private_names_imported(root: Path) -> list[str]:
    """Every name starting with '_' that a module of the package imports from another of its modules (a private
    module such as ``_validation`` is the ground's: its public names are for every layer)."""
    bad = []
    for name, (path, _) in read_modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(root.name)):
                names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if names:
                    bad.append(f"{name}:{node.lineno} imports {', '.join(names)}")
    return sorted(bad)


def test_no_module_imports_another_modules_private_names():
    """A module split along its seams (checks/, cli/, sim/engine.py, empirical/trainer.py) gives its parts public
    names for what they use of each other; nothing reaches into another module's private names."""
    assert private_names_imported(PACKAGE) == []


def test_the_command_line_is_one_module_per_command_under_its_dispatch():
    """fedtheory/cli/: the face exports ``main`` (the console script ``fedtheory.cli:main``); ``process`` dispatches
    to the command modules, which import the shared parts (outputs, execution, tables, listing) and never the
    dispatch, the parser or each other."""
    import fedtheory.cli as cli

    assert cli.__all__ == ["main"] and cli.main.__module__ == "fedtheory.cli.process"
    commands = {"fedtheory.cli." + m for m in ("list_explain", "check", "report", "train", "worst", "new_paper")}
    shared = {"fedtheory.cli." + m for m in ("outputs", "execution", "tables", "listing")}
    inside = [i for i in IMPORTS if i.source.startswith("fedtheory.cli.") and i.target.startswith("fedtheory.cli.")]
    assert {i.target for i in inside if i.source == "fedtheory.cli.process"} >= commands
    assert sorted(str(i) for i in inside if i.source in commands and i.target not in shared) == []
    assert sorted(str(i) for i in inside if i.target in commands and i.source != "fedtheory.cli.process") == []


def test_the_private_name_contract_fails_on_a_violation(tmp_path):
    pkg = tmp_path / "fedtheory"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_validation.py").write_text("X = 1\n")
    (pkg / "cli" / "__init__.py").write_text("from .process import main\n")
    (pkg / "cli" / "process.py").write_text("from .._validation import X\n\ndef main():\n    from .check import _run\n")
    (pkg / "cli" / "check.py").write_text("def _run():\n    pass\n")
    assert private_names_imported(pkg) == ["fedtheory.cli.process:4 imports _run"]


def test_imports_by_computed_name_are_declared():
    """An import the reader cannot follow hides an arrow: only the modules in DYNAMIC may make one."""
    assert sorted({m for m, _ in DYNAMIC_FOUND}) == sorted(DYNAMIC), DYNAMIC_FOUND


# ------------------------------------------------------------------------------------ the reader itself


def test_the_reader_sees_imports_inside_functions_and_through_faces(tmp_path):
    """A circle closed by an import inside a function, and one closed through a package face, are both found."""
    pkg = tmp_path / "fedtheory"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("from .base import thing\n")
    (pkg / "low" / "base.py").write_text("thing = 1\n\ndef f():\n    from ..high import other\n    return other\n")
    (pkg / "high.py").write_text("from .low.base import thing\nother = thing\n")
    (pkg / "face.py").write_text("import importlib\n\ndef g(n):\n    return importlib.import_module(n)\n")
    imports, dynamic = read_imports(pkg)
    assert [sorted(c) for c in circles(imports)] == [["fedtheory.high", "fedtheory.low", "fedtheory.low.base"]]
    assert Import("fedtheory.low.base", "fedtheory.high", 4) in imports
    assert Import("fedtheory.high", "fedtheory.low", 1, implied=True) in imports
    assert dynamic == [("fedtheory.face", 4)]


# ------------------------------------------------------------------------------------ what running imports


@pytest.mark.parametrize("module", ["fedtheory.theory", "fedtheory.sim", "fedtheory.plugins",
                                    "fedtheory.empirical.trainer", "fedtheory.checks", "fedtheory.worst"])
def test_importing_a_layer_runs_no_layer_above_it(module):
    """The same rule at run time, in a fresh interpreter: what importing a layer loads, importlib included."""
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('fedtheory')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent),
                                                                           os.environ.get("PYTHONPATH", "")])})
    assert out.returncode == 0, out.stderr
    own = floor_of(layer_of(module))
    above = sorted(m for m in out.stdout.split() if layer_of(m) != layer_of(module) and floor_of(layer_of(m)) >= own)
    assert above == []
