"""Per-client constants of the problems against brute force, the oracles' noise variance, the measure catalogue."""
import dataclasses

import numpy as np
import pytest
import scipy.optimize

from fedtheory.sim import (
    AdditiveNoise,
    Exact,
    Minibatch,
    RunConfig,
    TrackGradients,
    fedavg,
    heterogeneous_least_squares,
    huber_regression,
    measure_tables,
    opposed_huber,
    pl_nonconvex,
    simulate,
    synthetic_logistic,
)
from fedtheory.sim.measures import measure_catalogue
from fedtheory.sim.problems import Constant, SeparablePLProblem
from fedtheory.sim.rules import Plugin


def _ls_client_loss(p, i):
    X, y = p.X[0, i], p.y[0, i]
    return lambda w: 0.5 * np.mean((X @ w - y) ** 2) + 0.5 * p.ridge * w @ w


def _minimize(f, x0):
    res = scipy.optimize.minimize(f, x0, method="BFGS", options={"gtol": 1e-10})
    return res.x, res.fun


@pytest.mark.parametrize("kw", [{}, {"rank": 2}, {"ridge": 0.3, "heterogeneity": 2.0}])
def test_least_squares_client_constants_brute_force(kw):
    p = heterogeneous_least_squares(4, 4, 12, random_state=3, **kw)
    c = p.constants
    for i in range(p.n_clients):
        X = p.X[0, i]
        H = X.T @ X / len(X) + p.ridge * np.eye(p.dim)  # the Hessian of f_i, from the data
        lam = np.linalg.eigvalsh(H)
        assert c["L_clients"].value[i] == pytest.approx(lam[-1], rel=1e-10)
        assert c["mu_clients"].value[i] == pytest.approx(lam[0] if lam[0] > 1e-9 else 0.0, abs=1e-10)
        f = _ls_client_loss(p, i)
        w, fmin = _minimize(f, np.zeros(p.dim))
        assert c["f_star_clients"].value[i] == pytest.approx(fmin, abs=1e-9)
        assert f(c["w_star_clients"].value[i]) == pytest.approx(fmin, abs=1e-9)
        if lam[0] > 1e-9:
            np.testing.assert_allclose(c["w_star_clients"].value[i], w, atol=1e-5)
    assert np.max(c["L_clients"].value) == pytest.approx(c["L"].value, rel=1e-12)
    fglob = lambda w: np.mean([_ls_client_loss(p, i)(w) for i in range(p.n_clients)])
    _, fstar = _minimize(fglob, np.zeros(p.dim))
    assert c["Gamma"].value == pytest.approx(fstar - np.mean(c["f_star_clients"].value), abs=1e-9)
    assert c["Gamma"].value >= 0 and c["Gamma"].kind == "exact"


def test_least_squares_gamma_matches_the_closed_form_fedshift_used():
    p = heterogeneous_least_squares(10, 10, 50, condition=3.0, random_state=3)
    H, h, cc = p.H[0], p.h[0], p.c[0]
    minima = cc - 0.5 * np.einsum("cd,cd->c", h, np.linalg.solve(H, h[..., None])[..., 0])
    np.testing.assert_allclose(p.constants["f_star_clients"].value, minima, rtol=1e-10, atol=1e-12)
    assert p.constants["Gamma"].value == pytest.approx(p.constants["f_star"].value - minima.mean(), abs=1e-10)


def test_pl_client_constants_brute_force():
    p = pl_nonconvex(5, 3, 10, heterogeneity=3.0, random_state=1)  # |h| up to ~9: several local minima
    c = p.constants
    xs = np.linspace(-15, 15, 300_001)
    for i in range(p.n_clients):
        for j in range(p.dim):
            a = p.h[0, i, j]
            phi = lambda x: x**2 + 3 * np.sin(x) ** 2 + a * x
            x0 = xs[np.argmin(phi(xs))]
            r = scipy.optimize.minimize_scalar(phi, bounds=(x0 - 1e-3, x0 + 1e-3), method="bounded",
                                               options={"xatol": 1e-12})
            assert c["w_star_clients"].value[i, j] == pytest.approx(r.x, abs=1e-6)
        w = c["w_star_clients"].value[i]
        f_i = float(p.client_losses(w[None], np.zeros(1, dtype=np.int64))[0, i])
        assert c["f_star_clients"].value[i] == pytest.approx(f_i, abs=1e-12)
    f_brute = np.array([sum(np.min(xs**2 + 3 * np.sin(xs) ** 2 + a * xs) for a in p.h[0, i]) for i in range(5)])
    np.testing.assert_allclose(c["f_star_clients"].value, f_brute, atol=1e-8)
    # g'' = 2 + 6 cos 2x: max 8 (L_i), min -4 (mu_i: weakly convex)
    d2 = np.diff(xs**2 + 3 * np.sin(xs) ** 2, 2) / (xs[1] - xs[0]) ** 2
    assert np.all(c["L_clients"].value == 8.0) and d2.max() == pytest.approx(8.0, abs=1e-3)
    assert np.all(c["mu_clients"].value == -4.0) and d2.min() == pytest.approx(-4.0, abs=1e-3)
    assert c["Gamma"].value == pytest.approx(0.0 - f_brute.mean(), abs=1e-8)


