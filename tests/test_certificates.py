"""Assumptions checked, not declared (fedtheory.sim.certificates, fedtheory.checks.certify): every problem family,
oracle, topology, sampling and algorithm answers every catalogue assumption about it; the certified constants agree
with naive computations; a run outside a record's assumptions is never a finding (the DGD case); the built-in
records name catalogued assumptions and their bound rows carry the certificates they used."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from fedtheory.checks import Session, assess_bound, certify
from fedtheory.checks.certification import certify_assumptions
from fedtheory.plugins import records
from fedtheory.sim import (
    AdditiveNoise,
    Algorithm,
    ClientSampling,
    Exact,
    Minibatch,
    RunConfig,
    certified,
    d_psgd,
    fedavg,
    from_visited,
    heterogeneous_least_squares,
    huber_regression,
    identical_least_squares,
    least_squares_noise_at_optimum,
    opposed_huber,
    pl_nonconvex,
    simulate,
    synthetic_logistic,
)
from fedtheory.sim.hyperbolic import HyperbolicRegularizer
from fedtheory.sim.problems import SeparablePLProblem
from fedtheory.sim.topology import (
    RandomKNeighbour,
    exponential,
    fully_connected,
    grid,
    mixing_lambda,
    paper_topologies,
    ring,
)
from fedtheory.theory import CATALOGUE, Bound, Condition, SymbolSet
from fedtheory.theory.assumptions import parse_reference

PROBLEMS = {
    "heterogeneous_least_squares": lambda: heterogeneous_least_squares(5, 4, 20, random_state=1),
    "pl_least_squares": lambda: heterogeneous_least_squares(5, 4, 20, rank=2, random_state=1),
    "identical_least_squares": lambda: identical_least_squares(4, 3, 30, random_state=1),
    "nonconvex_least_squares": lambda: heterogeneous_least_squares(5, 4, 20, ridge=-0.05, random_state=1),
    "least_squares_noise_at_optimum": lambda: least_squares_noise_at_optimum(4, 3, 12, sigma_star2=0.2),
    "pl_nonconvex": lambda: pl_nonconvex(5, 4, 10, random_state=1),
    "separable_pl": lambda: SeparablePLProblem(np.ones(3), np.full(3, 0.5), np.array([[1.0, 0, -1], [-1.0, 0, 1]])),
    "synthetic_logistic": lambda: synthetic_logistic(4, 3, 3, 10, random_state=1),
    "huber_regression": lambda: huber_regression(4, 3, 10, random_state=1),
    "opposed_huber": lambda: opposed_huber(6),
    "interpolated": lambda: _interpolated(),
}


def _interpolated():
    """Two clients rebuilt from points, gradients and values (the PEP's worst-case instances)."""
    from fedtheory.sim.problems import InterpolatedProblem
    from fedtheory.sim.problems.interpolant import interpolant_data

    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 3))
    parts = [interpolant_data(X, X * a + 0.1, 0.5 * a * np.sum(X * X, axis=1) + 0.1 * X.sum(axis=1), 2.0, 0.5)
             for a in (1.0, 1.5)]
    return InterpolatedProblem(parts, 2.0, 0.5)
ORACLES = {"exact": Exact(), "additive": AdditiveNoise(0.3), "minibatch": Minibatch(2)}
TOPOLOGIES = {t.label(): t for t in [*paper_topologies(12), grid(9), exponential(8), fully_connected(5)]}
SUBJECT = lambda subject: sorted(n for n, a in CATALOGUE.items() if a.subject == subject)  # noqa: E731


# ------------------------------------------------------------------------------------ every thing answers


@pytest.mark.parametrize("family", sorted(PROBLEMS))
def test_every_problem_family_answers_every_catalogue_assumption(family):
    """Certified, refused or unknown with a reason: no silent gap (an undeclared answer is a gap)."""
    p = PROBLEMS[family]()
    for name in SUBJECT("problem"):
        cert = p.certify(name)
        assert cert.declared and cert.status in ("certified", "refused", "unknown") and cert.how, (family, name, cert)
        for k, v in cert.constants.items():
            assert np.all(np.isfinite(np.asarray(v, dtype=float))), (family, name, k)


