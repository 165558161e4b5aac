"""A bound's verdict: :func:`assess_bound` (a Bound over candidate values, the smallest valid one, against per-run
or per-round measurements), phase by phase: certification, candidate selection, comparison, vacuity, rule 8's
rescaled instance, robustness, term-wise tightness."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._validation import ParameterError
from ..theory.core import Bound, MissingValuesError, standing_in
from .certification import Certification
from .comparisons import compare_mean, compare_rounds
from .rescaling import rescaled_test, verdict_before
from .results import CheckResult, scalar_params
from .rounding import rounding_scale_of
from .series import round_series
from .terms import terms_extra
from .trivial_bounds import trivial_bound_of

__all__ = ["assess_bound"]


def _bound_labels(bound: Bound) -> dict[str, str]:
    """What a report labels a bound's figure with: the record's title and its left side's name."""
    return {k: v for k, v in (("title", bound.title), ("lhs", bound.lhs), ("lhs_description", bound.lhs_description))
            if v}


def _tightest_ratio(lhs: np.ndarray, rhs: np.ndarray) -> float:
    """min over rounds of mean rhs / mean lhs: 0 where the measurement diverged under a finite bound, +inf where
    the bound is not finite (a round with no information); a round with mean lhs <= 0 binds (0) only where the
    bound is below it."""
    lhs = np.asarray(lhs, float)
    rhs = np.broadcast_to(np.asarray(rhs, float), lhs.shape)
    m_l, m_r = lhs.mean(axis=1), rhs.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(m_l > 0, m_r / m_l, np.where(m_r < m_l, 0.0, np.inf))
        r = np.where(~np.isfinite(m_r), np.inf, np.where(~np.isfinite(m_l), 0.0, r))
    return float(np.min(r)) if r.size else math.inf


