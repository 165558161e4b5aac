"""Issue 27 for FedMRUR: readings of eq. (7) and MoFedSAM's bound decided and joined, negative controls or declared
self-checks, vacuity by rule, the rate finding's control. Each test names what it failed on before the change."""
import numpy as np
import pytest
import sympy as sp

from fedtheory.checks import CONTROLLED_KINDS, Session, all_checks, combine_readings, faster_order, run_checks
from fedtheory.papers.fedmrur import checks as CF
from fedtheory.checks.base import CheckResult
from fedtheory.papers.fedmrur import records as T


@pytest.fixture(scope="module")
def results():
    return run_checks(paper="fedmrur", profile="quick", seed=0, parallel_symbolic=False)


def test_records_declare_the_two_readings_of_assumption_3_and_the_index():
    """Before: no record declared readings; the per-client reading was a side note of the row and a violation
    that only the client mean gave was labelled 'fragile'."""
    for rec in (T.THM1, T.MOFEDSAM):
        assert list(rec.readings) == ["client-mean, t=1..T", "client-mean, t=0..T-1", "client-max, t=1..T",
                                      "client-max, t=0..T-1"]
        assert rec.lhs_kind == "grad_norm2" and rec.quote.startswith("003_7cb41999359df859.txt:")
    assert T.REMARK2.lhs_kind == "none" and "no trivial bound" in T.REMARK2.note