@pytest.mark.parametrize("oracle", sorted(ORACLES))
@pytest.mark.parametrize("family", ["heterogeneous_least_squares", "pl_nonconvex", "synthetic_logistic",
                                    "huber_regression"])
def test_every_oracle_answers_every_catalogue_assumption(oracle, family):
    p = PROBLEMS[family]()
    for name in SUBJECT("oracle"):
        cert = ORACLES[oracle].certify(name, p)
        assert cert.declared and cert.how, (oracle, family, name, cert)


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_every_topology_answers_every_catalogue_assumption(topology):
    for name in SUBJECT("topology"):
        cert = TOPOLOGIES[topology].certify(name)
        assert cert.declared and cert.how, (topology, name)


def test_sampling_and_algorithm_answer_their_assumptions():
    for C, N in ((5, 5), (5, 2), (5, 1)):
        for name in SUBJECT("sampling"):
            assert ClientSampling(C, N).certify(name).declared
    assert ClientSampling(5).certify("full_participation").certified
    assert ClientSampling(5, 2).certify("full_participation").status == "refused"
    assert ClientSampling(5, 2).certify("sampling_with_replacement").status == "refused"
    assert ClientSampling(5, 1).certify("sampling_with_replacement").certified
    for name in SUBJECT("algorithm"):
        assert fedavg().certify(name).declared
    assert fedavg().certify("regularizer_smooth").constants["r"] == 0.0


def test_undeclared_is_a_gap_not_a_reason():
    p = PROBLEMS["heterogeneous_least_squares"]()
    cert = p.certify("not_an_assumption")
    assert cert.status == "unknown" and not cert.declared


# ------------------------------------------------------------------------------------ constants vs naive


def test_least_squares_constants_against_naive_computations():
    p = PROBLEMS["heterogeneous_least_squares"]()
    X, y = p.X[0], p.y[0]
    H = [X[i].T @ X[i] / X.shape[1] for i in range(p.n_clients)]  # each client's Hessian, one at a time
    L_naive = max(np.linalg.eigvalsh(h).max() for h in H)
    mu_naive = min(np.linalg.eigvalsh(h).min() for h in H)
    assert p.certify("L_smooth").constants["L"] == pytest.approx(L_naive, rel=1e-12)
    assert p.certify("strongly_convex_clients").constants["mu"] == pytest.approx(mu_naive, rel=1e-10)
    assert p.certify("L_smooth_global").constants["L"] == pytest.approx(np.linalg.eigvalsh(sum(H) / len(H)).max(),
                                                                          rel=1e-12)
    w_star = np.linalg.solve(sum(H) / len(H), sum(X[i].T @ y[i] / X.shape[1] for i in range(len(H))) / len(H))
    g = [H[i] @ w_star - X[i].T @ y[i] / X.shape[1] for i in range(len(H))]
    assert p.certify("heterogeneity_at_optimum").constants["zeta_star"] == pytest.approx(
        np.sqrt(np.mean([gi @ gi for gi in g])), rel=1e-8)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), scale=st.floats(0.1, 100.0), factor=st.floats(1.0, 3.0))
def test_the_certified_dissimilarity_family_holds_at_random_points(seed, scale, factor):
    """(1/C) sum_i ||grad f_i||^2 <= G(B)^2 + B^2 ||grad f||^2 at random w, for every certified (G, B) pair."""
    rng = np.random.default_rng(seed)
    for key in ("heterogeneous_least_squares", "pl_nonconvex", "synthetic_logistic", "huber_regression"):
        p = PROBLEMS[key]()
        h = p.certify("heterogeneity")
        B = max(1.0, float(h.constants["B"])) * factor
        G = float(h.family[1](np.asarray([B]))[0])
        w = scale * rng.standard_normal((1, p.dim))
        gi = p.client_grads(w, np.zeros(1, dtype=np.int64))[0]
        lhs = np.mean(np.sum(gi ** 2, axis=1))
        rhs = G ** 2 + B ** 2 * np.sum(gi.mean(axis=0) ** 2)
        assert lhs <= rhs * (1 + 1e-9) + 1e-9, key