def _ce_loss(p, i):
    s = p.client_sizes[i]
    X, y = p.X[0, i, :s], p.Y[0, i, :s]

    def f(w):
        Z = X @ w.reshape(p.n_features, p.n_classes)
        m = Z.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(Z - m).sum(axis=1, keepdims=True)))[:, 0]
        return np.mean(lse - Z[np.arange(s), y]) + 0.5 * p.reg * w @ w

    return f


def _fd_hessian(f, w, h=1e-4):
    d = len(w)
    E = np.eye(d) * h
    H = np.array([[(f(w + E[a] + E[b]) - f(w + E[a] - E[b]) - f(w - E[a] + E[b]) + f(w - E[a] - E[b])) / (4 * h * h)
                   for b in range(d)] for a in range(d)])
    return 0.5 * (H + H.T)


def test_logistic_client_constants_brute_force():
    p = synthetic_logistic(3, 2, 3, 15, reg=0.05, random_state=2)
    assert "_client_minima" not in p.__dict__  # lazy: not computed until asked for
    _ = p.constants["L"]
    assert "_client_minima" not in p.__dict__
    c = p.constants
    rng = np.random.default_rng(0)
    for i in range(p.n_clients):
        f = _ce_loss(p, i)
        w, fmin = _minimize(f, np.zeros(p.dim))
        assert c["f_star_clients"].value[i] == pytest.approx(fmin, abs=1e-9)
        np.testing.assert_allclose(c["w_star_clients"].value[i], w, atol=1e-4)
        for w0 in (w, rng.standard_normal(p.dim)):
            lam = np.linalg.eigvalsh(_fd_hessian(f, w0))
            assert lam[-1] <= c["L_clients"].value[i] + 1e-5  # a valid bound
            assert lam[0] == pytest.approx(c["mu_clients"].value[i], abs=1e-5)  # reg, attained along W + v 1'
    assert c["w_star_clients"].kind == "computed" and "Newton" in c["w_star_clients"].note
    fglob = lambda w: np.mean([_ce_loss(p, i)(w) for i in range(p.n_clients)])
    _, fstar = _minimize(fglob, np.zeros(p.dim))
    assert c["Gamma"].value == pytest.approx(fstar - np.mean(c["f_star_clients"].value), abs=1e-8)


# one small instance of every problem family of fedtheory.sim.problems (a new family must be added here)
FAMILIES = {
    "LeastSquaresProblem": lambda: heterogeneous_least_squares(4, 3, 12, random_state=1),
    "PLNonconvexProblem": lambda: pl_nonconvex(4, 3, 10, random_state=1),
    "SeparablePLProblem": lambda: SeparablePLProblem(np.array([1.0, 0.5, 2.0]), np.array([0.5, 2.5, 3.0]),
                                                     np.array([[1.0, -4.0, 0.3], [-1.0, 4.0, -0.3]])),
    "LogisticProblem": lambda: synthetic_logistic(3, 2, 3, 10, random_state=1),
    "HuberProblem": lambda: huber_regression(4, 3, 10, random_state=1),
    "InterpolatedProblem": lambda: _interpolated(),
}


def _interpolated():
    """Two clients rebuilt from points, gradients and values (a PEP worst case's instance)."""
    from fedtheory.sim.problems import InterpolatedProblem
    from fedtheory.sim.problems.interpolant import interpolant_data

    X = np.random.default_rng(0).standard_normal((4, 3))
    parts = [interpolant_data(X, X * a + 0.1, 0.5 * a * np.sum(X * X, axis=1) + 0.1 * X.sum(axis=1), 2.0, 0.5)
             for a in (1.0, 1.5)]
    return InterpolatedProblem(parts, 2.0, 0.5)


def _problem_classes():
    import fedtheory.sim.problems as problems
    from fedtheory.sim.problems import Problem

    found, todo = set(), [Problem]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith(problems.__name__ + "."):
                found.add(sub.__name__)
    return found


