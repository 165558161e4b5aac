"""Symbolic rate check: does a stated order cover every term of the explicit bound?

Substitute the stated step-size choice into the explicit bound, split it into additive terms,
and for each term compute, as the growth variable T -> oo:
  * the power of T (limit of T d/dT log term) and the power of log T,
  * the growth exponents of the tracked symbols (N, K, S, ...): lim_{N->oo} lim_{T->oo} N d/dN log term.
A bound term is covered by a stated term with a larger power of T, or with the same power of T,
no larger power of log T (unless log factors are omitted by the statement) and no larger
exponent in any tracked symbol. The verdict is ``rate_consistent`` when every term is covered;
otherwise ``rate_inconsistent`` with the terms the stated order misses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import sympy as sp

from .core import Order


@dataclass
class TermGrowth:
    term: sp.Expr
    t_power: sp.Expr
    log_power: sp.Expr
    exponents: dict[str, sp.Expr]
    covered_by: str | None = None

    def as_dict(self) -> dict:
        return {"term": sp.sstr(self.term), "T_power": sp.sstr(self.t_power), "log_power": sp.sstr(self.log_power),
                "exponents": {k: sp.sstr(v) for k, v in self.exponents.items()}, "covered_by": self.covered_by}


@dataclass
class RateReport:
    verdict: str  # rate_consistent | rate_inconsistent | inconclusive
    bound_terms: list[TermGrowth]
    stated_terms: list[TermGrowth]
    leading: list[str]
    missed: list[str]
    conditions: dict[str, str] = field(default_factory=dict)  # name -> 'eventually holds' / 'eventually fails' / ...
    detail: str = ""

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "leading": self.leading, "missed": self.missed, "conditions": self.conditions,
                "bound_terms": [t.as_dict() for t in self.bound_terms],
                "stated_terms": [t.as_dict() for t in self.stated_terms], "detail": self.detail}


def expand_sum(e: sp.Expr) -> sp.Expr:
    """Distribute products over sums, but keep logs and powers whole (log(NKT) stays one factor).

    The rate check splits a bound into its additive terms this way before comparing each with the stated order.

    Parameters
    ----------
    e : sympy.Expr
        The expression.

    Returns
    -------
    sympy.Expr
        ``e`` expanded into a sum of terms.
    """
    return sp.expand(e, log=False, power_base=False, power_exp=False, multinomial=True, mul=True)


def _positive_limit(expr, var):
    return sp.limit(expr, var, sp.oo)


def growth(term: sp.Expr, var: sp.Symbol, track: Sequence[sp.Symbol]) -> TermGrowth:
    """How one term grows as ``var`` -> oo: its power of ``var``, its power of log ``var``, and its exponent in each
    tracked symbol.

    The powers are limits: a = lim log(term) / log(var), b = lim (log(term) - a log(var)) / log(log(var)), and the
    exponent in s = lim_{s->oo} lim_{var->oo} s d/ds log(term). A term decaying faster than any power has power -oo.

    Parameters
    ----------
    term : sympy.Expr
        One additive term of a bound or of a stated order.
    var : sympy.Symbol
        The growth variable (T).
    track : sequence of sympy.Symbol
        Symbols whose exponents are also computed (N, K, S, ...).

    Returns
    -------
    TermGrowth
        The term with ``t_power``, ``log_power`` and ``exponents`` (symbol name -> exponent).
    """
    logt = sp.expand_log(sp.log(term), force=True)
    a = _positive_limit(logt / sp.log(var), var)  # power of T
    rest = sp.expand_log(logt - a * sp.log(var), force=True)
    b = _positive_limit(rest / sp.log(sp.log(var)), var)  # power of log T
    exps = {}
    for s in track:  # growth exponent in s: lim_{s->oo} lim_{T->oo} s d/ds log(term)
        inner = _positive_limit(s * sp.diff(logt, s), var)
        exps[s.name] = sp.limit(inner, s, sp.oo) if inner.has(s) else inner
    return TermGrowth(term, a, b, exps)


def _le(x, y) -> bool | None:
    d = sp.simplify(y - x)
    if d.is_extended_nonnegative:  # extended: a term decaying faster than any power has T-power -oo
        return True
    if d.is_extended_negative:
        return False
    return None


def _lt(x, y) -> bool | None:
    d = sp.simplify(y - x)
    if d.is_extended_positive:
        return True
    if d.is_extended_nonpositive:
        return False
    return None


def check_order(explicit: sp.Expr, order: Order, constants: Sequence[sp.Symbol] = (),
                track: Sequence[sp.Symbol] = (), conditions: Sequence = ()) -> RateReport:
    """Compare the explicit bound (after the stated choice) with the stated order."""
    var = order.variable
    track = tuple(track) or tuple(order.track)
    e = explicit.subs(dict(order.substitute)).subs(dict(order.choice))
    e = expand_sum(e)
    bound_terms = [growth(t, var, track) for t in sp.Add.make_args(e) if t.free_symbols]
    stated = [growth(t, var, track) for t in sp.Add.make_args(expand_sum(order.expr))]
    undecided = False
    for bt in bound_terms:
        for st in stated:
            strictly = _lt(bt.t_power, st.t_power)
            if strictly:
                bt.covered_by = sp.sstr(st.term)
                break
            same = sp.simplify(bt.t_power - st.t_power) == 0
            if not same:
                if strictly is None:
                    undecided = True
                continue
            log_ok = order.up_to_log or bool(_le(bt.log_power, st.log_power))
            exp_ok = [_le(bt.exponents[k], st.exponents[k]) for k in bt.exponents]
            if None in exp_ok:
                undecided = True
            if log_ok and all(x is True for x in exp_ok):
                bt.covered_by = sp.sstr(st.term)
                break
    top = max((bt.t_power for bt in bound_terms), key=lambda p: float(p) if p.is_number else 0.0, default=None)
    leading = [sp.sstr(bt.term) for bt in bound_terms if top is not None and sp.simplify(bt.t_power - top) == 0]
    missed = [sp.sstr(bt.term) for bt in bound_terms if bt.covered_by is None]
    cond_report = {}
    for c in conditions:
        cond_report[c.name] = _eventually(c, order, var)
    if missed:
        verdict = "rate_inconsistent"
        detail = f"{len(missed)} of {len(bound_terms)} terms of the explicit bound are not covered by the stated order"
    elif undecided:
        verdict = "inconclusive"
        detail = "some exponents could not be compared symbolically"
    else:
        verdict = "rate_consistent"
        detail = f"all {len(bound_terms)} terms covered"
    return RateReport(verdict, bound_terms, stated, leading, missed, cond_report, detail)


def _eventually(cond, order: Order, var) -> str:
    rel = cond.relation
    if rel in (sp.true, sp.false):
        return "holds" if rel == sp.true else "fails"
    lhs = rel.lhs.subs(dict(order.choice))
    rhs = rel.rhs.subs(dict(order.choice))
    if isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        lhs, rhs = rhs, lhs
    if not (lhs.has(var) or rhs.has(var)):
        return "independent of " + var.name
    try:
        ratio = lhs / rhs
        a = _positive_limit(sp.expand_log(sp.log(ratio), force=True) / sp.log(var), var)
        if a.is_negative:
            return "eventually holds"
        if a.is_positive:
            return "eventually fails"
        lim = _positive_limit(ratio, var)
    except Exception:  # noqa: BLE001 - sympy raises many types on hard limits
        return "undetermined"
    if (lim - 1).is_negative:
        return "eventually holds"
    if (lim - 1).is_positive:
        return "eventually fails"
    return "undetermined"
