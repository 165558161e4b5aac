"""Verdict helpers every paper's checks use (public API): assess a bound, report an identity or a claim, run a
symbolic rate check, fit a measured rate."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from .._validation import ParameterError
from ..theory.core import Bound, Claim, Identity, OrderStatement
from ..theory.rates import check_order
from .base import CheckResult, cached_symbolic, compare_mean, compare_rounds


def scalar_params(values: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar numeric entries of ``values`` as floats (what a result's ``params`` records)."""
    out = {}
    for k, v in values.items():
        a = np.asarray(v)
        if a.ndim == 0 and np.issubdtype(a.dtype, np.number):
            out[k] = int(a) if np.issubdtype(a.dtype, np.integer) else float(a)
    return out


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
    self_check: bool = False,
) -> CheckResult:
    """Evaluate ``bound`` at each candidate set of values (e.g. one per valid (G, B) pair); keep the
    smallest bound among the candidates whose conditions hold (each is a valid instance of the
    theorem, so their minimum is too), and compare the measurement with it.

    measured_runs: per-run values (R,) for a scalar bound; for ``per_round`` bounds a callable
    values -> (lhs (rounds, R), rhs (rounds, R)) because the right side depends on measurements.
    A candidate may give some values per run (arrays of length R, e.g. a measured sum over rounds that the
    statement contains); the bound is then compared run by run and its mean is reported.
    settings: structural settings of the run, checked against ``bound.requires``; required when the bound
    has ``requires`` (a statement's structural premises are never skipped silently).
    trivial_bound: a bound of the left side that needs no theorem (the loss range U for a stability gap,
    f(w^0) - f* for an optimization error, the measure's value at t = 0 for a monotone one); the result is
    flagged ``vacuous`` when the bound exceeds it (for per-round bounds: at every round).
    self_check: the comparison is a tautology of the encoding (e.g. Remark 2: eq. (7) minus MoFedSAM's bound is a
    sum of non-negative terms), an implementation self-check rather than a test of the paper.
    """
    cid = check_id or bound.id
    if bound.requires and settings is None:
        raise ParameterError("settings", None, f"a mapping of the run's structural settings: {bound.id} requires "
                             + ", ".join(f"{k}={v!r}" for k, v in bound.requires.items()))
    failed_struct = [f"requires {k}={v} (run has {settings.get(k)!r})" for k, v in bound.requires.items()
                     if settings is not None and settings.get(k) != v]
    best: tuple[float, Mapping, Any] | None = None
    fewest: list[str] | None = None
    for vals in candidates:
        failed = failed_struct + bound.conditions_failed(vals)
        if failed:
            if fewest is None or len(failed) < len(fewest):
                fewest, fewest_vals = failed, vals
            continue
        if per_round:
            lhs, rhs = measured_runs(vals)
            slack = np.asarray(rhs, float).mean(axis=1) - np.asarray(lhs, float).mean(axis=1)
            slack = slack[np.isfinite(slack)]
            key = float(slack.min()) if slack.size else -math.inf  # a diverged candidate is the least favourable
            cand = (-key, vals, (lhs, rhs))  # keep the candidate with the largest worst-round slack
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
                                  (f". {detail}" if detail else ""))
    _, vals, payload = best
    vacuous = False
    if per_round:
        lhs, rhs = payload
        verdict, info = compare_rounds(lhs, rhs)
        if trivial_bound is not None:
            with np.errstate(invalid="ignore"):
                rm = np.asarray(rhs, float).mean(axis=1)
            vacuous = bool(np.all(np.isfinite(rm)) and np.min(rm) > trivial_bound)
    else:
        verdict, info = compare_mean(np.asarray(measured_runs, float), payload)
        if trivial_bound is not None and info.get("bound") is not None and np.isfinite(info["bound"]):
            vacuous = bool(info["bound"] > trivial_bound)
    if info.get("detail"):
        detail = info["detail"] + (f". {detail}" if detail else "")
    if vacuous:
        detail = (detail + ". " if detail else "") + (f"vacuous: the bound exceeds the trivial bound "
                                                       f"{trivial_bound:.4g} of its left side")
    return CheckResult(cid, bound.paper, "bound", verdict, measured=info.get("measured"), bound=info.get("bound"),
                       ratio=info.get("ratio"), problem=problem, params={**base_params, **scalar_params(vals)},
                       source=bound.source, detail=detail, extra={k: v for k, v in info.items()
                                                                   if k not in ("measured", "bound", "ratio")},
                       vacuous=vacuous, trivial_bound=trivial_bound, self_check=self_check,
                       family_size=info.get("family_size"),
                       seeds=info.get("runs"), quote=bound.quote)


def rate_key(explicit, order, conditions) -> list[str]:
    """The exact text a symbolic rate check's result is cached under."""
    return [sp.srepr(explicit), sp.srepr(order.expr), sp.srepr(order.variable), repr(sorted(map(str, order.choice.items()))),
            repr(sorted(map(str, order.substitute.items()))), repr(order.up_to_log), repr([s.name for s in order.track]),
            repr([sp.srepr(c.relation) for c in conditions])]


