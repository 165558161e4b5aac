"""PEP (fedtheory.worst.pep): the iterates are the simulator's, gradient descent's closed forms, the symmetry
reduction against PEPit's own solve, search <= PEP, verdicts, solver failures and bad input."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from fedtheory._validation import ParameterError  # noqa: E402
from fedtheory.cli import main  # noqa: E402
from fedtheory.papers.fedinit.worst import fedinit_pep  # noqa: E402
from fedtheory.sim import Exact, RunConfig, fedinit, simulate  # noqa: E402
from fedtheory.testing import scaled_bound
from fedtheory.worst import PEPSetting, QuadraticClass, build_pep, make_spec, pep_worst_case, solve_pep, worst_case
from fedtheory.worst.pep.reduction import isotypic_bases

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # cvxpy: "Solution may be inaccurate" (status kept)

L, MU, D = 2.0, 0.5, 1.5


def quad(inst):
    H, h, c = inst.H[0], inst.h[0], inst.c[0]
    return (lambda j, x: H[j] @ x - h[j]), (lambda j, x: 0.5 * x @ H[j] @ x - h[j] @ x + c[j])


# ------------------------------------------------------------------------------------ the algorithm is the simulator's


@pytest.mark.parametrize("rule,beta,server_lr", [("algorithm1", 0.0, 1.0), ("algorithm1", 0.2, 1.0), ("code", 0.2, 0.6),
                                                 ("code", 0.0, 1.3)])
@pytest.mark.parametrize("function_class,metric", [("convex", "opt_error"), ("convex", "dist2"),
                                                   ("smooth", "avg_grad_norm2")])
def test_pep_iterates_are_the_simulators(rule, beta, server_lr, function_class, metric):
    """The PEP's algorithm, replayed on a quadratic of the search's class, gives the simulator's iterates and
    measure to rounding, and the quadratic meets every constraint of the PEP (the search's class is inside)."""
    C, K, T, d = 3, 3, 3, 4
    qc = QuadraticClass(C, d, L=L, mu=MU, client_mu=0.0, B=1.3, G2=0.3**2, D=D)
    inst = qc.decode(qc.random(1, np.random.default_rng(7)))
    s = PEPSetting(C=C, K=K, T=T, L=L, eta=0.1, mu=MU if function_class == "convex" else 0.0, B=1.3, G=0.3, D=D,
                   beta=beta, server_rule=rule, server_lr=server_lr, function_class=function_class, metric=metric)
    ev = build_pep(s).evaluate_instance(*quad(inst), inst.w0[0], inst.w_star[0])
    tr = simulate(inst.problem(), fedinit(beta, server_rule=rule, server_lr=server_lr),
                  RunConfig(rounds=T, local_steps=K, lr=0.1, oracle=Exact()), [0], w0=inst.w0[:1],
                  measures=("grad_norm2",))
    np.testing.assert_allclose(ev["server"][-1], tr.final_w[0], rtol=0, atol=1e-13)
    sim = {"opt_error": float(inst.loss(tr.final_w, np.array([0]))[0] - inst.f_star[0]),
           "dist2": float(np.sum((tr.final_w[0] - inst.w_star[0]) ** 2)),
           "avg_grad_norm2": float(np.mean(tr["grad_norm2"][:-1, 0]))}[metric]
    np.testing.assert_allclose(ev["metric"], sim, rtol=1e-12, atol=1e-15)
    assert ev["max_constraint"] <= 1e-12


# ------------------------------------------------------------------------------------ closed forms


def _value(**kw):
    r = solve_pep(PEPSetting(**kw))
    assert r.value is not None, (r.status, r.detail)
    return r


@pytest.mark.parametrize("C,K,T,rule,beta", [(1, 3, 4, "algorithm1", 0.0), (3, 2, 3, "algorithm1", 0.0),
                                             (3, 2, 3, "algorithm1", 0.3), (2, 3, 2, "code", 0.0)])
@pytest.mark.parametrize("metric,initial", [("dist2", "distance"), ("opt_error", "function")])
@pytest.mark.parametrize("eta", [0.1, 0.5])
def test_strongly_convex_gradient_descent_closed_form(C, K, T, rule, beta, metric, initial, eta):
    """C = 1, or G = 0 and B = 1 (equal gradients at every queried point, beta irrelevant under Algorithm 1's rule):
    K T steps of gradient descent on an L-smooth mu-strongly convex function, whose exact worst case for
    eta <= 1/L is (1 - eta mu)^(2 K T) D, for ||w - w*||^2 and for f(w) - f* alike (attained by mu/2 ||w||^2).
    Tolerance: Clarabel stalls near 1e-7 on these degenerate SDPs (absolutely, on the scale D of the function
    values: 1e-7 D when the worst case is far below D); with C > 1 and G = 0 no strictly feasible point exists (the
    heterogeneity rows are equalities in disguise) and the error grows to ~sqrt(tolerance)."""
    r = _value(C=C, K=K, T=T, L=L, eta=eta, mu=MU, client_mu=MU, B=1.0, G=0.0, D=D, beta=beta, server_rule=rule,
               metric=metric, initial=initial)
    closed = (1 - eta * MU) ** (2 * K * T) * D
    assert r.value == pytest.approx(closed, rel=1e-5 if C == 1 else 1e-4, abs=1e-7 * D)
    assert r.setting.exact == (C == 1)


@pytest.mark.parametrize("C,K,T", [(1, 1, 5), (1, 2, 3), (3, 2, 2), (2, 3, 1)])
def test_convex_gradient_descent_drori_teboulle(C, K, T):
    """Convex (mu = 0), eta = 1/L, ||w^0 - w*||^2 <= D: f(x_n) - f* <= L D / (4n + 2), n = K T, tight (Drori and
    Teboulle 2014, Thm 3.1; PEPit's wc_gradient_descent)."""
    r = _value(C=C, K=K, T=T, L=L, eta=1 / L, mu=0.0, client_mu=0.0, B=1.0, G=0.0, D=D, metric="opt_error",
               initial="distance")
    assert r.value == pytest.approx(L * D / (4 * K * T + 2), rel=1e-5)


@pytest.mark.parametrize("C,K,T", [(1, 1, 1), (1, 1, 4), (1, 3, 2), (3, 2, 2)])
def test_nonconvex_gradient_descent_descent_lemma(C, K, T):
    """L-smooth (non-convex), eta = 1/L, G = 0, B = 1: the descent lemma gives sum_t ||grad f(w^t)||^2 <=
    2 L (f(w^0) - f(w^T)) <= 2 L D, attained by putting the whole descent into the first gradient (then stationary):
    the worst (1/T) sum_{t<T} ||grad f(w^t)||^2 is 2 L D / T."""
    r = _value(C=C, K=K, T=T, L=L, eta=1 / L, function_class="smooth", B=1.0, G=0.0, D=D, metric="avg_grad_norm2")
    assert r.value == pytest.approx(2 * L * D / T, rel=1e-5)


def test_mean_relaxation_with_one_client_is_gradient_descent():
    """class 'convex' with client_mu = 0 < mu (f's strong convexity only between the queried points), C = 1."""
    r = _value(C=1, K=2, T=2, L=L, eta=0.3, mu=MU, client_mu=0.0, B=1.0, G=0.0, D=D, metric="opt_error")
    assert r.value == pytest.approx((1 - 0.3 * MU) ** 8 * D, rel=1e-5)


# ------------------------------------------------------------------------------------ the reduction against PEPit


@pytest.mark.parametrize("kw", [
    dict(C=2, K=2, T=2, beta=0.3, metric="opt_error"),
    dict(C=3, K=2, T=1, beta=0.0, metric="opt_error"),
    dict(C=4, K=2, T=1, beta=0.0, metric="opt_error"),
    dict(C=3, K=1, T=2, beta=0.3, metric="dist2", initial="distance", server_rule="code", server_lr=0.7,
         client_mu=0.2),
    dict(C=2, K=2, T=2, beta=0.3, function_class="smooth", metric="avg_grad_norm2", mu=0.0),
    dict(C=4, K=2, T=1, beta=0.0, function_class="smooth", metric="avg_grad_norm2", mu=0.0),
])
@pytest.mark.parametrize("basis", ["gradients", "differences"])
def test_symmetric_reduction_equals_pepits_own_solve(kw, basis):
    """The symmetry-reduced SDP (one constraint per client orbit, S_C isotypic blocks), over either basis, has the
    value of the full PEP as PEPit writes and solves it (every constraint, its own stationary point, its cvxpy
    wrapper)."""
    base = dict(L=1.0, eta=0.3, mu=0.2, client_mu=0.0, B=1.5, G=0.5, D=1.0)
    s = PEPSetting(**{**base, **kw})
    a, b = solve_pep(s, basis=basis), solve_pep(s, method="pepit")
    assert b.primal is not None and a.value is not None
    assert a.value == pytest.approx(b.primal, rel=2e-6)
    assert a.gram_min_eig > -1e-8 and a.max_violation < 1e-6 and a.reduced["basis"] == basis
    assert b.gram_dim >= a.gram_dim - 1 and a.reduced["variables"] < a.gram_dim * (a.gram_dim + 1) / 2


def test_vectorized_pair_rows_are_pepits():
    """The interpolation inequalities evaluated on all pairs at once are the rows PEPit writes one by one."""
    from fedtheory.worst.pep.reduction import reduce_pep

    for kw in (dict(C=3, K=2, T=2, mu=0.5, client_mu=0.1, beta=0.2),
               dict(C=4, K=2, T=1, function_class="smooth", beta=0.2, metric="avg_grad_norm2")):
        s = PEPSetting(**{**dict(L=2.0, eta=0.1, B=1.3, G=0.3, D=1.5), **kw})
        rows = [reduce_pep(build_pep(s, pair_rows=how))[4].toarray() for how in ("vectorized", "pepit")]
        a, b = (np.array(sorted(map(tuple, np.round(r, 9)))) for r in rows)
        assert a.shape == b.shape and np.array_equal(a, b)


def _all_perms_matrix(labels, C):
    from fedtheory.worst.pep.reduction import client_permutation

    return [client_permutation(labels, C, np.array(p)) for p in itertools.permutations(range(C))]


@pytest.mark.parametrize("C", [2, 3, 4, 5])
def test_isotypic_blocks_decide_psd(C):
    """For a matrix invariant under S_C (a random symmetric matrix averaged over every relabelling of the clients),
    the blocks Phi' G Phi (Phi orthonormalised) carry exactly its spectrum: every eigenvalue of G is an eigenvalue of
    a block, and the blocks' eigenvalues are eigenvalues of G (so G is PSD iff every block is)."""
    s = PEPSetting(C=C, K=2, T=1, L=1.0, eta=0.3, mu=0.2, B=1.5, G=0.5, D=1.0, beta=0.0, metric="opt_error")
    pep = build_pep(s)
    n = pep.n
    perms = _all_perms_matrix(pep.point_labels, C)
    rng = np.random.default_rng(C)
    X = rng.standard_normal((n, n))
    X = X + X.T
    G = sum(X[np.ix_(p, p)] for p in perms) / len(perms)
    bases = isotypic_bases(pep.point_labels, C)
    ev = np.sort(np.linalg.eigvalsh(G))
    block_ev = []
    for name, Phi in bases.items():
        Q, _ = np.linalg.qr(Phi)
        block_ev.append(np.linalg.eigvalsh(Q.T @ G @ Q))
    allb = np.concatenate(block_ev)
    tol = 1e-9 * np.abs(ev).max()
    assert all(np.min(np.abs(ev - b)) < tol for b in allb)  # every block eigenvalue is one of G's
    assert all(np.min(np.abs(allb - e)) < tol for e in ev)  # every eigenvalue of G shows in a block
    irrep_dim = {"trivial": 1, "standard": C - 1, "(C-2,2)": C * (C - 3) // 2, "(C-2,1,1)": (C - 1) * (C - 2) // 2}
    assert sum(Phi.shape[1] * irrep_dim[name] for name, Phi in bases.items()) == n  # the copies fill the space


# ------------------------------------------------------------------------------------ search <= PEP


# every condition of Thms 1-2 holds here (as in tests/test_worst.py)
SMALL = dict(L=2.0, mu=0.5, B=1.2, G=0.4, D=1.5, eta=0.005, K=2, T=4, beta=0.05, sigma_l=0.0, C=3)


@pytest.fixture(scope="module")
def pep_small():
    return {rid: pep_worst_case(fedinit_pep(rid, **SMALL)) for rid in ("fedinit.thm2", "fedinit.thm1")}


@pytest.mark.parametrize("rid", ["fedinit.thm2", "fedinit.thm1"])
def test_search_never_exceeds_the_pep(rid, pep_small):
    """The search's quadratics lie in the PEP's class (same constants; the PEP relaxes the class further), so the
    worst left side the search finds is at most the PEP's value; the gap is reported."""
    pep = pep_small[rid]
    assert pep["worst_measured"] is not None and pep["verdict"] == "holds"
    spec = make_spec(rid, dict(SMALL, d=3))
    rec = worst_case(spec, budget=96, popsize=16, seed=0)
    assert rec["worst_measured"] <= pep["worst_measured"] * (1 + 1e-6)
    assert rec["bound"] == pytest.approx(pep["bound"], rel=1e-12)
    print(f"{rid}: search {rec['worst_measured']:.6g} <= PEP {pep['worst_measured']:.6g} "
          f"(gap {1 - rec['worst_measured'] / pep['worst_measured']:.1%})")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 4))
