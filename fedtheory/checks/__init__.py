"""The join: theorem x measurement -> verdict. The public API a paper plug-in's checks use.

* registering: :func:`check` (the decorator), :class:`Session` (profile, seed, memo), :class:`CheckResult`;
* showing a check can fail: :class:`Control` (a negative control, ``@check(..., control=...)``),
  :func:`run_controls`; bounds: ``TRIVIAL_BOUNDS`` by the record's ``lhs_kind`` (vacuity), ``ROUNDING_SCALES``
  (``rounding_scale_of``: a gap within ``ROUNDING_RTOL`` of the magnitudes a run computed is equality);
* the statistics policy of claims: :class:`StatsPolicy` (handed to a predicate as ``stats``);
  readings of an ambiguous text: :func:`combine_readings`;
* deciding: :func:`assess_bound` (a Bound over candidate values vs per-run measurements),
  :func:`compare_mean`, :func:`compare_rounds`, :func:`claim_result`, :func:`identity_result`,
  :func:`rate_check` (symbolic), :func:`fit_rate` and :func:`rate_verdict` (measured);
* checks on runs logged by ``fedtheory train`` (``check --runs DIR``): :func:`run_check`, :func:`logged_runs`,
  :func:`unusable_runs`, :func:`run_label`;
* assumptions checked, not declared: :func:`certify` (a record's assumptions against what a run's problem, oracle,
  topology, sampling and algorithm certify) -> :class:`Certification` (``assess_bound(..., certification=)``);
* running and writing: :func:`run_checks`, :func:`select`, :func:`exit_code` (0 / 1 findings / 2 usage / 3 errors), :func:`errors`, :func:`format_table`,
  :func:`print_results`, :func:`results_payload`, :func:`write_json`; how long each check took: :class:`CheckTiming`
  (``run_checks(timings=[])``), :func:`format_timings`.
"""
from __future__ import annotations

from .base import (CONTROLLED_KINDS, EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FINDING_CLASSES, FINDINGS, KINDS,
                   PROFILES, SCOPES, VERDICTS, CheckResult, CheckSpec, CheckTiming, Control, ControlOutcome, Session,
                   all_checks, cached_symbolic, check, check_spec, check_timings, checked_rows, checks_of, compare_mean, compare_rounds,
                   errors, exit_code, expr_from_srepr, finding_class_of, group_findings, holm_reject, id_matches, register_spec,
                   registered_check_ids, run_control, run_controls, select, symbolic_part)
from .base import ROUNDING_RTOL, record_row_filter, rounding_tolerance
from .output import (LOOSE_FACTOR, cited_lines, format_table, format_timings, print_results, results_payload, row_marks,
                     shared_lines, simulation_text, summarize, summarize_findings, write_json)
from .certification import (Certification, CertifiedAssumption, certificate_text, certify, certify_assumptions,
                            run_settings)
from .logged_runs import (REGIME_FRACTION, in_training_regime, logged_runs, run_check, run_label,  # registers empirical.runs
                          training_regime, unusable_runs)
from .robustness import FRAGILE_WITHIN, finding_robustness, robustness, robustness_text, sweep
from .run import run_checks
from .units_check import register_units_checks, units_result, units_rows  # registers PAPER.units for every paper
from .verdicts import ROUNDING_SCALES, rounding_scale_of
from .verdicts import (TRIVIAL_BOUNDS, Comparison, Equivalence, StatsPolicy, TrivialBound, additive_terms, assess_bound,
                       claim_result, term_tightness,
                       combine_readings, faster_order, fit_rate, identity_result, rate_check, rate_verdict,
                       register_rate_check, scalar_params, trivial_bound_of)

__all__ = ["FRAGILE_WITHIN", "finding_robustness", "robustness", "robustness_text", "sweep", "register_units_checks", "units_result", "units_rows", "register_spec", "check_spec", "CONTROLLED_KINDS",
           "CheckTiming", "check_timings", "format_timings", "Control", "ControlOutcome", "run_control", "run_controls",
           "TRIVIAL_BOUNDS", "ROUNDING_RTOL", "ROUNDING_SCALES", "rounding_scale_of", "rounding_tolerance",
           "record_row_filter",
           "Comparison", "Equivalence", "StatsPolicy", "TrivialBound", "combine_readings", "faster_order",
           "trivial_bound_of", "EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "FINDING_CLASSES", "checked_rows", "errors",
           "CheckResult", "CheckSpec", "FINDINGS", "finding_class_of", "KINDS", "LOOSE_FACTOR", "PROFILES", "SCOPES", "Session",
           "VERDICTS", "all_checks", "group_findings", "holm_reject", "row_marks", "summarize_findings",
           "assess_bound", "check", "checks_of", "claim_result", "compare_mean", "compare_rounds", "exit_code",
           "fit_rate", "format_table", "identity_result", "print_results", "rate_check", "rate_verdict",
           "registered_check_ids", "results_payload", "run_checks", "scalar_params", "select", "id_matches",
           "simulation_text", "summarize",
           "write_json", "cached_symbolic", "expr_from_srepr", "symbolic_part", "logged_runs", "run_check", "run_label",
           "unusable_runs", "Certification", "CertifiedAssumption", "certificate_text", "certify", "certify_assumptions",
           "register_rate_check", "run_settings", "cited_lines", "shared_lines", "REGIME_FRACTION",
           "in_training_regime", "training_regime", "additive_terms", "term_tightness"]
