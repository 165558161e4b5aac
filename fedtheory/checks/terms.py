"""Term-wise tightness: a bound's additive terms (:func:`additive_terms`), each at the compared point of a row
(``extra['terms']``), and the table per record and term (:func:`term_tightness`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import sympy as sp

from ..theory.core import Bound, MissingValuesError
from .results import CheckResult

__all__ = ["additive_terms", "term_tightness", "terms_extra"]


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


def terms_extra(bound: Bound, values: Mapping[str, Any], measured: float | None, total: float | None,
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
    A term that dominates no row is listed with None: no setting tests it.

    Parameters
    ----------
    results : sequence of CheckResult
        Rows of bound checks (those with ``extra['terms']`` are read).

    Returns
    -------
    list of dict
        One entry per record and term: ``record``, ``term``, ``dominant_rows``, ``measured_over_term``, ``where``,
        ``largest_share``, ``slack_over_term``.
    """
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
            e = d.setdefault(t["term"], {"record": rec, "term": t["term"], "dominant_rows": 0,
                                         "measured_over_term": None, "where": None, "largest_share": 0.0,
                                         "slack_over_term": None})
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
