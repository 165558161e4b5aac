"""Koloskova et al. 2020: Theorem 2 is recorded as two stated orders, unverified, with catalogued assumptions (the
mixing's consensus_rate p among them); no check runs them."""
from fedtheory.checks.registry import checks_of
from fedtheory.papers.koloskova2020 import records as R
from fedtheory.theory import CATALOGUE
from fedtheory.theory.assumptions import parse_reference


def test_theorem_2_is_two_unverified_order_statements():
    for rec in (R.STRONGLY_CONVEX, R.NON_CONVEX):
        assert rec.kind == "order" and rec.unverified and "O" in rec.statement
        assert "consensus_rate(p)" in rec.assumptions
        assert all(parse_reference(a).name in CATALOGUE for a in rec.assumptions)


def test_no_simulation_check_runs_them_and_their_units_are_checked():
    import dataclasses

    from fedtheory.checks.dimensions import units_analysis

    for rec in (R.STRONGLY_CONVEX, R.NON_CONVEX):
        assert [c.kind for c in checks_of(rec.id)] == ["symbolic"]  # the units check only
    assert units_analysis(R.STRONGLY_CONVEX)["verdict"] == "holds"
    assert units_analysis(R.NON_CONVEX)["verdict"] == "holds"
    o = R.STRONGLY_CONVEX.order  # a term with eps^2 for eps: not an iteration count
    bad = dataclasses.replace(R.STRONGLY_CONVEX, id="koloskova2020.bad",
                              order=dataclasses.replace(o, expr=o.expr + R.sigma_bar ** 2 / (R.mu * R.n * R.eps ** 2)))
    assert units_analysis(bad)["verdict"] == "violated"
