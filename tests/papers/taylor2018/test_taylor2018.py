"""Taylor, Hendrickx & Glineur (2018) Thm 3.1 with f_2 = 0 (zoo): the record against a hand computation, the
two-eigenvalue quadratic against a direct computation, the check's verdicts and negative control, the PEP and the
search at the bound."""
import numpy as np
import pytest

from fedtheory.checks import Session
from fedtheory.papers.taylor2018 import checks, records
from fedtheory.theory import paper_info


def test_record_matches_the_formula_worked_by_hand():
    """L = 4, mu = 1/2, D0 = 2, N = 3. gamma = 2/(L + mu) = 4/9: factors (1 - 16/9)^2 = 49/81 and (1 - 2/9)^2 =
    49/81, so the bound is (49/81)^3 * 2 = 0.442755...; gamma = 1/L = 1/4: max{0, (7/8)^2}^3 * 2 = (49/64)^3 * 2 =
    0.897583...; gamma = 0.45: max{0.64, 0.600625}^3 * 2 = 0.524288."""
    T = records.THM31
    v = {"L": 4.0, "mu": 0.5, "D0": 2.0, "N": 3}
    assert T.evaluate({**v, "lr": 4 / 9}) == pytest.approx((49 / 81) ** 3 * 2, rel=1e-14)
    assert T.evaluate({**v, "lr": 0.25}) == pytest.approx((49 / 64) ** 3 * 2, rel=1e-14)
    assert T.evaluate({**v, "lr": 0.45}) == pytest.approx(0.64 ** 3 * 2, rel=1e-14)
    assert (49 / 81) ** 3 * 2 == pytest.approx(0.442755, rel=1e-6)
    assert paper_info("taylor2018").collection == "zoo" and T.transcription.startswith("checked against")


def test_two_eigenvalue_quadratic_attains_the_bound_at_the_balanced_step():
    """Directly: x_N = ((1 - gamma L)^N x_1, (1 - gamma mu)^N x_2), both factors (L - mu)/(L + mu) in absolute value
    at gamma = 2/(L + mu), so ||x_N||^2 = ((L - mu)/(L + mu))^(2N) ||x_0||^2, the bound; the simulator agrees."""
    from fedtheory.sim import Exact, RunConfig, fedavg, simulate

    L, mu, N = 4.0, 0.5, 12
    p = checks.two_eigenvalue_quadratic(L, mu)
    assert p.constants["L"].value == pytest.approx(L, rel=1e-14)
    assert p.constants["mu"].value == pytest.approx(mu, rel=1e-14)
    w0 = np.array([1.5, -2.0])
    g = 2 / (L + mu)
    x = w0 * np.array([(1 - g * L) ** N, (1 - g * mu) ** N])
    tr = simulate(p, fedavg(), RunConfig(rounds=N, local_steps=1, lr=g, oracle=Exact()), [0], w0=w0,
                  measures=("dist2_opt",))
    assert tr["dist2_opt"][-1, 0] == pytest.approx(np.sum(x ** 2), rel=1e-12)
    bound = records.THM31.evaluate({"L": L, "mu": mu, "lr": g, "N": N, "D0": float(np.sum(w0 ** 2))})
    assert np.sum(x ** 2) == pytest.approx(bound, rel=1e-12)


def test_check_verdicts():
    rows = checks.thm3_1(Session(seed=0))
    assert len(rows) == 6 and all(r.verdict == "holds" for r in rows)
    by = {(r.problem.split("(")[0], r.params["setting"]): r for r in rows}
    assert by[("two_eigenvalue_quadratic", "gamma=2/(L+mu)")].ratio == pytest.approx(1.0, abs=1e-9)
    assert all(r.ratio >= 1 and r.extra["vacuity"] == "informative" for r in rows)


def test_negative_control_is_violated():
    (row,) = checks._control(Session(seed=0))
    assert row.verdict == "violated"


def test_pep_and_search_reach_the_bound():
    """The rate is tight: the PEP (exact, one client) and the search over quadratics both reach it."""
    from fedtheory.papers.taylor2018.worst import thg_search
    from fedtheory.worst import worst_case

    rec = worst_case(thg_search(L=4.0, mu=0.5, lr=0.4, N=20), budget=64, seed=0)
    assert rec["verdict"] == "holds" and rec["slack"] == pytest.approx(1.0, abs=1e-6)
    pytest.importorskip("PEPit")
    pytest.importorskip("cvxpy")
    from fedtheory.papers.taylor2018.worst import thg_pep
    from fedtheory.worst import pep_worst_case

    for lr in (0.4, 4 / 4.5, 0.25):
        rec = pep_worst_case(thg_pep(L=4.0, mu=0.5, lr=lr, N=5, D0=1.0))
        want = max((1 - lr * 4.0) ** 2, (1 - lr * 0.5) ** 2) ** 5
        assert rec["exact"] and rec["verdict"] == "holds" and rec["worst_measured"] == pytest.approx(want, rel=1e-4)
