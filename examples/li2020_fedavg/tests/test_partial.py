"""Theorems 2 and 3 (partial participation): the records at a point worked by hand, the checks' verdicts and their
negative controls."""
import dataclasses

import pytest

from fedtheory.checks import Session

from li2020_fedavg import checks, records


def test_thm2_thm3_at_a_point_worked_by_hand():
    # L = 2, mu = 1: kappa = 2; E = 2: gamma = max(8 kappa, E) = 16; T = 17: kappa/(gamma + T - 1) = 2/32 = 1/16
    # B = sum p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2 = 0.01 + 6*2*0.5 + 8*1*1 = 14.01
    # Scheme I:  C = (4/K) E^2 G^2 = (4/5)*4 = 3.2
    #            bound = (1/16) (2 (14.01 + 3.2)/1 + (1*16/2)*4) = (34.42 + 32)/16 = 4.15125
    # Scheme II: C = ((N - K)/(N - 1)) (4/K) E^2 G^2 = (5/9)(16/5) = 16/9
    #            bound = (1/16) (2 (14.01 + 16/9) + 32) = 3.973472...
    v = {"L": 2.0, "mu": 1.0, "E": 2, "T": 17, "sum_p2_sigma2": 0.01, "Gamma": 0.5, "G": 1.0, "Delta1": 4.0,
         "N": 10, "K": 5, "lr": 2.0, "lr_offset": 16.0}
    assert float(records.THM2.evaluate(v)) == pytest.approx((34.42 + 32) / 16, rel=1e-12)
    assert float(records.THM3.evaluate(v)) == pytest.approx((2 * (14.01 + 16 / 9) + 32) / 16, rel=1e-12)
    # at K = 1 the two schemes coincide ((N - 1)/(N - 1) = 1) and at K = N Scheme II's C vanishes: Theorem 1
    assert float(records.THM2.evaluate({**v, "K": 1})) == pytest.approx(float(records.THM3.evaluate({**v, "K": 1})))
    assert float(records.THM3.evaluate({**v, "K": 10})) == pytest.approx(float(records.THM1.evaluate(v)))
    assert records.THM2.conditions_failed(v) == [] and records.THM3.conditions_failed({**v, "lr": 1.0})


def test_thm3_holds_at_k_of_n_and_thm2_only_where_sampling_with_replacement_is_certified():
    s = Session(seed=0)
    r3 = checks.assess(s, records.THM3, 1, 1.0, K=5)
    assert r3.verdict == "holds" and 1.0 < r3.ratio < 5.0
    assert checks.assess(s, records.THM2, 1, 1.0, K=1).verdict == "holds"
    out = checks.assess(s, records.THM2, 5, 1.0, K=5)
    assert out.verdict == "not_applicable" and "sampling_with_replacement" in " ".join(out.conditions_failed)


def test_scaled_bounds_are_violated():
    s = Session(seed=0)
    fifth = dataclasses.replace(records.THM3, id="li2020.thm3.fifth", expr=records.THM3.expr / 5)
    assert checks.assess(s, fifth, 1, 1.0, K=5).verdict == "violated"