def test_huber_gradient_bounds_hold_everywhere_and_lipschitz_is_attained():
    p = PROBLEMS["huber_regression"]()
    G = p.certify("bounded_grad_norm").constants["G"]
    L_G = p.certify("lipschitz").constants["L_G"]
    rng = np.random.default_rng(0)
    for scale in (0.1, 10.0, 1e4):
        w = scale * rng.standard_normal((8, p.dim))
        g = p.client_grads(w, np.zeros(8, dtype=np.int64))
        assert np.linalg.norm(g, axis=-1).max() <= G * (1 + 1e-12)
        assert p.sample_grad_stats(w)[0].max() <= L_G * (1 + 1e-12)
    # far along any direction every residual is beyond the kink:
    # each per-sample gradient is delta ||x||, the largest L_G
    far = 1e6 * rng.standard_normal((1, p.dim))
    assert p.sample_grad_stats(far)[0][0] == pytest.approx(L_G, rel=1e-9)
    for name in ("strongly_convex", "PL"):
        assert p.certify(name).status == "refused"
    w_star = p.constants["w_star"].value
    assert np.linalg.norm(p.grad(w_star[None])[0]) < 1e-8  # the computed optimum is stationary


def test_noise_at_the_optimum_is_exact_where_the_variance_is_unbounded():
    sigma_star2, b = 0.2, 3
    p = PROBLEMS["least_squares_noise_at_optimum"]()
    w_star = p.constants["w_star"].value
    assert np.abs(p.client_grads(w_star[None], np.zeros(1, dtype=np.int64))).max() < 1e-10  # one shared optimum
    naive = []
    for i in range(p.n_clients):  # per-sample gradients at w*, one sample at a time
        gs = [p.X[0, i, j] * (p.X[0, i, j] @ w_star - p.y[0, i, j]) for j in range(p.X.shape[2])]
        m = np.mean(gs, axis=0)
        naive.append(np.mean([np.sum((g - m) ** 2) for g in gs]))
    assert np.mean(naive) == pytest.approx(sigma_star2, rel=1e-10)
    cert = Minibatch(b).certify("noise_at_optimum", p)
    assert cert.certified and cert.constants["sigma_star"] == pytest.approx(np.sqrt(sigma_star2 / b), rel=1e-10)
    assert Minibatch(b).certify("bounded_variance", p).status == "refused"  # unbounded over every w


def test_oracle_constants():
    p = PROBLEMS["heterogeneous_least_squares"]()
    assert AdditiveNoise(0.3).certify("bounded_variance", p).constants["sigma"] == pytest.approx(np.sqrt(0.3))
    assert Exact().certify("bounded_variance", p).constants["sigma"] == 0.0
    assert AdditiveNoise(0.3).certify("noise_at_optimum", p).constants["sigma_star"] == pytest.approx(np.sqrt(0.3))
    pl = PROBLEMS["pl_nonconvex"]()
    one = float(pl.constants["minibatch_variance_1"].value)
    assert Minibatch(4).certify("bounded_variance", pl).constants["sigma"] == pytest.approx(np.sqrt(one / 4))


def test_an_oracle_that_changes_the_gradients_inherits_no_certificate():
    class Biased(AdditiveNoise):
        def grad(self, view, w, k, draws):
            return super().grad(view, w, k, draws) + 1.0

    p = PROBLEMS["heterogeneous_least_squares"]()
    cert = Biased(0.3).certify("bounded_variance", p)
    assert cert.status == "unknown" and "changes how gradients are drawn (grad)" in cert.how


@pytest.mark.parametrize("topology", [ring(8), grid(9), exponential(8), fully_connected(5)])
def test_topology_constants_and_the_consensus_rate(topology):
    W = topology.dense()
    lam = topology.certify("mixing_matrix").constants["lambda"]
    assert lam == pytest.approx(mixing_lambda(W)) and lam < 1
    p = topology.certify("consensus_rate").constants["p"]
    rng = np.random.default_rng(0)
    m = W.shape[0]
    P = np.full((m, m), 1.0 / m)
    for _ in range(20):  # ||W X - Xbar||^2 <= (1 - p) ||X - Xbar||^2
        X = rng.standard_normal((m, 3))
        Xbar = P @ X
        assert np.sum((W @ X - Xbar) ** 2) <= (1 - p) * np.sum((X - Xbar) ** 2) * (1 + 1e-10) + 1e-14
    assert RandomKNeighbour(8, 3).certify("mixing_matrix").status == "refused"
    assert RandomKNeighbour(8, 3).certify("consensus_rate").status == "unknown"  # only a Monte Carlo estimate


