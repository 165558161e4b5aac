"""The rounding of a comparison: a gap (bound - measured) within ``ROUNDING_RTOL`` of the magnitude of what the run
computed is equality (docs/verdict-rules.md, rule 10): the tolerance (:func:`rounding_tolerance`) and that magnitude by
the left side's kind (``ROUNDING_SCALES``, :func:`rounding_scale_of`)."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from ..theory.core import Bound
from .certification import Certification

__all__ = ["ROUNDING_RTOL", "ROUNDING_SCALES", "rounding_scale_of", "rounding_tolerance"]


#: A comparison counts a gap (bound - measured) within ROUNDING_RTOL of the rounding scale as equality: the
#: measurement and the bound are floating-point computations of what can be the same number (a tight theorem attained
#: exactly, e.g. Drori & Teboulle's gradient-descent bound on its Huber instance, misses by ~1e-14 relative either
#: way; a bound that is exactly 0 against a measured f(x_T) - f* of one ulp of f*). The scale is the largest of the
#: measurement, the bound and the magnitude of the quantities the measurement was computed from (the loss values,
#: points and gradients of the run: ``fedtheory.checks.rounding_scale_of``), because a difference such as
#: f(x_T) - f* carries the rounding of its operands, not of its own size. 1e-12 is about 4500 machine epsilons
#: (2.2e-16): room for the rounding a run accumulates, an ulp-sized error in each of thousands of steps along a
#: non-expansive trajectory and sums over samples and clients, and far below any gap a counterexample rests on.
ROUNDING_RTOL = 1e-12


def rounding_tolerance(m_l, m_r, scale=0.0) -> np.ndarray:
    """The largest gap (bound - measured, in absolute value) that counts as equality: ROUNDING_RTOL times the largest
    of the measurement ``m_l``, the bound ``m_r`` and ``scale`` (the magnitude of the quantities the measurement was
    computed from; 0: none known)."""
    return ROUNDING_RTOL * np.maximum(np.maximum(np.abs(m_l), np.abs(m_r)), np.abs(np.asarray(scale, float)))


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
            return (0.0, f"rounding scale {formula} unknown (no visited_max_dist2, "
                         "no ||w*||): the measurement and the bound alone")
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
