"""FedMRUR's plug-ins: engine vs the naive reference, the Lorentz-model facts, R's gradient, Hessian and
smoothness bound, the normalized-aggregation measures, the momentum modes, bad input."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.papers.fedmrur.algorithms import (
    fedmrur,
    fedmrur_h,
    fedmrur_n,
    mofedsam,
    settings_of,
    weighted_grad_norm2,
)
from fedtheory.sim import AdditiveNoise, Exact, Minibatch, RunConfig, fedcm, pl_nonconvex, simulate, synthetic_logistic
from fedtheory.sim.engine import Algorithm
from fedtheory.sim.hyperbolic import (
    HyperbolicRegularizer,
    NormalizedAggregation,
    lifted_sqdist,
    lorentz_inner,
    lorentz_lift,
    lorentz_sqdist,
    r_bound,
    regularizer_hessian,
)
from fedtheory.sim.reference import reference_simulate
from fedtheory.sim.rules import SAM, Aggregator, ClientMomentum, MeanUpdates, RoundState, State

ALGS = {
    "fedmrur": lambda: fedmrur(rho=0.1, gamma=0.5, sigma=2.0, server_lr=0.8),
    "fedmrur_displacement": lambda: fedmrur(rho=0.1, gamma=0.3, sigma=1.0, units="displacement"),
    "fedmrur_n": lambda: fedmrur_n(rho=0.1, server_lr=1.3),
    "fedmrur_h": lambda: fedmrur_h(rho=0.2, gamma=0.4, sigma=3.0, beta=0.5),
    "mofedsam": lambda: mofedsam(rho=0.1, server_lr=0.9),
}
ORACLES = {"exact": lambda: Exact(), "additive": lambda: AdditiveNoise(0.2), "minibatch": lambda: Minibatch(3)}


@given(alg=st.sampled_from(sorted(ALGS)), oracle=st.sampled_from(sorted(ORACLES)), N=st.sampled_from([None, 1, 3]),
       seed=st.integers(0, 10_000))
def test_engine_matches_naive_reference(alg, oracle, N, seed):
    p = synthetic_logistic(6, 3, 3, 12, random_state=seed)
    cfg = RunConfig(rounds=4, local_steps=3, lr=0.05, clients_per_round=N, oracle=ORACLES[oracle]())
    seeds = [seed, seed + 1, seed]
    tr = simulate(p, ALGS[alg](), cfg, seeds, measures=())
    ref, _ = reference_simulate(p, ALGS[alg](), cfg, seeds)
    np.testing.assert_allclose(tr.final_w, ref, rtol=0, atol=1e-12)


@given(seed=st.integers(0, 10_000), normalized=st.booleans())
def test_engine_matches_reference_on_a_problem_without_representations(seed, normalized):
    p = pl_nonconvex(6, 4, 10, random_state=seed)
    alg = fedmrur(alpha=0.3, rho=0.05, normalized=normalized, hyperbolic=False)
    cfg = RunConfig(rounds=5, local_steps=2, lr=0.02, clients_per_round=3, oracle=AdditiveNoise(0.1))
    tr = simulate(p, alg, cfg, [seed, seed + 7], measures=())
    ref, _ = reference_simulate(p, alg, cfg, [seed, seed + 7])
    np.testing.assert_allclose(tr.final_w, ref, rtol=0, atol=1e-12)


def test_engine_matches_reference_with_per_run_hyperparameters():
    p = synthetic_logistic(5, 3, 3, 10, random_state=4)
    gammas, sigmas, lrs = np.array([0.0, 0.2, 0.5]), np.array([1.0, 2.0, 5.0]), np.array([0.02, 0.05, 0.1])
    server = np.array([0.5, 1.0, 2.0])
    cfg = RunConfig(rounds=4, local_steps=2, lr=lrs, clients_per_round=3, oracle=AdditiveNoise(0.1))
    tr = simulate(p, fedmrur(rho=0.1, gamma=gammas, sigma=sigmas, server_lr=server), cfg, [0, 1, 2], measures=())
    for r in range(3):
        one = fedmrur(rho=0.1, gamma=gammas[r], sigma=sigmas[r], server_lr=server[r])
        ref, _ = reference_simulate(p, one, dataclasses.replace(cfg, lr=lrs[r]), [r])
        np.testing.assert_allclose(tr.final_w[r], ref[0], atol=1e-12)


def test_plain_normalized_aggregation_is_mean_updates_and_momentum_modes_agree():
    p = synthetic_logistic(6, 3, 3, 12, random_state=1)
    cfg = RunConfig(rounds=5, local_steps=3, lr=0.05, clients_per_round=4, oracle=AdditiveNoise(0.1))
    local = (SAM(0.1), ClientMomentum(0.3, delta="global_update"))
    a = simulate(p, Algorithm("a", local=local, aggregate=NormalizedAggregation(0.7, normalize=False)), cfg, [3, 4],
                 measures=())
    b = simulate(p, Algorithm("b", local=local, aggregate=MeanUpdates(0.7)), cfg, [3, 4], measures=())
    assert np.array_equal(a.final_w, b.final_w)
    # with the plain mean, FedCM's Delta (mean of the updates) is the global update the server applied
    c = simulate(p, Algorithm("c", local=(SAM(0.1), ClientMomentum(0.3)), aggregate=MeanUpdates(0.7)), cfg, [3, 4],
                 measures=())
    np.testing.assert_allclose(a.final_w, c.final_w, rtol=0, atol=1e-13)
    # but not with normalized aggregation: there Delta^t is d_t times longer
    n1 = simulate(p, fedmrur_n(alpha=0.3, rho=0.1), cfg, [3, 4], measures=())
    n2 = simulate(p, Algorithm("n2", local=(SAM(0.1), ClientMomentum(0.3)), aggregate=NormalizedAggregation(1.0)), cfg,
                  [3, 4], measures=())
    assert np.max(np.abs(n1.final_w - n2.final_w)) > 1e-6


def test_fedcm_is_unchanged_by_the_new_momentum_options():
    p = synthetic_logistic(6, 3, 3, 12, random_state=2)
    cfg = RunConfig(rounds=4, local_steps=3, lr=0.05, clients_per_round=3, oracle=Minibatch(2))
    explicit = Algorithm("FedCM", local=(ClientMomentum(0.4, delta="mean", units="gradient"),),
                         aggregate=MeanUpdates(1.0))
    assert np.array_equal(simulate(p, fedcm(0.4), cfg, [5], measures=()).final_w,
                          simulate(p, explicit, cfg, [5], measures=()).final_w)
    assert ClientMomentum(0.4).params() == {"alpha": 0.4}


# ------------------------------------------------------------------------------------ the Lorentz model


@given(seed=st.integers(0, 10_000), m=st.integers(1, 6), beta=st.floats(1e-3, 50.0), scale=st.floats(1e-3, 30.0))
def test_lorentz_model_facts(seed, m, beta, scale):
    rng = np.random.default_rng(seed)
    z, y = scale * rng.standard_normal((2, 8, m))
    Lz, Ly = lorentz_lift(z, beta), lorentz_lift(y, beta)
    norm2 = 1 + np.sum(z**2, axis=1)
    np.testing.assert_allclose(lorentz_inner(Lz, Lz), -beta, atol=1e-12 * np.max(norm2) + 1e-12 * beta)
    assert np.all(Lz[:, 0] > 0)
    assert np.all(lorentz_inner(Lz, Ly) <= -beta + 1e-9 * (1 + np.max(norm2)))  # reverse Cauchy-Schwarz
    d = lifted_sqdist(z, y, beta)
    assert np.all(d >= 0)
    assert np.all(d > 0)  # distinct points (almost surely) are at positive distance
    assert np.all(lifted_sqdist(z, z, beta) == 0)
    scale2 = 1 + np.sum(z**2, axis=1) + np.sum(y**2, axis=1) + beta
    np.testing.assert_allclose(lorentz_sqdist(Lz, Ly, beta), d, rtol=0, atol=1e-12 * np.max(scale2))
    np.testing.assert_allclose(d, np.sum((z - y) ** 2, axis=1) - (Lz[:, 0] - Ly[:, 0]) ** 2, rtol=1e-9,
                               atol=1e-12 * np.max(scale2))


def test_stable_distance_has_no_cancellation_near_equal_points():
    import mpmath

    z = np.array([[1e3, -2e3, 5e2]])
    y = z + np.array([[1e-7, 3e-7, -2e-7]])
    with mpmath.workdps(60):  # eq. (3) as printed, in 60-digit arithmetic
        zs, ys = [mpmath.mpf(float(v)) for v in z[0]], [mpmath.mpf(float(v)) for v in y[0]]
        a, b = mpmath.sqrt(1 + sum(v * v for v in zs)), mpmath.sqrt(1 + sum(v * v for v in ys))
        ref = float(-2 - 2 * (-a * b + sum(u * v for u, v in zip(zs, ys))))
    stable = float(lifted_sqdist(z, y, 1.0)[0])
    printed = float(lorentz_sqdist(lorentz_lift(z, 1.0), lorentz_lift(y, 1.0), 1.0)[0])
    assert abs(stable - ref) <= 1e-9 * ref
    assert abs(printed - ref) > 1e-3 * ref  # the printed form cancels catastrophically at this scale


# ------------------------------------------------------------------------------------ R: gradient, Hessian, r


def _client(p, i):
    s = int(p.client_sizes[i])
    return p.X[0, i, :s], np.full(s, 1.0 / s)


def _R(X, wts, w, wg, beta, sigma, k):
    Z, Zg = X @ w.reshape(-1, k), X @ wg.reshape(-1, k)
    return float(np.exp(np.sum(wts * lorentz_sqdist(lorentz_lift(Z, beta), lorentz_lift(Zg, beta), beta)) / sigma))


def _round_state(p, w, w_anchor):
    R, N = 1, p.n_clients
    sel = np.arange(N)[None]
    view = p.view(sel, np.zeros(1, np.int64))
    anchor = np.broadcast_to(w_anchor, (R, N, p.dim))
    return RoundState(t=0, K=1, sel=sel, anchor=anchor, lr=np.full((R, 1, 1), 0.1), view=view,
                      state=State(w=w_anchor[None].copy()))


@given(seed=st.integers(0, 10_000), beta=st.floats(0.1, 5.0), sigma=st.floats(0.5, 20.0), gamma=st.floats(0.01, 2.0))
def test_regularizer_gradient_matches_finite_differences(seed, beta, sigma, gamma):
    p = synthetic_logistic(3, 3, 3, 8, random_state=seed)
    rng = np.random.default_rng(seed)
    wg = rng.standard_normal(p.dim) * 0.5
    w = wg + 0.3 * rng.standard_normal(p.dim)
    reg = HyperbolicRegularizer(gamma, sigma, beta)
    reg.setup(State(w=wg[None]), 1, p.n_clients, p.dim)
    rs = _round_state(p, w, wg)
    reg.round_start(rs)
    g = reg.objective_grad(rs, np.broadcast_to(w, (1, p.n_clients, p.dim)).copy())[0]
    h = 1e-6
    for i in range(p.n_clients):
        X, wts = _client(p, i)
        num = np.array([(_R(X, wts, w + h * e, wg, beta, sigma, 3) - _R(X, wts, w - h * e, wg, beta, sigma, 3))
                        / (2 * h)
                        for e in np.eye(p.dim)])
        np.testing.assert_allclose(g[i], gamma * num, rtol=1e-5, atol=1e-7 * (1 + np.abs(num).max()))
    # at w = w^t the gradient of R vanishes (its minimum): grad F(w^t) = grad f(w^t)
    g0 = reg.objective_grad(rs, np.broadcast_to(wg, (1, p.n_clients, p.dim)).copy())
    assert np.max(np.abs(g0)) < 1e-12


@given(seed=st.integers(0, 10_000), beta=st.floats(0.2, 3.0), sigma=st.floats(0.5, 10.0))
def test_regularizer_hessian_matches_finite_differences(seed, beta, sigma):
    p = synthetic_logistic(2, 2, 3, 6, random_state=seed)
    rng = np.random.default_rng(seed)
    X, wts = _client(p, 0)
    wg = 0.5 * rng.standard_normal(p.dim)
    w = wg + 0.4 * rng.standard_normal(p.dim)
    H = regularizer_hessian(X, wts, w, wg, beta, sigma, 3)
    h = 1e-4
    E = np.eye(p.dim) * h
    f = lambda x: _R(X, wts, x, wg, beta, sigma, 3)
    num = np.array([[(f(w + a + b) - f(w + a - b) - f(w - a + b) + f(w - a - b)) / (4 * h * h) for b in E] for a in E])
    np.testing.assert_allclose(H, num, rtol=1e-4, atol=1e-5 * (1 + np.abs(H).max()))
    assert np.allclose(H, H.T)


@given(seed=st.integers(0, 10_000), beta=st.floats(0.05, 5.0), sigma=st.floats(0.3, 50.0), radius=st.floats(0.0, 1.5))
def test_r_bound_dominates_the_exact_hessian_in_the_ball(seed, beta, sigma, radius):
    p = synthetic_logistic(3, 3, 3, 8, random_state=seed)
    rng = np.random.default_rng(seed)
    wg = rng.standard_normal(p.dim)
    sel = np.arange(3)[None]
    v = p.view(sel, np.zeros(1, np.int64))
    zg = v.representation(np.broadcast_to(wg, (1, 3, p.dim)))
    rb = r_bound(v.representation_inputs(), v.sample_weights(), zg, beta, sigma, np.array([radius]))[0]
    for _ in range(6):
        u = rng.standard_normal(p.dim)
        w = wg + radius * rng.uniform() ** (1 / p.dim) * u / np.linalg.norm(u)
        for i in range(3):
            X, wts = _client(p, i)
            H = regularizer_hessian(X, wts, w, wg, beta, sigma, 3)
            assert np.max(np.abs(np.linalg.eigvalsh(H))) <= rb[i] * (1 + 1e-10)


def test_hyperbolic_measures_against_direct_computation():
    p = synthetic_logistic(4, 3, 3, 8, random_state=3)
    cfg = RunConfig(rounds=3, local_steps=2, lr=0.1, oracle=Exact())
    tr = simulate(p, fedmrur(rho=0.2, gamma=0.5, sigma=2.0), cfg, [0], keep_iterates=True,
                  measures=("hyp_R", "hyp_radius", "hyp_r_bound"))
    assert np.all(tr["hyp_R"] >= 1) and np.all(tr["hyp_radius"] >= 0.2 - 1e-12)  # the SAM point is rho away
    # the r bound of the last round, recomputed from the iterate and the recorded radius
    wg = tr.iterates[-2, 0]
    v = p.view(np.arange(4)[None], np.zeros(1, np.int64))
    zg = v.representation(np.broadcast_to(wg, (1, 4, p.dim)))
    rb = r_bound(v.representation_inputs(), v.sample_weights(), zg, 1.0, 2.0, tr["hyp_radius"][-1])
    assert tr["hyp_r_bound"][-1, 0] == pytest.approx(rb.max(), rel=1e-12)


# ------------------------------------------------------------------------------------ normalized aggregation


def _rs_with_updates(U, w=None, server_lr=1.0, normalize=True):
    R, N, d = U.shape
    w = np.zeros((R, d)) if w is None else w
    agg = NormalizedAggregation(server_lr, normalize=normalize)
    agg.setup(State(w=w), R, N, d)
    rs = RoundState(t=0, K=1, sel=np.tile(np.arange(N), (R, 1)), anchor=None, lr=np.ones((R, 1, 1)), view=None,
                    state=State(w=w))
    rs.w0 = np.broadcast_to(w[:, None, :], U.shape).copy()
    rs.sent = rs.w0 - U
    return agg, rs


@given(seed=st.integers(0, 10_000), N=st.integers(2, 6), d=st.integers(1, 5), normalize=st.booleans())
def test_aggregation_and_measures_against_naive_loops(seed, N, d, normalize):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((2, N, d)) * rng.uniform(0.1, 3.0, size=(2, N, 1))
    agg, rs = _rs_with_updates(U, server_lr=0.7, normalize=normalize)
    w_next = agg.aggregate(rs)
    m = agg.measure(rs)
    for r in range(2):
        tot = U[r].sum(axis=0)
        norms = [np.linalg.norm(u) for u in U[r]]
        dt = sum(norms) / np.linalg.norm(tot)
        delta = dt * tot / N if normalize else tot / N  # Alg. 1 line 15: sum ||D_p|| / (|S| ||sum D_p||) sum D_p
        np.testing.assert_allclose(w_next[r], -0.7 * delta, atol=1e-13)
        assert m["d_t"][r] == pytest.approx(dt, rel=1e-13) and dt >= 1
        cos = [U[r, i] @ U[r, j] / (norms[i] * norms[j]) for i in range(N) for j in range(N) if i != j]
        assert m["cos_pairwise"][r] == pytest.approx(np.mean(cos), abs=1e-12)
        cos_t = [u @ tot / (np.linalg.norm(u) * np.linalg.norm(tot)) for u in U[r]]
        assert m["cos_to_aggregate"][r] == pytest.approx(np.mean(cos_t), abs=1e-12)
        assert m["update_norm_plain"][r] == pytest.approx(np.linalg.norm(tot) / N, rel=1e-13)
        assert m["update_norm"][r] == pytest.approx(np.linalg.norm(delta), rel=1e-13)
        assert m["geometry_residual"][r] < 1e-12


def test_d_t_special_cases():
    parallel = np.array([[[1.0, 0.0], [3.0, 0.0]]])
    orth = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
    cancel = np.array([[[1.0, 2.0], [-1.0, -2.0]]])
    zero = np.zeros((1, 2, 2))
    for U, want in ((parallel, 1.0), (orth, np.sqrt(3.0)), (zero, 1.0)):
        agg, rs = _rs_with_updates(U)
        agg.aggregate(rs)
        assert agg.measure(rs)["d_t"][0] == pytest.approx(want, rel=1e-14)
    agg, rs = _rs_with_updates(cancel)
    assert np.all(agg.aggregate(rs) == 0)  # the direction is undefined: no update
    assert np.isinf(agg.measure(rs)["d_t"][0])


def test_geometry_identity_can_fail():
    """The measured residual is not trivially 0: a wrong applied update shows up."""
    U = np.random.default_rng(0).standard_normal((1, 4, 3))
    agg, rs = _rs_with_updates(U)
    agg.aggregate(rs)
    rs.extra["global_update"] = rs.extra["global_update"] * 1.01
    assert agg.measure(rs)["geometry_residual"][0] > 1e-3


def test_weighted_grad_norm_helper():
    p = pl_nonconvex(6, 4, 10, random_state=0)
    tr = simulate(p, fedmrur_n(rho=0.05), RunConfig(rounds=6, local_steps=2, lr=0.02, clients_per_round=3), [0, 1],
                  measures=("grad_norm2", "d_t"))
    g, d = tr["grad_norm2"], tr["d_t"]
    for r in range(2):
        want = sum(d[t, r] * g[t, r] for t in range(6)) / sum(d[t, r] for t in range(6))
        assert weighted_grad_norm2(tr)[r] == pytest.approx(want, rel=1e-14)


# ------------------------------------------------------------------------------------ momentum units


def test_printed_momentum_units_are_unstable_at_the_papers_settings():
    """Module note of fedtheory.papers.fedmrur.algorithms: with Delta^t in displacement units the momentum recursion has
    gain ~ eta_l K (1 - alpha) d_t along directions where the loss is flat; at eta_l = 0.1, K = 15, alpha = 0.1 that is
    >= 1.35 and logistic regression (weakly curved) blows up, while the gradient-unit momentum stays bounded. At
    K eta_l = 1 the two units coincide."""
    p = synthetic_logistic(10, 10, 3, 20, random_state=0)
    cfg = RunConfig(rounds=100, local_steps=15, lr=0.1, clients_per_round=5, oracle=Exact())
    for alg in (fedmrur_n, mofedsam):
        grad = simulate(p, alg(alpha=0.1, rho=0.05), cfg, [0, 1], measures=("opt_error",))
        disp = simulate(p, alg(alpha=0.1, rho=0.05, units="displacement"), cfg, [0, 1], measures=("opt_error",))
        assert not grad.diverged.any() and np.all(grad["opt_error"][-1] < 2 * grad["opt_error"][0])  # stays bounded
        assert disp.diverged.all()
        same = dataclasses.replace(cfg, local_steps=10, rounds=10)
        np.testing.assert_allclose(simulate(p, alg(alpha=0.1, rho=0.05), same, [0], measures=()).final_w,
                                   simulate(p, alg(alpha=0.1, rho=0.05, units="displacement"), same, [0],
                                            measures=()).final_w, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------ bad input and settings


def test_bad_input_names_the_parameter():
    cfg = RunConfig(rounds=2, local_steps=2, lr=0.05)
    with pytest.raises(ParameterError, match="problem"):
        simulate(pl_nonconvex(4, 3, 5), fedmrur(), cfg, [0])  # no representations
    logi = synthetic_logistic(4, 3, 3, 6)
    for kw, name in (({"gamma": -1.0}, "gamma"), ({"sigma": 0.0}, "sigma"), ({"beta": -0.5}, "beta"),
                     ({"server_lr": 0.0}, "server_lr"), ({"rho": -0.1}, "rho"), ({"alpha": 1.5}, "alpha")):
        with pytest.raises(ParameterError, match=name):
            simulate(logi, fedmrur(**kw), cfg, [0])
    with pytest.raises(ParameterError, match="delta"):
        ClientMomentum(0.1, delta="previous")
    with pytest.raises(ParameterError, match="units"):
        ClientMomentum(0.1, units="steps")
    with pytest.raises(ParameterError, match="normalize"):
        NormalizedAggregation(1.0, normalize="yes")

    class Silent(Aggregator):  # an aggregator that does not report its global update
        def aggregate(self, rs):
            return rs.sent.mean(axis=1)

    with pytest.raises(ParameterError, match="delta"):
        simulate(logi, Algorithm("x", local=(ClientMomentum(0.1, delta="global_update"),),
                                 aggregate=Silent()), cfg, [0])


def test_settings_and_names():
    assert settings_of(fedmrur()) == {"server_rule": "normalized", "momentum": "global_update",
                                      "momentum_units": "gradient", "hyperbolic": True}
    assert settings_of(mofedsam())["server_rule"] == "mean"
    assert [a.name for a in (fedmrur(), fedmrur_n(), fedmrur_h(), mofedsam())] == ["FedMRUR", "FedMRUR-N", "FedMRUR-H",
                                                                                   "MoFedSAM"]
    assert settings_of(fedcm(0.1)) == {"server_rule": "mean", "momentum": "mean", "momentum_units": "gradient",
                                       "hyperbolic": False}


# ------------------------------------------------------------------------------------ torch backend


def test_plugins_run_on_torch_tensors():
    """The same plug-in code on torch tensors (the empirical layer's backend) gives the numpy results."""
    torch = pytest.importorskip("torch")
    p = synthetic_logistic(3, 3, 3, 8, random_state=5)
    rng = np.random.default_rng(5)
    wg, w = rng.standard_normal(p.dim), rng.standard_normal((1, 3, p.dim))
    rs_np = _round_state(p, w[0, 0], wg)
    view = rs_np.view

    class TorchView:  # the logistic view's representation methods, in torch
        X = torch.as_tensor(np.array(view.X))  # a copy: the view shares read-only data across runs

        def representation(self, w):
            return torch.matmul(self.X, w.reshape(*w.shape[:-1], p.n_features, p.n_classes))

        def representation_grad(self, w, G):
            return torch.matmul(self.X.transpose(-1, -2), G).reshape(w.shape)

        def sample_weights(self):
            return torch.as_tensor(view.sample_weights())

        def representation_inputs(self):
            return self.X

    rs_t = RoundState(t=0, K=1, sel=rs_np.sel, anchor=torch.as_tensor(np.array(rs_np.anchor)), lr=rs_np.lr,
                      view=TorchView(), state=State(w=torch.as_tensor(wg[None])))
    for rs in (rs_np, rs_t):
        reg = HyperbolicRegularizer(0.3, 2.0, 0.7)
        reg.setup(rs.state, 1, 3, p.dim)
        reg.round_start(rs)
        rs.extra["g"] = reg.objective_grad(rs, w if rs is rs_np else torch.as_tensor(w))
    np.testing.assert_allclose(rs_t.extra["g"].numpy(), rs_np.extra["g"], rtol=1e-12, atol=1e-14)
    U = rng.standard_normal((2, 4, 5))
    agg_np, rs_a = _rs_with_updates(U, server_lr=0.6)
    agg_t, rs_b = _rs_with_updates(U, server_lr=0.6)
    rs_b.w0, rs_b.sent = torch.as_tensor(rs_b.w0), torch.as_tensor(rs_b.sent)
    rs_b.state = State(w=torch.zeros(2, 5, dtype=torch.float64))
    np.testing.assert_allclose(agg_t.aggregate(rs_b).numpy(), agg_np.aggregate(rs_a), rtol=1e-13, atol=1e-15)
    assert agg_t.measure(rs_b)["d_t"] == pytest.approx(agg_np.measure(rs_a)["d_t"], rel=1e-13)
