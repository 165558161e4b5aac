"""Yuan, Ling & Yin 2016 (DGD): the records at points worked by hand, the stacked-gradient measure against a naive
computation, the checks' verdicts on the quick profile, the negative controls, and the per-agent reading of D (the
issue's 1.9x) settled: a mis-transcription, not an erratum."""
import dataclasses
import math

import numpy as np
import pytest

from fedtheory.checks import Session
from fedtheory.papers.yuan2016 import checks as C, records as R
from fedtheory.papers.yuan2016.measures import StackedGradient
from fedtheory.sim import Exact, RunConfig, d_psgd, heterogeneous_least_squares, ring, simulate


def test_lemma1_at_a_point_worked_by_hand():
    # alpha D/(1 - beta) = 0.1 * 4/(1 - 0.5) = 0.8
    assert float(R.LEMMA1.evaluate({"alpha": 0.1, "D": 4.0, "beta": 0.5})) == pytest.approx(0.8, rel=1e-15)


def test_thm1_at_a_point_worked_by_hand():
    # D = sqrt(2 L_h gap0) = sqrt(2 * 2 * 9) = 6; (9): alpha <= (1 + lambda_n)/L_h = (1 - 0.2)/2 = 0.4
    v = {"L_h": 2.0, "gap0": 9.0, "alpha": 0.4, "lam_n": -0.2}
    assert float(R.THM1.evaluate(v)) == pytest.approx(6.0, rel=1e-15)
    assert R.THM1.conditions_failed(v) == []
    assert R.THM1.conditions_failed({**v, "alpha": 0.41})[0].startswith("step_9")


def test_thm3_at_a_point_worked_by_hand():
    # mu_fbar = 1, L_fbar = 3: c1 = 1/4, c2 = 3/4; alpha = 0.2; delta = c2/(2(1 - alpha c2)) = 0.75/1.7
    # c3^2 = 1 - alpha c2 + alpha delta - alpha^2 delta c2 = 0.925 (= 1 - alpha c2/2)
    # D = sqrt(2 L_h gap0) = 6 (L_h = 2, gap0 = 9); c4^2 = alpha^3 (alpha + 1/delta) L_h^2 D^2/(1 - beta)^2, beta = 0.5
    # bound at k = 2, e0 = 5: c3^2 e0 + c4/sqrt(1 - c3^2)
    alpha, c2, beta, D, L_h = 0.2, 0.75, 0.5, 6.0, 2.0
    delta = c2 / (2 * (1 - alpha * c2))
    c3sq = 1 - alpha * c2 + alpha * delta - alpha ** 2 * delta * c2
    assert c3sq == pytest.approx(0.925, rel=1e-14)
    c4 = math.sqrt(alpha ** 3 * (alpha + 1 / delta) * L_h ** 2 * D ** 2 / (1 - beta) ** 2)  # = sqrt(11.3664)
    assert c4 ** 2 == pytest.approx(11.3664, rel=1e-12)
    hand = c3sq * 5.0 + c4 / math.sqrt(1 - c3sq)  # 4.625 + 3.37141/0.273861 = 16.9357
    v = {"mu_fbar": 1.0, "L_fbar": 3.0, "alpha": alpha, "beta": beta, "L_h": L_h, "gap0": 9.0, "e0": 5.0, "k": 2,
         "lam_n": 0.0}
    assert float(R.THM3.evaluate(v)) == pytest.approx(hand, rel=1e-12)
    assert hand == pytest.approx(16.9357, abs=1e-4)
    assert R.THM3.conditions_failed(v) == []
    # alpha = 0.26: (9) admits up to (1 + 0)/2 = 0.5, c1 = 1/4 does not
    assert [c.split(":")[0] for c in R.THM3.conditions_failed({**v, "alpha": 0.26})] == ["step_c1"]


