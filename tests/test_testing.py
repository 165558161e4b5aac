"""fedtheory.testing: the strategies' instances have the constants they promise (brute force), and
assert_bound_holds passes a valid bound and fails a halved one with a readable message."""
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings

from fedtheory._validation import ParameterError
from fedtheory.sim import RunConfig, fedavg, simulate
from fedtheory.testing import assert_bound_holds, least_squares_problems, logistic_problems, pl_problems
from fedtheory.theory import Bound, Condition, SymbolSet


def _gd_bound(scale=1):
    """Gradient descent with step 1/L on an L-smooth, mu-PL f: f(w_T) - f* <= (1 - mu/L)^T (f(w_0) - f*)."""
    s = SymbolSet("test")
    L, mu = s.add("L", "smoothness"), s.add("mu", "strong convexity")
    T = s.add("T", "iterations", sp.Interval(0, sp.oo), integer=True)
    D0 = s.add("D0", "initial gap", sp.Interval(0, sp.oo))
    return Bound(id="test.gd_rate", paper="test", title="GD linear rate", source="textbook", symbols=s,
                 lhs="opt_error", lhs_description="f(w_T) - f*", expr=scale * (1 - mu / L) ** T * D0,
                 conditions=(Condition("mu_le_L", sp.Le(mu, L)),))


def _gd_run(p, rounds=15):
    L = float(p.constants["L"].value)
    tr = simulate(p, fedavg(), RunConfig(rounds=rounds, local_steps=1, lr=1.0 / L), [0], w0=p.initial_point(0, 3.0),
                  measures=("opt_error",))
    err = tr["opt_error"][:, 0]
    return err, {"L": L, "mu": float(p.constants["mu"].value), "T": np.arange(rounds + 1), "D0": err[0]}


def _in(x, lo, hi, tol=1e-9):
    return lo * (1 - tol) - tol <= x <= hi * (1 + tol) + tol


@given(least_squares_problems(L=(1.0, 4.0), mu=(0.1, 0.5), n_clients=(2, 5), dim=(1, 5)))
def test_least_squares_strategy_constants_are_exact_and_in_range(p):
    X = p.X[0]
    H = np.einsum("csd,cse->cde", X, X) / X.shape[1] + p.ridge * np.eye(p.dim)  # client Hessians from the data
    L = np.linalg.eigvalsh(H)[:, -1]
    mu = np.linalg.eigvalsh(H.mean(axis=0))[0]
    assert _in(L.max(), 1.0, 4.0) and _in(mu, 0.1, 0.5)
    assert p.constants["L"].value == pytest.approx(L.max(), rel=1e-9)
    assert p.constants["mu"].value == pytest.approx(mu, rel=1e-9)
    np.testing.assert_allclose(p.constants["L_clients"].value, L, rtol=1e-9)
    # the client minimisers solve the client normal equations from the data
    r = (np.einsum("cde,ce->cd", H, p.constants["w_star_clients"].value)
         - np.einsum("csd,cs->cd", X, p.y[0]) / X.shape[1])
    assert np.max(np.abs(r)) <= 1e-8 * max(1.0, np.abs(H).max())


@given(pl_problems(G2=(0.5, 2.0), sample_variance=(0.1, 1.0), dim=(1, 4)))
def test_pl_strategy_constants_are_exact_and_in_range(p):
    h = p.Z[0].mean(axis=1)
    G2 = np.mean(np.sum(h**2, axis=1))
    var = np.max(np.mean(np.sum((p.Z[0] - h[:, None]) ** 2, axis=-1), axis=1))
    assert _in(G2, 0.5, 2.0) and _in(var, 0.1, 1.0)
    assert p.heterogeneity_G2(1.0).value == pytest.approx(G2, rel=1e-9)
    assert p.constants["minibatch_variance_1"].value == pytest.approx(var, rel=1e-9)
    assert np.abs(p.client_grads(p.constants["w_star_clients"].value[:1], np.zeros(1, int))[0, 0]).max() < 1e-9