def assess_bound(
    bound: Bound,
    candidates: Sequence[Mapping[str, Any]],
    measured_runs: np.ndarray | Callable[[Mapping[str, Any]], tuple[np.ndarray, np.ndarray]],
    *,
    check_id: str | None = None,
    problem: Any = None,
    params: Mapping[str, Any] | None = None,
    detail: str = "",
    per_round: bool = False,
    settings: Mapping[str, Any] | None = None,
    trivial_bound: float | None = None,
    trivial: Mapping[str, Any] | None = None,
    self_check: bool = False,
    rounds: Sequence[float] | None = None,
    round_name: str = "round",
    certification: Certification | None = None,
    units_reading: Mapping[str, str] | None = None,
    rederive: Callable[[dict], dict] | None = None,
    robustness: bool = True,
    terms: bool = True,
) -> CheckResult:
    """Evaluate ``bound`` at each candidate set of values (e.g. one per valid (G, B) pair); keep the
    smallest bound among the candidates whose conditions hold (each is a valid instance of the
    theorem, so their minimum is too), and compare the measurement with it. For ``per_round`` bounds the
    kept candidate is the one whose tightest round has the smallest ratio mean bound / mean measured (a
    diverged one first): the least favourable valid instance of the statement is the one tested.

    measured_runs: per-run values (R,) for a scalar bound; for ``per_round`` bounds a callable
    values -> (lhs (rounds, R), rhs (rounds, R)) because the right side depends on measurements.
    A candidate may give some values per run (arrays of length R, e.g. a measured sum over rounds that the
    statement contains); the bound is then compared run by run and its mean is reported.
    settings: structural settings of the run, checked against ``bound.requires``; required when the bound
    has ``requires`` (a statement's structural premises are never skipped silently).
    trivial: the run quantities (``TrivialBound.needs`` of the record's ``lhs_kind``, e.g. L and
    visited_max_dist2, per run or scalar) from which the left side's trivial bound is computed by rule
    (``TRIVIAL_BOUNDS``); the result is flagged ``vacuous`` when the bound exceeds it (per-round bounds: at every
    round). trivial_bound: a number the check computed itself instead (it must be valid for the run). With neither,
    the row says that its vacuity is unknown (``extra['vacuity']``).
    self_check: the comparison is a tautology of the encoding (e.g. Remark 2: eq. (7) minus MoFedSAM's bound is a
    sum of non-negative terms), an implementation self-check rather than a test of the paper.
    rounds, round_name: per-round bounds: what each compared row is in the paper's terms (e.g. the paper's T of
    every row, round_name 'T'); the row's note then names the failing rounds by it, and the report's figure uses it
    as its x axis (default: row i is round i + 1).
    certification: what the run certifies of the bound's assumptions (``fedtheory.checks.certify``); required when
    the bound states assumptions (they are checked, not declared). An assumption not certified makes the row
    ``not_applicable`` naming it; the certified constants fill the candidates' missing symbols, and a candidate
    whose values the certificates do not admit (an L below the certified one) is excluded like one whose
    conditions fail. A row resting on constants certified on the visited region only says so.
    units_reading, rederive: a bound inconsistent in units under every reading (docs/verdict-rules.md, rule 8) that
    holds on the run is also decided on the run rescaled so that its inconsistent terms shrink (the same run in other
    units: ``units_check.rescaled_values``); violated there, the row is ``violated`` (false as stated, the rescaled
    instance in ``extra['rescaled_instance']``, the units finding's key). units_reading: the unit reading of each
    symbol with several (e.g. {'eta_g': 'B'}) that the run realises; rederive: the values a check derives from others
    (C = C_max), recomputed on the rescaled values. robustness: a row false on a rescaled instance states how robust
    that is (the units swept, ``checks.robustness``); False skips the sweep (a check sweeping its own free choices
    calls assess_bound once per value). terms: each additive term of the bound at the compared point in
    ``extra['terms']`` (``additive_terms``; term-wise tightness, ``term_tightness``); a per-round bound's terms are
    evaluated at the values the check's ``measured_runs`` passed to the bound (``record_evaluations``).
    """
    cid = check_id or bound.id
    if bound.assumptions and certification is None:
        certification = _certified_from_last_simulation(bound, measured_runs if per_round else None, candidates)
    if bound.assumptions and certification is None:
        raise ParameterError("certification", None, f"the run's certification of {bound.id}'s assumptions "
                             f"({', '.join(bound.assumptions)}): fedtheory.checks.certify(record, problem=..., "
                             "oracle=..., ...); assumptions are checked, not declared")
    cert_extra = {"certificates": certification.summary()} if certification is not None else {}
    if certification is not None and not certification.applicable:
        failures = certification.failures
        vals = candidates[0] if candidates else {}
        excluded = _conditions_exclude_all(bound, [certification.fill(c) for c in candidates])
        text = "assumption not certified on this run: " + "; ".join(failures)
        if excluded:  # the statement's own conditions exclude the setting too: say that first
            text = "conditions exclude every tested setting: " + "; ".join(excluded) + "; and " + text
        return CheckResult(cid, bound.paper, "bound", "not_applicable", conditions_failed=excluded + failures,
                           problem=problem, params={**dict(params or {}), **scalar_params(vals)}, source=bound.source,
                           detail=text + (f". {detail}" if detail else ""), extra={**_bound_labels(bound), **cert_extra})
    if certification is not None:
        needed = set(bound.parameters())
        candidates = [{**{k: v for k, v in certification.fill(c).items() if k in needed or k in c}} for c in candidates]
    if bound.requires and settings is None:
        raise ParameterError("settings", None, f"a mapping of the run's structural settings: {bound.id} requires "
                             + ", ".join(f"{k}={v!r}" for k, v in bound.requires.items()))
    failed_struct = [f"requires {k}={v} (run has {settings.get(k)!r})" for k, v in bound.requires.items()
                     if settings is not None and settings.get(k) != v]
    best: tuple[float, Mapping, Any] | None = None
    fewest: list[str] | None = None
    for vals in candidates:
        failed = failed_struct + (certification.admits(vals) if certification is not None else [])
        failed = failed + bound.conditions_failed(vals)
        if failed:
            if fewest is None or len(failed) < len(fewest):
                fewest, fewest_vals = failed, vals
            continue
        if per_round:
            lhs, rhs = measured_runs(vals)
            cand = (_tightest_ratio(lhs, rhs), vals, (lhs, rhs))  # keep the least favourable candidate
        else:
            b = np.asarray(bound.evaluate(vals), float)
            cand = (float(np.mean(b)), vals, float(b) if b.ndim == 0 else b)
        if best is None or cand[0] < best[0]:
            best = cand
    base_params = dict(params or {})
    if best is None:
        vals = fewest_vals if fewest is not None else (candidates[0] if candidates else {})
        return CheckResult(cid, bound.paper, "bound", "not_applicable", conditions_failed=fewest or ["no candidate values"],
                           problem=problem, params={**base_params, **scalar_params(vals)}, source=bound.source,
                           detail=("conditions exclude every tested setting: " + "; ".join(fewest or [])) +
                                  (f". {detail}" if detail else ""), extra={**_bound_labels(bound), **cert_extra})
    _, vals, payload = best
    vacuous = False
    formula = "(given by the check)"
    if trivial_bound is None:
        trivial_bound, formula = trivial_bound_of(bound, trivial)
    vacuity = formula if trivial_bound is None else ""
    scale, scale_text = rounding_scale_of(bound, trivial, certification)
    if per_round:
        lhs, rhs = payload
        labels = None
        if rounds is not None:
            labels = np.asarray(rounds, float).ravel()
            if labels.shape != (np.shape(lhs)[0],):
                raise ParameterError("rounds", labels.shape, f"one value per compared row ({np.shape(lhs)[0]})")
        verdict, info = compare_rounds(lhs, rhs, labels=labels, label=round_name, rounding_scale=scale)
        keep = [info[k] for k in ("tightest_round", "worst_round", "first_diverged_round") if k in info]
        info["series"] = round_series(lhs, rhs, keep=keep, labels=labels,
                                      label=round_name if labels is not None else "round t")  # what the report draws
        if trivial_bound is not None:
            with np.errstate(invalid="ignore"):
                rm = np.asarray(rhs, float).mean(axis=1)
            vacuous = bool(np.all(np.isfinite(rm)) and np.min(rm) > trivial_bound)
    else:
        verdict, info = compare_mean(np.asarray(measured_runs, float), payload, rounding_scale=scale)
        if trivial_bound is not None and info.get("bound") is not None and np.isfinite(info["bound"]):
            vacuous = bool(info["bound"] > trivial_bound)
    if "rounding" in info:  # a negative gap counted as equality: what the tolerance was formed from
        info["rounding"]["scale_formula"] = scale_text
        info["detail"] += f" (rounding scale {scale_text})"
    term_rows = None
    if terms and robustness and verdict in ("holds", "violated") and standing_in(bound) is bound:
        if per_round:
            from ..theory.core import record_evaluations

            with record_evaluations() as log:
                measured_runs(vals)
            logged = log.get(bound.id) or []
            if logged and "tightest_round" in info:
                term_rows = terms_extra(bound, logged[-1], info.get("measured"), info.get("bound"),
                                         row=int(info["tightest_round"]), shape=np.shape(payload[0]))
        else:
            term_rows = terms_extra(bound, vals, info.get("measured"), info.get("bound"))
    rescaled = None
    if verdict in ("holds", "inconclusive"):
        rescaled = rescaled_test(bound, vals, measured_runs, per_round, units_reading, rederive,
                                  labels if per_round else None, round_name, sweep_units=robustness,
                                  rounding_scale=scale)
    if info.get("detail"):
        detail = info["detail"] + (f". {detail}" if detail else "")
    finding, finding_class = "", ""
    if verdict == "violated":  # rule 8: the run as measured escalates a units erratum to false as stated
        from .units_check import units_consequence

        cons = units_consequence(bound, units_reading)
        if cons is not None:
            finding, finding_class = cons["finding"], "false_as_stated"
            detail = (f"rule 8 (inconsistent in units under every reading; finding {cons['finding']}): false as "
                      "stated on the run as measured (no rescaling). " + detail)
    rob_extra = None
    if rescaled is not None and rescaled.get("verdict") == "violated":
        original = {k: info.get(k) for k in ("measured", "bound", "ratio")}
        verdict, finding, finding_class = "violated", rescaled["finding"], "false_as_stated"
        info = {**info, **rescaled.pop("info")}
        vacuous = False
        from .robustness import robustness

        rob_extra = robustness(rescaled["margin"], (f"bound {100 * rescaled['margin']:.3g}% below the measurement at "
                                                    "the tightest horizon, on the rescaled instance")
                               if rescaled["margin"] is not None else "", [rescaled.pop("shrink_sweep")])
        detail = rescaled["text"] + f". On the run as measured: {verdict_before(original)}. " + detail
    elif rescaled is not None:
        detail = (detail + ". " if detail else "") + rescaled["text"]
    if vacuous:
        detail = (detail + ". " if detail else "") + (f"vacuous: the bound exceeds the trivial bound "
                                                       f"{trivial_bound:.4g} of its left side, {formula}")
    visited_note = certification.note() if certification is not None else ""
    if visited_note:
        detail = (detail + ". " if detail else "") + visited_note
    extra = {**{k: v for k, v in info.items() if k not in ("measured", "bound", "ratio")}, **_bound_labels(bound),
             **cert_extra}
    if visited_note:
        extra["visited_only"] = certification.visited_only
    extra["vacuity"] = vacuity or ("vacuous" if vacuous else "informative")
    if trivial_bound is not None:
        extra["trivial_bound_formula"] = formula
    if rescaled is not None:
        extra["rescaled_instance" if rob_extra is not None else "rescaled"] = {k: v for k, v in rescaled.items()
                                                                               if k != "text"}
    if rob_extra is not None:
        extra["robustness"] = rob_extra
    if term_rows is not None:
        extra["terms"] = term_rows
        extra["terms_record"] = bound.id
    return CheckResult(cid, bound.paper, "bound", verdict, measured=info.get("measured"), bound=info.get("bound"),
                       ratio=info.get("ratio"), problem=problem, params={**base_params, **scalar_params(vals)},
                       source=bound.source, detail=detail, extra=extra,
                       vacuous=vacuous, trivial_bound=trivial_bound, self_check=self_check,
                       family_size=info.get("family_size"),
                       seeds=info.get("runs"), quote=bound.quote, finding=finding, finding_class=finding_class)


