"""Ghadimi & Lan (2013) Thm 2.1(a) and Cor. 2.2 (zoo): the records against hand computations, the 1-D quadratic
against a closed form, the checks' verdicts and negative controls, the PEP at sigma = 0."""
import numpy as np
import pytest

from fedtheory.checks import Session
from fedtheory.papers.ghadimi2013 import checks, records
from fedtheory.theory import paper_info


def test_thm2_1a_worked_by_hand():
    """L = 4, sigma = 1/2, N = 10, gamma = 0.2, f(x_1) - f* = 1: D_f^2 = 2/4 = 0.5; L (D_f^2 + sigma^2 N gamma^2) =
    4 (0.5 + 0.25 * 10 * 0.04) = 2.4; N (2 gamma - L gamma^2) = 10 (0.4 - 0.16) = 2.4; the bound is 1."""
    v = {"L": 4.0, "sigma": 0.5, "N": 10, "lr": 0.2, "Df0": 1.0}
    assert records.THM21A.evaluate(v) == pytest.approx(1.0, rel=1e-14)
    assert records.THM21A.conditions_failed(v) == []
    assert any(c.startswith("step_below_2_over_L") for c in records.THM21A.conditions_failed({**v, "lr": 0.5}))
    assert paper_info("ghadimi2013").collection == "zoo" and records.THM21A.transcription.startswith("checked")


def test_cor2_2_worked_by_hand():
    """L = 4, f(x_1) - f* = 1 (D_f^2 = 0.5), D~ = 0.5, sigma = 0.5, N = 16: B_N = 4 * 0.5/16 + (0.5 + 0.5/0.5) * 0.5/4
    = 0.125 + 0.1875 = 0.3125 and the bound L B_N = 1.25; the step (2.13) is min{1/4, 0.5/(0.5 * 4)} = 0.25."""
    v = {"L": 4.0, "sigma": 0.5, "N": 16, "Df0": 1.0, "Dt": 0.5, "lr": 0.25}
    assert records.COR22.evaluate(v) == pytest.approx(1.25, rel=1e-14)
    assert records.COR22.conditions_failed(v) == []
    assert any(c.startswith("step_rule") for c in records.COR22.conditions_failed({**v, "lr": 0.2}))


def test_quadratic_closed_form_and_tightness():
    """f = L x^2/2 with exact gradients: x_k = (1 - gamma L)^(k-1) x_1, so (1/N) sum_k ||grad f(x_k)||^2 = L^2 x_1^2
    (1 - r^N) / (N (1 - r)), r = (1 - gamma L)^2; the bound is L^2 x_1^2 / (N (1 - r)) (the descent lemma is an equality
    on a quadratic): measured / bound = 1 - r^N, exactly 1 at gamma = 1/L."""
    from fedtheory.sim import Exact, RunConfig, fedavg, simulate

    L, x1, N = 4.0, 1.5, 30
    p = checks.quadratic_1d(L)
    for h in (1.0, 1.9, 0.3):
        g = h / L
        r = (1 - g * L) ** 2
        closed = L**2 * x1**2 * (1 - r**N) / (N * (1 - r))
        tr = simulate(p, fedavg(), RunConfig(rounds=N, local_steps=1, lr=g, oracle=Exact()), [0], w0=np.array([x1]),
                      measures=("step_grad_norm2_mean",))
        assert tr["step_grad_norm2_mean"][N - 1, 0] == pytest.approx(closed, rel=1e-12)
        bound = records.THM21A.evaluate({"L": L, "sigma": 0.0, "N": N, "lr": g, "Df0": L * x1**2 / 2})
        assert closed / bound == pytest.approx(1 - r**N, rel=1e-12)


def test_check_verdicts():
    s = Session(seed=0)
    rows = checks.thm2_1a(s)
    inside = [r for r in rows if r.verdict != "not_applicable"]
    assert len(inside) == 6 and all(r.verdict == "holds" and r.ratio >= 1 for r in inside)
    assert [r.ratio for r in inside if r.problem.startswith("quadratic_1d") and "gamma=1/L" in r.params["setting"]] \
        == [pytest.approx(1.0, abs=1e-9)]
    (out,) = [r for r in rows if r.verdict == "not_applicable"]
    assert any(c.startswith("step_below_2_over_L") for c in out.conditions_failed)
    cor = checks.cor2_2(s)
    assert len(cor) == 4 and all(r.verdict == "holds" and r.ratio > 1 for r in cor)


def test_negative_controls():
    s = Session(seed=0)
    assert [r.verdict for r in checks._control(s)] == ["violated"]
    assert [r.verdict for r in checks._cor_control(s)] == ["violated"]


def test_pep_at_sigma_zero_equals_the_bound():
    """GD at 1/L on the L-smooth class: the PEP's value is 2 L (f(x_1) - f*)/N, the bound (within 1e-4)."""
    pytest.importorskip("PEPit")
    pytest.importorskip("cvxpy")
    from fedtheory.papers.ghadimi2013.worst import gl_pep
    from fedtheory.worst import pep_worst_case

    for N in (3, 8):
        rec = pep_worst_case(gl_pep(L=4.0, Df0=1.0, N=N))
        assert rec["verdict"] == "holds" and rec["worst_measured"] == pytest.approx(8.0 / N, rel=1e-4)
