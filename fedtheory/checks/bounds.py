"""A bound's verdict: :func:`assess_bound` (a Bound over candidate values, the smallest valid one, against per-run
or per-round measurements), phase by phase: certification, candidate selection, comparison, vacuity, rule 8's
rescaled instance, robustness, term-wise tightness."""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._validation import FedTheoryDeprecationWarning, ParameterError
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
    """Decide a bound on a run: the least favourable valid instance of the statement against the measurement.

    ``bound`` is evaluated at each candidate set of values (e.g. one per valid (G, B) pair); the candidates whose
    conditions hold are each a valid instance of the theorem, so the smallest bound among them is too, and the
    measurement is compared with it. For ``per_round`` bounds the kept candidate is the one whose tightest round has
    the smallest ratio mean bound / mean measured (a diverged one first). The phases, in order: certification (the
    run certifies every assumption, or the row is ``not_applicable`` naming it), candidate selection, comparison
    (``compare_mean`` / ``compare_rounds``, a gap within the rounding tolerance is equality), vacuity, rule 8's
    rescaled instance with its robustness, term-wise tightness.

    Parameters
    ----------
    bound : Bound
        The record.
    candidates : sequence of mappings
        Values of the bound's symbols, one mapping per candidate. A candidate may give some values per run (arrays
        of length R, e.g. a measured sum over rounds that the statement contains); the bound is then compared run
        by run and its mean is reported.
    measured_runs : array or callable
        Per-run values of the left side, shape (R,), for a scalar bound; for ``per_round`` bounds a callable
        values -> (lhs (rounds, R), rhs (rounds, R)), because the right side depends on measurements.
    check_id, problem, params, detail : optional
        The row's id (default: the record's), problem, parameters and a note appended to its detail.
    per_round : bool
        Compare round by round (``compare_rounds``, Holm-Bonferroni over the rounds) instead of per run.
    settings : mapping, optional
        Structural settings of the run, checked against ``bound.requires``; required when the bound has
        ``requires`` (a statement's structural premises are never skipped silently).
    trivial : mapping, optional
        The documented way to give the left side's trivial bound: the run quantities it is computed from by rule
        (``TRIVIAL_BOUNDS[bound.lhs_kind].needs``, e.g. L and visited_max_dist2, per run or scalar). The row is
        flagged ``vacuous`` when the bound exceeds it (per-round bounds: at every round); without it the row says
        that its vacuity is unknown (``extra['vacuity']``). The same quantities give the rounding scale
        (``rounding_scale_of``).
    trivial_bound : float, optional
        Deprecated (a FedTheoryDeprecationWarning; removed in 0.3): a trivial bound the check computed itself
        (it must be valid for the run); it replaces the one ``trivial`` gives. Pass ``trivial=`` instead.
    self_check : bool
        The comparison is a tautology of the encoding (e.g. Remark 2: eq. (7) minus MoFedSAM's bound is a sum of
        non-negative terms), an implementation self-check rather than a test of the paper.
    rounds, round_name : optional
        Per-round bounds: what each compared row is in the paper's terms (e.g. the paper's T of every row,
        round_name 'T'); the row's note then names the failing rounds by it, and the report's figure uses it as
        its x axis (default: row i is round i + 1).
    certification : Certification, optional
        What the run certifies of the bound's assumptions (``fedtheory.checks.certify``); required when the bound
        states assumptions (they are checked, not declared). An assumption not certified makes the row
        ``not_applicable`` naming it; the certified constants fill the candidates' missing symbols, and a
        candidate whose values the certificates do not admit (an L below the certified one) is excluded like one
        whose conditions fail. A row resting on constants certified on the visited region only says so.
    units_reading, rederive : optional
        A bound inconsistent in units under every reading (docs/verdict-rules.md, rule 8) that holds on the run
        is also decided on the run rescaled so that its inconsistent terms shrink (the same run in other units:
        ``units_check.rescaled_values``); violated there, the row is ``violated`` (false as stated, the rescaled
        instance in ``extra['rescaled_instance']``, the units finding's key). units_reading: the unit reading of
        each symbol with several (e.g. {'eta_g': 'B'}) that the run realises; rederive: the values a check
        derives from others (C = C_max), recomputed on the rescaled values.
    robustness : bool
        A row false on a rescaled instance states how robust that is (the units swept, ``checks.robustness``);
        False skips the sweep (a check sweeping its own free choices calls assess_bound once per value).
    terms : bool
        Each additive term of the bound at the compared point in ``extra['terms']`` (``additive_terms``; term-wise
        tightness, ``term_tightness``); a per-round bound's terms are evaluated at the values the check's
        ``measured_runs`` passed to the bound (``record_evaluations``).

    Returns
    -------
    CheckResult
        One row of kind 'bound': 'holds', 'violated', 'inconclusive' or 'not_applicable'.
    """
    if trivial_bound is not None:
        _warn_trivial_bound(bound)
    cid = check_id or bound.id
    if bound.assumptions and certification is None:  # here, so that its warning names the caller's line
        certification = _certified_from_last_simulation(bound, measured_runs if per_round else None, candidates)
    _require_certification(bound, certification)
    cert_extra = {"certificates": certification.summary()} if certification is not None else {}
    if certification is not None and not certification.applicable:
        return _not_certified_row(cid, bound, candidates, certification, problem, params, detail, cert_extra)
    candidates = _certified_candidates(bound, candidates, certification)
    best, fewest, fewest_vals = _least_favourable(bound, candidates, measured_runs, per_round,
                                                  _structural_failures(bound, settings), certification)
    base_params = dict(params or {})
    if best is None:
        return _excluded_row(cid, bound, candidates, fewest, fewest_vals, problem, base_params, detail, cert_extra)
    _, vals, payload = best
    trivial_bound, formula, vacuity = _trivial_bound(bound, trivial, trivial_bound)
    scale, scale_text = rounding_scale_of(bound, trivial, certification)
    verdict, info, labels = _compare(payload, measured_runs, per_round, rounds, round_name, scale)
    vacuous = _exceeds_trivial(payload, info, per_round, trivial_bound)
    if "rounding" in info:  # a negative gap counted as equality: what the tolerance was formed from
        info["rounding"]["scale_formula"] = scale_text
        info["detail"] += f" (rounding scale {scale_text})"
    term_rows = None
    if terms and robustness and verdict in ("holds", "violated") and standing_in(bound) is bound:
        term_rows = _compared_terms(bound, vals, payload, measured_runs, per_round, info)
    rescaled = None
    if verdict in ("holds", "inconclusive"):
        rescaled = rescaled_test(bound, vals, measured_runs, per_round, units_reading, rederive, labels, round_name,
                                 sweep_units=robustness, rounding_scale=scale)
    if info.get("detail"):
        detail = info["detail"] + (f". {detail}" if detail else "")
    finding, finding_class, detail = _rule8_as_measured(bound, verdict, units_reading, detail)
    rob_extra = None
    if rescaled is not None and rescaled.get("verdict") == "violated":
        verdict, finding, finding_class = "violated", rescaled["finding"], "false_as_stated"
        info, detail, rob_extra = _rescaled_violation(rescaled, info, detail)
        vacuous = False
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


