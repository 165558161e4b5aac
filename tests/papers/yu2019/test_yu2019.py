"""Yu, Yang & Zhu 2019 (local SGD, non-convex): Theorem 1 at a point worked by hand, the check's verdicts on the quick
profile and its negative control; the record is an unverified transcription."""
import pytest

from fedtheory.checks import Session
from fedtheory.papers.yu2019 import checks as C, records as R


def test_thm1_at_a_point_worked_by_hand():
    # gamma = 0.1, L = 2, sigma = 1, G = 3, N = 4, I = 5, T = 50, f(xbar^0) - f* = 10:
    # 2*10/(0.1*50) + 4*0.01*25*9*4 + 2*0.1*1/4 = 4 + 36 + 0.05
    v = {"gamma": 0.1, "L": 2.0, "sigma": 1.0, "G": 3.0, "N": 4, "I": 5, "T": 50, "Df0": 10.0}
    assert float(R.THM1.evaluate(v)) == pytest.approx(40.05, rel=1e-14)
    assert R.THM1.conditions_failed(v) == [] and R.THM1.conditions_failed({**v, "gamma": 0.6})


def test_check_verdicts_on_the_quick_profile():
    rows = C.thm1(Session(seed=0, profile="quick"))
    n = len(C.TERM_SETTINGS)  # issue 45: the initial and the noise term each dominate a row
    assert [r.verdict for r in rows] == ["holds", "holds", "holds", "not_applicable"] + ["holds"] * n
    assert rows[1].extra["vacuity"] == "informative"  # I = 1, gamma = 1/(4L): below the trivial bound L^2 R^2


def test_the_control_fails_as_required():
    assert [r.verdict for r in C._tenth(Session(seed=0, profile="quick"))] == ["violated"]


def test_transcription_is_unverified():
    assert R.THM1.unverified


def test_worst_case_search_holds():
    from fedtheory.papers.yu2019 import worst as W
    from fedtheory.worst import worst_case

    rec = worst_case(W.make(iterations=16, runs=2), budget=32, seed=0, final_seeds=4)
    assert rec["verdict"] == "holds" and rec["slack"] >= 1.0
