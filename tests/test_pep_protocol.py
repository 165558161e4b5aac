"""The PEP as a third backend of the round protocol (fedtheory.worst.pep.protocol): the simulator's own plug-ins,
run on PEPit points, against PEPit scripts written by hand for each algorithm (independent: PEPit's own functions,
stationary point, proximal step, PSD matrices and solve), against the hand-written FedInit PEP, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from PEPit import PEP  # noqa: E402
from PEPit.functions import SmoothStronglyConvexFunction  # noqa: E402
from PEPit.primitive_steps import proximal_step  # noqa: E402

from fedtheory.sim import (  # noqa: E402
    Aggregator,
    Algorithm,
    d_psgd,
    fedavg,
    fedinit,
    fednova,
    fedprox,
    fedsam,
    fully_connected,
    oledfl_sgd,
    ring,
    scaffold,
)
from fedtheory.sim.topology import metropolis_matrix  # noqa: E402
from fedtheory.worst.pep import PEPSetting, build_pep, solve_pep  # noqa: E402
from fedtheory.worst.pep.protocol import PEPRefusal, ProtocolSetting, SpectralMixing, protocol_pep  # noqa: E402
from fedtheory.worst.pep.reduction import reduce_pep  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RTOL = 2e-6  # two solves of one SDP written two ways (PEPit's own wrapper, and ours): the solvers' accuracy


# name -> (the protocol's PEP, the hand-written script): the report's table
RECORDED: dict[str, tuple[float, float]] = {}


def agree(name: str, got: float, ref: float, rtol: float = RTOL) -> None:
    RECORDED[name] = (float(got), float(ref))
    np.testing.assert_allclose(got, ref, rtol=rtol)


def ours(algorithm, **kw):
    r = solve_pep(protocol_pep(algorithm, ProtocolSetting(**kw)))
    assert r.value is not None, (r.status, r.detail)
    return r.value


def pepit_solve(pb, metric) -> float:
    pb.set_performance_metric(metric)
    return float(pb.solve(wrapper="cvxpy", solver="CLARABEL", verbose=0))


def pepit_class(C, L, client_mu, p=None):
    """A PEPit problem with C clients f_i (L-smooth, client_mu-strongly convex), f = sum p_i f_i, x* its stationary
    point: (pb, fs, x*, grads at x*, f*)."""
    p = np.full(C, 1.0 / C) if p is None else np.asarray(p, float)
    pb = PEP()
    fs = [pb.declare_function(SmoothStronglyConvexFunction, mu=client_mu, L=L) for _ in range(C)]
    f = fs[0] * float(p[0])
    for i in range(1, C):
        f = f + fs[i] * float(p[i])
    xs = f.stationary_point()
    gs = [fi.gradient(xs) for fi in fs]
    fstar = sum(float(p[i]) * fs[i](xs) for i in range(C))
    return pb, fs, xs, gs, fstar, p


def optimum_heterogeneity(pb, gs, p, zeta):
    sq = float(p[0]) * gs[0] ** 2
    for i in range(1, len(gs)):
        sq = sq + float(p[i]) * gs[i] ** 2
    pb.add_constraint(sq <= zeta ** 2)


def mean(items, p=None):
    n = len(items)
    out = items[0] * (1.0 / n if p is None else float(p[0]))
    for i in range(1, n):
        out = out + items[i] * (1.0 / n if p is None else float(p[i]))
    return out


# ------------------------------------------------------------------------------------ server algorithms

BASE = dict(L=1.0, mu=0.1, client_mu=0.1, heterogeneity="optimum", zeta=0.5, initial="distance", D=1.0)


@pytest.mark.parametrize("server_lr", [0.7, 1.0, 1.5])
@pytest.mark.parametrize("metric", ["dist2", "opt_error"])
def test_fedavg_server_step(server_lr, metric):
    """FedAvg / local GD, K local steps, the server step eta_g: w^{t+1} = w^t - eta_g mean_i (w^t - w_{i,K})."""
    C, K, T, eta = 2, 2, 2, 0.3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    for _ in range(T):
        ends = []
        for i in range(C):
            x = w
            for _ in range(K):
                x = x - eta * fs[i].gradient(x)
            ends.append(x)
        w = w - server_lr * mean([w - e for e in ends])
    ref = pepit_solve(pb, (w - xs) ** 2 if metric == "dist2" else mean([f(w) for f in fs]) - fstar)
    got = ours(fedavg(server_rule="code", server_lr=server_lr), C=C, K=K, T=T, eta=eta, metric=metric, **BASE)
    agree(f"FedAvg eta_g={server_lr:g} {metric} (optimum class)", got, ref)


def test_fedavg_gb_class():
    """FedAvg in the (G, B) heterogeneity class FedInit's PEP uses: every function at every queried point."""
    C, K, T, eta, G, B = 2, 2, 2, 0.3, 0.4, 1.2
    pb, fs, xs, gs, fstar, p = pepit_class(C, 1.0, 0.0)
    w = pb.set_initial_point()
    pb.set_initial_condition(mean([f(w) for f in fs]) - fstar <= 1.0)
    points = [xs]

    def het(x):
        g = [f.gradient(x) for f in fs]
        pb.add_constraint(mean([gi ** 2 for gi in g]) <= G ** 2 + B ** 2 * mean(g) ** 2)

    for _ in range(T):
        points.append(w)
        ends = []
        for i in range(C):
            x = w
            for k in range(K):
                if k > 0:
                    points.append(x)
                x = x - eta * fs[i].gradient(x)
            ends.append(x)
        w = mean(ends)
    points.append(w)
    for x in points:
        het(x)
    ref = pepit_solve(pb, mean([f(w) for f in fs]) - fstar)
    got = ours(fedavg(), C=C, K=K, T=T, eta=eta, L=1.0, heterogeneity="GB", G=G, B=B, initial="function", D=1.0,
               metric="opt_error")
    agree("FedAvg opt_error ((G, B) class)", got, ref)


