"""FedProx (Li et al. 2020), Theorem 4: rho at a point worked by hand, the exact expectation over K draws with
replacement against enumeration, the check's verdicts and its negative control; the record is unverified."""
import dataclasses
import itertools
import math

import numpy as np
import pytest

from fedtheory.checks import Session
from fedtheory.papers.fedprox import checks as C, records as R
from fedtheory.papers.fedprox.measures import ExpectedDecrease
from fedtheory.sim import Exact, RunConfig, fedprox, heterogeneous_least_squares, simulate


def test_thm4_at_a_point_worked_by_hand():
    # mu = 10, L = 1, L_- = 0 (mu_bar = 10), B = 1, gamma = 0, K = 16:
    # rho = 1/10 - sqrt(2)/(10*4) - 1/100 - 1/200 - (2 sqrt(32) + 2)/(100*16)
    rho = 0.1 - math.sqrt(2) / 40 - 0.01 - 0.005 - (2 * math.sqrt(32) + 2) / 1600
    assert rho == pytest.approx(0.0413236, abs=1e-7)
    v = {"mu": 10.0, "L": 1.0, "L_minus": 0.0, "B": 1.0, "gamma": 0.0, "K": 16, "gap_t": 5.0, "g2_t": 2.0}
    assert float(R.THM4.evaluate(v)) == pytest.approx(5.0 - 2 * rho, rel=1e-13)
    assert R.THM4.conditions_failed(v) == []
    assert R.THM4.conditions_failed({**v, "mu": 2.0})[0].startswith("rho_positive")


def test_the_expectation_over_draws_with_replacement_against_enumeration():
    """E f(mean of K uniform draws with replacement of the devices' local solutions), enumerated over all N^K draws,
    equals the measure's closed form (f quadratic)."""
    p = heterogeneous_least_squares(3, 2, 6, random_state=4)
    L = float(p.certify("L_smooth").constants["L"])
    mu, K = 5.0 * L, 3
    base = fedprox(mu=mu, server_rule="algorithm1")
    alg = dataclasses.replace(base, local=(*base.local, ExpectedDecrease(K, mu)))
    w0 = p.initial_point(0, 2.0)
    tr = simulate(p, alg, RunConfig(rounds=1, local_steps=2, lr=1.0 / (L + mu), oracle=Exact()), [0], w0=w0,
                  measures=("opt_error",))
    # the devices' local solutions, by hand: two gradient steps on F_k(w) + (mu/2)||w - w0||^2
    local = []
    for k in range(3):
        w = w0.copy()
        for _ in range(2):
            w = w - (p.H[0, k] @ w - p.h[0, k] + mu * (w - w0)) / (L + mu)
        local.append(w)
    f = lambda w: float(p.loss(w[None])[0])
    enum = np.mean([f(np.mean([local[i] for i in draw], axis=0)) for draw in itertools.product(range(3), repeat=K)])
    assert tr["prox_expected_change"][0, 0] == pytest.approx(enum - f(w0), rel=1e-9)


def test_check_verdicts_on_the_quick_profile():
    rows = C.thm4(Session(seed=0, profile="quick"))
    assert [r.verdict for r in rows] == ["holds", "holds", "not_applicable"]
    assert rows[2].conditions_failed[0].startswith("rho_positive")


def test_the_control_fails_as_required():
    assert [r.verdict for r in C._double_rho(Session(seed=0, profile="quick"))] == ["violated"]


def test_transcription_is_unverified():
    assert R.THM4.unverified


def test_worst_case_search_holds():
    from fedtheory.papers.fedprox import worst as W
    from fedtheory.worst import worst_case

    rec = worst_case(W.make(rounds=5), budget=32, seed=0)
    assert rec["verdict"] == "holds" and rec["slack"] >= 1.0