def rate_inputs(record):
    """(explicit bound, stated order, expanded conditions) of a Bound with an order, or an OrderStatement."""
    from dataclasses import replace as _replace

    bound = record.explicit if isinstance(record, OrderStatement) else record
    return (bound.expanded(), record.order, [_replace(c, relation=bound.expanded(c.relation)) for c in bound.conditions])


def rate_check(record: Bound | OrderStatement, *, check_id: str | None = None) -> CheckResult:
    """Symbolic: substitute the stated choice into the explicit bound and compare term by term."""
    explicit, order, conditions = rate_inputs(record)

    def compute():
        rep = check_order(explicit, order, conditions=conditions)
        return rep.as_dict()

    rep = cached_symbolic(rate_key(explicit, order, conditions), compute)
    missed = rep["missed"]
    choice = ", ".join(f"{k} = {sp.sstr(v)}" for k, v in order.choice.items()) or "as stated"
    if rep["verdict"] == "rate_consistent":
        detail = f"every term of the explicit bound is covered by O({sp.sstr(order.expr)}) under {choice}"
    elif rep["verdict"] == "rate_inconsistent":
        lines = []
        for t in rep["bound_terms"]:
            if t["covered_by"] is None:
                ex = ", ".join(f"{k}^{v}" for k, v in t["exponents"].items())
                lines.append(f"{t['term']}  [T^{t['T_power']} log^{t['log_power']}" + (f"; {ex}" if ex else "") + "]")
        detail = (f"{len(missed)} term(s) not covered by O({sp.sstr(order.expr)}) under {choice}: " + " | ".join(lines))
    else:
        detail = rep["detail"]
    fails = [f"{k}: {v}" for k, v in rep["conditions"].items() if v == "eventually fails"]
    if fails:
        detail += ". Under the stated choice these conditions fail for large T: " + "; ".join(fails)
    return CheckResult(check_id or record.id + ".rate", record.paper, "symbolic", rep["verdict"], source=order.source or record.source,
                       detail=detail, extra={"leading": rep["leading"], "terms": rep["bound_terms"],
                                             "stated_terms": rep["stated_terms"], "conditions": rep["conditions"]},
                       params={"choice": choice, "up_to_log": order.up_to_log})


def identity_result(identity: Identity, residual: float, *, check_id: str | None = None, problem: Any = None,
                    params: Mapping[str, Any] | None = None, detail: str = "", ok: bool | None = None,
                    **fields: Any) -> CheckResult:
    """The verdict of an identity from its measured residual: ``holds`` when ``residual <= identity.tolerance``
    (the tolerance lives on the record), ``violated`` otherwise; a non-finite residual is ``violated``.

    ok: an extra requirement the check adds (e.g. 'defined at every round'); ``fields``: CheckResult's scope
    fields (finding, scope, self_check, extra, ...).
    """
    res = float(residual)
    holds = bool(np.isfinite(res) and res <= identity.tolerance) and (ok is None or bool(ok))
    return CheckResult(check_id or identity.id, identity.paper, "identity", "holds" if holds else "violated",
                       measured=res, bound=identity.tolerance, problem=problem, params=dict(params or {}),
                       source=identity.source, quote=getattr(identity, "quote", ""),
                       detail=detail or f"residual {res:.3g} (tolerance {identity.tolerance:g})", **fields)


def claim_result(claim: Claim, measurements: Mapping[str, Any], *, check_id: str | None = None, problem: Any = None,
                 params: Mapping[str, Any] | None = None, detail: str = "") -> CheckResult:
    """Evaluate a Claim's predicate on ``measurements``: supported / refuted / inconclusive (None)."""
    out = claim.evaluate(measurements)
    verdict = {True: "claim_supported", False: "claim_refuted", None: "inconclusive"}[out.supported]
    return CheckResult(check_id or claim.id, claim.paper, "claim", verdict, measured=out.measured, problem=problem,
                       params=dict(params or {}), source=claim.source,
                       detail=out.detail + (f". {detail}" if detail else ""),
                       extra={"decision_rule": claim.parameters}, quote=claim.quote)


def fit_rate(xs: np.ndarray, per_run: np.ndarray, n_boot: int = 400, seed: int = 0) -> tuple[float, float, float]:
    """Slope of log(mean_y) on log(x), with a 95% bootstrap interval over runs (per_run: (len(xs), R))."""
    xs = np.log(np.asarray(xs, float))
    Y = np.asarray(per_run, float)
    slope = np.polyfit(xs, np.log(Y.mean(axis=1)), 1)[0]
    rng = np.random.default_rng(seed)
    R = Y.shape[1]
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, R, R)
        boots.append(np.polyfit(xs, np.log(Y[:, idx].mean(axis=1)), 1)[0])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(slope), float(lo), float(hi)


def rate_verdict(slope: float, lo: float, hi: float, stated: float) -> str:
    """A stated upper-bound order T^stated is contradicted only when the measured decay is
    significantly slower: the whole interval lies above the stated exponent."""
    return "rate_inconsistent" if lo > stated else "rate_consistent"
