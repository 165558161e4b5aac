"""The checks layer split into modules named for what each does (issue 46, item 3): the old module paths
``fedtheory.checks.base`` and ``fedtheory.checks.verdicts`` keep working for one release, each name with a
FedTheoryDeprecationWarning that names where to import it from, and nothing shipped imports them."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import fedtheory
import fedtheory.checks as face
from fedtheory._validation import FedTheoryDeprecationWarning

# The public names each module defined before the split (0.2).
OLD_NAMES = {
    "fedtheory.checks.base": (
        "VERDICTS", "FINDINGS", "KINDS", "PROFILES", "EXIT_OK", "EXIT_FINDINGS", "EXIT_USAGE", "EXIT_ERROR", "SCOPES",
        "FINDING_CLASSES", "DEFAULT_CLASS", "CLASS_SEVERITY", "finding_class_of", "CheckResult", "CONTROLLED_KINDS",
        "Control", "CheckSpec", "check", "register_spec", "check_spec", "registered_check_ids", "all_checks",
        "checks_of", "Session", "compare_mean", "holm_reject", "Z3_ALPHA", "ROUNDING_RTOL", "rounding_tolerance",
        "compare_rounds", "SHIPPED_SYMBOLIC", "symbolic_key", "symbolic_part", "symbolic_parts", "fresh_symbolic",
        "cached_symbolic", "simulation_setting_key", "expr_from_srepr", "summarize_simulations", "checked_rows",
        "SELF_CHECK_BY_RULE", "unverified_rule", "draft_todos", "draft_rule", "uncontrolled_rule", "spec_quantities",
        "CHECK_BLAS_THREADS", "one_blas_thread", "run_spec", "ONLY_RULE", "MAX_ONLY_LENGTH", "id_matches",
        "record_row_filter", "CheckTiming", "check_timings", "select", "ControlOutcome", "run_control",
        "run_controls", "group_findings", "errors", "exit_code"),
    "fedtheory.checks.verdicts": (
        "scalar_params", "SERIES_POINTS", "round_series", "TrivialBound", "TRIVIAL_BOUNDS", "trivial_bound_of",
        "ROUNDING_SCALES", "rounding_scale_of", "additive_terms", "term_tightness", "assess_bound", "verdict_before",
        "RESCALE_STEPS", "rate_key", "rate_inputs", "rate_check", "faster_order", "register_rate_check",
        "combine_readings", "identity_result", "compact_measurements", "Comparison", "Equivalence", "StatsPolicy",
        "claim_result", "fit_rate", "rate_verdict",
        "CheckResult", "Control", "check", "compare_mean", "compare_rounds", "cached_symbolic"),  # imported there
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_a_name_of_a_split_module_resolves_with_a_warning_naming_its_new_module(old):
    module = importlib.import_module(old)
    for name in OLD_NAMES[old]:
        with pytest.warns(FedTheoryDeprecationWarning, match=rf"^{re.escape(old)}\.{name} is deprecated") as said:
            value = getattr(module, name)
        (warning,) = said
        assert warning.filename == __file__  # the line to change
        where = re.search(r"import \w+ from ([\w.]+)$", str(warning.message)).group(1)
        assert getattr(importlib.import_module(where), name) is value
        assert (where == "fedtheory.checks") == (name in face.__all__), name


def test_an_import_from_an_old_path_names_the_importing_line():
    with pytest.warns(FedTheoryDeprecationWarning, match="import assess_bound from fedtheory.checks$") as said:
        from fedtheory.checks.verdicts import assess_bound
    assert assess_bound is face.assess_bound and said[0].filename == __file__
    with pytest.raises(ImportError):
        from fedtheory.checks.base import no_such_name  # noqa: F401


def test_nothing_shipped_imports_the_old_paths():
    """The package, its papers, the examples and the benchmarks import the modules the names moved to."""
    root = Path(fedtheory.__file__).resolve().parent
    repo = root.parent
    users = []
    for base in (root, repo / "examples", repo / "benchmarks"):
        for path in base.rglob("*.py"):
            if path.parent == root / "checks" and path.stem in ("base", "verdicts"):
                continue
            package = ".".join(path.relative_to(repo).with_suffix("").parts[:-1])
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom):
                    target = node.module or ""
                    if node.level:
                        target = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                          + ([node.module] if node.module else []))
                    names = [target] + [f"{target}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n in ("fedtheory.checks.base", "fedtheory.checks.verdicts") for n in names):
                    users.append(f"{path.relative_to(repo)}:{node.lineno}")
    assert users == []


def test_the_setting_column_does_not_repeat_a_mapped_symbol_its_text_says():
    """A trial user's row read '... K = 1 eta=0.33 K=1': the text's 'K = 1' (spaces around '=') was not recognised
    as saying K=1. Any spacing, any delimiter; a different value is still shown."""
    from fedtheory.checks import CheckResult
    from fedtheory.checks.output import _setting

    def setting(text):
        r = CheckResult("a.b", "a", "bound", "holds", params={"setting": text, "K": 1, "eta": 0.33},
                        extra={"quantities": {"K": "local_steps"}})
        return _setting(r)

    assert setting("eta*eta_g = 1/(2L), K = 1") == "eta*eta_g = 1/(2L), K = 1 eta=0.33"
    assert setting("K=1, full participation") == "K=1, full participation eta=0.33"
    assert setting("K = 10") == "K = 10 K=1 eta=0.33"  # in the order of params


def test_a_zero_bound_that_holds_shows_no_ratio_of_zero():
    """A trial user's exactly-zero bound that held (measured 5.6e-32, equal within rounding) printed ratio 0."""
    from fedtheory.checks import CheckResult, format_table

    held = CheckResult("z.b", "z", "bound", "holds", measured=5.6e-32, bound=0.0, ratio=0.0)
    broke = CheckResult("z.c", "z", "bound", "violated", measured=1e-3, bound=0.0, ratio=0.0)
    lines = format_table([held, broke], width=200).splitlines()
    assert any(ln.startswith("z.b") and ln.rstrip().endswith("= 0") for ln in lines)
    assert any(ln.startswith("z.c") and ln.rstrip().endswith(" 0") and "= 0" not in ln for ln in lines)