def test_visited_certificates_refuse_a_diverged_run():
    ok = from_visited("bounded_grad_norm", {"visited_client_grad2": np.array([[1.0, 4.0], [9.0, 1.0]])},
                      "visited_client_grad2", "G", lambda v: np.sqrt(np.max(v, axis=0)), "how", globally="why")
    assert ok.region == "visited" and np.allclose(ok.constants["G"], [3.0, 2.0])
    bad = from_visited("bounded_grad_norm", {"visited_client_grad2": np.array([[1.0, np.inf]])},
                       "visited_client_grad2", "G", np.sqrt, "how", globally="why")
    assert bad.status == "refused" and "diverged" in bad.how
    missing = from_visited("bounded_grad_norm", {}, "visited_client_grad2", "G", np.sqrt, "how", globally="why")
    assert missing.status == "refused" and "visited_client_grad2" in missing.how


def test_the_hyperbolic_regularizer_certifies_r_only_on_the_visited_region():
    alg = Algorithm("H", local=(HyperbolicRegularizer(),))
    assert alg.certify("regularizer_smooth").status == "refused"
    c = alg.certify("regularizer_smooth", None, {"hyp_r_bound": np.array([[1.0, 2.0], [3.0, np.nan]])})
    assert c.certified and np.allclose(c.constants["r"], [3.0, 2.0]) and c.region == "visited"


# ------------------------------------------------------------------------------------ the join and the rule


def _dgd_record(name="dgd_test"):
    """Yuan, Ling & Yin 2016 (arXiv 1310.7063), the shape of their consensus bound: ||x_i(k) - xbar(k)|| <=
    alpha D / (1 - beta) under bounded gradients ||grad f_i|| <= D and a mixing matrix with second largest
    eigenvalue modulus beta (written from the statement's shape for this test; the zoo transcribes it)."""
    S = SymbolSet(name, strict=True)
    alpha = S.add("alpha", "step size", dim="w^2/f")
    D = S.add("D", "bound on every agent's gradient norm", dim="f/w")
    beta = S.add("beta", "second largest eigenvalue modulus of W", sp.Interval.open(0, 1), dim="1")
    return Bound(id=f"{name}.consensus", paper=name, title="DGD consensus", source="test", symbols=S,
                 assumptions=("L_smooth", "convex", "bounded_grad_norm(D)", "mixing_matrix(beta)"),
                 lhs="consensus_max", lhs_kind="none", expr=alpha * D / (1 - beta),
                 conditions=(Condition("alpha_positive", sp.Gt(alpha, 0), source="test"),))


def _dgd_row(problem, lr, topology):
    rec = _dgd_record()
    alg = d_psgd(topology)
    cfg = RunConfig(rounds=60, local_steps=1, lr=lr, oracle=Exact())
    tr = simulate(problem, alg, cfg, [0], measures=("consensus_max",))
    cert = certify(rec, problem=problem, oracle=cfg.oracle, topology=topology, visited=tr)
    vals = {"alpha": lr}
    return assess_bound(rec, [vals], np.max(tr["consensus_max"][20:], axis=0), problem=problem.name,
                        certification=cert), tr


def test_dgd_outside_its_assumptions_is_not_applicable_never_a_finding():
    """The issue's case: DGD on least squares (gradients unbounded) at step 3/L diverges. Without certificates the row
    came out violated and counted; now it is not applicable, naming the assumption."""
    p = heterogeneous_least_squares(8, 3, 20, random_state=2)
    L = p.certify("L_smooth").constants["L"]
    row, tr = _dgd_row(p, 3.0 / L, fully_connected(8))
    assert tr.diverged.all()
    assert row.verdict == "not_applicable" and not row.finding
    assert any(c.startswith("bounded_grad_norm(D): refused") for c in row.conditions_failed)
    assert "least squares: gradients unbounded" in row.detail


