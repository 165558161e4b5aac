"""FedInit: identities on random instances, and the checks' verdicts on the built-in settings."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.checks import run_checks
from fedtheory.checks.fedinit import admissible_eta
from fedtheory.sim import (AdditiveNoise, Minibatch, RunConfig, fedinit, heterogeneous_least_squares, pl_nonconvex,
                           scaffold, simulate)
from fedtheory.theory import fedinit as F


@given(seed=st.integers(0, 10_000), beta=st.floats(0.0, 1.5), N=st.sampled_from([None, 2, 4]),
       rule=st.sampled_from(["algorithm1", "code"]), local=st.sampled_from(["sgd", "scaffold"]))
def test_eq15_holds_to_machine_precision(seed, beta, N, rule, local):
    p = pl_nonconvex(6, 4, 10, random_state=seed) if seed % 2 else heterogeneous_least_squares(6, 4, 10, random_state=seed)
    alg = fedinit(beta, server_rule=rule) if local == "sgd" else scaffold(rule).with_relaxed_init(beta)
    tr = simulate(p, alg, RunConfig(rounds=5, local_steps=3, lr=0.05, clients_per_round=N, oracle=Minibatch(2)),
                  [seed], measures=("eq15_residual",))
    assert np.nanmax(tr["eq15_residual"]) < 1e-12


def test_eq15_with_the_sign_flipped_fails():
    """The identity check can fail: the same residual with -beta is of order one."""
    p = heterogeneous_least_squares(4, 3, 10, random_state=0)
    tr = simulate(p, fedinit(0.5), RunConfig(rounds=3, local_steps=2, lr=0.1), [0], keep_iterates=True,
                  measures=("eq15_residual", "init_offset"))
    assert np.nanmax(tr["eq15_residual"]) < 1e-12
    assert np.nanmax(tr["init_offset"][1:]) > 1e-3  # the relaxation term is not negligible, so a sign error would show


@given(seed=st.integers(0, 10_000))
def test_unbiased_exactly_under_full_participation(seed):
    p = heterogeneous_least_squares(5, 3, 10, random_state=seed)
    tr = simulate(p, fedinit(0.3), RunConfig(rounds=6, local_steps=2, lr=0.05, oracle=AdditiveNoise(0.1)), [seed],
                  measures=("unbiased_gap",))
    assert np.nanmax(tr["unbiased_gap"]) < 1e-13


def test_admissible_eta_meets_every_condition():
    p = heterogeneous_least_squares(10, 10, 50, random_state=0)
    L = p.constants["L"].value
    B = 1.3 * max(1.0, p.constants["B_min"].value)
    for beta in (0.0, 0.05, 0.1):
        eta = admissible_eta(L, 10, 10, 5, beta, B)
        vals = {"L": L, "mu": p.constants["mu"].value, "sigma_l": 0.2, "N": 10, "C": 10, "K": 5, "T": 100, "eta": eta,
                "beta": beta, "D": 1.0, "B": B, "G": 1.0}
        lam_max = float(F.LAMBDA_MAX.expr.subs({F.eta: eta, F.K: 5, F.L: L, F.B: B, F.N: 10, F.beta: beta}))
        assert lam_max == pytest.approx(0.5, rel=1e-9) or lam_max > 0.5
        vals["lam"] = lam_max
        assert F.THM1.conditions_failed(vals) == []
        assert F.THM4.conditions_failed(vals) == []


@pytest.mark.parametrize("N, C", [(10, 10), (5, 10), (2, 20)])
def test_admissible_eta_is_the_largest_step_the_records_allow(N, C):
    """admissible_eta (lambdified from the records) is the largest step they allow: a step 1e-9 larger breaks one of
    the step conditions (evaluated by substitution into the records) or lambda_max >= 1/2."""
    p = heterogeneous_least_squares(C, 10, 50, heterogeneity=0.3, condition=2.0, random_state=0)
    L = p.constants["L"].value
    B = 1.3 * max(1.0, p.constants["B_min"].value)
    for beta in (0.0, 0.05, 0.1):
        eta = admissible_eta(L, N, C, 5, beta, B)
        subs = {F.N: N, F.C: C, F.K: 5, F.L: L, F.B: B, F.beta: beta}
        limits = [float(c.relation.rhs.subs(subs)) for c in (F.ETA_NC, F.ETA_NKL, F.ETA_SQRT, F.ETA_GRAD)]
        lam_at = lambda e: float(F.LAMBDA_MAX.expr.subs({**subs, F.eta: e}))
        assert eta <= min(limits) * (1 + 1e-12) and lam_at(eta) >= 0.5 * (1 - 1e-9)
        bigger = eta * (1 + 1e-9)
        assert bigger > min(limits) or lam_at(bigger) < 0.5


@pytest.fixture(scope="module")
def fedinit_results():
    return run_checks(paper="fedinit", profile="quick", seed=0, parallel_symbolic=False)


def test_fedinit_quick_profile(fedinit_results):
    res = fedinit_results
    by = {}
    for r in res:
        by.setdefault(r.id, []).append(r)
    # every bound holds at the admissible settings and is not applicable at the paper's practical eta = 0.1
    for rid in ("fedinit.thm1", "fedinit.thm2", "fedinit.thm4", "fedinit.thm5", "fedinit.lemma2", "fedinit.lemma3",
                "fedinit.lemma4"):
        adm = [r for r in by[rid] if r.params.get("setting") == "admissible"]
        prac = [r for r in by[rid] if r.params.get("setting") == "practice"]
        assert adm and all(r.verdict == "holds" and r.ratio >= 1 for r in adm), rid
        assert prac and all(r.verdict == "not_applicable" and r.conditions_failed for r in prac), rid
    assert all(r.verdict == "holds" for r in by["fedinit.thm3"] + by["fedinit.thm3.rederived"])
    assert all(r.verdict == "holds" for r in by["fedinit.eq15"] + by["fedinit.eq3"])
    # a tautology and an identity the simulator builds in: implementation self-checks, not findings
    assert all(r.self_check for r in by["fedinit.eq15"] + by["fedinit.eq3"])
    assert all(r.self_check == r.params["setting"].startswith("full") for r in by["fedinit.claim.unbiased"])
    # stability gaps above the loss range U and optimization errors above f(w^0) - f* are flagged vacuous
    for r in by["fedinit.thm3"] + by["fedinit.thm3.rederived"] + by["fedinit.thm2"]:
        if r.trivial_bound is not None and r.bound is not None:
            assert r.vacuous == (r.bound > r.trivial_bound)
    assert any(r.vacuous for r in by["fedinit.thm3"])
    # the practical eta = 0.05 breaks the step conditions: an out-of-scope observation, never counted
    ins = {r.params["setting"]: r for r in by["fedinit.claim.opt_insensitive_to_beta"]}
    assert all(r.scope == "outside_conditions" for k, r in ins.items() if k.startswith("eta = 0.05"))
    assert ins["admissible step, full participation"].scope == "inside"
    unb = {r.params["setting"]: r.verdict for r in by["fedinit.claim.unbiased"]}
    assert unb["partial participation 5 of 10, Algorithm 1"] == "claim_refuted"
    assert unb["full participation, Algorithm 1"] == "claim_supported"
    rates = {r.id: r.verdict for r in res if r.kind == "symbolic"}
    assert rates["fedinit.thm1.rate"] == "rate_consistent" and rates["fedinit.thm5.rate"] == "rate_inconsistent"
    assert by["fedinit.thm1.measured_rate"][0].verdict == "rate_consistent"
    for r in res:
        assert r.verdict != "error", r.detail
        d = r.to_json()
        for key in ("id", "paper", "kind", "verdict", "measured", "bound", "ratio", "conditions_failed", "problem",
                    "params", "seed", "source"):
            assert key in d


def test_thm4_rederived_keeps_the_dropped_gradient_term():
    """Thm 4's explicit bound = (69, 267 G^2 terms) + g eta^2 K^2/(1-96 beta^2) * (Thm 1's right side), with
    g = 267 B^2 as printed and g = 267 B^2 + 6 C/N re-derived (the 2 C^2 K^2 E||grad f||^2 part of the gradient-sum
    bound times 3 eta^2/(N C)). Thm 1 is encoded separately, so this fails if either record is mistyped."""
    import sympy as sp
    b, e, K, C, N, B = F.beta, F.eta, F.K, F.C, F.N, F.B
    rest = (69 * e**2 * K * F.sigma_l**2 + 267 * e**2 * K**2 * F.G**2) / (1 - 96 * b**2)
    thm1_part = e**2 * K**2 * F.THM1_EXPR / (1 - 96 * b**2)
    assert sp.simplify(F.THM4_EXPR - rest - 267 * B**2 * thm1_part) == 0
    assert sp.simplify(F.THM4_REDERIVED_EXPR - F.THM4_EXPR - 6 * C / N * thm1_part) == 0
    vals = {"L": 2.0, "mu": 0.5, "sigma_l": 0.2, "K": 5, "T": 100, "eta": 1e-3, "beta": 0.05, "D": 1.0, "B": 1.0,
            "G": 0.3, "lam": 0.5}
    r_full = F.THM4_REDERIVED.evaluate({**vals, "N": 10, "C": 10}) / F.THM4.evaluate({**vals, "N": 10, "C": 10})
    r_tenth = F.THM4_REDERIVED.evaluate({**vals, "N": 2, "C": 20}) / F.THM4.evaluate({**vals, "N": 2, "C": 20})
    assert 1 < r_full < r_tenth  # the omission grows with C/N


def test_thm4_at_partial_participation():
    res = run_checks(paper="fedinit", only=["fedinit.thm4.partial"], profile="quick", seed=0, parallel_symbolic=False)
    settings = {r.params["setting"] for r in res}
    assert settings == {"partial participation 5 of 10", "partial participation 2 of 20"}
    for r in res:
        assert r.params["N"] < r.params["C"] and not r.conditions_failed, r.detail
        assert r.verdict == "holds" and r.ratio >= 1, r.detail
    for pr, rd in zip(res[::2], res[1::2]):
        assert (pr.id, rd.id) == ("fedinit.thm4", "fedinit.thm4.rederived")
        assert rd.bound > pr.bound and rd.measured == pr.measured


def test_divergence_dominates_rule_can_fail():
    ok = {"order_vs": {"optimization_term (S fixed)": "higher", "stability_term (S fixed)": "higher"},
          "grid_top": ["stability_term", "divergence_term"], "grid_last": [False, True]}
    assert F.CLAIM_DOMINATES.evaluate(ok).supported is True
    # the asymptotic regime not reached at the grid's largest T: inconclusive
    assert F.CLAIM_DOMINATES.evaluate({**ok, "grid_last": [True, True]}).supported is None
    # another term of higher order: refuted, whatever the grid says
    low = {**ok, "order_vs": {**ok["order_vs"], "stability_term (S fixed)": "lower"}}
    assert F.CLAIM_DOMINATES.evaluate(low).supported is False
    same = {**ok, "order_vs": {**ok["order_vs"], "stability_term (S fixed)": "same"}}
    assert F.CLAIM_DOMINATES.evaluate(same).supported is None


def test_divergence_term_order_from_the_records():
    """With the re-derived Thm 3, both stability-type terms grow like T^(cL/(1+cL)); the divergence term has the extra
    log T of sum_t sqrt(Delta^t) (Thm 5's order), and the optimization term decays like log T / T."""
    from fedtheory.checks.fedinit import _order_vs
    sym = _order_vs()
    assert set(sym["order_vs"].values()) == {"higher"}
    lead = sym["leading"]
    assert lead["optimization_term (S fixed)"]["T_power"] == "-1"
    assert lead["divergence_term (S fixed)"]["log_power"] == "1" and lead["stability_term (S fixed)"]["log_power"] == "0"


def test_insensitivity_rule_uses_paired_standard_errors():
    rng = np.random.default_rng(0)
    base = 1.0 + 0.01 * rng.standard_normal(8)
    betas = np.array([0.0, 0.05, 0.1])
    same = np.vstack([base, base * 1.01, base * 0.99])
    m = {"beta": betas, "opt_error": same, "delta": np.ones(3)}
    assert F.CLAIM_INSENSITIVE.evaluate(m).supported is True
    # a 30% difference, well resolved by the seeds: refuted
    assert F.CLAIM_INSENSITIVE.evaluate({**m, "opt_error": np.vstack([base, base * 1.3, base])}).supported is False
    # the same 5% mean difference but seeds too noisy to show equivalence: inconclusive
    noisy = np.vstack([base, base * 1.05 + 0.3 * rng.standard_normal(8), base])
    assert F.CLAIM_INSENSITIVE.evaluate({**m, "opt_error": noisy}).supported is None
    assert F.CLAIM_INSENSITIVE.evaluate({**m, "opt_error": same[:, :1]}).supported is None  # one seed: no SE


def test_opt_insensitive_at_the_admissible_step_converges():
    from fedtheory.checks import run_checks
    res = {r.params["setting"]: r for r in run_checks(paper="fedinit", only=["fedinit.claim.opt_insensitive_to_beta"],
                                                      profile="quick", seed=0, parallel_symbolic=False)}
    adm = res["admissible step, full participation"]
    assert adm.scope == "inside" and adm.verdict == "claim_supported" and adm.seeds == 8
    assert "removed 100.0%" in adm.detail or "removed 99." in adm.detail
    assert all(r.scope == "outside_conditions" for k, r in res.items() if k.startswith("eta = 0.05"))