def test_no_fedmrur_row_is_fragile_and_readings_are_combined(results):
    """Before: fedmrur.thm1 (PL, reading B) was 'violated [fragile]'. Now every bound row of a compared setting
    carries each reading's verdict, and the row is what combine_readings makes of them."""
    assert not [r for r in results if r.scope == "fragile"]
    rows = [r for r in results if r.id in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7") and r.verdict != "not_applicable"]
    assert len(rows) == 8
    for r in rows:
        per = r.extra["readings"]
        assert list(per) == list(T.READINGS)
        verdicts = {(x["verdict"], x["scope"]) for x in per.values()}
        assert (r.verdict == "ambiguous") == (len(verdicts) > 1)


def test_the_index_reading_leaves_w0_out():
    """Eq. (7) as printed averages w^1..w^T: at horizon 1 its left side is ||grad f(w^1)||^2 (the old check
    always started from w^0)."""
    s = Session("quick", 0)
    e = CF.bound_problems(s)[0]
    run = CF._runs(s, e, "FedMRUR-N")
    sl = CF._block(run, "B")
    tr = run["trace"]
    vals = CF._values(e, run, "B", sl, CF.certification(T.THM1, e, run, sl))
    lhs1, _ = CF._horizons(T.THM1, tr, sl, True, first=1)(vals)
    lhs0, _ = CF._horizons(T.THM1, tr, sl, True, first=0)(vals)
    assert np.allclose(lhs1[0], tr["grad_norm2"][1, sl]) and np.allclose(lhs0[0], tr["grad_norm2"][0, sl])
    assert lhs1.shape[0] == lhs0.shape[0] - 1  # d_T needs a round T + 1
    m1, _ = CF._horizons(T.MOFEDSAM, tr, sl, False, first=1)(vals)
    assert m1.shape[0] == tr["grad_norm2"].shape[0] - 1 and np.allclose(m1[-1], tr["grad_norm2"][1:, sl].mean(axis=0))


def test_logistic_sigma_g_bounds_of_both_readings():
    from fedtheory.sim import synthetic_logistic

    p = synthetic_logistic(6, 4, 3, 15, random_state=0)
    mean, mx = CF.logistic_sigma_g2_bound(p), CF.logistic_sigma_g2_bound(p, "client_max")
    rng = np.random.default_rng(0)
    W = 5 * rng.standard_normal((64, p.dim))
    G = p.client_grads(W, np.zeros(64, np.int64))
    het = np.sum((G - G.mean(axis=1, keepdims=True)) ** 2, axis=2)  # (points, clients)
    assert np.all(het.mean(axis=1) <= mean) and np.all(het.max(axis=1) <= mx) and mx >= mean
    with pytest.raises(Exception, match="reading"):
        CF.logistic_sigma_g2_bound(p, "median")


def test_every_compared_bound_row_says_whether_it_is_vacuous(results):
    """Before: no fedmrur bound row carried extra['vacuity'] (no lhs_kind, no run quantities)."""
    for r in results:
        if r.kind != "bound" or r.verdict == "not_applicable":
            continue
        if r.id in ("fedmrur.remark2", "fedmrur.assumption1_r"):  # left sides with no trivial bound: self-checks
            assert r.self_check and "no trivial bound" in r.extra["vacuity"]
        else:
            assert r.extra["vacuity"] in ("informative", "vacuous"), (r.id, r.problem, r.extra.get("vacuity"))


def test_checks_show_they_can_fail_or_say_why_not():
    """Before: no fedmrur check declared a control; eq3 and remark2.symbolic were unflagged."""
    specs = {s.id: s for s in all_checks().values() if s.paper == "fedmrur" and not s.needs_runs}
    by_design = {i for i, s in specs.items() if s.self_check}
    assert by_design == {"fedmrur.eq_dt", "fedmrur.eq3", "fedmrur.remark2.symbolic"}
    for i, s in specs.items():
        if s.kind in CONTROLLED_KINDS and i not in by_design:
            assert s.control is not None, i
    assert "hyperboloid" in specs["fedmrur.eq3"].self_check and "d_t >= 1" in specs["fedmrur.remark2.symbolic"].self_check


def test_self_checks_by_design_are_listed_apart(results):
    for rid in ("fedmrur.eq3", "fedmrur.eq_dt", "fedmrur.remark2.symbolic"):
        for r in [x for x in results if x.id == rid]:
            assert r.self_check and r.extra["self_check_reason"].startswith("implementation self-check: ")


def test_the_rate_finding_is_counted_and_its_control_fails():
    """Eq. (8) misses two Phi terms of order sqrt(K/(S T)): a counted inconsistent_rate finding (before the
    machinery it had no control and became a self-check by rule); one power of T faster must fail too. The two
    terms are in Phi's last bracket (4 N K^2 sigma_g^2 and 3 N K^2 (L+r)^2 rho^2), which none of the readings
    touches (Assumption 3 changes the value of sigma_g, the index the left side)."""
    rows = CF._rate_rows()
    rate = rows[0]
    assert rate.verdict == "rate_inconsistent" and rate.finding_class == "inconsistent_rate"
    missed = [t for t in rate.extra["terms"] if t["covered_by"] is None]
    assert len(missed) == 2 and all(t["exponents"] == {"K": "1/2", "S": "-1/2"} for t in missed)
    assert sorted("sigma_g" in t["term"] for t in missed) == [False, True]
    assert {sp.sympify(t["T_power"]) for t in missed} == {sp.Rational(-1, 2)}
    assert "Remark 3" in rate.detail and rate.quote.startswith("003_7cb41999359df859.txt:142-148")
    ctl = CF._rate_rows(faster_order(T.THM1))
    assert {r.verdict for r in ctl} == {"rate_inconsistent"}
    spec = all_checks()["fedmrur.rates"]
    assert spec.control is not None and spec.records == ("fedmrur.thm1",)


def test_the_rate_finding_holds_under_the_other_phi_reading():
    """Phi's '35 ... eta_l^2 3(sigma_g^2 + 6 (L+r)^2 rho^2)' read as 35 (3 sigma_g^2 + 6 (L+r)^2 rho^2) changes one
    covered term's coefficient, not the two missed terms."""
    other = (T.THM1_FIRST + (T.PHI_BRACKET - T.PHI_TERMS[2][1] + T.PHI_TERMS[2][1] / 3) / T.C)
    from fedtheory.theory.rates import check_order

    rep = check_order(T.THM1.expanded(other), T.THM1.order, conditions=T.THM1.conditions)
    assert rep.verdict == "rate_inconsistent" and len(rep.missed) == 2


def test_combined_ambiguous_bound_rows_keep_their_vacuity():
    """combine_readings dropped vacuity from an ambiguous bound row (the rule's 'never unknown' then failed)."""
    a = CheckResult("x", "p", "bound", "violated", vacuous=False, trivial_bound=5.0, extra={"vacuity": "informative"})
    b = CheckResult("x", "p", "bound", "inconclusive", vacuous=True, trivial_bound=5.0, extra={"vacuity": "vacuous"})
    out = combine_readings({"one": a, "two": b})
    assert out.verdict == "ambiguous" and out.extra["vacuity"] == "informative" and not out.vacuous
    both = combine_readings({"one": b, "two": CheckResult("x", "p", "bound", "holds", vacuous=True, trivial_bound=5.0,
                                                          extra={"vacuity": "vacuous"})})
    assert both.verdict == "ambiguous" and both.vacuous and both.extra["vacuity"] == "vacuous"


def test_controls_listing_tells_self_checks_by_design_from_by_rule(capsys):
    """`check --controls` listed eq3 (which says why it is a self-check) under 'self-checks by rule'."""
    from fedtheory import cli

    assert cli.main(["check", "--controls", "--only", "fedmrur.eq3", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "1 implementation self-check(s) by design (no mutation of the statement could make them fail): fedmrur.eq3 " \
        "(the lift" in out and "by rule" not in out