def test_every_instance_of_the_search_class_is_below_the_pep(pep_small, seed, d):
    """Any instance of the search's class (any dimension), run through the simulator, stays below the PEP."""
    spec = make_spec("fedinit.thm2", dict(SMALL, d=d))
    inst = spec.space.decode(spec.space.random(1, np.random.default_rng(seed)))
    from fedtheory.worst import evaluate

    ev = evaluate(spec, inst)
    assert float(ev.mean[0]) <= pep_small["fedinit.thm2"]["worst_measured"] * (1 + 1e-6)


# ------------------------------------------------------------------------------------ verdicts and failures


def test_a_bound_below_an_exact_pep_is_violated_and_below_a_relaxed_one_inconclusive():
    exact = fedinit_pep("fedinit.thm2", **dict(SMALL, C=1, beta=0.0, eta=0.001, client_mu=SMALL["mu"]))
    assert exact.setting.exact
    full = pep_worst_case(exact)
    assert full["verdict"] == "holds" and full["slack"] > 1
    low = pep_worst_case(scaled_bound(exact, 0.5 / full["slack"]))
    assert low["verdict"] == "violated" and low["worst_measured"] > low["bound"]
    assert low["counterexample"]["confirmed"]  # the reconstructed worst case, re-run by the simulator
    relaxed = fedinit_pep("fedinit.thm2", **SMALL)
    rfull = pep_worst_case(relaxed)
    rlow = pep_worst_case(scaled_bound(relaxed, 0.5 / rfull["slack"]))
    # convex clients with f strongly convex only between the PEP's points: the instance is not PL, not a finding
    assert not relaxed.setting.exact and rlow["verdict"] == "inconclusive" and "does not confirm" in rlow["detail"]