# ------------------------------------------------------------------------------------ certification, applicability


def _warn_trivial_bound(bound: Bound) -> None:
    """``assess_bound(trivial_bound=)`` (a number the check computed) is the deprecated way; ``trivial=`` (the run
    quantities, the trivial bound computed by rule) is the documented one."""
    warnings.warn(f"{bound.id}: assess_bound(trivial_bound=) is deprecated since 0.2 and removed in 0.3: pass trivial= "
                  "the run quantities its trivial bound is computed from by rule (fedtheory.checks.TRIVIAL_BOUNDS"
                  f"[{getattr(bound, 'lhs_kind', '') or 'lhs_kind'}].needs; declare the record's lhs_kind)",
                  FedTheoryDeprecationWarning, stacklevel=3)


def _require_certification(bound: Bound, certification: Certification | None) -> None:
    """A bound that states assumptions is decided only with the run's certification of them."""
    if bound.assumptions and certification is None:
        raise ParameterError("certification", None, f"the run's certification of {bound.id}'s assumptions "
                             f"({', '.join(bound.assumptions)}): fedtheory.checks.certify(record, problem=..., "
                             "oracle=..., ...); assumptions are checked, not declared")


def _not_certified_row(cid: str, bound: Bound, candidates: Sequence[Mapping[str, Any]], certification: Certification,
                       problem: Any, params: Mapping[str, Any] | None, detail: str,
                       cert_extra: dict[str, Any]) -> CheckResult:
    """The 'not_applicable' row of a run that does not certify every assumption, naming each (and, first, the
    statement's own conditions where they exclude the setting too)."""
    failures = certification.failures
    vals = candidates[0] if candidates else {}
    excluded = _conditions_exclude_all(bound, [certification.fill(c) for c in candidates])
    text = "assumption not certified on this run: " + "; ".join(failures)
    if excluded:  # the statement's own conditions exclude the setting too: say that first
        text = "conditions exclude every tested setting: " + "; ".join(excluded) + "; and " + text
    return CheckResult(cid, bound.paper, "bound", "not_applicable", conditions_failed=excluded + failures,
                       problem=problem, params={**dict(params or {}), **scalar_params(vals)}, source=bound.source,
                       detail=text + (f". {detail}" if detail else ""), extra={**_bound_labels(bound), **cert_extra})


