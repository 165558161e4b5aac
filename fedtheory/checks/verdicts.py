"""Verdict helpers every paper's checks use (public API): assess a bound, report an identity or a claim, run a
symbolic rate check, fit a measured rate."""
from __future__ import annotations

import math
import warnings
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


SERIES_POINTS = 60  # at most this many points per stored series (log-spaced over the rounds)


def _sig(v: float, digits: int = 5) -> float | None:
    """``v`` rounded to ``digits`` significant digits; None when not finite (a gap in a drawn series)."""
    v = float(v)
    return float(f"{v:.{digits}g}") if math.isfinite(v) else None


def round_series(lhs: np.ndarray, rhs: np.ndarray, max_points: int = SERIES_POINTS,
                 keep: Sequence[int] = ()) -> dict[str, Any]:
    """The per-round series a report draws, from (rounds, runs) arrays: ``x`` the rounds (row i is round i + 1),
    log-spaced down to at most ``max_points`` (the first and last round and the rows in ``keep`` always kept),
    ``measured`` / ``measured_se`` the mean of the left side over runs and its standard error, ``bound`` the mean
    right side; floats to 5 significant digits, non-finite values as None (JSON null)."""
    lhs = np.asarray(lhs, float)
    rhs = np.broadcast_to(np.asarray(rhs, float), lhs.shape)
    n, runs = lhs.shape
    keep = sorted({int(k) for k in keep if 0 <= int(k) < n})
    budget = max(2, max_points - len(keep))
    if n <= budget:
        idx = np.arange(n)
    else:  # log-spaced rows; more candidates until the distinct ones fill the budget
        k = budget
        while True:
            idx = np.unique(np.round(np.geomspace(1, n, k)).astype(int) - 1)
            if idx.size >= budget or k > 4 * n:
                break
            k += 1
        idx = idx if idx.size <= budget else idx[np.unique(np.round(np.linspace(0, idx.size - 1, budget)).astype(int))]
    idx = np.unique(np.concatenate([idx, np.asarray(keep, int)])).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = lhs[idx].mean(axis=1)
        se = lhs[idx].std(axis=1, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros(idx.size)
        b = rhs[idx].mean(axis=1)
    return {"x": [int(i) + 1 for i in idx], "measured": [_sig(v) for v in m], "measured_se": [_sig(v, 3) for v in se],
            "bound": [_sig(v) for v in b], "x_label": "round t", "runs": int(runs)}


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
    self_check: bool = False,
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
                                  (f". {detail}" if detail else ""), extra=_bound_labels(bound))
    _, vals, payload = best
    vacuous = False
    if per_round:
        lhs, rhs = payload
        verdict, info = compare_rounds(lhs, rhs)
        keep = [info[k] for k in ("tightest_round", "worst_round", "first_diverged_round") if k in info]
        info["series"] = round_series(lhs, rhs, keep=keep)  # what `fedtheory report` draws
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
                       source=bound.source, detail=detail, extra={**{k: v for k, v in info.items()
                                                                      if k not in ("measured", "bound", "ratio")},
                                                                   **_bound_labels(bound)},
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


_X_KEYS = ("beta", "K", "x", "bits", "lam", "T", "eta", "E")


def compact_measurements(measurements: Mapping[str, Any], max_points: int = SERIES_POINTS,
                         max_series: int = 8) -> dict[str, Any]:
    """A small, drawable summary of a claim's measurements (what `fedtheory report` plots): the swept
    variable ``x`` (the first of beta, K, x, bits, lam, T, eta, E given as a 1-D numeric array, else the index
    0, 1, ...) and, for each other numeric measurement, its values along it: a 1-D array as it is, a 2-D
    array (points, runs) as the mean over runs with its standard error; scalars as they are. Long axes are
    thinned to ``max_points`` (evenly, ends kept); floats to 5 significant digits; at most ``max_series``
    series. Non-numeric or ragged entries are left out."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, float] = {}
    for k, v in measurements.items():
        try:
            a = np.asarray(v, float)
        except (TypeError, ValueError):
            continue
        if a.ndim == 0:
            scalars[k] = _sig(a)
        elif a.ndim <= 2 and a.size:
            arrays[k] = a
    xkey = next((k for k in _X_KEYS if k in arrays and arrays[k].ndim == 1 and arrays[k].size > 1), None)
    out: dict[str, Any] = {"x_label": xkey or "index", "series": {}}
    n = arrays[xkey].size if xkey else None
    for k, a in arrays.items():
        if k == xkey or len(out["series"]) >= max_series:
            continue
        if n is not None and a.shape[0] != n:
            continue
        if n is None and a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN, drawn as a gap
            mean = a if a.ndim == 1 else np.nanmean(a, axis=1) if np.isfinite(a).any() else a[:, 0]
            se = None if a.ndim == 1 or a.shape[1] < 2 else np.nanstd(a, axis=1, ddof=1) / np.sqrt(a.shape[1])
        out["series"][k] = {"y": mean, "se": se}
    if not out["series"] and not scalars:
        return {}
    length = n or max((v["y"].size for v in out["series"].values()), default=0)
    idx = np.arange(length) if length <= max_points else np.unique(np.round(np.linspace(0, length - 1, max_points)).astype(int))
    x = arrays[xkey][idx] if xkey else idx.astype(float)
    out["x"] = [_sig(v) for v in x]
    for k, v in list(out["series"].items()):
        y = v["y"]
        if y.size != length:  # without a swept variable, only series of the common length are drawn together
            del out["series"][k]
            continue
        out["series"][k] = {"y": [_sig(t) for t in y[idx]]}
        if v["se"] is not None:
            out["series"][k]["se"] = [_sig(t, 3) for t in v["se"][idx]]
    if scalars:
        out["scalars"] = scalars
    return out


def claim_result(claim: Claim, measurements: Mapping[str, Any], *, check_id: str | None = None, problem: Any = None,
                 params: Mapping[str, Any] | None = None, detail: str = "") -> CheckResult:
    """Evaluate a Claim's predicate on ``measurements``: supported / refuted / inconclusive (None)."""
    out = claim.evaluate(measurements)
    verdict = {True: "claim_supported", False: "claim_refuted", None: "inconclusive"}[out.supported]
    return CheckResult(check_id or claim.id, claim.paper, "claim", verdict, measured=out.measured, problem=problem,
                       params=dict(params or {}), source=claim.source,
                       detail=out.detail + (f". {detail}" if detail else ""),
                       extra={"decision_rule": claim.parameters, "statement": claim.statement,
                              "measurements": compact_measurements(measurements)}, quote=claim.quote)


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
