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

from .results import (EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FINDING_CLASSES, FINDINGS, KINDS, SCOPES,
                      VERDICTS, CheckResult, errors, exit_code, finding_class_of, group_findings, scalar_params)
from .session import PROFILES, Session
from .registry import (CONTROLLED_KINDS, CheckSpec, Control, all_checks, check, check_spec, checks_of, id_matches,
                       record_row_filter, register_spec, registered_check_ids, select)
from .comparisons import compare_mean, compare_rounds, holm_reject
from .rounding import ROUNDING_RTOL, ROUNDING_SCALES, rounding_scale_of, rounding_tolerance
from .symbolic_cache import cached_symbolic, expr_from_srepr, symbolic_part
from .execution import CheckTiming, check_timings, checked_rows
from .controls import ControlOutcome, run_control, run_controls
from .output import (LOOSE_FACTOR, cited_lines, format_table, format_timings, print_results, results_payload, row_marks,
                     shared_lines, simulation_text, summarize, summarize_findings, write_json)
from .certification import (Certification, CertifiedAssumption, certificate_text, certify, certify_assumptions,
                            run_settings)
from .logged_runs import (REGIME_FRACTION, in_training_regime, logged_runs, run_check, run_label,  # registers empirical.runs
                          training_regime, unusable_runs)
from .robustness import FRAGILE_WITHIN, finding_robustness, robustness, robustness_text, sweep
from .run import run_checks
from .dimensions import register_units_checks, units_result, units_rows  # registers PAPER.units for every paper
from .trivial_bounds import TRIVIAL_BOUNDS, TrivialBound, trivial_bound_of
from .terms import additive_terms, term_tightness
from .bounds import assess_bound
from .rates import faster_order, fit_rate, rate_check, rate_verdict, register_rate_check
from .claims import Comparison, Equivalence, StatsPolicy, claim_result
from .identities import identity_result
from .readings import combine_readings

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