def test_scaffold_option_two():
    """SCAFFOLD (Karimireddy et al. 2020, option II): y <- y - eta (g_i(y) - c_i + c); c_i+ = c_i - c +
    (w - y_K)/(K eta); c <- c + (1/C) sum (c_i+ - c_i); the server's mean update (eta_g = 1)."""
    C, K, T, eta = 2, 2, 2, 0.3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    ci = [None] * C
    c = None
    for _ in range(T):
        ends, new_ci = [], []
        for i in range(C):
            y = w
            for _ in range(K):
                d = fs[i].gradient(y)
                if c is not None:
                    d = d - ci[i] + c
                y = y - eta * d
            ends.append(y)
            corr = (w - y) * (1.0 / (K * eta))
            new_ci.append(corr if c is None else ci[i] - c + corr)
        dc = mean([n - o for n, o in zip(new_ci, ci)]) if c is not None else mean(new_ci)
        c = dc if c is None else c + dc
        ci = new_ci
        w = w - mean([w - e for e in ends])
    ref = pepit_solve(pb, (w - xs) ** 2)
    got = ours(scaffold(), C=C, K=K, T=T, eta=eta, metric="dist2", **BASE)
    agree("SCAFFOLD option II dist2", got, ref)


@pytest.mark.parametrize("mu_prox", [0.5, 2.0])
def test_fedprox_exact_proximal_solve(mu_prox):
    """FedProx with each client's exact proximal point w_i = argmin f_i(w) + (mu/2)||w - w^t||^2 (PEPit's
    proximal_step with gamma = 1/mu); the server's mean."""
    C, T = 2, 3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    for _ in range(T):
        w = mean([proximal_step(w, fs[i], 1.0 / mu_prox)[0] for i in range(C)])
    ref = pepit_solve(pb, (w - xs) ** 2)
    got = ours(fedprox(mu_prox, solve="exact"), C=C, K=1, T=T, eta=0.1, metric="dist2", **BASE)
    agree(f"FedProx exact prox mu={mu_prox:g} dist2", got, ref)