def test_an_unbounded_pep_is_named_never_a_number():
    """Without the heterogeneity constraint the clients' optima are free: f(w^T) - f* has no finite worst case."""
    r = solve_pep(PEPSetting(C=2, K=2, T=1, L=1.0, eta=0.3, mu=0.2, B=None, D=1.0, metric="opt_error"))
    assert r.value is None and r.status in ("unbounded", "unbounded_inaccurate", "solver_error")
    assert r.status != "solver_error" or "failed" in r.detail


def test_conditions_of_the_record_make_it_not_applicable():
    rec = pep_worst_case(fedinit_pep("fedinit.thm2", **dict(SMALL, eta=0.4)))
    assert rec["verdict"] == "not_applicable" and rec["conditions_failed"]


@pytest.mark.parametrize("kw,name", [
    (dict(C=0), "C"), (dict(K=0), "K"), (dict(T=0), "T"), (dict(C=5, K=5, T=5), "C*K*T"), (dict(eta=0.0), "eta"),
    (dict(eta=-1.0), "eta"), (dict(beta=-0.1), "beta"), (dict(B=0.5), "B"), (dict(G=-1.0), "G"), (dict(D=0.0), "D"),
    (dict(mu=2.0), "mu"), (dict(client_mu=0.3, mu=0.2), "client_mu"), (dict(server_rule="mean"), "server_rule"),
    (dict(function_class="smooth"), "mu"), (dict(function_class="smooth", mu=0.0), "metric"),
    (dict(metric="loss"), "metric"), (dict(initial="x"), "initial"), (dict(server_lr=0.0), "server_lr"),
])
def test_bad_input_names_the_parameter(kw, name):
    base = dict(C=2, K=2, T=2, L=2.0, eta=0.1, mu=0.2, B=1.2, G=0.1, D=1.0)
    with pytest.raises(ParameterError) as e:
        PEPSetting(**{**base, **kw})
    assert e.value.name == name


