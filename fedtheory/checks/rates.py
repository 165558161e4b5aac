"""Rates: the symbolic rate check of a stated order (:func:`rate_check`, :func:`register_rate_check` with its
negative control :func:`faster_order`) and a measured rate (:func:`fit_rate`, :func:`rate_verdict`)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import sympy as sp

from ..theory.core import Bound, Order, OrderStatement, standing_in
from ..theory.rates import check_order
from .registry import Control, check
from .results import CheckResult
from .symbolic_cache import cached_symbolic

__all__ = ["faster_order", "fit_rate", "rate_check", "rate_inputs", "rate_key", "rate_verdict", "register_rate_check"]


def rate_key(explicit, order, conditions) -> list[str]:
    """The exact text a symbolic rate check's result is cached under."""
    return [sp.srepr(explicit), sp.srepr(order.expr), sp.srepr(order.variable),
            repr(sorted(map(str, order.choice.items()))), repr(sorted(map(str, order.substitute.items()))),
            repr(order.up_to_log), repr([s.name for s in order.track]),
            repr([sp.srepr(c.relation) for c in conditions])]


def rate_inputs(record):
    """(explicit bound, stated order, expanded conditions) of a Bound with an order, or an OrderStatement."""
    from dataclasses import replace as _replace

    bound = record.explicit if isinstance(record, OrderStatement) else record
    return (bound.expanded(), record.order,
            [_replace(c, relation=bound.expanded(c.relation)) for c in bound.conditions])


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


def rate_check(record: Bound | OrderStatement, *, check_id: str | None = None, order: Order | None = None
               ) -> CheckResult:
    """Symbolic: substitute the stated choice into the explicit bound and compare term by term.

    When the explicit bound misses the stated order but the record keeps the bound before a loosening step of its
    proof (``Bound.exact``) and that exact form is covered, the verdict is ``proof_step_loose`` (listed apart,
    never counted): the loose step, not the stated rate, is at fault. order: another stated order than the
    record's (a negative control states a faster one).

    Parameters
    ----------
    record : Bound or OrderStatement
        The record with a stated ``order``.
    check_id : str, optional
        The row's id (default ``RECORD.rate``).
    order : Order, optional
        The order to compare with instead of the record's.

    Returns
    -------
    CheckResult
        A symbolic row: ``rate_consistent``, ``rate_inconsistent``, ``proof_step_loose`` or ``inconclusive``, with
        each term's growth in ``extra``.
    """
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
            detail += (". The exact form before the loosening step misses it too: "
                       + " | ".join(_missed_lines(exact_rep)))
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


def _rate_robustness(rep: dict, order: Order) -> dict[str, Any]:
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


def faster_order(record: Bound | OrderStatement, factor: sp.Expr | None = None) -> Order:
    """A negative control of a rate check: the record's stated order times ``factor`` (default 1/T, i.e. claimed
    one power of T faster); the explicit bound must then be inconsistent with it.

    Parameters
    ----------
    record : Bound or OrderStatement
        The record with a stated ``order``.
    factor : sympy.Expr, optional
        The factor (default 1 / the order's variable).

    Returns
    -------
    Order
        The faster order (log factors no longer omitted).
    """
    from dataclasses import replace as _replace

    order = record.order
    return _replace(order, expr=sp.expand(order.expr * (factor if factor is not None else 1 / order.variable)),
                    up_to_log=False)


def register_rate_check(record: Bound | OrderStatement, *, check_id: str | None = None, doc: str = "",
                        profiles: Sequence[str] | None = None):
    """Register the symbolic rate check of ``record`` (id ``RECORD.rate`` unless ``check_id``): every term of its
    explicit bound within its stated order (:func:`rate_check`), with its negative control, the same record with a
    stated order one power of its variable faster (:func:`faster_order`), which must be reported inconsistent.
    ``doc``: what ``fedtheory explain`` says about the check. Returns the registered check function.

    Parameters
    ----------
    record : Bound or OrderStatement
        The record with a stated ``order``.
    check_id : str, optional
        The check's id (default ``RECORD.rate``).
    doc : str, default ""
        The check's description.
    profiles : sequence of str, optional
        The profiles it runs in (default: every one).

    Returns
    -------
    callable
        The registered check function.
    """
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


def fit_rate(xs: np.ndarray, per_run: np.ndarray, n_boot: int = 400, seed: int = 0) -> tuple[float, float, float]:
    """Slope of log(mean_y) on log(x), with a 95% bootstrap interval over runs (per_run: (len(xs), R)).

    Parameters
    ----------
    xs : array_like
        The horizons (positive).
    per_run : array_like
        The measured values, (len(xs), R), positive.
    n_boot : int, default 400
        Bootstrap resamples of the runs.
    seed : int, default 0
        The bootstrap's seed.

    Returns
    -------
    tuple of (float, float, float)
        The slope and its 2.5% and 97.5% bootstrap percentiles.
    """
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
    significantly slower: the whole interval lies above the stated exponent.

    Parameters
    ----------
    slope : float
        The measured exponent (:func:`fit_rate`).
    lo, hi : float
        Its interval.
    stated : float
        The stated exponent (-1 for O(1/T)).

    Returns
    -------
    str
        ``"rate_inconsistent"`` or ``"rate_consistent"``.
    """
    return "rate_inconsistent" if lo > stated else "rate_consistent"
