"""Property-based testing of your own theorems: hypothesis strategies that draw problems whose constants are
exact and lie in stated ranges, and :func:`assert_bound_holds` to check a :class:`fedtheory.theory.Bound`.

    from hypothesis import given
    from fedtheory.testing import least_squares_problems, assert_bound_holds

    @given(least_squares_problems(L=(1, 10), mu=(0.1, 1), n_clients=(2, 8)))
    def test_my_bound(problem):
        measured = ...  # simulate(problem, ...)
        assert_bound_holds(MY_BOUND, measured, {"L": problem.constants["L"].value, ...}, instance=problem)

Each range is a scalar (that value) or a pair (lo, hi). Constants are hit up to rounding (relative ~1e-12).
hypothesis is a test dependency: the strategies need ``pip install fedtheory[test]``; the assertion helper
does not.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ._validation import ParameterError, check_float, check_int
from .sim.problems import (GaussianClientModel, LeastSquaresProblem, LogisticProblem, PLNonconvexProblem, Problem,
                           heterogeneous_least_squares, pl_nonconvex, synthetic_logistic)

__all__ = ["assert_bound_holds", "least_squares_problems", "logistic_problems", "pl_problems"]

def _hypothesis():
    """(hypothesis.strategies, hypothesis.assume); a clear ImportError where hypothesis is missing."""
    try:
        from hypothesis import assume
        from hypothesis import strategies as st
    except ImportError as err:  # a test dependency only
        raise ImportError("fedtheory.testing's strategies need hypothesis: pip install fedtheory[test]") from err
    return st, assume


def _range(name: str, value: Any, low: float, *, integer: bool = False, low_inclusive: bool = True):
    """A scalar or a pair (lo, hi), validated: (lo, hi) with lo <= hi."""
    pair = value if isinstance(value, (tuple, list)) else (value, value)
    if len(pair) != 2:
        raise ParameterError(name, value, "a number or a pair (lo, hi)")
    if integer:
        lo, hi = check_int(name, pair[0], int(low)), check_int(name, pair[1], int(low))
    else:
        lo = check_float(name, pair[0], low, low_inclusive=low_inclusive)
        hi = check_float(name, pair[1], low, low_inclusive=low_inclusive)
    if lo > hi:
        raise ParameterError(name, value, "a pair (lo, hi) with lo <= hi")
    return lo, hi


def _draw(st, lo, hi, integer: bool = False):
    if lo == hi:
        return st.just(lo)
    return st.integers(lo, hi) if integer else st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def least_squares_problems(*, L: Any = (0.5, 10.0), mu: Any = (0.01, 1.0), n_clients: Any = (2, 6),
                           dim: Any = (1, 6), samples_per_client: Any = (8, 20), heterogeneity: Any = (0.0, 2.0),
                           noise_std: Any = (0.0, 1.0)):
    """Strongly convex heterogeneous least squares (``heterogeneous_least_squares``) with the exact
    constants ``L`` (max_i lambda_max(H_i)) and ``mu`` (lambda_min of the mean Hessian) drawn in the ranges.

    The factory's draw (built ill-conditioned) is rescaled, X -> s X, y -> s y, and given a ridge r >= 0:
    L = s^2 L0 + r and mu = s^2 mu0 + r hit the drawn targets exactly. Draws whose base condition number
    L0/mu0 is below the target L/mu are rejected (rare: the base is built with condition 10 L_hi/mu_lo).
    """
    st, assume = _hypothesis()
    Lr, mur = _range("L", L, 0.0, low_inclusive=False), _range("mu", mu, 0.0, low_inclusive=False)
    if mur[0] > Lr[1]:
        raise ParameterError("mu", mu, f"a range that reaches below L's upper end {Lr[1]} (mu <= L)")
    Cr, dr = _range("n_clients", n_clients, 1, integer=True), _range("dim", dim, 1, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 2, integer=True)
    hr, nr = _range("heterogeneity", heterogeneity, 0.0), _range("noise_std", noise_std, 0.0)
    condition = 10.0 * Lr[1] / mur[0]

    @st.composite
    def draw(draw_):
        L_t = draw_(_draw(st, *Lr))
        mu_t = draw_(_draw(st, mur[0], min(mur[1], L_t)))
        C, d, S = draw_(_draw(st, *Cr, True)), draw_(_draw(st, *dr, True)), draw_(_draw(st, *Sr, True))
        S = max(S, d + 1)  # enough samples per client for a full-rank mean Hessian
        base = heterogeneous_least_squares(C, d, S, heterogeneity=draw_(_draw(st, *hr)), condition=condition,
                                           noise_std=draw_(_draw(st, *nr)), random_state=draw_(st.integers(0, 2**31 - 1)))
        L0, mu0 = base.constants["L"].value, base.constants["mu"].value
        if L_t == mu_t:
            s2, r = 0.0, L_t  # a pure ridge: every client's Hessian is L I
        else:
            s2 = (L_t - mu_t) / (L0 - mu0) if L0 > mu0 else np.inf
            r = mu_t - s2 * mu0
        assume(np.isfinite(s2) and r >= 0.0 and base.constants["strongly_convex"].value)
        s = np.sqrt(s2)
        m = base.model
        model = GaussianClientModel(s * m.mean, s * m.factor, m.w_true, s * m.noise_std)
        return LeastSquaresProblem(s * base.X, s * base.y, ridge=r, model=model, name=base.name)

    return draw()


def pl_problems(*, n_clients: Any = (2, 6), dim: Any = (1, 6), samples_per_client: Any = (4, 20),
                G2: Any = (0.0, 4.0), sample_variance: Any = (0.0, 2.0)):
    """The PL non-convex problem (``pl_nonconvex``; L = 8, mu and f* = 0 exact) with the heterogeneity
    G2 = (1/C) sum_i ||h_i||^2 (Assumption 3 with B = 1, exact) and the one-sample gradient variance
    ``minibatch_variance_1`` = max_i (1/S) sum_j ||z_ij - h_i||^2 drawn in the ranges (client means and
    sample noise are rescaled to hit them exactly)."""
    st, assume = _hypothesis()
    Cr, dr = _range("n_clients", n_clients, 2, integer=True), _range("dim", dim, 1, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 2, integer=True)
    Gr, vr = _range("G2", G2, 0.0), _range("sample_variance", sample_variance, 0.0)

    @st.composite
    def draw(draw_):
        C, d, S = draw_(_draw(st, *Cr, True)), draw_(_draw(st, *dr, True)), draw_(_draw(st, *Sr, True))
        G2_t, v_t = draw_(_draw(st, *Gr)), draw_(_draw(st, *vr))
        base = pl_nonconvex(C, d, S, random_state=draw_(st.integers(0, 2**31 - 1)))
        h = base.h[0]
        noise = base.Z[0] - h[:, None, :]
        G0 = float(np.mean(np.sum(h**2, axis=1)))
        v0 = float(np.max(np.mean(np.sum(noise**2, axis=-1), axis=1)))
        assume(G0 > 0 and v0 > 0)
        return PLNonconvexProblem(np.sqrt(G2_t / G0) * h[:, None, :] + np.sqrt(v_t / v0) * noise)

    return draw()


def logistic_problems(*, L: Any = (0.1, 5.0), reg: Any = (1e-3, 0.1), n_clients: Any = (2, 5),
                      n_features: Any = (1, 4), n_classes: Any = (2, 3), samples_per_client: Any = (5, 20),
                      shift: Any = (0.0, 2.0), alpha: Any = (0.1, 10.0)):
    """Multinomial logistic regression (``synthetic_logistic``) with mu = reg (exact) and the smoothness
    bound L = max_i lambda_max(X_i'X_i/S_i)/2 + reg drawn in the ranges: features (train and held-out pool)
    are scaled by s so that s^2 L0 + reg = L. Draws with L <= reg are rejected."""
    st, assume = _hypothesis()
    Lr, rr = _range("L", L, 0.0, low_inclusive=False), _range("reg", reg, 0.0, low_inclusive=False)
    if Lr[1] <= rr[0]:
        raise ParameterError("L", L, f"a range that reaches above reg's lower end {rr[0]} (L > reg)")
    Cr, fr = _range("n_clients", n_clients, 1, integer=True), _range("n_features", n_features, 1, integer=True)
    kr = _range("n_classes", n_classes, 2, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 1, integer=True)
    sr, ar = _range("shift", shift, 0.0), _range("alpha", alpha, 0.0, low_inclusive=False)

    @st.composite
    def draw(draw_):
        reg_t = draw_(_draw(st, *rr))
        L_t = draw_(_draw(st, *Lr))
        assume(L_t > reg_t)
        base = synthetic_logistic(draw_(_draw(st, *Cr, True)), draw_(_draw(st, *fr, True)), draw_(_draw(st, *kr, True)),
                                  draw_(_draw(st, *Sr, True)), alpha=draw_(_draw(st, *ar)), shift=draw_(_draw(st, *sr)),
                                  reg=reg_t, random_state=draw_(st.integers(0, 2**31 - 1)))
        lam0 = 2.0 * (base.constants["L"].value - reg_t)
        assume(lam0 > 0)
        s = np.sqrt(2.0 * (L_t - reg_t) / lam0)
        Xc, yc = base._clients_raw
        test = (s * base.test[0], base.test[1])
        return LogisticProblem([s * x for x in Xc], list(yc), base.n_classes, reg=reg_t, test=test, name=base.name)

    return draw()


# ------------------------------------------------------------------------------------ assertions


def _fmt(v: Any) -> str:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return repr(v)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    if a.size <= 6:
        return "[" + ", ".join(f"{x:.6g}" for x in a.ravel()) + "]"
    return f"array(shape={a.shape}, min={np.nanmin(a):.6g}, max={np.nanmax(a):.6g})"


def _describe(instance: Any) -> str:
    if instance is None:
        return "(instance not given)"
    if isinstance(instance, Problem):
        scal = {k: instance.constants[k].value for k in ("L", "mu") if k in instance.constants}
        extra = "".join(f", {k}={_fmt(v)}" for k, v in scal.items())
        return f"{instance.name}(n_clients={instance.n_clients}, dim={instance.dim}{extra})"
    return str(instance)


def assert_bound_holds(bound, measured: Any, values: Mapping[str, Any], *, instance: Any = None, rtol: float = 0.0,
                       atol: float = 0.0, require_conditions: bool = True) -> np.ndarray:
    """Assert ``measured <= bound(values) * (1 + rtol) + atol`` entrywise (arrays broadcast, e.g. one per run).

    ``bound`` is a :class:`fedtheory.theory.Bound`; ``values`` the numbers its parameters take. If any of its
    conditions fails at ``values``, the theorem does not apply: AssertionError when ``require_conditions``
    (default), else nothing is checked. Non-finite measured values or bound values fail. The message names
    the bound, the instance, the values, the measured and bound numbers (worst entry) and failing conditions.
    Returns the bound's values.
    """
    rtol = check_float("rtol", rtol, 0.0)
    atol = check_float("atol", atol, 0.0)
    where = f"{getattr(bound, 'id', 'bound')} on {_describe(instance)}"
    shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
    failed = bound.conditions_failed(values)
    if failed:
        if not require_conditions:
            return np.asarray(bound.evaluate(values), dtype=float)
        raise AssertionError(f"{where}: conditions fail, so the bound does not apply:\n  "
                             + "\n  ".join(failed) + f"\nvalues: {shown}")
    b = np.asarray(bound.evaluate(values), dtype=float)
    m, bb = np.broadcast_arrays(np.asarray(measured, dtype=float), b)
    bad = ~(np.isfinite(m) & ~np.isnan(bb) & (m <= bb * (1 + rtol) + atol))
    if np.any(bad):
        excess = np.where(np.isfinite(m) & ~np.isnan(bb), m - bb, np.inf)
        i = np.unravel_index(np.argmax(np.where(bad, excess, -np.inf)), m.shape) if m.ndim else ()
        lhs = getattr(bound, "lhs", "") or "measured"
        entry = f" (worst entry {tuple(int(j) for j in i)}; {int(bad.sum())} of {bad.size} fail)" if m.ndim else ""
        raise AssertionError(f"{where} violated{entry}: {lhs} = {m[i]:.6g} > bound {bb[i]:.6g} "
                             f"(excess {m[i] - bb[i]:.3g}, rtol={rtol:g}, atol={atol:g})\nvalues: {shown}")
    return b