def test_fednova_weighted_clients_unreduced():
    """FedNova: tau = (1, 3) local steps, weights p = (0.3, 0.7) (f = sum p_i f_i):
    w^{t+1} = w^t - tau_eff sum_i p_i (w^t - w_{i,tau_i}) / tau_i, tau_eff = sum p_i tau_i. Solved unreduced."""
    C, T, eta, tau, p = 2, 2, 0.2, (1, 3), (0.3, 0.7)
    pb, fs, xs, gs, fstar, _ = pepit_class(C, BASE["L"], BASE["client_mu"], p)
    optimum_heterogeneity(pb, gs, np.asarray(p), BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    tau_eff = sum(pi * ti for pi, ti in zip(p, tau))
    for _ in range(T):
        upd = None
        for i in range(C):
            x = w
            for _ in range(tau[i]):
                x = x - eta * fs[i].gradient(x)
            term = (w - x) * (tau_eff * p[i] / tau[i])
            upd = term if upd is None else upd + term
        w = w - upd
    ref = pepit_solve(pb, (w - xs) ** 2)
    pep = protocol_pep(fednova(np.array(tau), weights=p), ProtocolSetting(C=C, K=max(tau), T=T, eta=eta, weights=p,
                                                                           metric="dist2", **BASE))
    assert not pep.symmetric
    r = solve_pep(pep)
    agree("FedNova tau=(1,3) p=(0.3,0.7) dist2 (unreduced)", r.value, ref)


def test_fedinit_agrees_with_the_hand_written_pep():
    """FedInit through the round protocol equals the hand-written FedInit PEP (worst/pep/build.py, the reference)
    to 1e-7 on a grid: both server rules, beta in {0, 0.1, 0.3}, (C, K, T) in {(2, 2, 2), (3, 2, 2), (2, 3, 1)},
    the (G, B) class with f mu-strongly convex between the points, f(w^T) - f* and ||w^T - x*||^2."""
    worst = 0.0
    for (C, K, T), beta, (rule, eta_g), metric in [
            ((2, 2, 2), 0.1, ("algorithm1", 1.0), "opt_error"), ((3, 2, 2), 0.0, ("code", 0.7), "opt_error"),
            ((2, 3, 1), 0.3, ("code", 1.0), "dist2"), ((2, 2, 2), 0.3, ("algorithm1", 1.0), "dist2"),
            ((3, 2, 2), 0.1, ("code", 1.3), "opt_error")]:
        for eta in (0.05, 0.3):
            hs = PEPSetting(C=C, K=K, T=T, L=2.0, eta=eta, mu=0.5, client_mu=0.0, beta=beta, server_rule=rule,
                            server_lr=eta_g, B=1.3, G=0.3, D=1.5, initial="function", metric=metric)
            ref = solve_pep(hs).value
            alg = fedinit(beta, server_rule=rule, server_lr=eta_g)
            ps = ProtocolSetting(C=C, K=K, T=T, eta=eta, L=2.0, mu=0.5, client_mu=0.0, heterogeneity="GB", G=0.3,
                                 B=1.3, initial="function", D=1.5, metric=metric)
            got = ours(alg, **ps.__dict__)
            RECORDED[f"FedInit beta={beta:g} {rule} eta_g={eta_g:g} ({C},{K},{T}) eta={eta:g} {metric} vs the "
                     "hand-written FedInit PEP"] = (got, ref)
            worst = max(worst, abs(got - ref) / abs(ref))
            # the two builders write the same SDP: the reduced rows agree to rounding
            a, b = reduce_pep(build_pep(hs)), reduce_pep(protocol_pep(alg, ps))
            for i in (4, 5):
                assert a[i].shape == b[i].shape and abs(a[i] - b[i]).max() <= 1e-12 * abs(a[i]).max()
            assert np.array_equal(a[6][0], b[6][0]) and np.array_equal(a[6][1], b[6][1])
    assert worst <= 1e-7, worst


# ------------------------------------------------------------------------------------ decentralized


def _dgd_pepit(W, T, eta, mixing=None):
    """DGD / D-PSGD (combine then adapt, one local step): x_i^{t+1} = sum_j W_ij x_j^t - eta g_i(x_i^t), all agents
    from x^0; ||xbar^T - x*||^2. mixing=(lam_minus, lam_plus): W unknown in the spectral class, written as in PESTO's
    DGD_spectral_perf (y = xbar + z with mean(z) = 0, the symmetric cross products, three PSD matrices)."""
    C = W.shape[0] if W is not None else 3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    x0 = pb.set_initial_point()
    pb.set_initial_condition((x0 - xs) ** 2 <= BASE["D"])
    xs_t = [x0] * C
    pairs = []
    for _ in range(T):
        g = [fs[i].gradient(xs_t[i]) for i in range(C)]
        if mixing is None:
            mixed = [mean([xs_t[j] * (W[i, j] * C) for j in range(C)]) for i in range(C)]
        else:
            from PEPit import Point

            xbar = mean(xs_t)
            z = [Point() for _ in range(C - 1)]
            z.append(-1.0 * mean(z) * (C - 1))  # sum z = 0
            mixed = [xbar + zi for zi in z]
            pairs.append(([x - xbar for x in xs_t], z))
        xs_t = [mixed[i] - eta * g[i] for i in range(C)]
    if mixing is not None:
        lm, lp = mixing
        S = len(pairs)

        def dot(A, B):
            out = A[0] * B[0]
            for a, b in zip(A[1:], B[1:]):
                out = out + a * b
            return out
        xx = [[dot(pairs[a][0], pairs[b][0]) for b in range(S)] for a in range(S)]
        xy = [[dot(pairs[a][0], pairs[b][1]) for b in range(S)] for a in range(S)]
        yy = [[dot(pairs[a][1], pairs[b][1]) for b in range(S)] for a in range(S)]
        for a in range(S):
            for b in range(a + 1, S):
                pb.add_constraint(xy[a][b] == xy[b][a])
        sym = [[(xy[a][b] + xy[b][a]) * 0.5 for b in range(S)] for a in range(S)]
        pb.add_psd_matrix([[lp * xx[a][b] - sym[a][b] for b in range(S)] for a in range(S)])
        pb.add_psd_matrix([[sym[a][b] - lm * xx[a][b] for b in range(S)] for a in range(S)])
        pb.add_psd_matrix([[-lp * lm * xx[a][b] + (lm + lp) * sym[a][b] - yy[a][b] for b in range(S)]
                           for a in range(S)])
    return pepit_solve(pb, (mean(xs_t) - xs) ** 2)


def test_dgd_on_a_fixed_matrix_is_exact():
    """DGD (D-PSGD with exact gradients) on the ring's Metropolis matrix, the topology's own W: exact, unreduced."""
    topo = ring(4)
    W = metropolis_matrix(4, *topo.edges(), topo.laziness).toarray()
    ref = _dgd_pepit(W, 3, 0.4)
    pep = protocol_pep(d_psgd(topo), ProtocolSetting(C=4, K=1, T=3, eta=0.4, metric="dist2", **BASE))
    assert not pep.symmetric and pep.setting.exact
    agree("DGD ring(4) Metropolis W dist2 (exact)", solve_pep(pep).value, ref)


def test_dgd_on_the_spectral_class_is_an_upper_bound():
    """DGD over every symmetric doubly stochastic W with eigenvalues (other than 1) in [-0.5, 0.5]: Colla &
    Hendrickx's relaxation, equal to the hand-written PESTO-style formulation; above the fixed matrices of the
    class it contains (a relaxation: an upper bound), here the complete graph's averaging (eigenvalues 0)."""
    pep = protocol_pep(d_psgd(fully_connected(3)), ProtocolSetting(C=3, K=1, T=3, eta=0.4, metric="dist2",
                                                                   mixing=SpectralMixing(-0.5, 0.5), **BASE))
    assert not pep.setting.exact
    got = solve_pep(pep).value
    ref = _dgd_pepit(None, 3, 0.4, mixing=(-0.5, 0.5))
    agree("DGD spectral class [-0.5, 0.5] dist2 (relaxation)", got, ref)
    W = np.full((3, 3), 1.0 / 3.0)
    fixed = ours(d_psgd(fully_connected(3)), C=3, K=1, T=3, eta=0.4, metric="dist2", **BASE)
    agree("D-PSGD W = J/3 dist2 (exact)", fixed, _dgd_pepit(W, 3, 0.4))
    assert fixed <= got * (1 + 1e-6)


def test_oledfl_lookahead_start():
    """OledFL-SGD: x_{i,0} = x_i + beta (x_i - x_{i,K}^{prev}) (x^0 before round 0), K local steps, then
    x_i <- sum_j W_ij x_{j,K} (adapt then combine), on a ring of 3."""
    C, K, T, eta, beta = 3, 2, 2, 0.3, 0.2
    topo = ring(C)
    W = metropolis_matrix(C, *topo.edges(), topo.laziness).toarray()
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    x0 = pb.set_initial_point()
    pb.set_initial_condition((x0 - xs) ** 2 <= BASE["D"])
    x = [x0] * C
    last = [x0] * C
    for _ in range(T):
        ends = []
        for i in range(C):
            y = x[i] + beta * (x[i] - last[i])
            for _ in range(K):
                y = y - eta * fs[i].gradient(y)
            ends.append(y)
        last = ends
        x = [mean([ends[j] * (W[i, j] * C) for j in range(C)]) for i in range(C)]
    ref = pepit_solve(pb, (mean(x) - xs) ** 2)
    got = ours(oledfl_sgd(topo, beta), C=C, K=K, T=T, eta=eta, metric="dist2", **BASE)
    agree("OledFL-SGD ring(3) beta=0.2 dist2", got, ref)


# ------------------------------------------------------------------------------------ a user's own rule


class Extrapolated(Aggregator):
    """A rule the simulator does not ship: the server extrapolates, w^{t+1} = w^t - eta_g mean_i (w^t - w_{i,K})
    + theta (w^t - w^{t-1}) (heavy ball on the server)."""

    name = "extrapolated"

    def __init__(self, server_lr, theta):
        self.server_lr, self.theta = server_lr, theta

    def setup(self, state, runs, n_clients, dim):
        from fedtheory.sim.backend import ops

        state.server["previous"] = ops(state.w).copy(state.w)

    def aggregate(self, rs):
        from fedtheory.sim.backend import ops

        xp = ops(rs.sent)
        w = rs.state.w
        new = w - self.server_lr * xp.mean(rs.w0 - rs.sent, axis=1) + self.theta * (w - rs.state.server["previous"])
        rs.state.server["previous"] = w
        return new


def test_a_users_own_aggregator():
    C, K, T, eta, eta_g, theta = 2, 2, 3, 0.3, 0.8, 0.3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    prev = w
    for _ in range(T):
        ends = []
        for i in range(C):
            x = w
            for _ in range(K):
                x = x - eta * fs[i].gradient(x)
            ends.append(x)
        w, prev = w - eta_g * mean([w - e for e in ends]) + theta * (w - prev), w
    ref = pepit_solve(pb, (w - xs) ** 2)
    got = ours(Algorithm("Extrapolated", aggregate=Extrapolated(eta_g, theta)), C=C, K=K, T=T, eta=eta,
               metric="dist2", **BASE)
    agree("a user's aggregator (server heavy ball) dist2", got, ref)


# ------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("make,operation,plugin", [
    (lambda: fedsam(0.05), "a norm of a point", "SAM"),
    (lambda: fedavg(), "a random draw", "Server"),
])
def test_refused_with_one_line_naming_operation_and_plugin(make, operation, plugin):
    per_round = 1 if plugin == "Server" else None
    alg = make()
    s = ProtocolSetting(C=2, K=2, T=1, eta=0.1, **BASE)
    if per_round:  # client sampling: patch the protocol's participants call through the Server plug-in
        import dataclasses

        from fedtheory.sim.rules import Server

        class Sampled(Server):
            def participants(self, streams, runs, n_clients, per_round):
                return streams.choose_clients(n_clients, 1)
        alg = dataclasses.replace(alg, comm=Sampled())
        plugin = "Sampled"
    with pytest.raises(PEPRefusal) as info:
        protocol_pep(alg, s)
    text = str(info.value)
    assert "\n" not in text and operation in text and plugin in text, text


