"""Vacuity: the trivial bound of a bound's left side, by the record's ``lhs_kind`` (``TRIVIAL_BOUNDS``), computed by
rule from the run's quantities (:func:`trivial_bound_of`); a bound above it is vacuous."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..theory.core import Bound

__all__ = ["TRIVIAL_BOUNDS", "TrivialBound", "trivial_bound_of"]


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


#: The bounds of a left side that need no theorem, keyed by ``Bound.lhs_kind``: each with its formula and the run
#: quantities a check passes to ``assess_bound(..., trivial=...)``; a bound above its left side's trivial bound at
#: every compared round is flagged vacuous (``trivial_bound_of``). R^2 = visited_max_dist2, the largest
#: ``||w - w*||^2`` over every point the run visited (global models, every local iterate, local end points). With
#: L-smoothness and grad f(w*) = 0: ``f(w) - f* <= (L/2)||w - w*||^2`` and ``||grad f(w)|| <= L ||w - w*||``; two
#: visited points are at most 2R apart.
TRIVIAL_BOUNDS: dict[str, TrivialBound] = {t.kind: t for t in (
    TrivialBound("opt_error", "(L/2) R^2: f(w) - f* <= (L/2)||w - w*||^2 at every visited point",
                 ("L", "visited_max_dist2"), lambda q: 0.5 * np.asarray(q["L"], float) * _r2(q)),
    TrivialBound("grad_norm2", "L^2 R^2: ||grad f(w)||^2 <= L^2 ||w - w*||^2 at every visited point",
                 ("L", "visited_max_dist2"), lambda q: np.asarray(q["L"], float) ** 2 * _r2(q)),
    TrivialBound("dist2", "R^2: the largest ||w - w*||^2 the run visited", ("visited_max_dist2",), _r2),
    TrivialBound("divergence", "4 R^2: a mean of ||a - b||^2 over visited points a, b (Delta^t, drift, "
                 "||w^{t+1} - w^t||^2)", ("visited_max_dist2",), lambda q: 4.0 * _r2(q)),
    TrivialBound("local_path", "4 K R^2: a sum over the K local steps of ||w_{i,k} - w^t||^2",
                 ("K", "visited_max_dist2"), lambda q: 4.0 * np.asarray(q["K"], float) * _r2(q)),
    TrivialBound("dist", "R: a distance ||w - w*|| of a visited point, or of an average of visited points (an agent "
                 "average xbar)", ("visited_max_dist2",), lambda q: np.sqrt(_r2(q))),
    TrivialBound("stacked_grad_norm", "sqrt(sum_i (||grad f_i(w*)|| + L_i R)^2): the stacked gradient [grad "
                 "f_i(x_i)]_i at visited points x_i (||grad f_i(x)|| <= ||grad f_i(w*)|| + L_i ||x - w*||)",
                 ("grad_norms_at_optimum", "L_clients", "visited_max_dist2"),
                 lambda q: np.sqrt(np.sum((np.asarray(q["grad_norms_at_optimum"], float)
                                           + np.asarray(q["L_clients"], float) * np.sqrt(_r2(q))) ** 2))),
    TrivialBound("deviation", "2 R: a distance ||a - b|| between two visited points (an agent's or a client's model "
                 "and the average: consensus_max, client_deviation_max)", ("visited_max_dist2",),
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
    unknown, or a needed quantity is missing or not finite.

    Parameters
    ----------
    bound : Bound
        The record (its ``lhs_kind`` selects the entry of ``TRIVIAL_BOUNDS``).
    quantities : mapping of str to object, optional
        The run's quantities the entry needs (e.g. ``L`` and ``visited_max_dist2`` for ``opt_error``).

    Returns
    -------
    tuple of (float or None, str)
        The trivial bound and its formula, or None and why there is none.
    """
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
