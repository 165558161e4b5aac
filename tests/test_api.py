"""The public API a plug-in author holds in their head (issue 46): every built-in paper and example plug-in imports only
names that a public module exports (its ``__all__``), from public modules (no part starting with ``_``)."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_TREES = [ROOT / "fedtheory" / "papers", *sorted((ROOT / "examples").glob("*/src"))]


def _fedtheory_imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fedtheory"):
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("fedtheory"):
                    yield node.lineno, a.name, []


def _plugin_files():
    return [f for tree in PLUGIN_TREES for f in sorted(tree.rglob("*.py"))]


def test_papers_and_examples_import_only_exported_names():
    bad = []
    for f in _plugin_files():
        where = f.relative_to(ROOT)
        own_paper = f.parts[f.parts.index("papers") + 1] if "papers" in f.parts else None
        for line, module, names in _fedtheory_imports(f):
            if own_paper and module.startswith(f"fedtheory.papers.{own_paper}"):
                continue  # a paper's own modules
            if any(part.startswith("_") for part in module.split(".")):
                bad.append(f"{where}:{line} imports the private module {module}")
                continue
            exported = set(getattr(importlib.import_module(module), "__all__", ()))
            for name in names:
                if name not in exported:
                    bad.append(f"{where}:{line} imports {name} from {module}, which does not export it")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", ["fedtheory.theory", "fedtheory.sim", "fedtheory.checks", "fedtheory.worst",
                                    "fedtheory.worst.pep", "fedtheory.latex", "fedtheory.plugins",
                                    "fedtheory.validation"])
def test_every_exported_name_exists(module):
    mod = importlib.import_module(module)
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing and len(set(mod.__all__)) == len(mod.__all__), (missing, module)


FACES = ["fedtheory.theory", "fedtheory.sim", "fedtheory.checks", "fedtheory.worst", "fedtheory.worst.pep",
         "fedtheory.latex", "fedtheory.plugins", "fedtheory.validation", "fedtheory.testing"]
#: numpydoc's checks the API reference needs (issue 47): a docstring (GL08), every parameter documented (PR01) and
#: none that does not exist (PR02), what it returns (RT01) or yields (YD01)
REQUIRED = {"GL08", "PR01", "PR02", "RT01", "YD01"}


def _public_callables():
    for module in FACES:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and getattr(obj, "__module__", "").startswith("fedtheory"):
                yield module, name, obj


@pytest.mark.parametrize("module", FACES)
def test_every_public_name_has_a_signature_and_a_docstring_naming_its_parameters_and_returns(module):
    """What the API reference shows for each exported function and class: its signature, a docstring, every
    parameter in its Parameters section, and what it returns (numpydoc's validator). The message says which."""
    import inspect

    validate = pytest.importorskip("numpydoc.validate").validate
    bad = []
    for face, name, obj in _public_callables():
        if face != module:
            continue
        try:
            inspect.signature(obj)
        except (TypeError, ValueError):
            bad.append(f"{face}.{name}: no signature")
            continue
        found = validate(f"{obj.__module__}.{obj.__qualname__}")
        errors = [f"{code} {text}" for code, text in found["errors"] if code in REQUIRED]
        if errors:
            bad.append(f"{face}.{name}: " + "; ".join(errors))
    assert not bad, f"{len(bad)} public name(s) of {module} not documented for the API reference:\n" + "\n".join(bad)


@pytest.mark.parametrize("module", [f for f in FACES if hasattr(importlib.import_module(f), "_MOVED")])
def test_a_name_dropped_from_a_face_still_imports_with_a_deprecation_warning(module):
    """Each name cut from a face in 0.2 (its ``_MOVED``) is no longer in the face's namespace, so ``from face import
    name`` reaches the face's ``__getattr__``: a FedTheoryDeprecationWarning naming where to import it from, and the
    same object as there. Before, sim, checks and latex still held every cut name: the import was silent."""
    from fedtheory.validation import FedTheoryDeprecationWarning

    mod = importlib.import_module(module)
    assert mod._MOVED
    for name, where in mod._MOVED.items():
        assert name not in vars(mod), f"{module}.{name} is still in the face's namespace: its alias never warns"
        with pytest.warns(FedTheoryDeprecationWarning, match=rf"{module}\.{name} is deprecated.*{where}"):
            obj = getattr(mod, name)
        assert obj is getattr(importlib.import_module(f"{module}.{where}"), name), name


def test_architecture_states_the_current_count_of_public_names():
    """docs/architecture.md's table of the faces: each face's count after the arrow is len(__all__) today."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("<!-- public-names -->"):text.index("<!-- /public-names -->")]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| \d+ -> (\d+) \|", table, flags=re.M))
    assert set(rows) == set(FACES)
    stale = {f: (int(n), len(importlib.import_module(f).__all__)) for f, n in rows.items()
             if int(n) != len(importlib.import_module(f).__all__)}
    assert not stale, f"docs/architecture.md states (printed, actual) public names: {stale}"