def _conditions_exclude_all(bound: Bound, candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fewest failed conditions when every candidate fails some (values a condition needs but the candidate lacks
    count as unknown, not failed); [] when some candidate meets them all or none can be evaluated."""
    fewest = None
    for vals in candidates:
        try:
            failed = bound.conditions_failed(vals)
        except MissingValuesError:
            return []
        if not failed:
            return []
        if fewest is None or len(failed) < len(fewest):
            fewest = failed
    return fewest or []


def _certified_from_last_simulation(bound, measure: Callable | None, candidates) -> Certification | None:
    """A check of the previous release passed no ``certification=``: its bound is certified from the problem, oracle,
    algorithm and client sampling of the check's last simulation (the run it just made; a per-round check that
    simulates inside its ``measure`` callable is measured first, its simulations memoized), with a deprecation
    warning saying what to write instead; None where the check simulated nothing."""
    import warnings

    from .._validation import FedTheoryDeprecationWarning
    from ..sim.engine import last_simulation
    from .certification import certify

    run = last_simulation()
    if run is None and measure is not None and candidates:
        measure(candidates[0])
        run = last_simulation()
    if run is None:
        return None
    warnings.warn(f"{bound.id}: assess_bound without certification= is deprecated since 0.2 (assumptions are checked, "
                  "not declared): certified from the problem, oracle and sampling of the check's last simulation (the "
                  "row lists the certificates); pass certification=fedtheory.checks.certify(record, problem=..., "
                  "oracle=..., sampling=...) (docs/extending.md, Assumptions)", FedTheoryDeprecationWarning,
                  stacklevel=3)
    return certify(bound, **run)