def test_every_problem_family_is_listed_here():
    assert _problem_classes() == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_constants_is_a_full_mapping_on_every_family(family):
    """problem.constants.items() gives every constant (the Huber problem's raised NotImplementedError: issue 47)."""
    p = FAMILIES[family]()
    c = dict(p.constants.items())
    assert list(c) == list(p.constants) and len(c) == len(p.constants)
    for name in ("L", "mu", "w_star", "f_star", "L_clients", "mu_clients", "w_star_clients", "f_star_clients", "Gamma"):
        assert isinstance(c[name], Constant), name
        assert c[name].kind in ("exact", "bound", "computed", "measured"), name
    C, d = p.n_clients, p.dim
    assert np.shape(c["w_star_clients"].value) == (C, d) and np.shape(c["f_star_clients"].value) == (C,)
    assert np.shape(c["L_clients"].value) == (C,) and np.shape(c["mu_clients"].value) == (C,)
    zero = np.zeros(1, dtype=np.int64)
    W = np.asarray(c["w_star_clients"].value)
    # each client's minimum is its loss at its minimiser and below its loss at the global minimiser
    own = np.array([p.client_losses(W[i][None], zero)[0, i] for i in range(C)])
    np.testing.assert_allclose(c["f_star_clients"].value, own, rtol=1e-12, atol=1e-12)
    at_global = p.client_losses(np.asarray(c["w_star"].value)[None], zero)[0]
    assert np.all(np.asarray(c["f_star_clients"].value) <= at_global + 1e-10)
    assert c["Gamma"].value >= 0.0
    assert p.describe()  # every constant described


def test_huber_client_minima_brute_force():
    p = huber_regression(3, 2, 8, random_state=4)
    c = p.constants
    for i in range(p.n_clients):
        X, y = p.X[0, i], p.y[0, i]
        f = lambda w: float(np.mean(np.where(np.abs(X @ w - y) <= p.delta, 0.5 * (X @ w - y) ** 2,
                                             p.delta * (np.abs(X @ w - y) - 0.5 * p.delta))))
        res = scipy.optimize.minimize(f, np.ones(p.dim), method="Nelder-Mead",
                                      options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000})
        assert c["f_star_clients"].value[i] == pytest.approx(res.fun, abs=1e-9)
        assert f(c["w_star_clients"].value[i]) == pytest.approx(res.fun, abs=1e-9)
    assert c["Gamma"].value == pytest.approx(c["f_star"].value - np.mean(c["f_star_clients"].value), abs=1e-12)
    # opposed agents: each one's own minimum is 0 (its target reached)
    q = opposed_huber(5)
    np.testing.assert_allclose(q.constants["f_star_clients"].value, 0.0, atol=1e-12)


def test_separable_pl_client_minima_brute_force():
    c_, a_ = np.array([1.0, 0.5, 2.0]), np.array([0.5, 2.5, 3.0])
    h = np.array([[1.0, -4.0, 0.3], [-1.0, 4.0, -0.3]])
    p = SeparablePLProblem(c_, a_, h)
    xs = np.linspace(-20, 20, 400_001)
    W = p.constants["w_star_clients"].value
    for i in range(2):
        for j in range(3):
            phi = lambda x: c_[j] * (x**2 + a_[j] * np.sin(x) ** 2) + h[i, j] * x
            x0 = xs[np.argmin(phi(xs))]
            r = scipy.optimize.minimize_scalar(phi, bounds=(x0 - 1e-3, x0 + 1e-3), method="bounded",
                                               options={"xatol": 1e-12})
            assert W[i, j] == pytest.approx(r.x, abs=1e-6)
            assert phi(W[i, j]) <= r.fun + 1e-12
    # the pl_nonconvex family is the case c = 1, a = 3: the same minimisers
    q = pl_nonconvex(4, 3, 10, heterogeneity=3.0, random_state=2)
    same = SeparablePLProblem(np.ones(3), np.full(3, 3.0), q.h[0])
    np.testing.assert_array_equal(same.constants["w_star_clients"].value, q.constants["w_star_clients"].value)


def test_constants_mapping_is_read_only_and_ordered():
    p = heterogeneous_least_squares(3, 2, 5)
    keys = list(p.constants)
    assert keys[:2] == ["L", "mu"] and keys[-5:] == ["L_clients", "mu_clients", "w_star_clients",
                                                     "f_star_clients", "Gamma"]
    with pytest.raises(TypeError):
        p.constants["L"] = 1.0
    with pytest.raises(KeyError):
        p.constants["nope"]
    assert p.describe()["Gamma"]["kind"] == "exact"


# ------------------------------------------------------------------------------------ oracle noise


def _empirical_noise(p, oracle, w, draws=4000):
    """Monte Carlo E||g_i(w) - grad f_i(w)||^2 for every client via the oracle's own draws."""
    C = p.n_clients
    clients = np.arange(C)[None]
    view = p.view(clients, np.zeros(1, dtype=np.int64))
    W = np.broadcast_to(w, (1, C, p.dim))
    from fedtheory.sim.rng import RunStreams
    streams = RunStreams(np.array([7]))
    dr = oracle.draws(streams, 1, C, draws, p.dim, p.client_sizes[clients])
    G = np.stack([oracle.grad(view, W, k, dr) for k in range(draws)])  # (draws, 1, C, d)
    return np.mean(np.sum((G - view.grad(W)) ** 2, axis=-1), axis=0)[0]  # (C,)