def test_the_stacked_gradient_against_a_naive_computation():
    """dgd_stacked_grad / dgd_agent_grad at round k equal the norms of the agents' gradients at their models x_i(k),
    DGD written out by hand: x_i(k+1) = sum_j w_ij x_j(k) - alpha grad f_i(x_i(k)) (mix, then step)."""
    p = heterogeneous_least_squares(6, 3, 10, random_state=3)
    top = ring(6)
    W = top.dense()
    alg = dataclasses.replace(d_psgd(top), local=(StackedGradient(),))
    tr = simulate(p, alg, RunConfig(rounds=8, local_steps=1, lr=0.05, oracle=Exact()), [0], w0=np.zeros(3),
                  measures=("consensus_max",))
    H = np.einsum("csd,cse->cde", p.X[0], p.X[0]) / p.X.shape[2]
    h = np.einsum("csd,cs->cd", p.X[0], p.y[0]) / p.X.shape[2]
    x = np.zeros((6, 3))
    for k in range(8):
        g = np.einsum("cde,ce->cd", H, x) - h
        assert tr["dgd_stacked_grad"][k, 0] == pytest.approx(np.sqrt(np.sum(g ** 2)), rel=1e-10)
        assert tr["dgd_agent_grad"][k, 0] == pytest.approx(np.max(np.linalg.norm(g, axis=1)), rel=1e-10)
        x = W @ x - 0.05 * g
        assert tr["consensus_max"][k, 0] == pytest.approx(np.max(np.linalg.norm(x - x.mean(0), axis=1)), rel=1e-9)


def test_checks_hold_on_the_quick_profile():
    s = Session(seed=0, profile="quick")
    lemma1 = C.lemma1(s)
    assert [r.verdict for r in lemma1] == ["holds"] * 3
    assert lemma1[0].ratio == pytest.approx(4.0 / 1.875, rel=1e-6)  # complete graph: 0.4 vs 0.1875 (alpha = 0.1)
    thm1 = C.thm1(s)
    assert [r.verdict for r in thm1] == ["holds", "holds"]
    # the equal-curvature quadratics: ||h(1)|| = (1 - alpha) D
    assert thm1[1].ratio == pytest.approx(1 / 0.99, rel=1e-6)
    thm3 = C.thm3(s)
    assert [r.verdict for r in thm3] == ["holds", "not_applicable", "holds"]  # issue 45: c3^k e0 dominates the last
    assert "step_9" in thm3[1].conditions_failed[0]


def test_the_per_agent_reading_of_D_is_violated_and_the_text_is_not():
    """The issue's case: 16 agents, complete graph, agent 0's Huber loss opposed to the others. The first step puts
    agent 0 at alpha |g_0 - gbar| = alpha (1 + 14/16) = 1.875 alpha from the mean: 1.875 times the per-agent reading's
    bound alpha D (D = 1, every agent's gradient norm), within the text's, alpha ||h|| = 4 alpha (||h(0)|| =
    sqrt(16))."""
    s = Session(seed=0, profile="quick")
    (per_agent,) = C._per_agent(s)
    assert per_agent.verdict == "violated" and per_agent.is_finding
    assert per_agent.measured == pytest.approx(0.1875, rel=1e-9) and per_agent.bound == pytest.approx(0.1, rel=1e-9)
    text = C.lemma1_row(s, "opposed_huber", "complete", 0.1)
    assert text.verdict == "holds" and text.bound == pytest.approx(0.4, rel=1e-9)


def test_the_other_controls_fail_as_required():
    s = Session(seed=0, profile="quick")
    assert [r.verdict for r in C._thm1_halved(s)] == ["violated"]
    assert [r.verdict for r in C._thm3_no_neighbourhood(s)] == ["violated"]


def test_records_say_how_they_were_transcribed():
    for rec in (R.LEMMA1, R.THM1, R.THM3):
        assert rec.transcription.startswith("checked against arXiv:1310.7063v3") and not rec.unverified


def test_worst_case_searches_hold_and_a_scaled_bound_is_broken():
    from fedtheory.papers.yuan2016 import worst as W
    from fedtheory.testing import scaled_bound
    from fedtheory.worst import worst_case

    for make in (W.make_lemma1, W.make_thm1):
        spec = make(rounds=10)
        rec = worst_case(spec, budget=32, seed=0)
        assert rec["verdict"] == "holds" and rec["slack"] >= 1.0
        assert worst_case(scaled_bound(spec, 0.5), budget=32, seed=0)["verdict"] == "violated"
