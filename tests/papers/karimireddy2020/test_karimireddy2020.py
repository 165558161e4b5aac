"""Karimireddy et al. 2020 (SCAFFOLD): the strongly convex bound at a point worked by hand, W_T's closed form against
the sum, C_0 against the definition, the check's verdicts on the quick profile and its negative control; FedAvg's
Theorem I is an unverified order statement."""
import numpy as np
import pytest

from fedtheory.checks import Session
from fedtheory.papers.karimireddy2020 import checks as C, records as R


def test_scaffold_bound_at_a_point_worked_by_hand():
    # beta = 4, mu = 1, sigma = 1, N = 10, S = 5, K = 2, eta_l = 0.001, eta_g = 1, T = 3, ||x0 - x*||^2 = 2, C_0 = 3
    # h = K eta_l eta_g = 0.002 <= 1/(81*4) = 0.003086; mu h = 0.002 <= S/(15 N) = 1/30
    # q = 1 - mu h/2 = 0.999; W_3 = q^-1 + q^-2 + q^-3; V_0 = 2 + 9 N h^2 C_0/S = 2 + 9*10*4e-6*3/5 = 2.000216
    # bound = V_0/(h W_3) + 12 h sigma^2/(K S) (1 + S/eta_g^2) = 2.000216/(0.002 W_3) + 0.0024*6
    q = 0.999
    W3 = q ** -1 + q ** -2 + q ** -3
    hand = 2.000216 / (0.002 * W3) + 12 * 0.002 * 1.0 / (2 * 5) * (1 + 5)
    assert hand == pytest.approx(332.717, abs=1e-3)
    v = {"beta": 4.0, "mu": 1.0, "sigma": 1.0, "N": 10, "S": 5, "K": 2, "eta_l": 0.001, "eta_g": 1.0, "T": 3,
         "dist0": 2.0, "C0": 3.0}
    assert float(R.SCAFFOLD_SC.evaluate(v)) == pytest.approx(hand, rel=1e-12)
    assert R.SCAFFOLD_SC.conditions_failed(v) == []
    assert [c.split(":")[0] for c in R.SCAFFOLD_SC.conditions_failed({**v, "eta_l": 0.002})] == ["h_beta"]
    assert [c.split(":")[0] for c in R.SCAFFOLD_SC.conditions_failed({**v, "eta_g": 0.5, "eta_l": 0.002})] == ["eta_g"]


def test_W_T_closed_form_is_the_geometric_sum():
    v = {"mu": 0.3, "K": 5, "eta_l": 0.01, "eta_g": 2.0}
    h = 5 * 0.01 * 2.0
    q = 1 - 0.3 * h / 2
    for T in (1, 7, 40):
        closed = float(R.SCAFFOLD_SC.evaluate_expr(R.W_T, {**v, "T": T}))
        assert closed == pytest.approx(sum(q ** -(r + 1) for r in range(T)), rel=1e-12)


def test_initial_controls_error_is_the_clients_gradients_at_the_optimum():
    p = C.problem(0)
    ws = np.asarray(p.constants["w_star"].value)
    naive = np.mean([np.sum((p.H[0, i] @ ws - p.h[0, i]) ** 2) for i in range(p.n_clients)])
    assert C.initial_controls_error(p) == pytest.approx(naive, rel=1e-10)


def test_check_holds_at_the_largest_step_and_refuses_twice_it():
    rows = C.scaffold_sc(Session(seed=0, profile="quick"))
    n = len(C.TERM_SETTINGS)  # issue 45: one row per additive term where it dominates, from x*
    assert [r.verdict for r in rows] == ["holds", "holds", "not_applicable"] + ["holds"] * n
    assert all(1.0 < r.ratio < 10.0 for r in rows[:2])
    assert rows[2].conditions_failed[0].startswith("h_beta")
    for r, (_, _, _, _, term) in zip(rows[3:], C.TERM_SETTINGS):
        top = max(r.extra["terms"], key=lambda t: t["share"])
        assert term in r.params["setting"] and top["share"] > 0.5


def test_the_control_fails_as_required():
    assert [r.verdict for r in C._tenth(Session(seed=0, profile="quick"))] == ["violated"]


def test_transcriptions():
    assert R.SCAFFOLD_SC.transcription.startswith("checked against arXiv:1910.06378v4")
    assert R.FEDAVG_SC.unverified and R.FEDAVG_SC.kind == "order"


def test_worst_case_search_holds():
    from fedtheory.papers.karimireddy2020 import worst as W
    from fedtheory.worst import worst_case

    rec = worst_case(W.make(rounds=20, runs=2), budget=32, seed=0, final_seeds=4)
    assert rec["verdict"] == "holds" and rec["slack"] >= 1.0
