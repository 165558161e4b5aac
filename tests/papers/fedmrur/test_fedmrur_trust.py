"""Issue 27 for FedMRUR: readings of eq. (7) and MoFedSAM's bound decided and joined, negative controls or declared
self-checks, vacuity by rule, the rate finding's control. Each test names what it failed on before the change."""
import numpy as np
import pytest
import sympy as sp

from fedtheory.checks import CheckResult, Session, all_checks, combine_readings, faster_order, run_checks
from fedtheory.checks.registry import CONTROLLED_KINDS
from fedtheory.papers.fedmrur import records as T
from fedtheory.papers.fedmrur.checks import bounds as CB, common as CF, statement as CS, symbolic as CY


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
        # ambiguous over the readings of the text, or (issue 45) over the two readings of eta_g (join_step_readings)
        assert (r.verdict == "ambiguous") == (len(verdicts) > 1 or "step_readings" in r.extra)


def test_the_index_reading_leaves_w0_out():
    """Eq. (7) as printed averages w^1..w^T: at horizon 1 its left side is ||grad f(w^1)||^2 (the old check
    always started from w^0)."""
    s = Session("quick", 0)
    e = CF.bound_problems(s)[0]
    run = CF.setting_runs(s, e, "FedMRUR-N")
    sl = CF.setting_slice(run, "B")
    tr = run["trace"]
    vals = CF.thm1_values(e, run, "B", sl, CF.certification(T.THM1, e, run, sl))
    lhs1, _ = CB._horizons(T.THM1, tr, sl, True, first=1)(vals)
    lhs0, _ = CB._horizons(T.THM1, tr, sl, True, first=0)(vals)
    assert np.allclose(lhs1[0], tr["grad_norm2"][1, sl]) and np.allclose(lhs0[0], tr["grad_norm2"][0, sl])
    assert lhs1.shape[0] == lhs0.shape[0] - 1  # d_T needs a round T + 1
    m1, _ = CB._horizons(T.MOFEDSAM, tr, sl, False, first=1)(vals)
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
    assert "hyperboloid" in specs["fedmrur.eq3"].self_check
    assert "d_t >= 1" in specs["fedmrur.remark2.symbolic"].self_check


def test_self_checks_by_design_are_listed_apart(results):
    for rid in ("fedmrur.eq3", "fedmrur.eq_dt", "fedmrur.remark2.symbolic"):
        for r in [x for x in results if x.id == rid]:
            assert r.self_check and r.extra["self_check_reason"].startswith("implementation self-check: ")


def test_the_rate_finding_is_counted_and_its_control_fails():
    """Eq. (8) misses two Phi terms of order sqrt(K/(S T)): a counted inconsistent_rate finding (before the
    machinery it had no control and became a self-check by rule); one power of T faster must fail too. The two
    terms are in Phi's last bracket (4 N K^2 sigma_g^2 and 3 N K^2 (L+r)^2 rho^2), which none of the readings
    touches (Assumption 3 changes the value of sigma_g, the index the left side)."""
    rows = CY._rate_rows()
    rate = rows[0]
    assert rate.verdict == "rate_inconsistent" and rate.finding_class == "inconsistent_rate"
    missed = [t for t in rate.extra["terms"] if t["covered_by"] is None]
    assert len(missed) == 2 and all(t["exponents"] == {"K": "1/2", "S": "-1/2"} for t in missed)
    assert sorted("sigma_g" in t["term"] for t in missed) == [False, True]
    assert {sp.sympify(t["T_power"]) for t in missed} == {sp.Rational(-1, 2)}
    assert "Remark 3" in rate.detail and rate.quote.startswith("003_7cb41999359df859.txt:142, 144, 148")
    ctl = CY._rate_rows(faster_order(T.THM1))
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
    assert ("1 implementation self-check(s) by design (no mutation of the statement could make them fail): "
            "fedmrur.eq3 (the lift" in out and "by rule" not in out)


# ------------------------------------------------------------------------------------ issue 36


def _by(results, rid):
    return [r for r in results if r.id == rid]


