"""Koloskova et al. 2020: Theorem 2 is recorded as two stated orders, unverified, with catalogued assumptions (the
mixing's consensus_rate p among them); no check runs them."""
from fedtheory.checks import checks_of
from fedtheory.papers.koloskova2020 import records as R
from fedtheory.theory import CATALOGUE, parse_reference


def test_theorem_2_is_two_unverified_order_statements():
    for rec in (R.STRONGLY_CONVEX, R.NON_CONVEX):
        assert rec.kind == "order" and rec.unverified and "O" in rec.statement
        assert "consensus_rate(p)" in rec.assumptions
        assert all(parse_reference(a).name in CATALOGUE for a in rec.assumptions)


def test_no_check_runs_them():
    assert checks_of(R.PAPER) == []