def test_quantization_is_refused():
    from fedtheory.sim.mixed_precision import mixed_precision

    alg = mixed_precision(fedavg(), np.array([False, True]), bits=8, quantizer="uniform")
    with pytest.raises(PEPRefusal) as info:
        protocol_pep(alg, ProtocolSetting(C=2, K=1, T=1, eta=0.1, **BASE))
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------------ the iterate basis


@pytest.mark.parametrize("etaL", [0.2, 0.5, 1.0])
def test_the_iterate_basis_is_the_same_pep(etaL):
    """The local iterates as leaves (``sparsified``: short rows, the faster solve at larger sizes) change nothing but
    the solver's rounding: FedInit in the (G, B) class and SCAFFOLD at the optimum, against the gradient basis
    (observed: <= 5.3e-6 relative at eta L >= 0.2; rejected at eta L <= 0.1, where 'auto' does not use it)."""
    kw = dict(L=2.0, mu=0.5, client_mu=0.0, G=0.3, B=1.3, D=1.5)
    for alg, s in [(fedinit(0.1), ProtocolSetting(C=2, K=3, T=3, eta=etaL / 2, heterogeneity="GB", initial="function",
                                                  metric="opt_error", **kw)),
                   (scaffold(), ProtocolSetting(C=2, K=3, T=3, eta=etaL / 2, L=2.0, mu=0.5, client_mu=0.5,
                                                heterogeneity="optimum", zeta=0.5, initial="distance", D=1.0,
                                                metric="dist2"))]:
        pep = protocol_pep(alg, s)
        ref = solve_pep(pep, basis="differences" if etaL <= 0.25 else "gradients")
        it = solve_pep(pep, basis="iterates")
        assert it.reduced["basis"] == "iterates" and ref.value is not None and it.value is not None
        np.testing.assert_allclose(it.value, ref.value, rtol=2e-5)


