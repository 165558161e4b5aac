"""The plug-in's own tests: Theorem 1 holds on its checks; a halved bound is caught."""
import dataclasses

from fedtheory.checks import Session

from li2020_fedavg import checks, records


def test_thm1_holds_across_local_steps_and_heterogeneity():
    results = checks.thm1(Session(seed=0))
    assert [r.verdict for r in results[:-1]] == ["holds"] * (len(results) - 1)
    assert results[-1].verdict == "not_applicable"


def test_halved_bound_is_violated():
    halved = dataclasses.replace(records.THM1, id="li2020.thm1.halved", expr=records.THM1.expr / 2)
    assert checks.assess(Session(seed=0), halved, 1, 0.3).verdict == "violated"