def test_solver_and_method_are_checked():
    s = PEPSetting(C=1, K=1, T=1, L=1.0, eta=0.5, D=1.0)
    for kw, name in ((dict(solver="MOSEK"), "solver"), (dict(method="full"), "method")):
        with pytest.raises(ParameterError) as e:
            solve_pep(s, **kw)
        assert e.value.name == name


# ------------------------------------------------------------------------------------ CLI


def _sets(**kw):
    return [a for k, v in kw.items() for a in ("--set", f"{k}={v}")]


def test_cli_pep_prints_the_record(capsys):
    code = main(["worst", "fedinit.thm2", "fedinit.thm1", "--method", "pep", "--no-reference", *_sets(**SMALL)])
    out = capsys.readouterr().out
    recs = [json.loads(chunk) for chunk in out.replace("}\n{", "}\n\x00{").split("\x00")]
    assert code == 0 and [r["id"] for r in recs] == ["fedinit.thm2", "fedinit.thm1"]
    for r in recs:
        assert r["method"] == "pep" and r["verdict"] == "holds" and r["slack"] >= 1 and r["exact"] is False
        for key in ("worst_measured", "bound", "slack", "random_ratio", "budget", "elapsed_s", "class",
                    "solver", "sdp"):
            assert key in r
        assert r["solver"]["status"] in ("optimal", "optimal_inaccurate") and r["sdp"]["gram_dim"] > 0
    assert "non-convex" in recs[1]["class"] and "strongly convex" in recs[0]["class"]