def test_the_recipe_in_the_docs_runs(capsys):
    """docs/worst-case.md's recipe for a user's own algorithm runs as written and prints its PEP value, which equals
    the hand-written script of the same rule (test_a_users_own_aggregator's, at the recipe's constants)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "worst-case.md").read_text()
    code = re.search(r"<!-- recipe -->\n```python\n(.*?)```", text, flags=re.S).group(1)
    scope: dict = {}
    exec(compile(code, "docs/worst-case.md", "exec"), scope)
    assert "worst ||w^T - x*||^2 =" in capsys.readouterr().out
    value = scope["result"].value
    C, K, T, eta, eta_g, theta = 2, 2, 3, 0.3, 0.8, 0.3
    pb, fs, xs, gs, fstar, p = pepit_class(C, BASE["L"], BASE["client_mu"])
    optimum_heterogeneity(pb, gs, p, BASE["zeta"])
    w = pb.set_initial_point()
    pb.set_initial_condition((w - xs) ** 2 <= BASE["D"])
    prev = w
    for _ in range(T):
        ends = []
        for i in range(C):
            x = w
            for _ in range(K):
                x = x - eta * fs[i].gradient(x)
            ends.append(x)
        w, prev = w - eta_g * mean([w - e for e in ends]) + theta * (w - prev), w
    np.testing.assert_allclose(value, pepit_solve(pb, (w - xs) ** 2), rtol=RTOL)
