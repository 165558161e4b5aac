"""Each problem's constants against brute-force estimates, and its oracles against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.sim import AdditiveNoise, digits_logistic, heterogeneous_least_squares, pl_nonconvex, synthetic_logistic
from fedtheory.sim.problems import pl_ratio


def _all_client_grads(p, W):
    return p.client_grads(W, np.zeros(len(W), dtype=int))


@given(seed=st.integers(0, 10_000), rank=st.sampled_from([None, 3]))
def test_least_squares_L_mu_exact(seed, rank):
    p = heterogeneous_least_squares(5, 6, 15, rank=rank, random_state=seed)
    L, mu = p.constants["L"].value, p.constants["mu"].value
    rng = np.random.default_rng(seed)
    U, V = rng.standard_normal((2, 400, 6))
    gu, gv = _all_client_grads(p, U), _all_client_grads(p, V)
    ratios = np.linalg.norm(gu - gv, axis=2) / np.linalg.norm(U - V, axis=1)[:, None]
    assert ratios.max() <= L * (1 + 1e-12)
    # attained along the top eigenvector of the worst client's Hessian
    i = np.argmax([np.linalg.eigvalsh(H).max() for H in p.H[0]])
    vec = np.linalg.eigh(p.H[0, i])[1][:, -1]
    attained = np.linalg.norm(p.H[0, i] @ vec)
    assert attained == pytest.approx(L, rel=1e-12)
    # PL / strong convexity: 2 mu (f - f*) <= ||grad f||^2 everywhere, tight along the mu eigenvector
    w_star, f_star = p.constants["w_star"].value, p.constants["f_star"].value
    W = w_star + rng.standard_normal((400, 6))
    assert np.all(2 * mu * (p.loss(W) - f_star) <= np.sum(p.grad(W) ** 2, axis=1) * (1 + 1e-10) + 1e-12)
    Hbar = p.H[0].mean(axis=0)
    lam, Q = np.linalg.eigh(Hbar)
    j = int(np.argmin(np.where(lam > 1e-10 * lam.max(), lam, np.inf)))
    w = (w_star + Q[:, j])[None]
    assert 2 * mu * (p.loss(w) - f_star)[0] == pytest.approx(np.sum(p.grad(w) ** 2), rel=1e-9)
    assert np.linalg.norm(p.grad(w_star[None])) < 1e-10


@given(seed=st.integers(0, 10_000), factor=st.sampled_from([1.05, 1.5, 3.0]))
def test_heterogeneity_G2_is_tight(seed, factor):
    p = heterogeneous_least_squares(5, 4, 15, heterogeneity=1.0, random_state=seed)
    B = max(1.0, p.constants["B_min"].value) * factor
    G2 = p.heterogeneity_G2(B).value
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((2000, 4)) * 3
    lhs = np.mean(np.sum(_all_client_grads(p, W) ** 2, axis=2), axis=1)
    rhs = G2 + B**2 * np.sum(p.grad(W) ** 2, axis=1)
    assert np.all(lhs <= rhs * (1 + 1e-10) + 1e-10)
    # the sup is attained at the maximiser of the concave quadratic: recover it by gradient ascent check
    Hbar, hbar = p.H[0].mean(0), p.h[0].mean(0)
    M = np.einsum("cde,cef->df", p.H[0], p.H[0]) / 5
    m = np.einsum("cde,ce->d", p.H[0], p.h[0]) / 5
    A = B**2 * Hbar @ Hbar - M
    w_max = -np.linalg.solve(A, m - B**2 * Hbar @ hbar)
    q = (np.mean(np.sum(_all_client_grads(p, w_max[None]) ** 2, axis=2)) - B**2 * np.sum(p.grad(w_max[None]) ** 2))
    assert q == pytest.approx(G2, rel=1e-8, abs=1e-10)


def test_heterogeneity_below_B_min_is_infinite():
    p = heterogeneous_least_squares(5, 4, 15, random_state=0)
    assert p.heterogeneity_G2(0.5 * p.constants["B_min"].value).value == np.inf
    with pytest.raises(ParameterError, match="B="):
        p.heterogeneity_G2(-1.0)


def test_pl_nonconvex_constants():
    p = pl_nonconvex(6, 4, 20, random_state=0)
    c = p.constants
    xs = np.linspace(1e-4, 30, 400_001)
    assert pl_ratio(xs).min() >= c["mu"].value - 1e-12  # no point beats the computed infimum
    assert c["mu"].value > 1 / 32  # Karimi et al.'s constant is valid but not tight
    # L = 8 exactly: |g''| <= 8 and equals 8 at 0
    rng = np.random.default_rng(0)
    U, V = rng.standard_normal((2, 500, 4)) * 3
    r = np.linalg.norm(_all_client_grads(p, U)
                       - _all_client_grads(p, V), axis=2) / np.linalg.norm(U - V, axis=1)[:, None]
    assert r.max() <= 8.0
    # Assumption 3 with B = 1 is an equality
    W = rng.standard_normal((50, 4))
    lhs = np.mean(np.sum(_all_client_grads(p, W) ** 2, axis=2), axis=1)
    assert np.allclose(lhs, p.heterogeneity_G2(1.0).value + np.sum(p.grad(W) ** 2, axis=1))
    assert np.allclose(p.grad(np.zeros((1, 4))), 0) and p.loss(np.zeros((1, 4)))[0] == 0


def test_additive_noise_has_exact_variance():
    p = heterogeneous_least_squares(3, 8, 10, random_state=0)
    from fedtheory.sim.rng import RunStreams

    o = AdditiveNoise(0.7)
    xi = o.draws(RunStreams(list(range(200))), 200, 3, 50, 8, p.client_sizes)  # (R, K, N, d)
    sq = np.sum(xi**2, axis=-1).ravel()
    assert abs(sq.mean() - 0.7) < 4 * sq.std() / np.sqrt(sq.size)
    assert np.all(np.abs(xi.reshape(-1, 8).mean(0)) < 4 * np.sqrt(0.7 / 8 / sq.size))


def test_minibatch_variance_matches_closed_form():
    p = heterogeneous_least_squares(3, 4, 12, random_state=3)
    w = np.random.default_rng(0).standard_normal((1, 4))
    _, var = p.sample_grad_stats(w)  # max_i (1/S) sum_j ||g_j - g_i||^2
    view = p.view(np.array([[0, 1, 2]]), np.zeros(1, int))
    rng = np.random.default_rng(1)
    n = 20000
    idx = rng.integers(0, 12, (n, 3, 1))
    G = np.stack([view.grad_batch(np.broadcast_to(w[:, None, :], (1, 3, 4)), idx[k][None]) for k in range(n)])[:, 0]
    emp = np.mean(np.sum((G - view.grad(np.broadcast_to(w[:, None, :], (1, 3, 4)))[0]) ** 2, axis=-1), axis=0)
    assert emp.max() == pytest.approx(var[0], rel=0.05)


def test_population_loss_matches_monte_carlo():
    p = heterogeneous_least_squares(3, 4, 10, random_state=5)
    w = np.random.default_rng(0).standard_normal(4)
    rng = np.random.default_rng(1)
    vals = []
    for i in range(3):
        x, y = p.model.draw(rng, i, 200_000)
        vals.append(0.5 * np.mean((x @ w - y) ** 2))
    assert p.population_loss(w[None])[0] == pytest.approx(np.mean(vals), rel=0.01)


@pytest.mark.parametrize("make", [lambda: synthetic_logistic(4, 3, 3, 20, random_state=0),
                                  lambda: digits_logistic(3, alpha=1.0, random_state=0)])
def test_logistic_gradients_and_constants(make):
    p = make()
    rng = np.random.default_rng(0)
    w = 0.1 * rng.standard_normal((1, p.dim))
    g = p.client_grads(w, np.zeros(1, int))[0]
    e = np.zeros(p.dim)
    for j in rng.choice(p.dim, 5, replace=False):
        e[:] = 0
        e[j] = 1e-6
        fd = (p.client_losses(w + e, np.zeros(1, int)) - p.client_losses(w - e, np.zeros(1, int)))[0] / 2e-6
        np.testing.assert_allclose(g[:, j], fd, rtol=1e-5, atol=1e-8)
    c = p.constants
    assert np.linalg.norm(p.grad(c["w_star"].value[None])) < 1e-8
    # the Hessian bound: gradient differences never exceed L ||u - v||
    U, V = 0.5 * rng.standard_normal((2, 50, p.dim))
    r = np.linalg.norm(p.client_grads(U, np.zeros(50, int)) - p.client_grads(V, np.zeros(50, int)), axis=2)
    assert np.all(r <= c["L"].value * np.linalg.norm(U - V, axis=1)[:, None] + 1e-12)
    # minibatch gradients average to the full gradient over all samples
    view = p.view(np.array([[0]]), np.zeros(1, int))
    S = int(p.client_sizes[0])
    gb = view.grad_batch(w[:, None, :], np.arange(S)[None, None, :])
    np.testing.assert_allclose(gb, view.grad(w[:, None, :]), atol=1e-12)


def test_neighbours_differ_in_exactly_one_sample():
    p = heterogeneous_least_squares(4, 3, 8, random_state=0)
    reps = p.random_replacements(3, random_state=1)
    pn = p.neighbours(reps, random_state=2)
    assert pn.n_variants == 4
    for j, (c, i) in enumerate(reps):
        diff = np.any(pn.X[0] != pn.X[j + 1], axis=-1)
        assert diff.sum() == 1 and diff[c, i]
    with pytest.raises(ParameterError, match="index"):
        p.neighbours([(0, 8)])


def test_factories_validate():
    with pytest.raises(ParameterError, match="samples_per_client"):
        heterogeneous_least_squares(3, 3, 1)
    with pytest.raises(ParameterError, match="rank"):
        heterogeneous_least_squares(3, 3, 5, rank=4)
    with pytest.raises(ParameterError, match="random_state"):
        heterogeneous_least_squares(3, 3, 5, random_state=-2)
    with pytest.raises(ParameterError, match="n_clients"):
        pl_nonconvex(1, 3, 5)


@pytest.mark.parametrize("shared", ["every client", "the same clients", "different clients"])
@pytest.mark.parametrize("classes", [3, 20])  # the folded (k <= 16) and the reduced softmax
def test_logistic_gradients_in_place_equal_the_written_out_formula(classes, shared):
    """issue 26 (speed2): the logistic view's gradients, computed in the logits' memory and, when every run has the
    same clients, on one read-only block of their data seen by all runs, are bit for bit the formula written out
    with temporaries on each run's own copy of the data: softmax(XW), (P - Y) mask, X'E / S_i + reg w, the
    minibatch form, the loss and the representation."""
    p = synthetic_logistic(4, 5, classes, 9, random_state=1)
    g = np.random.default_rng(0)
    R = 3
    sel = {"every client": np.broadcast_to(np.arange(4), (R, 4)),
           "the same clients": np.broadcast_to(g.permutation(4)[:3], (R, 3)),
           "different clients": np.stack([g.permutation(4)[:3] for _ in range(R)])}[shared]
    v = p.view(sel, np.zeros(R, dtype=np.int64))
    N = sel.shape[1]
    X, Y, mask = p.X[0][sel], p.Yoh[0][sel], p.mask[sel]  # each run's own copy (R,N,S,...)
    assert np.array_equal(v.X, X) and np.array_equal(v.Y, Y)
    assert (v.X.strides[0] == 0) == (shared != "different clients")
    w = g.standard_normal((R, N, p.dim))
    W = w.reshape(R, N, p.n_features, p.n_classes)

    def softmax(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    size = p.client_sizes[sel].astype(float)
    Z = np.matmul(X, W)
    P = softmax(Z)
    G = np.matmul(np.swapaxes(X, -1, -2), (P - Y) * mask[..., None]) / size[..., None, None]
    assert np.array_equal(v.grad(w), G.reshape(w.shape) + p.reg * w)
    assert np.array_equal(v.representation(w), Z)
    assert np.array_equal(v.representation_grad(w, P), np.matmul(np.swapaxes(X, -1, -2), P).reshape(w.shape))
    lse = Z.max(axis=-1)
    if classes <= 16:  # the folded max and sum of the class slices
        s = np.exp(Z[..., 0] - lse)
        for c in range(1, classes):
            s = s + np.exp(Z[..., c] - lse)
    else:
        s = np.exp(Z - lse[..., None]).sum(axis=-1)
    ce = (lse + np.log(s) - np.sum(Z * Y, axis=-1)) * mask
    assert np.array_equal(v.loss(w), ce.sum(axis=-1) / size + 0.5 * p.reg * np.sum(w**2, axis=-1))
    idx = g.integers(0, 9, (R, N, 4))
    Xb = np.take_along_axis(X, idx[..., None], axis=2)
    Yb = np.take_along_axis(Y, idx[..., None], axis=2)
    Gb = np.matmul(np.swapaxes(Xb, -1, -2), softmax(np.matmul(Xb, W)) - Yb) / 4
    assert np.array_equal(v.grad_batch(w, idx), Gb.reshape(w.shape) + p.reg * w)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), ridge=st.sampled_from([0.0, 0.1, 2.0]), variants=st.integers(1, 3))
def test_least_squares_sample_grad_stats_match_the_per_sample_gradients(seed, ridge, variants):
    """sample_grad_stats from the residuals (no per-sample gradient array) against the definition: max_ij ||g_ij||
    and max_i mean_j ||g_ij - mean_j g_ij||^2 with g_ij = x_ij (x_ij.w - y_ij) + ridge w, computed naively."""
    from fedtheory.sim.problems import LeastSquaresProblem

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(variants, 4, 6, 3)) * rng.uniform(0.1, 3.0, size=(variants, 4, 1, 1))
    y = rng.normal(size=(variants, 4, 6))
    p = LeastSquaresProblem(X, y, ridge=ridge)
    w = rng.normal(size=(5, 3)) * 3
    var_of = rng.integers(0, variants, size=5)
    gmax, gvar = p.sample_grad_stats(w, var_of)
    for k in range(5):
        Xk, yk = X[var_of[k]], y[var_of[k]]
        g = np.array([[Xk[c, j] * (Xk[c, j] @ w[k] - yk[c, j]) + ridge * w[k] for j in range(6)] for c in range(4)])
        naive_max = max(np.linalg.norm(g[c, j]) for c in range(4) for j in range(6))
        naive_var = max(np.mean([np.sum((g[c, j] - g[c].mean(axis=0)) ** 2) for j in range(6)]) for c in range(4))
        assert np.isclose(gmax[k], naive_max, rtol=1e-9, atol=1e-12)
        assert np.isclose(gvar[k], naive_var, rtol=1e-8, atol=1e-10 * naive_max ** 2)
