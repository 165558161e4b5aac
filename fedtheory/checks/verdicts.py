"""Verdict helpers every paper's checks use (public API): assess a bound, report an identity or a claim, run a
symbolic rate check, fit a measured rate."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from .._validation import ParameterError
from ..theory.core import Bound, Claim, Identity, MissingValuesError, OrderStatement, StatedOrder, standing_in
from ..theory.rates import check_order
from .base import CheckResult, Control, cached_symbolic, check, compare_mean, compare_rounds
from .certification import Certification


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
                 keep: Sequence[int] = (), labels: Sequence[float] | None = None,
                 label: str = "round t") -> dict[str, Any]:
    """The per-round series a report draws, from (rounds, runs) arrays: ``x`` the rounds (row i is round i + 1; with
    ``labels``, row i is labels[i] and the axis is called ``label``, e.g. the paper's T),
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
    x = [int(i) + 1 for i in idx] if labels is None else [_sig(v) for v in np.asarray(labels, float)[idx]]
    return {"x": x, "measured": [_sig(v) for v in m], "measured_se": [_sig(v, 3) for v in se],
            "bound": [_sig(v) for v in b], "x_label": label, "runs": int(runs)}


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


# ------------------------------------------------------------------------------------ trivial bounds


@dataclass(frozen=True)
class TrivialBound:
    """A bound of a left side that needs no theorem, valid for the run it is computed from (stochastic runs
    included): ``formula`` in words, ``needs`` the run quantities a check supplies, ``value(quantities)``."""

    kind: str
    formula: str
    needs: tuple[str, ...]
    value: Callable[[Mapping[str, Any]], Any]


def _r2(q):
    return np.asarray(q["visited_max_dist2"], float)


# Keyed by ``Bound.lhs_kind``. R^2 = visited_max_dist2, the largest ||w - w*||^2 over every point the run visited
# (global models, every local iterate, local end points). With L-smoothness and grad f(w*) = 0:
# f(w) - f* <= (L/2)||w - w*||^2 and ||grad f(w)|| <= L ||w - w*||; two visited points are at most 2R apart.
TRIVIAL_BOUNDS: dict[str, TrivialBound] = {t.kind: t for t in (
    TrivialBound("opt_error", "(L/2) R^2: f(w) - f* <= (L/2)||w - w*||^2 at every visited point", ("L", "visited_max_dist2"),
                 lambda q: 0.5 * np.asarray(q["L"], float) * _r2(q)),
    TrivialBound("grad_norm2", "L^2 R^2: ||grad f(w)||^2 <= L^2 ||w - w*||^2 at every visited point",
                 ("L", "visited_max_dist2"), lambda q: np.asarray(q["L"], float) ** 2 * _r2(q)),
    TrivialBound("dist2", "R^2: the largest ||w - w*||^2 the run visited", ("visited_max_dist2",), _r2),
    TrivialBound("divergence", "4 R^2: a mean of ||a - b||^2 over visited points a, b (Delta^t, drift, "
                 "||w^{t+1} - w^t||^2)", ("visited_max_dist2",), lambda q: 4.0 * _r2(q)),
    TrivialBound("local_path", "4 K R^2: a sum over the K local steps of ||w_{i,k} - w^t||^2", ("K", "visited_max_dist2"),
                 lambda q: 4.0 * np.asarray(q["K"], float) * _r2(q)),
    TrivialBound("dist", "R: a distance ||w - w*|| of a visited point, or of an average of visited points (an agent "
                 "average xbar)", ("visited_max_dist2",), lambda q: np.sqrt(_r2(q))),
    TrivialBound("stacked_grad_norm", "sqrt(sum_i (||grad f_i(w*)|| + L_i R)^2): the stacked gradient [grad f_i(x_i)]_i "
                 "at visited points x_i (||grad f_i(x)|| <= ||grad f_i(w*)|| + L_i ||x - w*||)",
                 ("grad_norms_at_optimum", "L_clients", "visited_max_dist2"),
                 lambda q: np.sqrt(np.sum((np.asarray(q["grad_norms_at_optimum"], float)
                                           + np.asarray(q["L_clients"], float) * np.sqrt(_r2(q))) ** 2))),
    TrivialBound("deviation", "2 R: a distance ||a - b|| between two visited points (an agent's or a client's model and "
                 "the average: consensus_max, client_deviation_max)", ("visited_max_dist2",),
                 lambda q: 2.0 * np.sqrt(_r2(q))),
    TrivialBound("loss_range", "U: a loss in [0, U] (stability gaps, excess risk)", ("U",),
                 lambda q: np.asarray(q["U"], float)),
    TrivialBound("contraction", "1: ||W - 11^T/m||_op <= 1 for doubly stochastic mixing matrices and their products",
                 (), lambda q: np.asarray(1.0)),
    TrivialBound("initial_value", "the measure's value at t = 0, for a measure that cannot increase", ("initial",),
                 lambda q: np.asarray(q["initial"], float)),
)}


def trivial_bound_of(bound: Bound, quantities: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """The trivial bound of ``bound``'s left side from the run's ``quantities`` (mean over runs when per run), and
    its formula; (None, why) when the record declares no ``lhs_kind`` ('none': no trivial bound exists), the kind is
    unknown, or a needed quantity is missing or not finite."""
    kind = getattr(bound, "lhs_kind", "")
    if kind == "none":
        return None, "the left side has no trivial bound (lhs_kind 'none')"
    if not kind:
        return None, "vacuity unknown: the record declares no lhs_kind (fedtheory.checks.TRIVIAL_BOUNDS)"
    tb = TRIVIAL_BOUNDS.get(kind)
    if tb is None:
        return None, f"vacuity unknown: lhs_kind {kind!r} is not in fedtheory.checks.TRIVIAL_BOUNDS"
    missing = [n for n in tb.needs if quantities is None or n not in quantities]
    if missing:
        return None, f"vacuity unknown: the check supplies no {', '.join(missing)} for the trivial bound {tb.formula}"
    with np.errstate(all="ignore"):
        v = np.asarray(tb.value(quantities or {}), float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None, f"vacuity unknown: the trivial bound {tb.formula} is not finite on these runs"
    return float(np.mean(v)), tb.formula


# ------------------------------------------------------------------------------------ rounding scales


def _finite_max(v: Any) -> float | None:
    a = np.abs(np.asarray(v, float)).ravel()
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else None


def _problem_optimum(problem: Any) -> tuple[float | None, float | None]:
    """(|f*|, ||w*||) of a ``fedtheory.sim`` problem, None where it states none."""
    out = []
    for name, size in (("f_star", lambda v: abs(float(v))), ("w_star", lambda v: float(np.linalg.norm(v)))):
        try:
            out.append(size(problem.constants[name].value))
        except Exception:  # noqa: BLE001 - a problem without that constant (or one that cannot compute it)
            out.append(None)
    return out[0], out[1]


# How large the quantities are from which each kind of left side is computed, from the run's quantities: with
# R^2 = visited_max_dist2 every visited point lies in the ball of radius M = ||w*|| + R about 0, so its coordinates are
# of size M; a loss value there and the terms it is computed from (w'Hw/2, h'w, c for a quadratic) of size
# |f*| + L M^2; a gradient of size L M. A difference such as f(x_T) - f* or ||x_T - w*||^2 carries the rounding of
# those operands, whatever its own size (0 where the bound is attained at w*).
ROUNDING_SCALES: dict[str, tuple[str, Callable[[Mapping[str, Any]], float | None]]] = {
    "opt_error": ("|f*| + L M^2", lambda q: q["f_star"] + q["L"] * q["M"] ** 2),
    "grad_norm2": ("L^2 M^2", lambda q: (q["L"] * q["M"]) ** 2),
    "dist2": ("M^2", lambda q: q["M"] ** 2),
    "divergence": ("M^2", lambda q: q["M"] ** 2),
    "local_path": ("K M^2", lambda q: q["K"] * q["M"] ** 2),
    "deviation": ("M", lambda q: q["M"]),
    "loss_range": ("U", lambda q: q["U"]),
    "contraction": ("1", lambda q: 1.0),
    "initial_value": ("|the value at t = 0|", lambda q: q["initial"]),
}


def rounding_scale_of(bound: Bound, quantities: Mapping[str, Any] | None = None,
                      certification: Certification | None = None) -> tuple[float, str]:
    """The magnitude of the quantities ``bound``'s left side is computed from on a run, and how it was formed:
    ``ROUNDING_SCALES`` by the record's ``lhs_kind``, from the run ``quantities`` a check passes for the trivial bound
    (``L``, ``visited_max_dist2``, ``K``, ``U``, ``initial``; optional ``f_star`` and ``w_star_norm2``) and from the
    problem the certification was made on (its f* and ||w*||). Terms a check supplies nothing for are left out and
    the text says so; (0.0, why) when the kind has no scale or nothing is known. A comparison counts a gap within
    ``ROUNDING_RTOL`` times this scale (or the measurement or bound, if larger) as equality
    (``compare_mean(..., rounding_scale=)``).

    Parameters
    ----------
    bound : Bound
        The record; its ``lhs_kind`` picks the formula.
    quantities : mapping, optional
        The run's quantities (scalars or per-run arrays: the largest finite value is used).
    certification : Certification, optional
        What the run certified; its ``problem`` gives |f*| and ||w*|| where ``quantities`` do not.

    Returns
    -------
    (float, str)
        The scale and its formula with the values it was formed from.
    """
    kind = getattr(bound, "lhs_kind", "")
    if kind not in ROUNDING_SCALES:
        return 0.0, f"no rounding scale for lhs_kind {kind!r}: the measurement and the bound alone"
    formula, fn = ROUNDING_SCALES[kind]
    q = dict(quantities or {})
    got: dict[str, float] = {}
    for k in ("L", "K", "U", "initial", "f_star"):
        if k in q and _finite_max(q[k]) is not None:
            got[k] = _finite_max(q[k])
    R2 = _finite_max(q["visited_max_dist2"]) if "visited_max_dist2" in q else None
    w_norm = math.sqrt(_finite_max(q["w_star_norm2"])) if _finite_max(q.get("w_star_norm2", np.nan)) is not None \
        else None
    problem = getattr(certification, "problem", None)
    if problem is not None and (("f_star" not in got and kind == "opt_error") or w_norm is None):
        f_abs, w_abs = _problem_optimum(problem)
        if "f_star" not in got and f_abs is not None:
            got["f_star"] = f_abs
        if w_norm is None:
            w_norm = w_abs
    missing = []
    if "M" in formula:
        if R2 is None and w_norm is None:
            return 0.0, f"rounding scale {formula} unknown (no visited_max_dist2, no ||w*||): the measurement and the bound alone"
        if R2 is None:
            missing.append("R (no visited_max_dist2)")
        if w_norm is None:
            missing.append("||w*||")
        got["M"] = (w_norm or 0.0) + math.sqrt(R2 or 0.0)
    for k in ("L", "K", "U", "initial"):
        if k in formula and k not in got:
            return 0.0, f"rounding scale {formula} unknown (no {k}): the measurement and the bound alone"
    if "f*" in formula and "f_star" not in got:
        missing.append("|f*|")
        got["f_star"] = 0.0
    value = float(fn(got))
    shown = ", ".join(f"{'M = ||w*|| + R' if k == 'M' else k} = {v:.4g}" for k, v in got.items()
                      if k in ("M", "L", "K", "U", "initial", "f_star"))
    text = f"{formula} = {value:.4g} ({shown}; M = ||w*|| + R bounds every visited point)"
    if missing:
        text += f"; without {', '.join(missing)} (not known to the check)"
    return value, text


# ------------------------------------------------------------------------------------ term-wise tightness


def _nonnegative_term(t: sp.Expr) -> bool:
    return bool(t.as_coeff_Mul()[0] > 0)


def _split_terms(e: sp.Expr) -> list[sp.Expr]:
    """Additive terms: a sum split, a product distributed over a factor that is a sum of terms with positive
    coefficients (1 + S/eta_g^2; a definition such as B = sum p_k^2 sigma_k^2 + 6 L Gamma + ...), never over one with
    a negative coefficient (H - 1, 1 - gamma mu) or inside a power or function."""
    if e.is_Add:
        return [t for a in e.args for t in _split_terms(a)]
    if e.is_Mul:
        for i, f in enumerate(e.args):
            if f.is_Add and all(_nonnegative_term(a) for a in f.args):
                rest = sp.Mul(*(e.args[:i] + e.args[i + 1:]))
                return [t for a in f.args for t in _split_terms(rest * a)]
    return [e]


_TERMS: dict[tuple[str, int], list[tuple[str, sp.Expr]]] = {}


def additive_terms(bound: Bound) -> list[tuple[str, sp.Expr]]:
    """The additive terms of a bound's right side, (text, expression), as term-wise tightness measures them: its
    definitions that are sums substituted (V_0 = ||x^0 - x*||^2 + (9 N h^2/S) C_0; sigma_dif^2 = zeta^2 + sigma^2),
    products distributed over sums of positive terms (``_split_terms``); the other definitions stay symbols (they are
    evaluated as the bound is). A bound that is one product or power has one term."""
    key = (bound.id, id(bound))
    if key not in _TERMS:
        e = bound.expr
        for _ in range(len(bound.definitions) + 1):
            subs = {d.symbol: d.expr for d in bound.definitions if d.expr is not None and d.expr.is_Add
                    and d.symbol in e.free_symbols}
            if not subs:
                break
            e = e.xreplace(subs)
        _TERMS[key] = [(sp.sstr(t), t) for t in _split_terms(e)]
    return _TERMS[key]


_TERM_EVAL: dict[tuple[str, int, int], Any] = {}


def _term_values(bound: Bound, values: Mapping[str, Any]) -> list[np.ndarray]:
    from ..theory.core import Evaluator

    out = []
    for i, (_, t) in enumerate(additive_terms(bound)):
        key = (bound.id, id(bound), i)
        if key not in _TERM_EVAL:
            _TERM_EVAL[key] = Evaluator(bound.expanded(t), bound.symbols, f"{bound.id} (term {i + 1})")
        out.append(np.asarray(_TERM_EVAL[key](values), float))
    return out


def _terms_extra(bound: Bound, values: Mapping[str, Any], measured: float | None, total: float | None,
                 row: int | None = None, shape: tuple | None = None) -> list[dict[str, Any]] | None:
    """Each additive term of ``bound`` at the compared point: its value (mean over runs; per-round bounds: at the row
    compared, ``row`` of arrays broadcast to ``shape``), its share of the bound and measured / term (term-wise
    tightness: near 1 where a term dominates, a wrong constant in that term shows). None when it cannot be said."""
    terms = additive_terms(bound)
    if measured is None or total is None or not np.isfinite(total) or total <= 0:
        return None
    try:
        vals = _term_values(bound, values)
    except (MissingValuesError, TypeError, ValueError, ZeroDivisionError):
        return None
    out = []
    for (text, _), v in zip(terms, vals):
        if shape is not None and row is not None:
            v = np.broadcast_to(v, shape)[row] if v.ndim else v
        with np.errstate(all="ignore"):
            val = float(np.mean(v))
        if not np.isfinite(val):
            return None
        out.append({"term": text, "value": val, "share": val / total,
                    "measured_over_term": (measured / val) if val > 0 else None})
    return out


def term_tightness(results: Sequence[CheckResult]) -> list[dict[str, Any]]:
    """Term-wise tightness of every bound record in ``results`` (issue 45): per record and additive term, the rows
    where that term dominates (the largest share of the bound), the largest measured / term among them (1 = that term
    alone is attained) and the setting where it was found, the largest share the term reached in any row, and the
    smallest (bound - measured) / term over the rows that hold (the relative change of that term a row would catch).
    A term that dominates no row is listed with None: no setting tests it."""
    per: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        terms = (r.extra or {}).get("terms") if r.kind == "bound" else None
        if not terms or r.verdict not in ("holds", "violated"):
            continue
        rec = (r.extra or {}).get("terms_record", r.id)
        d = per.setdefault(rec, {t["term"]: {"record": rec, "term": t["term"], "dominant_rows": 0,
                                            "measured_over_term": None, "where": None, "largest_share": 0.0,
                                            "slack_over_term": None} for t in terms})
        top = max(terms, key=lambda t: t["share"])
        for t in terms:
            e = d.setdefault(t["term"], {"record": rec, "term": t["term"], "dominant_rows": 0, "measured_over_term": None,
                                         "where": None, "largest_share": 0.0, "slack_over_term": None})
            e["largest_share"] = max(e["largest_share"], t["share"])
            if t["value"] > 0 and r.measured is not None and r.bound is not None and r.verdict == "holds":
                sl = (r.bound - r.measured) / t["value"]
                e["slack_over_term"] = sl if e["slack_over_term"] is None else min(e["slack_over_term"], sl)
            if t is top:
                e["dominant_rows"] += 1
                m = t["measured_over_term"]
                if m is not None and (e["measured_over_term"] is None or m > e["measured_over_term"]):
                    e["measured_over_term"] = m
                    e["where"] = " ".join(str(x) for x in (r.problem, (r.params or {}).get("setting")) if x)
    return [e for d in per.values() for e in d.values()]


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
                term_rows = _terms_extra(bound, logged[-1], info.get("measured"), info.get("bound"),
                                         row=int(info["tightest_round"]), shape=np.shape(payload[0]))
        else:
            term_rows = _terms_extra(bound, vals, info.get("measured"), info.get("bound"))
    rescaled = None
    if verdict in ("holds", "inconclusive"):
        rescaled = _rescaled_test(bound, vals, measured_runs, per_round, units_reading, rederive,
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


def verdict_before(numbers: Mapping[str, Any]) -> str:
    m, b, r = numbers.get("measured"), numbers.get("bound"), numbers.get("ratio")
    return (f"measured {m:.4g} vs bound {b:.4g} (ratio {r:.3g})" if None not in (m, b, r)
            else "no finite comparison")


# t: the inconsistent terms shrink by at least 10^t against the left side; the steps outside the regime are skipped
RESCALE_STEPS = tuple(round(0.1 * k, 1) for k in range(1, 31))


def _regime_factor(vals: Mapping[str, Any], v2: Mapping[str, Any], lhs_factor: float) -> tuple[float, str]:
    """The largest factor (>= 1) by which a value of the statement, or the left side, moved between the run
    (``vals``) and its rescaled copy (``v2``), and the name of that value."""
    worst, name = max(lhs_factor, 1.0 / lhs_factor) if lhs_factor > 0 else math.inf, "the left side"
    for k, v in vals.items():
        if k not in v2:
            continue
        try:
            a, b = np.asarray(v, float), np.asarray(v2[k], float)
        except (TypeError, ValueError):
            continue
        if a.shape != b.shape or not a.size:
            continue
        with np.errstate(all="ignore"):
            r = np.abs(b / a)
        r = r[np.isfinite(r) & (np.abs(a) > 0)]
        if not r.size:
            continue
        f = float(max(np.max(r), 1.0 / np.min(r))) if np.min(r) > 0 else math.inf
        if f > worst:
            worst, name = f, k
    return worst, name


def _rescaled_test(bound: Bound, vals, measured_runs, per_round: bool, units_reading, rederive, labels,
                   round_name, sweep_units: bool = True, rounding_scale: float = 0.0) -> dict[str, Any] | None:
    """Rule 8 on one instance: None when the bound is not inconsistent in units under every reading; else the outcome
    on the run rescaled along ``units_check.shrink_direction`` by 10^t, t in RESCALE_STEPS, inside rule 8's regime
    (``RESCALE_REGIME``: the steps that move a value of the statement by more than that factor are not tested): the
    first scale where the comparison is violated, or 'holds' with what was tested, with 'text' in words."""
    from .units_check import RESCALE_REGIME, regime_text, rescaled_values, units_consequence

    cons = units_consequence(bound, units_reading)
    if cons is None:
        return None
    head = (f"rule 8 (inconsistent in units under every reading; finding {cons['finding']}): ")
    if "needs_reading" in cons:
        return {"verdict": "not_tested", "finding": cons["finding"],
                "text": head + "not tested on a rescaled instance: the check did not say which unit reading of "
                        f"{', '.join(cons['needs_reading'])} the run realises (assess_bound(units_reading=...))"}
    direction, dims, lhs = cons["direction"], cons["dims"], cons["lhs"]
    if direction is None or lhs is None:
        return {"verdict": "not_tested", "finding": cons["finding"],
                "text": head + "no rescaling of loss and parameters shrinks every inconsistent term of the statement, "
                        "so no rescaled instance tests it"}
    x, y = direction

    def at(t, bounded: bool = True):
        """The comparison on the run rescaled by 10^t along the direction; None where a condition fails there, or
        (bounded) where the rescaling leaves rule 8's regime."""
        c, s = 10.0 ** (x * t), 10.0 ** (y * t)
        v2 = rescaled_values(vals, dims, c, s)
        if rederive is not None:
            v2 = dict(rederive(v2))
        fac = c ** float(lhs.f) * s ** float(lhs.w)  # the left side's factor
        if bounded and _regime_factor(vals, v2, fac)[0] > RESCALE_REGIME * (1 + 1e-9):
            return None
        try:
            failed = bound.conditions_failed(v2)
        except MissingValuesError:
            failed = ["(a condition's values are missing)"]
        if failed:
            return None
        with np.errstate(all="ignore"):
            if per_round:
                lhs_r, rhs_r = measured_runs(v2)
                verdict, info = compare_rounds(lhs_r, np.asarray(rhs_r, float) / fac, labels=labels, label=round_name,
                                               rounding_scale=rounding_scale)  # in the run's own units, as lhs_r
            else:
                verdict, info = compare_mean(np.asarray(measured_runs, float),
                                             np.asarray(bound.evaluate(v2), float) / fac, rounding_scale=rounding_scale)
        return verdict, info, v2, c, s, fac

    tried, outside, skipped = [], [], []
    for t in RESCALE_STEPS:
        c, s = 10.0 ** (x * t), 10.0 ** (y * t)
        v2 = rescaled_values(vals, dims, c, s)
        if rederive is not None:
            v2 = dict(rederive(v2))
        moved, what = _regime_factor(vals, v2, c ** float(lhs.f) * s ** float(lhs.w))
        if moved > RESCALE_REGIME * (1 + 1e-9):
            outside.append((t, moved, what))
            break  # farther along the direction the values only move more
        got = at(t)
        if got is None:
            skipped.append(t)
            continue
        verdict, info, v2, c, s, fac = got
        tried.append(t)
        if verdict == "violated":
            shown = {k: float(v) for k, v in v2.items() if np.ndim(v) == 0 and isinstance(v, (int, float))
                     and k in vals and np.ndim(vals[k]) == 0 and not np.isclose(float(v), float(vals[k]), rtol=1e-12)}
            for k in ("measured", "bound"):
                if info.get(k) is not None:
                    info[k] = info[k] * fac
            text = (head + f"false as stated on a rescaled instance inside {regime_text()} (largest move here "
                    f"x{moved:.3g}, {what}): the same run with the loss in units 1/c and the parameters in units 1/s, "
                    f"c = {c:.3g}, s = {s:.3g} (every inconsistent term of the statement shrunk by at least 10^{t:g} "
                    "against the left side; there " + ", ".join(
                        f"{k} = {v:.4g}" for k, v in sorted(shown.items())) + "), where every condition holds: "
                    + (info.get("detail") or f"measured {info['measured']:.4g} vs bound {info['bound']:.4g}")
                    + " (measurement and bound in the rescaled units)")
            info.pop("detail", None)

            def decide(F):
                g = at(math.log10(F))
                if g is None:
                    return False, None
                r = g[1].get("ratio")
                return g[0] == "violated", (None if r is None or not np.isfinite(r) else 1.0 - float(r))

            from .robustness import sweep

            shrink = sweep("the shrink of the inconsistent terms (the units)", 10.0 ** t,
                           ([10.0 ** u for u in RESCALE_STEPS] + [0.9 * 10.0 ** t, 1.1 * 10.0 ** t]) if sweep_units
                           else [], decide, kind="units (a statement inconsistent in units has none fixed), inside "
                                                 "rule 8's regime",
                           note="1/x of the slowest-shrinking inconsistent term against the left side; a value "
                                "outside rule 8's regime counts as lost")
            r0 = info.get("ratio")
            return {"verdict": "violated", "finding": cons["finding"], "t": t, "c": c, "s": s,
                    "reading": cons["reading"], "values": shown, "measured": info.get("measured"),
                    "bound": info.get("bound"), "ratio": r0, "lhs_factor": fac, "shrink_sweep": shrink,
                    "regime": {"factor": RESCALE_REGIME, "moved": moved, "by": what},
                    "margin": None if r0 is None or not np.isfinite(r0) else 1.0 - float(r0),
                    "info": {k: v for k, v in info.items() if k != "series"}, "text": text}
    last = tried[-1] if tried else None
    edge = (f"; beyond t = {outside[0][0]:g} the rescaling leaves the regime ({outside[0][2]} moves x"
            f"{outside[0][1]:.3g})") if outside else ""
    return {"verdict": "holds", "finding": cons["finding"], "tested": tried, "conditions_failed_at": skipped,
            "direction": direction, "regime": {"factor": RESCALE_REGIME,
                                               "left_at": outside[0][0] if outside else None,
                                               "by": outside[0][2] if outside else None},
            "text": head + (f"the bound also holds on the run rescaled inside {regime_text()} (tested 10^t, t = "
                            f"{', '.join(f'{u:g}' for u in tried)}"
                            + (f"; conditions fail at t = {', '.join(f'{u:g}' for u in skipped)}" if skipped else "")
                            + f"{edge}): its units finding stays an erratum" if tried else
                            f"no rescaled instance inside {regime_text()} meets the statement's conditions"
                            f"{edge}: its units finding stays an erratum")}


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


def _rate_report(explicit, order, conditions) -> dict:
    def compute():
        return check_order(explicit, order, conditions=conditions).as_dict()

    return cached_symbolic(rate_key(explicit, order, conditions), compute)


def _missed_lines(rep: dict) -> list[str]:
    lines = []
    for t in rep["bound_terms"]:
        if t["covered_by"] is None:
            ex = ", ".join(f"{k}^{v}" for k, v in t["exponents"].items())
            lines.append(f"{t['term']}  [T^{t['T_power']} log^{t['log_power']}" + (f"; {ex}" if ex else "") + "]")
    return lines


def rate_check(record: Bound | OrderStatement, *, check_id: str | None = None, order: StatedOrder | None = None
               ) -> CheckResult:
    """Symbolic: substitute the stated choice into the explicit bound and compare term by term.

    When the explicit bound misses the stated order but the record keeps the bound before a loosening step of its
    proof (``Bound.exact``) and that exact form is covered, the verdict is ``proof_step_loose`` (listed apart,
    never counted): the loose step, not the stated rate, is at fault. order: another stated order than the
    record's (a negative control states a faster one)."""
    record = standing_in(record)  # a mutant of the statement, when one stands in (fedtheory.checks.mutants)
    explicit, rec_order, conditions = rate_inputs(record)
    order = order or rec_order
    rep = _rate_report(explicit, order, conditions)
    bound = record.explicit if isinstance(record, OrderStatement) else record
    exact = getattr(bound, "exact", None) if bound is not None else None
    verdict = rep["verdict"]
    choice = ", ".join(f"{k} = {sp.sstr(v)}" for k, v in order.choice.items()) or "as stated"
    missed = rep["missed"]
    exact_rep = None
    if verdict == "rate_inconsistent" and exact is not None:
        exact_rep = _rate_report(bound.expanded(exact), order, conditions)
        if exact_rep["verdict"] == "rate_consistent":
            verdict = "proof_step_loose"
    if rep["verdict"] == "rate_consistent":
        detail = f"every term of the explicit bound is covered by O({sp.sstr(order.expr)}) under {choice}"
    elif rep["verdict"] == "rate_inconsistent":
        detail = (f"{len(missed)} term(s) not covered by O({sp.sstr(order.expr)}) under {choice}: "
                  + " | ".join(_missed_lines(rep)))
        if verdict == "proof_step_loose":
            detail = ("proof step loose, not a wrong rate: the bound before the loosening step (" + (bound.exact_note or
                      "Bound.exact") + f") is covered by O({sp.sstr(order.expr)}) term by term; the loosened form "
                      "misses it: " + detail)
        elif exact_rep is not None:
            detail += ". The exact form before the loosening step misses it too: " + " | ".join(_missed_lines(exact_rep))
    else:
        detail = rep["detail"]
    fails = [f"{k}: {v}" for k, v in rep["conditions"].items() if v == "eventually fails"]
    if fails:
        detail += ". Under the stated choice these conditions fail for large T: " + "; ".join(fails)
    extra = {"leading": rep["leading"], "terms": rep["bound_terms"], "stated_terms": rep["stated_terms"],
             "conditions": rep["conditions"]}
    if exact_rep is not None:
        extra["exact_terms"] = exact_rep["bound_terms"]
    if verdict == "rate_inconsistent":
        extra["robustness"] = _rate_robustness(rep, order)
    return CheckResult(check_id or record.id + ".rate", record.paper, "symbolic", verdict,
                       source=order.source or record.source, detail=detail, extra=extra,
                       params={"choice": choice, "up_to_log": order.up_to_log})


def _rate_robustness(rep: dict, order: StatedOrder) -> dict[str, Any]:
    """A rate inconsistency is symbolic: the missed terms' growth in T does not depend on the values of the
    constants, so no constant, problem or horizon removes it; it disappears only where every missed term's coefficient
    vanishes (the symbols named)."""
    import re

    from .robustness import robustness

    v = str(order.variable)
    stated = list(dict.fromkeys(str(t["T_power"]) for t in rep["stated_terms"]))
    missed = [t for t in rep["bound_terms"] if t["covered_by"] is None]
    grow = list(dict.fromkeys(str(t["T_power"]) for t in missed))
    track = {v, *(str(x) for x in order.track)}
    functions = {"sqrt", "log", "exp", "Max", "Min", "Piecewise", "Eq", "True", "False", "Abs", "oo", "pi", "E", "I"}
    vanish = []
    for t in missed:  # the term's symbols from its printed text (sympify would read gamma, beta as functions)
        names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", str(t["term"]))) - functions - track
        vanish.append("*".join(sorted(names)) or "(a number)")
    return robustness(margin_text=f"missed terms grow like {v}^({', '.join(grow)}) against the stated "
                                  f"{v}^({', '.join(stated)})",
                      exact="symbolic: the exponents hold for every value of the constants; the finding disappears "
                            "only where every missed term's coefficient vanishes ("
                            + "; ".join(dict.fromkeys(vanish)) + ")")


def faster_order(record: Bound | OrderStatement, factor: sp.Expr | None = None) -> StatedOrder:
    """A negative control of a rate check: the record's stated order times ``factor`` (default 1/T, i.e. claimed
    one power of T faster); the explicit bound must then be inconsistent with it."""
    from dataclasses import replace as _replace

    order = record.order
    return _replace(order, expr=sp.expand(order.expr * (factor if factor is not None else 1 / order.variable)),
                    up_to_log=False)


def register_rate_check(record: Bound | OrderStatement, *, check_id: str | None = None, doc: str = "",
                        profiles: Sequence[str] | None = None):
    """Register the symbolic rate check of ``record`` (id ``RECORD.rate`` unless ``check_id``): every term of its
    explicit bound within its stated order (:func:`rate_check`), with its negative control, the same record with a
    stated order one power of its variable faster (:func:`faster_order`), which must be reported inconsistent.
    ``doc``: what ``fedtheory explain`` says about the check. Returns the registered check function."""
    cid = check_id or f"{record.id}.rate"
    var = record.order.variable
    control = Control(f"the same record with a stated order one power of {var} faster",
                      lambda session: [rate_check(record, check_id=cid, order=faster_order(record))])

    def fn(session) -> list[CheckResult]:
        return [rate_check(record, check_id=cid)]

    fn.__doc__ = doc or f"Symbolic: every term of {record.id}'s explicit bound is within its stated order in {var}."
    fn.__name__ = fn.__qualname__ = cid.replace(".", "_")
    extra = {"profiles": tuple(profiles)} if profiles is not None else {}
    return check(cid, record.paper, "rate", records=(record.id,), cost="symbolic", control=control, **extra)(fn)


def combine_readings(rows: Mapping[str, CheckResult]) -> CheckResult:
    """One row from a check decided under each reading of the text (``Record.readings``): when every reading gives
    the same verdict and scope, that verdict (a finding counts only then); otherwise 'ambiguous', listed apart with
    each reading's verdict. The first reading's row supplies id, problem, setting and source; every reading's
    verdict, numbers and note are kept in ``extra['readings']``."""
    if not rows:
        raise ParameterError("rows", {}, "at least one reading's row")
    names = list(rows)
    first = rows[names[0]]
    per = {k: {"verdict": r.verdict, "scope": r.scope, "measured": r.measured, "bound": r.bound, "ratio": r.ratio,
               "detail": r.detail, "finding_class": r.finding_class} for k, r in rows.items()}
    summary = "; ".join(f"reading {k}: {r.verdict}" + (f" [{r.scope}]" if r.scope != "inside" else "")
                        + (f" ({r.detail})" if r.detail else "") for k, r in rows.items())
    if len({(r.verdict, r.scope) for r in rows.values()}) == 1:
        from dataclasses import replace as _replace

        out = _replace(first, extra={**first.extra, "readings": per},
                       detail=f"every reading ({', '.join(names)}) gives {first.verdict}. " + summary)
        return out
    vac: dict[str, Any] = {}
    if first.kind == "bound":  # a bound row keeps its vacuity: vacuous only when it is under every reading
        said = [r.extra.get("vacuity") for r in rows.values()]
        known = all(v in ("informative", "vacuous") for v in said)
        vac = {"vacuous": all(r.vacuous for r in rows.values()), "trivial_bound": first.trivial_bound,
               "vacuity": ("vacuous" if all(v == "vacuous" for v in said) else "informative") if known else
               next((v for v in said if v not in ("informative", "vacuous")), None)}
    return CheckResult(first.id, first.paper, first.kind, "ambiguous", problem=first.problem, params=dict(first.params),
                       source=first.source, quote=first.quote, seeds=first.seeds, family_size=first.family_size,
                       detail="the readings disagree: " + summary, finding=first.finding,
                       vacuous=vac.get("vacuous", False), trivial_bound=vac.get("trivial_bound"),
                       extra={"readings": per, **{k: v for k, v in first.extra.items() if k in ("title", "lhs")},
                              **({"vacuity": vac["vacuity"]} if vac.get("vacuity") else {})})


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


# ------------------------------------------------------------------------------------ the statistics policy


@dataclass(frozen=True)
class Comparison:
    """One comparison of two sets of per-seed values under a :class:`StatsPolicy`: ``diff`` = mean(B) - mean(A)
    (from the paired differences when paired), its standard error ``se`` over ``n`` seeds, the Student-t critical
    value ``crit`` (n - 1 degrees of freedom, at the family-wise level split over ``family`` comparisons), the scale
    ``max(|mean A|, |mean B|)`` the relative effect is measured against, and the policy's verdict parts."""

    diff: float
    se: float
    n: int
    crit: float
    family: int
    scale: float
    min_effect: float | None
    min_seeds: int

    @property
    def above(self) -> bool:
        """B is significantly above A at the family-wise level."""
        return bool(self.n > 1 and self.se >= 0 and self.diff - self.crit * self.se > 0)

    @property
    def below(self) -> bool:
        """B is significantly below A at the family-wise level."""
        return bool(self.n > 1 and self.se >= 0 and self.diff + self.crit * self.se < 0)

    @property
    def effect(self) -> float:
        """|diff| relative to the scale of the compared means."""
        return abs(self.diff) / self.scale if self.scale > 0 else (math.inf if self.diff else 0.0)

    @property
    def large(self) -> bool:
        """The effect reaches the record's declared minimum effect size (never without one)."""
        return self.min_effect is not None and self.effect >= self.min_effect

    @property
    def enough_seeds(self) -> bool:
        return self.n >= self.min_seeds

    def refutes(self, direction: str) -> bool:
        """Evidence strong enough to refute 'B is not {direction} A': significant in ``direction`` ('above' or
        'below') at the family-wise level, an effect of at least the declared minimum, and at least ``min_seeds``
        seeds. Significant without the effect size or the seeds: :meth:`why_not` says what is missing."""
        sig = self.above if direction == "above" else self.below
        return sig and self.large and self.enough_seeds

    def why_not(self, direction: str) -> str:
        """Why a significant comparison in ``direction`` does not refute ('' when it does or is not significant)."""
        sig = self.above if direction == "above" else self.below
        if not sig or self.refutes(direction):
            return ""
        why = []
        if not self.large:
            why.append("no minimum effect size declared on the record" if self.min_effect is None else
                       f"effect {self.effect:.3g} below the declared minimum {self.min_effect:g}")
        if not self.enough_seeds:
            why.append(f"{self.n} seeds < {self.min_seeds}")
        return "significant but not a refutation: " + ", ".join(why)

    def text(self) -> str:
        return (f"{self.diff:+.3g} +- {self.se:.2g} (n = {self.n}, t crit {self.crit:.2f} over a family of "
                f"{self.family})")


@dataclass(frozen=True)
class Equivalence:
    """Whether per-seed values lie within ``tol`` (an equivalence test): ``within`` when the family-wise t interval
    of the mean lies inside [-tol, tol] (or below tol, one-sided); ``outside`` when it lies wholly beyond tol;
    ``refutes`` additionally needs ``min_seeds`` seeds (the tolerance is the effect size)."""

    mean: float
    se: float
    n: int
    crit: float
    tol: float
    family: int
    min_seeds: int
    absolute: bool = True

    @property
    def within(self) -> bool:
        v = abs(self.mean) if self.absolute else self.mean
        return bool(self.n > 1 and v + self.crit * self.se <= self.tol)

    @property
    def outside(self) -> bool:
        v = abs(self.mean) if self.absolute else self.mean
        return bool(self.n > 1 and v - self.crit * self.se > self.tol)

    @property
    def refutes(self) -> bool:
        return self.outside and self.n >= self.min_seeds

    @property
    def decision(self) -> bool | None:
        """True within, False when refuted, None otherwise."""
        return True if self.within else False if self.refutes else None

    def text(self) -> str:
        extra = f"; beyond tol but {self.n} seeds < {self.min_seeds}" if self.outside and not self.refutes else ""
        return (f"{self.mean:+.3g} +- {self.se:.2g} vs tolerance {self.tol:g} (n = {self.n}, t crit {self.crit:.2f} "
                f"over a family of {self.family}){extra}")


@dataclass(frozen=True)
class StatsPolicy:
    """The one statistics policy for claims decided from seeds (docs/statistics.md).

    * Student-t critical values for the seeds a comparison has (n - 1 degrees of freedom), two-sided;
    * a family-wise level ``alpha`` split (Bonferroni) over every comparison of the claim: the ``family`` a
      predicate declares per call times the ``settings`` (rows) the check decides the claim on;
    * a refutation also needs the minimum effect size declared on the record (``Claim.min_effect``, relative to the
      compared means) and at least ``min_seeds`` seeds; a significant contrary result without them is reported
      and left ``inconclusive``.

    :func:`claim_result` hands a policy to a claim's predicate as ``stats`` when the predicate takes that
    argument: ``stats.compare(A, B, paired=True, family=m)``, ``stats.within(values, tol, family=m)``.
    """

    alpha: float = 0.05
    min_seeds: int = 10
    settings: int = 1
    min_effect: float | None = None

    def critical(self, n: int, family: int = 1) -> float:
        """Two-sided Student-t critical value with n - 1 degrees of freedom at level alpha / (family * settings)."""
        from scipy import stats as st

        m = max(1, int(family)) * max(1, int(self.settings))
        return float(st.t.ppf(1 - self.alpha / (2 * m), max(int(n) - 1, 1)))

    def compare(self, A, B, *, paired: bool, family: int = 1) -> Comparison:
        """Compare per-seed values of two settings (NaN / inf runs left out; paired: the per-seed differences of
        coupled runs, else the two samples' standard errors combined, with the smaller sample's degrees of
        freedom)."""
        A = np.asarray(A, float).ravel()
        B = np.asarray(B, float).ravel()
        fa, fb = np.isfinite(A), np.isfinite(B)
        ma = float(np.mean(A[fa])) if fa.any() else math.nan
        mb = float(np.mean(B[fb])) if fb.any() else math.nan
        if paired and A.shape == B.shape:
            ok = fa & fb
            d = B[ok] - A[ok]
            n = int(d.size)
            diff = float(d.mean()) if n else math.nan
            se = float(np.std(d, ddof=1) / np.sqrt(n)) if n > 1 else math.nan
        else:
            n = int(min(fa.sum(), fb.sum()))
            diff = mb - ma
            sa = [float(np.std(x[f], ddof=1) / np.sqrt(f.sum())) if f.sum() > 1 else math.nan
                  for x, f in ((A, fa), (B, fb))]
            se = float(np.hypot(*sa))
        scale = max(abs(ma), abs(mb)) if np.isfinite([ma, mb]).all() else math.nan
        return Comparison(diff, se, n, self.critical(n, family), max(1, int(family)) * max(1, int(self.settings)),
                          scale, self.min_effect, self.min_seeds)

    def within(self, values, tol: float, *, family: int = 1, absolute: bool = True) -> Equivalence:
        """Are the per-seed ``values`` within ``tol`` (|mean| with absolute, else the signed mean)?"""
        x = np.asarray(values, float).ravel()
        x = x[np.isfinite(x)]
        n = int(x.size)
        mean = float(x.mean()) if n else math.nan
        se = float(np.std(x, ddof=1) / np.sqrt(n)) if n > 1 else math.nan
        return Equivalence(mean, se, n, self.critical(n, family), float(tol),
                           max(1, int(family)) * max(1, int(self.settings)), self.min_seeds, absolute)

    def describe(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "min_seeds": self.min_seeds, "settings": self.settings,
                "min_effect": self.min_effect, "test": "two-sided Student-t, Bonferroni over the claim's family"}


def _takes_stats(fn) -> bool:
    import inspect

    try:
        return "stats" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def claim_result(claim: Claim, measurements: Mapping[str, Any], *, check_id: str | None = None, problem: Any = None,
                 params: Mapping[str, Any] | None = None, detail: str = "", settings: int = 1,
                 seeds: int | None = None, policy: StatsPolicy | None = None) -> CheckResult:
    """Evaluate a Claim's predicate on ``measurements``: supported / refuted / inconclusive (None).

    A predicate that takes ``stats`` gets the statistics policy (:class:`StatsPolicy`: Student-t, Bonferroni over
    its comparisons times ``settings``, the record's ``min_effect``, at least ``min_seeds`` seeds to refute).
    settings: how many rows (settings, problems) this check decides the claim on: all of them are one family.
    seeds: the seeds the measurements rest on; a refutation resting on fewer than the policy's ``min_seeds`` is
    reported as ``inconclusive`` whatever the predicate decided (also for predicates that do not take ``stats``).
    """
    base = policy or StatsPolicy()
    pol = StatsPolicy(base.alpha, base.min_seeds, settings, getattr(claim, "min_effect", None))
    kw = {"stats": pol} if claim.predicate is not None and _takes_stats(claim.predicate) else {}
    out = claim.evaluate(measurements, **kw)
    verdict = {True: "claim_supported", False: "claim_refuted", None: "inconclusive"}[out.supported]
    note = ""
    if verdict == "claim_refuted" and seeds is not None and seeds < pol.min_seeds:
        verdict = "inconclusive"
        note = (f"not a refutation: rests on {seeds} seeds < {pol.min_seeds} (the statistics policy); the predicate "
                "alone would refute")
    return CheckResult(check_id or claim.id, claim.paper, "claim", verdict, measured=out.measured, problem=problem,
                       params=dict(params or {}), source=claim.source,
                       detail=out.detail + (f". {detail}" if detail else "") + (f". {note}" if note else ""),
                       extra={"decision_rule": claim.parameters, "statement": claim.statement,
                              "measurements": _with_units(compact_measurements(measurements),
                                                          getattr(claim, "measurement_units", None)),
                              **({"stats_policy": pol.describe()} if kw else {})},
                       quote=claim.quote, seeds=seeds, family_size=settings if kw else None)


def _with_units(compact: dict[str, Any], units: Mapping[str, str] | None) -> dict[str, Any]:
    """The claim's declared unit of each drawn measurement (and of the abscissa) beside the compacted curves."""
    drawn = set(compact.get("series") or {}) | set(compact.get("scalars") or {}) | {compact.get("x_label")}
    declared = {k: str(v) for k, v in (units or {}).items() if k in drawn}
    return {**compact, "units": declared} if declared else compact


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