def _certified_candidates(bound: Bound, candidates: Sequence[Mapping[str, Any]],
                          certification: Certification | None) -> Sequence[Mapping[str, Any]]:
    """The candidates with the bound's missing symbols filled from the certified constants."""
    if certification is None:
        return candidates
    needed = set(bound.parameters())
    return [{**{k: v for k, v in certification.fill(c).items() if k in needed or k in c}} for c in candidates]


def _structural_failures(bound: Bound, settings: Mapping[str, Any] | None) -> list[str]:
    """The structural premises (``bound.requires``) the run's settings miss; settings are required when there are
    any."""
    if bound.requires and settings is None:
        raise ParameterError("settings", None, f"a mapping of the run's structural settings: {bound.id} requires "
                             + ", ".join(f"{k}={v!r}" for k, v in bound.requires.items()))
    return [f"requires {k}={v} (run has {settings.get(k)!r})" for k, v in bound.requires.items()
            if settings is not None and settings.get(k) != v]


# ------------------------------------------------------------------------------------ candidate selection


def _least_favourable(bound: Bound, candidates: Sequence[Mapping[str, Any]], measured_runs, per_round: bool,
                      failed_struct: list[str], certification: Certification | None
                      ) -> tuple[tuple[float, Mapping, Any] | None, list[str] | None, Mapping[str, Any] | None]:
    """(best, fewest, fewest_vals): best = (key, values, payload) of the least favourable valid candidate (the
    smallest mean bound; per round, the smallest tightest-round ratio), None when every candidate fails a condition;
    fewest: the failed conditions of the candidate that fails fewest, with its values."""
    best: tuple[float, Mapping, Any] | None = None
    fewest: list[str] | None = None
    fewest_vals = None
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
    return best, fewest, fewest_vals


def _excluded_row(cid: str, bound: Bound, candidates: Sequence[Mapping[str, Any]], fewest: list[str] | None,
                  fewest_vals: Mapping[str, Any] | None, problem: Any, base_params: dict[str, Any], detail: str,
                  cert_extra: dict[str, Any]) -> CheckResult:
    """The 'not_applicable' row when the conditions exclude every candidate (or there is none)."""
    vals = fewest_vals if fewest is not None else (candidates[0] if candidates else {})
    return CheckResult(cid, bound.paper, "bound", "not_applicable", conditions_failed=fewest or ["no candidate values"],
                       problem=problem, params={**base_params, **scalar_params(vals)}, source=bound.source,
                       detail=("conditions exclude every tested setting: " + "; ".join(fewest or [])) +
                              (f". {detail}" if detail else ""), extra={**_bound_labels(bound), **cert_extra})


