"""The modules split along their seams (issue 46, item 3) that keep their own part: ``fedtheory.sim.engine`` keeps
``simulate`` (its configuration, measure tables, trace, problem oracle, recorders and simulation log moved to modules
of their own); ``fedtheory.empirical.trainer`` keeps the rounds on networks (the run directory's lifecycle moved to
``run_directory``, where a run executes to ``device``). A name that moved still imports from the old module for one
release, with a FedTheoryDeprecationWarning that names where it lives now, and nothing shipped imports it from there."""
from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import pytest

import fedtheory
from fedtheory._validation import FedTheoryDeprecationWarning

# The public names each module defined before its split (0.2), and the face that exports the API's names.
OLD_NAMES = {
    "fedtheory.sim.engine": ("fedtheory.sim", (
        "RunConfig", "StepWeights", "STATE_MEASURES", "ROUND_MEASURES", "VISITED_MEASURES", "STEP_MEASURES",
        "DEFAULT_MEASURES", "TrackGradients", "Trace", "record_simulations", "last_simulation", "replay_simulations",
        "simulation_summary", "ProblemOracle")),
    "fedtheory.empirical.trainer": ("fedtheory.empirical", (
        "FAULT_ENV", "FAULT_ONCE_ENV", "TrainingInterrupted", "resolve_device", "versions", "CPU_BATCHED_MAX_PIXELS",
        "CPU_STACKED_MODELS", "CPU_WORKERS", "choose_engine", "choose_path")),
}
#: what each split module still defines itself
KEPT = {"fedtheory.sim.engine": ("simulate",),
        "fedtheory.empirical.trainer": ("GRAM_CHUNK_ELEMENTS", "ImpossibleMeasure", "NetworkOracle", "TrainResult",
                                        "Trainer", "pairwise_cosines", "train")}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_a_moved_name_resolves_with_a_warning_naming_its_new_module(old):
    module = importlib.import_module(old)
    face_name, names = OLD_NAMES[old]
    face = importlib.import_module(face_name)
    for name in names:
        assert name not in vars(module), f"{old} still binds {name}: importing it from there would not warn"
        with pytest.warns(FedTheoryDeprecationWarning, match=rf"^{re.escape(old)}\.{name} is deprecated") as said:
            value = getattr(module, name)
        (warning,) = said
        assert warning.filename == __file__  # the line to change
        where = re.search(r"import \w+ from ([\w.]+)$", str(warning.message)).group(1)
        assert where != old and getattr(importlib.import_module(where), name) is value
        assert (where == face_name) == (name in face.__all__), name


@pytest.mark.parametrize("old", sorted(KEPT))
def test_what_the_split_module_keeps_imports_without_a_warning(old):
    module = importlib.import_module(old)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FedTheoryDeprecationWarning)
        for name in KEPT[old]:
            value = getattr(module, name)
            assert getattr(value, "__module__", old) == old, name
    assert sorted(module.__all__) == sorted(KEPT[old])
    with pytest.raises(AttributeError):
        getattr(module, "no_such_name")


def test_nothing_shipped_imports_a_moved_name_from_its_old_module():
    """The package, its papers, the examples, the benchmarks and the tests import the modules the names moved to."""
    root = Path(fedtheory.__file__).resolve().parent
    repo = root.parent
    users = []
    for base in (root, repo / "examples", repo / "benchmarks", repo / "tests"):
        for path in base.rglob("*.py"):
            if path == Path(__file__).resolve():
                continue
            package = ".".join(path.relative_to(repo).with_suffix("").parts[:-1])
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                target = node.module or ""
                if node.level:
                    target = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                      + ([node.module] if node.module else []))
                if target in OLD_NAMES:
                    moved = [a.name for a in node.names if a.name in OLD_NAMES[target][1]]
                    if moved:
                        users.append(f"{path.relative_to(repo)}:{node.lineno} {', '.join(moved)}")
    assert users == []