def test_the_same_record_is_decided_on_a_problem_with_bounded_gradients():
    p = opposed_huber(16)
    row, tr = _dgd_row(p, 0.1, ring(16))
    assert row.verdict in ("holds", "violated") and np.isfinite(row.measured)
    cert = {c["assumption"]: c for c in row.extra["certificates"]}
    assert cert["bounded_grad_norm(D)"]["status"] == "certified" and cert["bounded_grad_norm(D)"]["region"] == "global"
    assert row.params["D"] == pytest.approx(1.0)  # delta max ||x||: the certified constant filled the record's D
    assert row.params["beta"] == pytest.approx(ring(16).lam)


def test_a_constant_below_its_certificate_is_not_admitted():
    p = heterogeneous_least_squares(5, 4, 20, random_state=1)
    rec = _dgd_record("dgd_admit")
    cert = certify(rec, problem=p, oracle=Exact(), topology=ring(5),
                   extra=(certified("bounded_grad_norm", "test", G=2.0, region="visited"),))
    assert cert.applicable and cert.values["D"] == 2.0
    assert cert.admits({"D": 2.5}) == []
    assert "below the certified G" in cert.admits({"D": 1.0})[0]
    L = p.certify("L_smooth").constants["L"]
    strict = certify_assumptions("x", ("L_smooth(L)",), ("L",), problem=p)
    assert strict.admits({"L": L}) == [] and strict.admits({"L": 0.5 * L})


def test_assess_bound_refuses_a_record_with_assumptions_and_no_certification():
    """A check that passes no certification and simulated nothing is refused. It runs as a check does, inside
    ``record_simulations`` (outside one, the last simulation is this process's: an earlier test's run)."""
    from fedtheory.sim.simulation_log import record_simulations

    rec = _dgd_record("dgd_none")
    with record_simulations(), pytest.raises(Exception, match="certification"):
        assess_bound(rec, [{"alpha": 0.1, "D": 1.0, "beta": 0.5}], np.zeros(3))


# ------------------------------------------------------------------------------------ over everything registered


def test_every_built_in_record_names_catalogued_assumptions():
    for rid, r in records().items():
        for text in getattr(r, "assumptions", ()) or ():
            ref = parse_reference(text)
            assert ref.name in CATALOGUE, (rid, text)
            assert set(ref.binding.values()) <= set(r.symbols.info), (rid, text)


def test_every_built_in_bound_row_carries_its_certificates():
    """The quick profile's bound rows of records with assumptions, decided on a run, say what certified them."""
    from fedtheory.checks import run_checks

    rows = run_checks(only=["fedshift.thm1", "oledfl.lemma3"], profile="quick",
                      parallel_symbolic=False)
    by_id = records()
    decided = [r for r in rows if r.kind == "bound" and by_id[r.id].assumptions and r.verdict != "error"]
    assert decided
    for r in decided:
        certs = r.extra.get("certificates")
        assert certs and all(c["status"] for c in certs), r.id
        if r.verdict in ("holds", "violated"):
            assert all(c["status"] == "certified" for c in certs), r.id