def test_both_readings_of_eta_g_are_decided_by_the_same_rule(results):
    """Issue 45, item 1 (before: issue 36 discounted reading A as a units artifact where violated on the run as
    measured, while reading B counted on rescaled runs up to loss x 3e-17): rule 8 applies to A and B alike, and a
    violation counts only where both readings of eta_g give it (rule 3)."""
    rows = [r for r in results if r.id in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7")
            and str(r.params.get("setting", "")).split(" ")[0] in ("A", "B") and r.verdict != "not_applicable"]
    assert all(r.scope == "inside" for r in rows)
    assert not any("neither against the paper nor for it" in r.detail for r in rows)
    for r in rows:
        if r.verdict == "violated":
            other = "B (" if r.params["setting"].startswith("A (") else "A ("
            twin = [x for x in rows if x.id == r.id and x.problem == r.problem
                    and x.params["setting"].startswith(other)]
            assert twin and twin[0].verdict == "violated", (r.id, r.problem)


def test_join_step_readings_counts_a_violation_only_under_both_readings_of_eta_g():
    from fedtheory.checks import CheckResult
    from fedtheory.papers.fedmrur.checks import join_step_readings

    def row(setting, verdict):
        return CheckResult("x.b", "fedmrur", "bound", verdict, params={"setting": setting}, finding=T.UNITS_FINDING
                           if verdict == "violated" else "", extra={"readings": {}})

    both = join_step_readings({"A": row("A", "violated"), "B": row("B", "violated")})
    assert [r.verdict for r in both.values()] == ["violated", "violated"]
    one = join_step_readings({"A": row("A", "violated"), "B": row("B", "holds"), "P": row("P", "not_applicable")})
    assert one["A"].verdict == "ambiguous" and not one["A"].is_finding and one["B"].verdict == "holds"
    assert "violated under reading A of eta_g" in one["A"].detail and one["P"].verdict == "not_applicable"


def test_theorem_1s_unit_slips_are_one_counted_finding_false_as_measured(results):
    """Issue 36, item 9: Phi, C_max, eq. (7), MoFedSAM's bound and Remark 2 are inconsistent in units under both
    readings of eta_g: one counted finding. Issue 45, item 1: it escalates to false as stated only where a run as
    measured, or a rescaled run inside rule 8's regime, fails; eq. (7) on the PL problem fails on the run as measured
    under every reading of A and three of B (the fourth at loss x 0.355, parameters x 0.5)."""
    from fedtheory.checks.output import summarize_findings
    from fedtheory.checks.results import group_findings

    units = [r for r in results if r.id.endswith(".units") and r.finding == T.UNITS_FINDING]
    assert {r.id for r in units} == {"fedmrur.C_max.units", "fedmrur.Phi.units", "fedmrur.thm1.units",
                                     "fedmrur.mofedsam_thmD7.units", "fedmrur.remark2.units"}
    assert all(r.is_finding and r.finding_class == "erratum" for r in units)
    bound = [r for r in results if r.finding == T.UNITS_FINDING and r.kind == "bound" and r.verdict == "violated"]
    assert bound and all(r.finding_class == "false_as_stated" and r.scope == "inside" for r in bound)
    per = [x for r in bound for x in r.extra["readings"].values()]
    assert sum("rescaled" not in x["detail"] for x in per) >= 7  # A: 4, B: 3 on the run as measured
    for x in per:  # any rescaled evidence stays inside the regime
        assert "rescaled instance" not in x["detail"] or "inside the regime" in x["detail"]
    assert T.UNITS_FINDING in group_findings(results)
    assert T.UNITS_FINDING in summarize_findings(results)["classes"]["false_as_stated"]


def test_every_counted_fedmrur_finding_states_its_robustness(results):
    """Issue 36, item 7: C (never defined), r (any larger value is admissible) and the horizon are swept for the
    bound rows; the symbolic findings say why they have no free choice."""
    from fedtheory.checks.output import summarize_findings

    s = summarize_findings(results)
    for key, rows in s["findings"].items():
        if key.startswith("fedmrur"):
            assert "not stated" not in s["robustness"][key]["text"], key
    bound = [r for r in results if r.kind == "bound" and r.is_finding]
    names = {c["name"] for r in bound for c in r.extra["robustness"]["choices"]}
    assert {"C/C_max", "(r - r_0)/L", "T' (horizon)"} <= names


