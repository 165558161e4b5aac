"""The join: theorem x measurement -> verdict. The API a paper plug-in's checks use.

* registering a check: :func:`check` (the decorator; the function's docstring is its description),
  :class:`Session` (profile, seed, memo), :class:`CheckResult`, :class:`Control` (the negative control that shows
  the check can fail); checks on runs logged by ``fedtheory train``: :func:`logged_runs_check`, :func:`logged_runs`;
* assumptions checked, not declared: :func:`certify` -> :class:`Certification`, :func:`run_settings`;
* deciding: :func:`assess_bound` (a Bound over candidate values against per-run measurements; ``trivial=`` gives
  its vacuity by :data:`TRIVIAL_BOUNDS`), :func:`compare_mean`, :func:`compare_rounds`, :func:`claim_result` with
  its :class:`StatsPolicy`, :func:`identity_result`, :func:`combine_readings` (readings of an ambiguous text),
  :func:`rate_check` / :func:`register_rate_check` / :func:`faster_order` (symbolic), :func:`fit_rate` and
  :func:`rate_verdict` (measured), :func:`robustness` and :func:`sweep` (a finding's robustness),
  :func:`training_regime` / :func:`in_training_regime` (claims about training), :func:`cached_symbolic` (a slow
  symbolic result computed once);
* running: :func:`run_checks`, :func:`all_checks`, :func:`run_control`, :func:`format_table`.

What the command line uses to write and summarize (exit codes, the table, the JSON) lives in the submodules
(``fedtheory.checks.output``, ``results``, ...), not here.
"""
from __future__ import annotations

from ..deprecation import face_aliases
from .bounds import assess_bound

# the names of _MOVED are imported for their deprecated aliases and the face's own use (hence the noqa: F401)
from .certification import (  # noqa: F401
    Certification,
    CertifiedAssumption,
    certificate_text,
    certify,
    certify_assumptions,
    run_settings,
)
from .claims import Comparison, Equivalence, StatsPolicy, claim_result  # noqa: F401
from .comparisons import compare_mean, compare_rounds, holm_reject  # noqa: F401
from .controls import ControlOutcome, run_control, run_controls  # noqa: F401
from .dimensions import register_units_checks, units_result, units_rows  # noqa: F401 - registers PAPER.units for every paper
from .execution import CheckTiming, check_timings, checked_rows  # noqa: F401
from .identities import identity_result
from .logged_runs import (  # noqa: F401
    REGIME_FRACTION,
    in_training_regime,
    logged_runs,
    logged_runs_check,
    run_check,
    run_label,
    training_regime,
    unusable_runs,
)
from .output import (  # noqa: F401
    LOOSE_FACTOR,
    cited_lines,
    format_table,
    format_timings,
    print_results,
    results_payload,
    row_marks,
    shared_lines,
    simulation_text,
    summarize,
    summarize_findings,
    write_json,
)
from .rates import faster_order, fit_rate, rate_check, rate_verdict, register_rate_check
from .readings import combine_readings
from .registry import (  # noqa: F401
    CONTROLLED_KINDS,
    CheckSpec,
    Control,
    all_checks,
    check,
    check_spec,
    checks_of,
    id_matches,
    record_row_filter,
    register_spec,
    registered_check_ids,
    select,
)
from .results import (  # noqa: F401
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    FINDING_CLASSES,
    FINDINGS,
    KINDS,
    SCOPES,
    VERDICTS,
    CheckResult,
    errors,
    exit_code,
    finding_class_of,
    group_findings,
    scalar_params,
)
from .robustness import FRAGILE_WITHIN, finding_robustness, robustness, robustness_text, sweep  # noqa: F401
from .rounding import ROUNDING_RTOL, ROUNDING_SCALES, rounding_scale_of, rounding_tolerance  # noqa: F401
from .run import run_checks
from .session import PROFILES, Session  # noqa: F401
from .symbolic_cache import cached_symbolic, expr_from_srepr, symbolic_part  # noqa: F401
from .terms import additive_terms, term_tightness  # noqa: F401
from .trivial_bounds import TRIVIAL_BOUNDS, TrivialBound, trivial_bound_of  # noqa: F401

__all__ = ["check", "Session", "CheckResult", "Control", "FINDINGS", "logged_runs_check", "logged_runs", "run_label",
           "certify", "Certification", "run_settings", "assess_bound", "TRIVIAL_BOUNDS", "trivial_bound_of",
           "compare_mean", "compare_rounds", "claim_result", "StatsPolicy", "identity_result", "combine_readings",
           "rate_check", "register_rate_check", "faster_order", "fit_rate", "rate_verdict", "robustness", "sweep",
           "training_regime", "in_training_regime", "cached_symbolic", "term_tightness", "run_checks", "all_checks",
           "run_control", "format_table"]

_MOVED = {  # not part of the plug-in API since 0.2: name -> the module that has it
    **dict.fromkeys(("EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "FINDING_CLASSES", "KINDS", "SCOPES",
                     "VERDICTS", "errors", "exit_code", "finding_class_of", "group_findings",
                     "scalar_params"), "results"),
    "PROFILES": "session",
    **dict.fromkeys(("CONTROLLED_KINDS", "CheckSpec", "check_spec", "checks_of", "id_matches", "record_row_filter",
                     "register_spec", "registered_check_ids", "select"), "registry"),
    "holm_reject": "comparisons",
    **dict.fromkeys(("ROUNDING_RTOL", "ROUNDING_SCALES", "rounding_scale_of", "rounding_tolerance"), "rounding"),
    **dict.fromkeys(("expr_from_srepr", "symbolic_part"), "symbolic_cache"),
    **dict.fromkeys(("CheckTiming", "check_timings", "checked_rows"), "execution"),
    **dict.fromkeys(("ControlOutcome", "run_controls"), "controls"),
    **dict.fromkeys(("LOOSE_FACTOR", "cited_lines", "format_timings", "print_results", "results_payload", "row_marks",
                     "shared_lines", "simulation_text", "summarize", "summarize_findings", "write_json"), "output"),
    **dict.fromkeys(("CertifiedAssumption", "certificate_text", "certify_assumptions"), "certification"),
    **dict.fromkeys(("REGIME_FRACTION", "unusable_runs"), "logged_runs"),
    **dict.fromkeys(("FRAGILE_WITHIN", "finding_robustness", "robustness_text"), "robustness"),
    **dict.fromkeys(("register_units_checks", "units_result", "units_rows"), "dimensions"),
    "TrivialBound": "trivial_bounds", "additive_terms": "terms",
    **dict.fromkeys(("Comparison", "Equivalence"), "claims"),
}


def _moved(name: str, module: str):
    import sys

    return lambda: getattr(sys.modules[f"{__name__}.{module}"], name)  # every one imported above


__getattr__ = face_aliases(__name__, {
    "run_check": (lambda: run_check, "renamed logged_runs_check (and its control= is a Control, like check's)"),
    **{name: (_moved(name, module), f"not part of the plug-in API: import it from {__name__}.{module}")
       for name, module in _MOVED.items()},
})
for _name in _MOVED:  # imported above for the aliases and the face's own use: without the global, the alias warns
    globals().pop(_name, None)
