"""Issue 43, item 1: a bound that is exactly zero is decided against the rounding of what the run computed.

A gap (bound - measured) within ROUNDING_RTOL of the rounding scale is equality: the scale is the largest of the
measurement, the bound and the magnitude of the quantities the left side is computed from (``rounding_scale_of``: for
f(x) - f*, |f*| + L (||w*|| + R)^2), not the bound alone, which gives no room at 0. The negative controls show that a
real violation a few times above that scale is still caught.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedtheory.checks import assess_bound, certify, compare_mean, compare_rounds, run_settings
from fedtheory.checks.rounding import ROUNDING_RTOL, rounding_scale_of, rounding_tolerance
from fedtheory.sim import (
    ClientSampling,
    Exact,
    RunConfig,
    fedavg,
    heterogeneous_least_squares,
    identical_least_squares,
    simulate,
)
from fedtheory.theory import Bound, SymbolSet

S = SymbolSet("roundtest", strict=True)
L, lr, H, T, D0, zeta = S.table("""
    L      f/w^2  positive     smoothness of every f_m
    lr     w^2/f  positive     the step gamma
    H      1      count        local steps between two averagings
    T      1      count        local steps in all
    D0     w^2    nonnegative  ||x_0 - x*||^2
    zeta   f/w    nonnegative  zeta^2 = (1/M) sum_m ||grad f_m(x*)||^2