def test_noise_variance_of_the_oracles():
    pl = pl_nonconvex(4, 3, 6, random_state=0)
    w = np.full(3, 0.3)
    assert Exact().noise_variance(pl).value == 0.0
    add = AdditiveNoise(0.7).noise_variance(pl)
    assert add.value == 0.7 and add.kind == "exact"
    assert _empirical_noise(pl, AdditiveNoise(0.7), w).max() == pytest.approx(0.7, rel=0.06)
    mb = Minibatch(2)
    v = mb.noise_variance(pl)
    assert v.kind == "exact" and v.value == pytest.approx(pl.constants["minibatch_variance_1"].value / 2)
    assert _empirical_noise(pl, mb, w).max() == pytest.approx(v.value, rel=0.1)
    ls = heterogeneous_least_squares(3, 2, 6, random_state=1)
    assert mb.noise_variance(ls).value == np.inf
    at = mb.noise_variance(ls, w[None, :2]).value[0]
    assert _empirical_noise(ls, mb, w[:2]).max() == pytest.approx(at, rel=0.1)
    lg = synthetic_logistic(3, 2, 3, 8, random_state=0)
    bound = mb.noise_variance(lg)
    assert bound.kind == "bound"
    assert _empirical_noise(lg, mb, np.zeros(lg.dim)).max() <= bound.value


# ------------------------------------------------------------------------------------ measures


def test_measure_catalogue_lists_every_engine_and_plugin_measure():
    cat = measure_catalogue()
    for table in (measure_tables.STATE_MEASURES, measure_tables.ROUND_MEASURES, measure_tables.VISITED_MEASURES):
        for name, text in table.items():
            assert cat[name]["definition"] == text and text
    assert cat["loss"]["indexing"].startswith("(T+1, R)") and cat["drift"]["indexing"].startswith("(T, R)")
    assert cat["visited_max_grad"]["indexing"].startswith("(1, R)")
    for name in ("visited_client_grad2", "eq15_residual", "quant_error2", "shift_m_next", "consensus", "hyp_R", "d_t"):
        assert name in cat and cat[name]["source"].startswith("plug-in")

    class Mine(Plugin):
        def measures(self):
            return {"my_measure": "what I measure"}

    assert measure_catalogue(Mine())["my_measure"]["definition"] == "what I measure"


def test_track_gradients_is_public_and_records():
    from fedtheory.sim import measures, recorders

    assert measures.TrackGradients is recorders.TrackGradients is TrackGradients
    p = heterogeneous_least_squares(4, 3, 8)
    alg = dataclasses.replace(fedavg(), local=(TrackGradients(),))
    w0 = p.initial_point(0)
    tr = simulate(p, alg, RunConfig(rounds=3, local_steps=2, lr=0.1), [0], w0=w0, measures=("visited_client_grad2",))
    g0 = np.max(np.sum(p.client_grads(w0[None], np.zeros(1, dtype=np.int64)) ** 2, axis=-1))
    assert tr["visited_client_grad2"].shape == (3, 1) and tr["visited_client_grad2"][0, 0] >= g0 - 1e-12


def test_interpolated_client_minima_closed_form_agrees_with_descent():
    """At mu = 0 a PEP instance's client minima are a closed form (min h_j = -max c_j); gradient descent on each
    client from the closed form's point and from 0 reaches the same value."""
    from fedtheory.sim.problems import InterpolatedProblem
    from fedtheory.sim.problems.interpolant import interpolant_data, minimize_sum

    X = np.random.default_rng(3).standard_normal((5, 3))
    parts = [interpolant_data(X, X * a + b, 0.5 * a * np.sum(X * X, axis=1) + b * X.sum(axis=1), 2.0, 0.0)
             for a, b in ((1.0, 0.1), (1.7, -0.3))]  # f_j = (a/2)||x||^2 + b 1'x at the points X
    p = InterpolatedProblem(parts, 2.0, 0.0)
    c = p.constants
    assert c["f_star_clients"].kind == "exact"
    for j, part in enumerate(p.parts):
        _, f, gn = minimize_sum([part], np.ones(1), 2.0, 0.0, np.zeros(3))
        assert f == pytest.approx(c["f_star_clients"].value[j], abs=1e-8)
        zero = np.zeros(1, dtype=np.int64)
        at = p.client_losses(np.asarray(c["w_star_clients"].value[j])[None], zero)[0, j]
        assert at == pytest.approx(c["f_star_clients"].value[j], abs=1e-12)