def test_the_assumptions_page_is_current():
    """docs/assumptions.md is what scripts/refresh_assumptions.py writes from today's certifiers."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "refresh_assumptions.py"
    spec = importlib.util.spec_from_file_location("refresh_assumptions", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.PAGE.read_text() == mod.render(), "run: python scripts/refresh_assumptions.py"


# ------------------------------------------------------------------------------------ the trial's other gaps


def test_the_largest_deviation_over_agents_and_clients():
    """consensus_max (gossip) and client_deviation_max (server) against a naive computation from the models."""
    p = heterogeneous_least_squares(6, 3, 10, random_state=3)
    cfg = RunConfig(rounds=4, local_steps=2, lr=0.1)
    tr = simulate(p, d_psgd(ring(6)), cfg, [0], measures=("consensus_max", "consensus"))
    assert np.all(tr["consensus_max"] ** 2 >= tr["consensus"] - 1e-15)  # the max of the squares >= their mean
    alg = d_psgd(ring(6))
    plain = simulate(p, alg, cfg, [0])
    assert "consensus_max" not in plain.measures  # a norm per agent and round: recorded when named
    tr = simulate(p, fedavg(), cfg, [0], measures=("client_deviation_max", "delta_code"), keep_iterates=True)
    assert np.all(tr["client_deviation_max"] ** 2 >= tr["delta_code"] - 1e-15)
    assert np.all(tr["client_deviation_max"] ** 2 <= p.n_clients * tr["delta_code"] + 1e-12)  # max^2 <= sum


def test_a_measure_declared_with_register_measure_has_its_units_checked():
    """A plug-in measure's declared dimension reaches the units row (the trial's exit 3 'no dimension for: left
    side'): declared, the row is decided; undeclared, it is inconclusive (never an error)."""
    from fedtheory.checks.dimensions import units_result
    from fedtheory.sim import register_measure

    def record(lhs):
        S = SymbolSet(f"units_{lhs}", strict=True)
        D = S.add("D", "a gradient bound", dim="f/w")
        a = S.add("a", "a step size", dim="w^2/f")
        return Bound(id=f"units_{lhs}.b", paper=f"units_{lhs}", title="b", source="test", symbols=S, lhs=lhs,
                     lhs_kind="none", expr=a * D)

    assert units_result(record("my_deviation_max_undeclared")).verdict == "inconclusive"
    register_measure("my_deviation_max", "w", "the largest deviation over agents")
    assert units_result(record("my_deviation_max")).verdict == "holds"
    register_measure("my_deviation_sq", "w^2", "its square")
    assert units_result(record("my_deviation_sq")).verdict == "violated"
    with pytest.raises(Exception, match="dimension"):
        register_measure("my_deviation_max", "f", "the same name with another dimension")


def test_deterministic_runs_are_decided_on_the_trajectory_without_statistics():
    """Exact gradients, every run identical: no t statistics in the text, and the worst round is the largest gap."""
    from fedtheory.checks import compare_mean, compare_rounds

    lhs = np.tile(np.array([[1.0], [2.0], [5.0], [3.0]]), (1, 4))  # 4 identical runs
    rhs = np.full_like(lhs, 2.5)
    verdict, info = compare_rounds(lhs, rhs, labels=[10, 20, 30, 40], label="k")
    assert verdict == "violated" and info["deterministic"] and info["worst_round"] == 2
    assert "without statistics" in info["detail"] and "k = 30" in info["detail"]
    assert "t =" not in info["detail"] and "inf" not in info["detail"] and "df" not in info["detail"]
    assert compare_rounds(lhs, lhs + 1)[0] == "holds"
    v, info = compare_mean(np.full(5, 3.0), 2.0)
    assert v == "violated" and info["deterministic"] and info["t_critical"] is None
    # stochastic runs keep the statistics
    rng = np.random.default_rng(0)
    v, info = compare_rounds(lhs + rng.normal(0, 0.01, lhs.shape), rhs)
    assert v == "violated" and not info.get("deterministic")


def test_a_finding_on_an_unverified_transcription_is_listed_apart():
    """A zoo record written from memory (Record.transcription 'unverified: ...') is decided and shown, but its finding
    is not counted until checked against a text; the summary says so per collection."""
    from fedtheory.checks import CheckResult
    from fedtheory.checks.execution import unverified_rule
    from fedtheory.checks.output import collection_lines
    from fedtheory.checks.results import exit_code
    from fedtheory.theory import register, register_paper

    S = SymbolSet("zoo_unverified_test", strict=True)
    c = S.add("c", "a constant", dim="f")
    register(Bound(id="zoo_unverified_test.t", paper="zoo_unverified_test", title="t", source="memory", symbols=S,
                   expr=c, lhs="opt_error", lhs_kind="opt_error", transcription="unverified: no public copy read"))
    register_paper("zoo_unverified_test", collection="zoo", citation="test")
    rows = [CheckResult("zoo_unverified_test.t", "zoo_unverified_test", "bound", "violated"),
            CheckResult("zoo_unverified_test.t", "zoo_unverified_test", "bound", "holds")]
    unverified_rule(rows)
    assert rows[0].scope == "unverified_transcription" and not rows[0].is_finding and exit_code(rows) == 0
    assert "transcription is unverified" in rows[0].detail
    (line,) = collection_lines(rows)
    assert line.startswith("zoo (trusted theorems): 1 paper(s), 1 theorem(s) tested, 2 rows, 0 counted finding(s), "
                           "1 on unverified")