@settings(max_examples=10)
@given(logistic_problems(L=(0.5, 2.0), reg=(0.01, 0.1), n_clients=(2, 3), n_features=(1, 3)))
def test_logistic_strategy_constants_are_exact_and_in_range(p):
    lam = [np.linalg.eigvalsh(p.X[0, i, :s].T @ p.X[0, i, :s] / s)[-1] for i, s in enumerate(p.client_sizes)]
    assert _in(0.01, 0.01, 0.1) and _in(p.reg, 0.01, 0.1) and p.constants["mu"].value == p.reg
    assert _in(0.5 * max(lam) + p.reg, 0.5, 2.0)
    assert p.constants["L"].value == pytest.approx(0.5 * max(lam) + p.reg, rel=1e-9)
    g = [p.view(np.array([[i]]), np.zeros(1, int)).grad(p.constants["w_star_clients"].value[i][None, None])[0, 0]
         for i in range(p.n_clients)]
    assert np.max(np.abs(g)) < 1e-10


@settings(max_examples=15)
@given(least_squares_problems(L=(1.0, 4.0), mu=(0.05, 1.0)))
def test_assert_bound_holds_on_a_valid_bound(p):
    err, values = _gd_run(p)
    b = assert_bound_holds(_gd_bound(), err, values, instance=p, atol=1e-12)
    assert b.shape == err.shape


def test_assert_bound_holds_fails_a_halved_bound_readably():
    from fedtheory.sim import heterogeneous_least_squares

    p = heterogeneous_least_squares(4, 3, 10, random_state=1)
    err, values = _gd_run(p)
    assert_bound_holds(_gd_bound(), err, values, instance=p, atol=1e-12)
    with pytest.raises(AssertionError) as e:
        assert_bound_holds(_gd_bound(0.5), err, values, instance=p)
    msg = str(e.value)
    for part in ("test.gd_rate", "sc_least_squares(n_clients=4, dim=3", "opt_error = ", "> bound", "worst entry (0,)",
                 "values: L=", "mu=", "T=array(shape=(16,)", f"{err[0]:.6g}"):
        assert part in msg, (part, msg)


def test_assert_bound_holds_names_failing_conditions_and_bad_numbers():
    b = _gd_bound()
    vals = {"L": 1.0, "mu": 2.0, "T": 3, "D0": 1.0}
    with pytest.raises(AssertionError, match=r"conditions fail.*\n  mu_le_L: .*\(2 vs 1\)"):
        assert_bound_holds(b, 0.0, vals, instance="my instance")
    assert assert_bound_holds(b, 1e9, vals, require_conditions=False).shape == ()  # vacuous: not checked
    ok = {"L": 2.0, "mu": 1.0, "T": 1, "D0": 1.0}
    assert_bound_holds(b, 0.5, ok)
    with pytest.raises(AssertionError, match="my instance"):
        assert_bound_holds(b, np.nan, ok, instance="my instance")
    with pytest.raises(AssertionError, match="2 of 3 fail"):
        assert_bound_holds(b, np.array([0.1, 0.6, 0.7]), ok)


def test_strategies_need_hypothesis(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    with pytest.raises(ImportError, match=r"pip install fedtheory\[test\]"):
        least_squares_problems()


def test_strategy_ranges_are_validated():
    from fedtheory._validation import ParameterError

    with pytest.raises(ParameterError, match="mu"):
        least_squares_problems(L=(1, 2), mu=(3, 4))
    with pytest.raises(ParameterError, match="n_clients"):
        pl_problems(n_clients=(5, 2))


def test_scaled_bound_scales_the_right_side_only():
    from fedtheory.testing import scaled_bound
    from fedtheory.worst import evaluate, make_spec

    spec = make_spec("fedinit.thm2", dict(L=2.0, mu=0.5, B=1.2, G=0.4, D=1.5, eta=0.005, K=2, T=20, beta=0.05,
                                          sigma_l=0.0, C=3, d=3))
    weak = scaled_bound(spec, 0.25)
    assert weak.record.id == "fedinit.thm2.x0.25" and spec.record.id == "fedinit.thm2"
    inst = spec.space.decode(spec.space.random(4, np.random.default_rng(0)))
    a, b = evaluate(spec, inst), evaluate(weak, inst)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_allclose(b.bound, 0.25 * a.bound, rtol=1e-12)
    with pytest.raises(ParameterError, match="factor"):
        scaled_bound(spec, 0.0)