""")
QUANT = {"H": "local_steps", "lr": "lr", "T": "steps"}


def _bound(name: str, expr) -> Bound:
    return Bound(id=f"roundtest.{name}", paper="roundtest", title=name, source="a user's theorem (issue 43)",
                 symbols=S, assumptions=("L_smooth", "convex", "heterogeneity_at_optimum(zeta)"),
                 lhs="avg_opt_error", lhs_kind="opt_error", expr=expr, quantities=QUANT,
                 lhs_description="f(xbar_T) - f*, xbar_T the mean of the averaged iterates xbar_0..xbar_{T-1}")


# the user's local-GD bound (issue 43): 0 at x_0 = x* with H = 1, or on identical data (zeta = 0)
LOCAL_GD = _bound("local_gd", 4 * D0 / (lr * T) + 20 * lr**2 * L * zeta**2 * (H - 1) ** 2)
# a false statement: the drift term dropped (0 at x_0 = x* for every H)
NO_DRIFT = _bound("no_drift", 4 * D0 / (lr * T))


def _row(record, problem, H_steps: int, step: float, rounds: int = 20, trivial: bool = True):
    """Local GD (FedAvg, exact gradients) from x* on ``problem``: f(xbar_T) - f* against ``record``, as a user's
    check writes it (certified L and zeta, the run's visited R^2 for the trivial bound)."""
    w_star = problem.constants["w_star"].value
    cfg = RunConfig(rounds=rounds, local_steps=H_steps, lr=1.0, oracle=Exact())
    cert = certify(record, problem=problem, oracle=cfg.oracle, sampling=ClientSampling(problem.n_clients))
    Lc = float(cert.values["L"])
    cfg = RunConfig(rounds=rounds, local_steps=H_steps, lr=step / Lc, oracle=Exact())
    tr = simulate(problem, fedavg(), cfg, [0], w0=w_star, measures=("avg_opt_error", "visited_max_dist2"))
    Tn = rounds * H_steps
    values = {**cert.values, "lr": cfg.lr, "H": H_steps, "T": Tn, "D0": 0.0}
    return assess_bound(record, [values], tr["avg_opt_error"][Tn - 1], certification=cert,
                        settings=run_settings(problem, fedavg(), cfg), problem=problem.name,
                        trivial={"L": Lc, "visited_max_dist2": tr["visited_max_dist2"][0]} if trivial else None), tr


def test_zero_bound_at_the_optimum_with_one_local_step_is_equality_not_a_violation():
    """Issue 43's case: bound exactly 0, measured one ulp of f* (5e-17 .. 2e-16): holds, the rounding named. Before:
    violated, counted (ROUNDING_RTOL relative to the bound gave no room at 0)."""
    p = heterogeneous_least_squares(10, 5, 20, heterogeneity=1.0, random_state=0)
    row, _ = _row(LOCAL_GD, p, 1, 0.5)
    assert row.bound == 0.0 and 0.0 < row.measured < 1e-15
    assert row.verdict == "holds" and row.scope == "inside"
    r = row.extra["rounding"]
    assert r["gap"] == pytest.approx(-row.measured) and r["tolerance"] >= -r["gap"]
    assert "equal to rounding" in row.detail and "|f*| + L M^2" in row.detail
    assert "|f*| + L M^2" in r["scale_formula"]


def test_zero_bound_because_a_constant_is_zero_is_equality():
    """Identical data (zeta = 0) from x*: the bound is 0 because D0 and zeta are; the exact gradient at w* is
    ~1e-16, so f(xbar_T) - f* is ~1e-16 > 0. Holds, the rounding named (before: violated)."""
    p = identical_least_squares(10, 5, 20, random_state=0)
    row, _ = _row(LOCAL_GD, p, 3, 0.5)
    assert row.bound < 1e-25 and row.measured > 1e6 * row.bound  # zeta^2 is 0 up to its own rounding (~1e-32)
    assert row.verdict == "holds" and "rounding" in row.extra


def test_a_real_violation_just_above_the_rounding_scale_is_caught():
    """Negative control: with H = 2 the clients drift, so f(xbar_T) - f* > 0 at x_0 = x* (a term of order gamma^4);
    the statement without its drift term bounds it by 0. At gamma = 0.005/L the gap is ~6x the rounding tolerance:
    violated, counted. At gamma = 0.003/L (~0.8x) it cannot be told from rounding: equality (the rule's resolution)."""
    p = heterogeneous_least_squares(10, 5, 20, heterogeneity=1.0, random_state=0)
    row, tr = _row(NO_DRIFT, p, 2, 0.005)
    scale, _ = rounding_scale_of(NO_DRIFT, {"L": p.constants["L"].value,
                                            "visited_max_dist2": tr["visited_max_dist2"][0]},
                                 certify(NO_DRIFT, problem=p))
    tol = ROUNDING_RTOL * scale
    assert 3 * tol < row.measured < 20 * tol
    assert row.verdict == "violated" and row.scope == "inside" and row.finding_class == "false_as_stated"
    # the drift's gamma^4 law: the measurement is the drift, not rounding (0.004 -> 0.005: x (5/4)^4)
    lo, _ = _row(NO_DRIFT, p, 2, 0.004)
    assert row.measured / lo.measured == pytest.approx((5 / 4) ** 4, rel=0.05)
    small, _ = _row(NO_DRIFT, p, 2, 0.003)
    assert small.measured < tol and small.verdict == "holds" and "rounding" in small.extra
    # the true statement, with its drift term, holds there by a wide margin
    true_row, _ = _row(LOCAL_GD, p, 2, 0.005)
    assert true_row.verdict == "holds" and "rounding" not in true_row.extra and true_row.ratio > 1e3


def test_rounding_scale_is_the_magnitude_of_what_the_run_computed():
    """|f*| + L (||w*|| + R)^2 with R^2 the visited maximum, |f*| and ||w*|| from the certified problem; the trivial
    quantities alone (no problem) give L R^2 and say what is missing."""
    p = heterogeneous_least_squares(6, 4, 10, heterogeneity=1.0, random_state=3)
    f_star, w_star = p.constants["f_star"].value, p.constants["w_star"].value
    q = {"L": 2.0, "visited_max_dist2": np.array([0.25, np.nan, 0.16])}
    s, text = rounding_scale_of(LOCAL_GD, q, certify(LOCAL_GD, problem=p))
    assert s == pytest.approx(abs(f_star) + 2.0 * (np.linalg.norm(w_star) + 0.5) ** 2, rel=1e-14)
    s2, text2 = rounding_scale_of(LOCAL_GD, q)
    assert s2 == pytest.approx(2.0 * 0.25) and "without" in text2 and "||w*||" in text2
    s3, text3 = rounding_scale_of(LOCAL_GD, {"L": 2.0, "visited_max_dist2": 0.25, "f_star": -3.0, "w_star_norm2": 4.0})
    assert s3 == pytest.approx(3.0 + 2.0 * 2.5**2)
    none, why = rounding_scale_of(LOCAL_GD, None)
    assert none == 0.0 and "the measurement and the bound alone" in why
    dist = Bound(id="roundtest.d", paper="roundtest", title="d", source="-", symbols=S, expr=D0, lhs_kind="dist2")
    assert rounding_scale_of(dist, q, certify(LOCAL_GD, problem=p))[0] == pytest.approx(
        (np.linalg.norm(w_star) + 0.5) ** 2)


def test_without_a_scale_the_rule_is_the_old_one():
    """compare_mean / compare_rounds without rounding_scale: the tolerance is relative to the measurement and bound
    (1e-12), as before; with it, a gap of 1e-17 against a bound of 0 is equality."""
    assert compare_mean(np.array([1e-17]), 0.0)[0] == "violated"
    v, info = compare_mean(np.array([1e-17]), 0.0, rounding_scale=1.0)
    assert v == "holds" and info["rounding"]["tolerance"] == pytest.approx(1e-12)
    assert compare_mean(np.array([1e-11]), 0.0, rounding_scale=1.0)[0] == "violated"
    assert compare_rounds(np.array([[0.0], [1e-17]]), np.zeros((2, 1)))[0] == "violated"
    v, info = compare_rounds(np.array([[0.0], [1e-17]]), np.zeros((2, 1)), rounding_scale=1.0, labels=[1, 2],
                             label="T")
    assert v == "holds" and info["rounding"]["rounds"] == [2.0] and "T = 2" in info["detail"]


def test_stochastic_gaps_within_rounding_are_equality_too():
    """Runs that differ (per-run starts, seeds) but whose gaps are all at rounding level: a significant mean gap of
    -1e-17 is no evidence against a bound of 0 (before: violated at 3 SE); a real one beyond the tolerance still is."""
    lhs = np.array([1.0e-17, 1.2e-17, 0.9e-17, 1.1e-17])
    assert compare_mean(lhs, 0.0, rounding_scale=0.5)[0] == "holds"
    assert compare_mean(lhs * 1e6, 0.0, rounding_scale=0.5)[0] == "violated"
    rows = np.vstack([lhs, lhs * 1e6])
    v, info = compare_rounds(rows, np.zeros_like(rows), rounding_scale=0.5)
    assert v == "violated" and info["rounds_failed"] == [2.0]
    v, info = compare_rounds(rows[:1], np.zeros_like(rows[:1]), rounding_scale=0.5)
    assert v == "holds" and "rounding" in info


@settings(max_examples=40, deadline=None)
@given(scale=st.floats(1e-6, 1e6), frac=st.floats(0.0, 0.99), bound=st.floats(0.0, 1e3))
def test_a_gap_below_the_tolerance_holds_and_above_it_is_violated(scale, frac, bound):
    """Property: deterministic, any bound >= 0 and scale: a measurement above the bound by frac x the tolerance holds
    (frac < 1); by (1 + frac) x 2 the tolerance it is violated."""
    tol = float(rounding_tolerance(bound, bound, scale))
    assert compare_mean(np.array([bound + frac * tol]), bound, rounding_scale=scale)[0] == "holds"
    over = bound + 2 * (1 + frac) * tol
    assert compare_mean(np.array([over]), bound, rounding_scale=scale)[0] == "violated"