# ------------------------------------------------------------------------------------ the second trial's findings


def test_a_value_a_check_forgot_is_an_error_row_not_a_usage_error():
    """A check that evaluates its record without a value it needs (a plug-in's bug) gives one 'error' row; the other
    checks' rows are kept (before: the whole command stopped with exit 2, no table, no --out)."""
    from fedtheory.checks import check
    from fedtheory.checks.execution import run_spec
    from fedtheory.checks.registry import all_checks
    from fedtheory.theory import register

    S = SymbolSet("forgot_value", strict=True)
    a, b = S.add("a", "a", dim="f"), S.add("b", "b", dim="f")
    rec = register(Bound(id="forgot_value.t", paper="forgot_value", title="t", source="test", symbols=S, expr=a + b,
                         lhs="opt_error", lhs_kind="opt_error"))

    @check("forgot_value.t", "forgot_value", "bound", records=("forgot_value.t",))
    def forgot(session):
        """The record evaluated without b."""
        return [assess_bound(rec, [{"a": 1.0}], np.zeros(3))]

    (row,) = run_spec(all_checks()["forgot_value.t"], Session())
    assert row.verdict == "error" and "values lacks b" in row.detail


def test_expected_smoothness_against_per_sample_smoothness():
    p = PROBLEMS["least_squares_noise_at_optimum"]()
    naive = max(float(x @ x) for x in p.X[0].reshape(-1, p.dim))  # each sample's (x.w - y)^2/2 is ||x||^2-smooth
    assert Minibatch(1).certify("expected_smoothness", p).constants["L_exp"] == pytest.approx(naive, rel=1e-12)
    assert Exact().certify("expected_smoothness", p).constants["L_exp"] == p.certify("L_smooth").constants["L"]
    assert Minibatch(1).certify("expected_smoothness", PROBLEMS["pl_nonconvex"]()).status == "refused"
    rng = np.random.default_rng(0)  # the inequality itself, per client, with the same sample at both points
    X, y = p.X[0], p.y[0]
    for _ in range(20):
        u, v = rng.standard_normal((2, p.dim)) * 3
        for i in range(p.n_clients):
            gu, gv = X[i] * (X[i] @ u - y[i])[:, None], X[i] * (X[i] @ v - y[i])[:, None]
            lhs = np.mean(np.sum((gu - gv) ** 2, axis=1))
            f = lambda w: 0.5 * np.mean((X[i] @ w - y[i]) ** 2)  # noqa: E731
            breg = f(u) - f(v) - np.mean(X[i] * (X[i] @ v - y[i])[:, None], axis=0) @ (u - v)
            assert lhs <= 2 * naive * breg * (1 + 1e-9) + 1e-12


def test_deviation_has_a_trivial_bound_and_assumptions_show_their_binding():
    from fedtheory.checks import TRIVIAL_BOUNDS
    from fedtheory.theory.assumptions import describe

    assert float(np.max(TRIVIAL_BOUNDS["deviation"].value({"visited_max_dist2": np.array([4.0, 9.0])}))) == 6.0
    assert describe("bounded_grad_norm(D)").endswith("(here G = D)")


# ------------------------------------------------------------------------------------ a check's certificate