@pytest.mark.parametrize("argv,name", [
    (["worst", "fedinit.thm2", "--method", "pep", "--no-reference", *_sets(**dict(SMALL, T=40))], "C*K*T"),
    (["worst", "fedinit.thm2", "--method", "pep", "--no-reference", *_sets(**dict(SMALL, sigma_l=0.1))], "sigma_l"),
    (["worst", "fedinit.thm2", "--method", "pep", "--no-reference", *_sets(**dict(SMALL, beta=-1))], "beta"),
    (["worst", "fedinit.thm2", "--method", "pep", "--replay", "x.json"], "--replay"),
    (["worst", "li2020.thm1", "--method", "pep"], "ID"),
    (["worst", "fedinit.thm2", "--server-rule", "code", "--no-reference", *_sets(**SMALL)], "--server-rule"),
])
def test_cli_pep_bad_input_exits_2(argv, name, capsys):
    assert main(argv) == 2
    assert f"{name}=" in capsys.readouterr().err


def test_cli_pep_server_rule_and_class(capsys):
    assert main(["worst", "fedinit.thm1", "--method", "pep", "--no-reference", "--server-rule", "code",
                 "--pep-class", "convex", *_sets(**dict(SMALL, server_lr=0.5))]) == 0
    r = json.loads(capsys.readouterr().out)
    assert "server rule code" in r["algorithm"] and "strongly convex" in r["class"] and r["measure"] == "avg_grad_norm2"


def test_run_pep_takes_the_checks_constants_and_zeroes_the_noise():
    """With a reference: the check's constants (sigma_l set to 0, lambda recomputed when K, C change), the sizes
    from --set; the record says so."""
    from fedtheory.worst import register_worst_case, run_pep
    from fedtheory.worst.spec import entry

    ref = {"params": dict(SMALL, sigma_l=0.2236, K=5, T=300, C=10, N=10, lam=0.5, record_id="fedinit.thm2"),
           "random_ratio": 6.24, "label": "fedtheory check --only fedinit.thm2 --seed 0"}
    old = entry("fedinit.thm2")
    register_worst_case("fedinit.thm2", old.make, reference=lambda seed, **kw: ref, description=old.description)
    try:
        rec = run_pep("fedinit.thm2", sets={"C": 2, "K": 2, "T": 2})  # N follows C
    finally:
        register_worst_case("fedinit.thm2", old.make, reference=old.reference, description=old.description)
    assert rec["values"]["sigma_l"] == 0 and rec["values"]["lam"] != 0.5 and rec["random_ratio"] == 6.24
    assert "sigma_l" in rec["reference"] and "lam recomputed" in rec["reference"]
    assert rec["verdict"] == "holds" and math.isfinite(rec["slack"])
    assert rec["values"]["N"] == 2 and rec["values"]["C"] == 2


def test_run_pep_at_the_checks_sizes_names_the_size_limit():
    from fedtheory.worst import register_worst_case, run_pep
    from fedtheory.worst.spec import entry

    ref = {"params": dict(SMALL, K=5, T=300, C=10, N=10, record_id="fedinit.thm2"), "random_ratio": 6.24, "label": "x"}
    old = entry("fedinit.thm2")
    register_worst_case("fedinit.thm2", old.make, reference=lambda seed, **kw: ref, description=old.description)
    try:
        with pytest.raises(ParameterError) as e:
            run_pep("fedinit.thm2")
    finally:
        register_worst_case("fedinit.thm2", old.make, reference=old.reference, description=old.description)
    assert e.value.name == "C*K*T" and "--set" in str(e.value)
