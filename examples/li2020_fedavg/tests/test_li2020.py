"""The plug-in's own tests: Theorem 1 holds on its checks; a halved bound is caught."""
import dataclasses

from fedtheory.checks import Session

from li2020_fedavg import checks, records


def test_thm1_holds_across_local_steps_and_heterogeneity():
    results = checks.thm1(Session(seed=0))
    n = len(checks.TERM_SETTINGS)
    assert [r.verdict for r in results[:-1 - n]] == ["holds"] * (len(results) - 1 - n)
    assert results[-1 - n].verdict == "not_applicable"
    assert [r.verdict for r in results[-n:]] == ["holds"] * n


def test_every_term_of_theorem_1_dominates_a_row():
    """Issue 45, item 5: the rows from w* + 10 x the top eigenvector test the initial-distance term only (449 against
    16.5 for the rest); from the optimum, large noise, strong heterogeneity and E = 5 each make another term the
    largest, so a wrong constant there shows in measured / term (term-wise tightness)."""
    from fedtheory.checks import term_tightness

    table = term_tightness(checks.thm1(Session(seed=0)))
    assert len(table) == 4 and all(e["dominant_rows"] >= 1 for e in table), table


def test_halved_bound_is_violated():
    halved = dataclasses.replace(records.THM1, id="li2020.thm1.halved", expr=records.THM1.expr / 2)
    assert checks.assess(Session(seed=0), halved, 1, 0.3).verdict == "violated"