def test_algorithm_1_as_printed_steps_uphill_and_the_correction_is_in_the_output(results):
    """Issue 36, item 6: the simulator's sign correction was silent (a docstring only)."""
    rows = {r.id: r for r in _by(results, "fedmrur.alg1.printed") + _by(results, "fedmrur.alg1.printed_run")
            + _by(results, "fedmrur.alg1.corrected_run")}
    assert rows["fedmrur.alg1.printed"].verdict == "violated"
    assert rows["fedmrur.alg1.printed"].finding_class == "erratum"
    assert rows["fedmrur.alg1.printed_run"].verdict == "violated"
    assert rows["fedmrur.alg1.corrected_run"].verdict == "holds"
    assert rows["fedmrur.alg1.printed"].quote.startswith("003_7cb41999359df859.txt:76, 79")
    b = [r for r in results if r.id == "fedmrur.thm1" and r.verdict != "not_applicable"]
    assert all("descent sign" in r.detail for r in b)


def test_eq8_as_printed_sums_over_the_rounds():
    """Issue 36, item 6: eq. (8)'s left side is a sum over t (003:144); the rate check read it as the average only."""
    rows = CY._eq8_rows()
    assert rows[0].verdict == "rate_inconsistent" and rows[0].finding == CY.EQ8_FINDING
    assert rows[0].finding_class == "erratum" and "003:144" in rows[0].detail
    assert "T**(1/2)" in str(rows[0].extra["terms"]) or "T^1/2" in rows[0].detail


def test_the_sum_erratum_and_the_rate_finding_are_two_causes(results):
    """Issue 45, item 2: fedmrur.eq8.sum_left_side and fedmrur.thm1.rate both cite eq. (8) (003:144). Before, the
    sum's row missed the two terms the rate finding misses too (a double count of them). Now the sum erratum is decided
    against eq. (8)'s order repaired to cover eq. (7)'s terms (under which fedmrur.thm1.rate is consistent), so it
    rests on the factor T alone; each row names the other and says why they are two."""
    from fedtheory.checks import rate_check
    from fedtheory.checks.output import shared_lines

    assert rate_check(T.THM1, order=CY.repaired_rate_order()).verdict == "rate_consistent"
    eq8 = [r for r in results if r.finding == "fedmrur.eq8.sum_left_side"]
    assert len(eq8) == 1 and eq8[0].verdict == "rate_inconsistent" and eq8[0].finding_class == "erratum"
    missed = [t for t in eq8[0].extra["terms"] if t["covered_by"] is None]
    assert missed and all("sqrt(K)" not in t["term"] or "sqrt(T)" in t["term"] for t in missed)
    assert eq8[0].extra["as_printed_missed"] > len(missed)
    pair = [x for x in shared_lines(results) if set(x["findings"]) == {"fedmrur.eq8.sum_left_side",
                                                                       "fedmrur.thm1.rate"}]
    assert pair and "003:144" in pair[0]["lines"] and pair[0]["independent"]
    assert all(x["independent"] for x in shared_lines(results)), shared_lines(results)


def test_theorem_1s_hypotheses_as_printed_are_one_erratum(results):
    """Issue 45, item 3: 003:134's 'satisfying ...' clause has no comparison (C is defined nowhere), and 'for all
    K >= 0' includes K = 0 where C_max and Phi divide by K: one counted erratum, which says why it is not the units
    finding that cites the same line. Remark 2's inference (003:146) is explained in fedmrur.remark2's note."""

    rows = [r for r in results if r.id in ("fedmrur.thm1.clause", "fedmrur.thm1.K_range")]
    assert len(rows) == 2 and all(r.verdict == "violated" and r.is_finding for r in rows)
    assert {r.finding for r in rows} == {CS.STATEMENT_FINDING} and {r.finding_class for r in rows} == {"erratum"}
    assert all(T.UNITS_FINDING in r.extra["independent_of"] for r in rows)
    fixed = CS._statement_rows(clause=T.THM1_SATISFYING + r" \geq C", k_min=1)
    assert [r.verdict for r in fixed] == ["holds", "holds"]
    assert "003:146" in T.REMARK2.note and "does not follow" in T.REMARK2.note
