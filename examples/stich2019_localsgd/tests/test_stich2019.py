"""The plug-in's own tests: Theorem 2.2 holds on its checks, the settings outside it are not_applicable with their
reasons, the negative control is caught, and S_T's closed form is the sum the theorem defines."""
import numpy as np
import pytest
import sympy as sp

from fedtheory.checks import Session

from stich2019_localsgd import checks, records


def test_thm2_2_holds_where_it_applies():
    rows = checks.thm2_2(Session(seed=0))
    inside = [r for r in rows if r.verdict != "not_applicable"]
    assert inside and all(r.verdict == "holds" and r.ratio >= 1 for r in inside)
    assert all(r.extra["vacuity"] == "informative" for r in inside)  # below (L/2) R^2 at some T
    outside = {r.params["setting"]: r for r in rows if r.verdict == "not_applicable"}
    assert any(c.startswith("identical_data: refused") for c in outside["K=4 H=8 heterogeneous"].conditions_failed)
    assert any(c.startswith("shift_kappa") for c in outside["K=4 H=8 a=8kappa"].conditions_failed)


def test_a_constant_twenty_times_too_small_is_caught():
    """The control: eq. (4) divided by 20 must be reported violated, naming the rounds."""
    (row,) = checks._scaled_control(Session(seed=0))
    assert row.verdict == "violated"
    assert "T = " in row.detail and row.extra["rounds_failed"]


def test_biased_gradients_are_outside_the_theorem_not_a_finding():
    """Biased stochastic gradients break the theorem's unbiasedness: the oracle certifies nothing, so the row is
    not applicable, naming the assumption (before this, the same run was reported violated)."""
    (row,) = checks._biased_run(Session(seed=0))
    assert row.verdict == "not_applicable"
    assert any(c.startswith("bounded_variance: unknown by BiasedNoise") for c in row.conditions_failed)


def test_S_T_is_the_sum_of_the_weights():
    a, T = records.a, records.T
    closed = records.S_T_DEF.expr
    for av, Tv in ((83.1, 1), (83.1, 7), (2.5, 40)):
        direct = sum((av + t) ** 2 for t in range(Tv))
        assert np.isclose(float(closed.subs({a: av, T: Tv})), direct, rtol=1e-12)
    assert sp.simplify(closed.subs(T, 1) - a**2) == 0


def test_a_zoo_member_with_an_unverified_transcription():
    """The example is a trusted theorem of the zoo; written from memory, its findings are listed apart until its
    constants are checked against the text."""
    from fedtheory.theory import paper_info

    assert paper_info("stich2019").collection == "zoo"
    assert records.THM22.unverified and "written from memory" in records.THM22.transcription


def test_eq4_worked_by_hand():
    """mu = 1, L = 2, K = 4, H = 2, a = 33 (> max{16 kappa, H} = 32), T = 2, ||x_0 - x*||^2 = 1, sigma^2 = 1, G = 1:
    S_2 = 33^2 + 34^2 = 2245; eq. (4) = 33^3/(2 * 2245) + 4 * 2 * (2 + 66)/(4 * 2245) + 256 * 2 * 4 * 2/2245
    = 35937/4490 + 544/8980 + 4096/2245 = 8.003786... + 0.060579... + 1.824499... = 9.888864..."""
    v = {"mu": 1.0, "L": 2.0, "K": 4, "H": 2, "a": 33.0, "T": 2, "D0": 1.0, "sigma2": 1.0, "G": 1.0, "lr": 4.0,
         "lr_offset": 33.0}
    want = 35937 / 4490 + 544 / 8980 + 4096 / 2245
    assert records.THM22.evaluate(v) == pytest.approx(want, rel=1e-14)
    assert want == pytest.approx(9.888864, rel=1e-6)
    assert records.THM22.conditions_failed(v) == []