def test_a_checks_certificate_may_add_but_never_contradict_an_exact_one():
    """Before: a check could pass certify(..., extra=[certified("strongly_convex", "trust me", mu=0.9 * L)]) against the
    problem's exact mu, and the override yielded a counted false_as_stated finding. Now it is refused, naming both
    (inside a check: that check's error row, never a finding)."""
    from fedtheory import FedTheoryError

    p = heterogeneous_least_squares(5, 4, 20, random_state=1)
    L = p.certify("L_smooth").constants["L"]
    mu = p.certify("strongly_convex").constants["mu"]
    assert mu < 0.9 * L
    with pytest.raises(FedTheoryError, match=r"mu = .*trust me.*exact certificate.*mu = .*at most"):
        certify_assumptions("x", ("strongly_convex(mu)",), ("mu",), problem=p,
                            extra=(certified("strongly_convex", "trust me", mu=0.9 * L),))
    with pytest.raises(FedTheoryError, match=r"L = .*at least"):
        certify_assumptions("x", ("L_smooth(L)",), ("L",), problem=p, extra=(certified("L_smooth", "mine", L=0.5 * L),))
    # a global certificate where the problem refuses the assumption globally (least squares: gradients unbounded)
    with pytest.raises(FedTheoryError, match="refuses it"):
        certify_assumptions("x", ("bounded_grad_norm(G)",), ("G",), problem=p,
                            extra=(certified("bounded_grad_norm", "mine", G=2.0),))
    # what is not a contradiction: a looser constant, the exact one, a narrower region than the one refused
    for extra in (certified("strongly_convex", "looser", mu=0.5 * mu), certified("strongly_convex", "same", mu=mu)):
        assert certify_assumptions("x", ("strongly_convex(mu)",), ("mu",), problem=p, extra=(extra,)).applicable
    ok = certify_assumptions("x", ("bounded_grad_norm(G)",), ("G",), problem=p,
                             extra=(certified("bounded_grad_norm", "on the visited points", G=2.0, region="visited"),))
    assert ok.applicable


def test_a_claims_assumptions_are_certified_when_the_check_passes_a_certification():
    """A trial user's finding: a Claim's assumptions were never certified (claim_result had no certification=).
    Now a run that refuses one gives not_applicable naming it; one that certifies them decides the claim and the
    row carries the certificates; without a certification the row says which assumptions went uncertified."""
    import sympy as sp

    from fedtheory.checks import certify, claim_result
    from fedtheory.sim import ClientSampling, Exact, pl_nonconvex
    from fedtheory.theory import Claim, ClaimOutcome, SymbolSet

    S = SymbolSet("certclaim", strict=True)
    S.add("mu", "strong convexity", sp.Interval.open(0, sp.oo), dim="f/w^2")
    claim = Claim(id="certclaim.c", paper="certclaim", title="t", source="s", symbols=S,
                  assumptions=("strongly_convex(mu)",), predicate=lambda m: ClaimOutcome(True, "ok", None),
                  measurements=("x",))
    convex = heterogeneous_least_squares(3, 4, 20, random_state=0)
    nonconvex = pl_nonconvex(3, 4, 10, random_state=0)
    ok = certify(claim, problem=convex, oracle=Exact(), sampling=ClientSampling(3))
    refused = certify(claim, problem=nonconvex, oracle=Exact(), sampling=ClientSampling(3))
    assert ok.applicable and not refused.applicable
    row = claim_result(claim, {"x": [1.0]}, certification=refused)
    assert row.verdict == "not_applicable" and "strongly_convex(mu)" in row.detail
    row = claim_result(claim, {"x": [1.0]}, certification=ok)
    assert row.verdict == "claim_supported" and row.extra["certificates"][0]["assumption"] == "strongly_convex(mu)"
    row = claim_result(claim, {"x": [1.0]})
    assert row.verdict == "claim_supported" and row.extra["assumptions_not_certified"] == ["strongly_convex(mu)"]


def test_run_settings_say_the_schedules_origin_and_whether_the_clients_are_identical():
    """A trial user's SGD rows were not_applicable with 'requires step_origin=0 (run has None)' although the run
    set step_origin=0: run_settings did not say it (the Stich example added it by hand)."""
    from fedtheory.checks import run_settings

    p = identical_least_squares(3, 4, 10, random_state=0)
    cfg = RunConfig(rounds=2, local_steps=2, lr=4.0, lr_schedule="inverse_step", lr_offset=3.0, step_origin=0)
    s = run_settings(p, fedavg(), cfg)
    assert s["step_origin"] == 0 and s["identical_clients"] is True and s["lr_schedule"] == "inverse_step"
    assert run_settings(heterogeneous_least_squares(3, 4, 10, random_state=0), fedavg(),
                        RunConfig(rounds=2, local_steps=1, lr=0.1))["identical_clients"] is False