# ------------------------------------------------------------------------------------ comparison, vacuity


def _compare(payload, measured_runs, per_round: bool, rounds: Sequence[float] | None, round_name: str,
             scale: float) -> tuple[str, dict, np.ndarray | None]:
    """(verdict, info, labels): the kept candidate against the measurement, per round (with the series the report
    draws; labels: the rows' names in the paper's terms, or None) or per run."""
    if not per_round:
        verdict, info = compare_mean(np.asarray(measured_runs, float), payload, rounding_scale=scale)
        return verdict, info, None
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
    return verdict, info, labels


def _trivial_bound(bound: Bound, trivial: Mapping[str, Any] | None,
                   given: float | None) -> tuple[float | None, str, str]:
    """(the trivial bound, its formula, why vacuity is unknown or ''): the one a check gave (deprecated) or the one
    computed by rule from the run quantities ``trivial``."""
    formula = "(given by the check)"
    if given is None:
        given, formula = trivial_bound_of(bound, trivial)
    return given, formula, formula if given is None else ""


def _exceeds_trivial(payload, info: dict, per_round: bool, trivial_bound: float | None) -> bool:
    """Vacuous: the bound exceeds the trivial bound (per round: at every round)."""
    if trivial_bound is None:
        return False
    if per_round:
        with np.errstate(invalid="ignore"):
            rm = np.asarray(payload[1], float).mean(axis=1)
        return bool(np.all(np.isfinite(rm)) and np.min(rm) > trivial_bound)
    return bool(info.get("bound") is not None and np.isfinite(info["bound"]) and info["bound"] > trivial_bound)


# ------------------------------------------------------------------------------------ terms


def _compared_terms(bound: Bound, vals: Mapping[str, Any], payload, measured_runs, per_round: bool,
                    info: dict) -> list[dict[str, Any]] | None:
    """Each additive term at the compared point (``terms_extra``); per round, at the values the check's
    ``measured_runs`` passed to the bound, at the tightest round."""
    if not per_round:
        return terms_extra(bound, vals, info.get("measured"), info.get("bound"))
    from ..theory.core import record_evaluations

    with record_evaluations() as log:
        measured_runs(vals)
    logged = log.get(bound.id) or []
    if logged and "tightest_round" in info:
        return terms_extra(bound, logged[-1], info.get("measured"), info.get("bound"),
                           row=int(info["tightest_round"]), shape=np.shape(payload[0]))
    return None


# ------------------------------------------------------------------------------------ rule 8, robustness


def _rule8_as_measured(bound: Bound, verdict: str, units_reading: Mapping[str, str] | None,
                       detail: str) -> tuple[str, str, str]:
    """(finding, finding_class, detail): rule 8, a violation on the run as measured escalates the bound's units
    erratum (inconsistent in units under every reading) to false as stated."""
    if verdict != "violated":
        return "", "", detail
    from .dimensions import units_consequence

    cons = units_consequence(bound, units_reading)
    if cons is None:
        return "", "", detail
    return cons["finding"], "false_as_stated", (
        f"rule 8 (inconsistent in units under every reading; finding {cons['finding']}): false as stated on the run as "
        "measured (no rescaling). " + detail)


def _rescaled_violation(rescaled: dict[str, Any], info: dict, detail: str) -> tuple[dict, str, dict[str, Any]]:
    """(info, detail, robustness) of a row violated on rule 8's rescaled instance: its numbers replace the run's
    (which the detail keeps), and the units swept say how robust that is."""
    from .robustness import robustness

    original = {k: info.get(k) for k in ("measured", "bound", "ratio")}
    info = {**info, **rescaled.pop("info")}
    rob_extra = robustness(rescaled["margin"], (f"bound {100 * rescaled['margin']:.3g}% below the measurement at "
                                                "the tightest horizon, on the rescaled instance")
                           if rescaled["margin"] is not None else "", [rescaled.pop("shrink_sweep")])
    detail = rescaled["text"] + f". On the run as measured: {verdict_before(original)}. " + detail
    return info, detail, rob_extra


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
    from ..sim.simulation_log import last_simulation
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
