"""FedShift under issue 27's rules: Theorem 1's bound rows judged against the run's trivial bound, the appendix form
of Theorem 2 on simulated rounds flagged as a self-check (its symbolic derivation is the test of the paper), a
negative control for every identity / claim / symbolic / rate check (or a reason why not), the severity of the two
counted findings, and the claims decided under the statistics policy. Each test failed on the code before issue 27's
FedShift changes (tests/papers/fedshift/test_fedshift_trust.py)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from fedtheory.checks import Session, StatsPolicy, all_checks, claim_result, run_control
from fedtheory.checks.registry import CONTROLLED_KINDS
from fedtheory.papers.fedshift import records as F
from fedtheory.papers.fedshift.checks import algebra as CA, theorem1 as C1, theorem1_symbolic as CS, theorem2 as C2

CLAIMS = (F.CLAIM_DIVERGENCE, F.CLAIM_DRIFT, F.CLAIM_MEAN, F.CLAIM_ACCURACY)


@pytest.fixture(scope="module")
def session():
    return Session(profile="quick", seed=0)


# ------------------------------------------------------------------------------------ rule 2: trivial bounds


def test_thm1_bound_rows_are_judged_against_the_runs_trivial_bound(session):
    assert F.THM1.lhs_kind == F.THM1_REDERIVED.lhs_kind == "opt_error"
    rows = C1.thm1(session)
    numbered = [r for r in rows if r.verdict in ("holds", "violated")]
    assert len(numbered) == 2 and all(r.extra["vacuity"] in ("informative", "vacuous") for r in numbered)
    by = {r.id: r for r in numbered}
    red, printed = by["fedshift.thm1.rederived"], by["fedshift.thm1"]
    # the re-derived bound (~1e6) holds, but above (L/2) max ||w - w*||^2 of the very runs it bounds: vacuous
    assert red.verdict == "holds" and red.vacuous and red.bound > red.trivial_bound >= red.measured
    # the trivial bound is the run's own: w^0 is a visited point, so it is at least (L/2) ||w^0 - w*||^2
    run = C1._thm1_runs(session)
    # Delta1 = ||w0 - w*||^2
    assert red.trivial_bound >= 0.5 * run["trivial"]["L"] * run["vals"]["Delta1"] * (1 - 1e-12)
    # the printed bound is negative there (the denominator finding): below its trivial bound, so not vacuous
    assert printed.verdict == "violated" and printed.bound < 0 and not printed.vacuous


# ------------------------------------------------------------------------------------ rule 2: self-checks, controls


def test_every_fedshift_check_of_a_controlled_kind_has_a_control_or_says_why_not():
    specs = {i: s for i, s in all_checks().items() if s.paper == "fedshift" and s.kind in CONTROLLED_KINDS
             and not s.needs_runs}  # fedshift.exp.thm2 (logged runs) lives in fedtheory/papers/fedshift/experiments.py
    by_design = {i for i, s in specs.items() if s.self_check}
    assert by_design == {"fedshift.eq11", "fedshift.cond31_32"}
    assert all(specs[i].control is None for i in by_design)
    assert all(s.control is not None for i, s in specs.items() if i not in by_design)


def test_appendix_form_on_simulated_rounds_is_a_self_check_and_eq12_is_an_erratum(session):
    rows = C2.thm2(session) + CA.algebra(session)
    app = [r for r in rows if r.id == "fedshift.thm2.appendix"]
    assert len(app) == 2
    assert all(r.verdict == "holds" and r.self_check and "by construction" in r.extra["self_check_reason"] for r in app)
    # the symbolic derivation of the same form is the test of the paper: not a self-check
    der = next(r for r in rows if r.id == "fedshift.thm2.appendix.derivation")
    assert der.verdict == "holds" and not der.self_check
    eq12 = [r for r in rows if r.finding == "fedshift.eq12_misprint"]
    assert len(eq12) == 4 and all(r.is_finding and r.finding_class == "erratum" for r in eq12)


def test_printed_eq12_is_the_negative_control_of_the_appendix_form(session):
    out = run_control(all_checks()["fedshift.thm2"], session)
    assert out.status == "fails_as_required"
    assert [(r.id, r.verdict) for r in out.rows if r.id == "fedshift.thm2.appendix"] == [
        ("fedshift.thm2.appendix", "violated")] * 2
    # issue 36: the control also exercises the counted path (eq. (30) with a flipped sign carried as eq. (12))
    assert out.counted_row.startswith("fedshift.thm2 ") and "erratum" in out.counted_row
    alg = run_control(all_checks()["fedshift.algebra"], session)
    # every row the appendix form decides turns violated, not just one of them
    assert {r.id: r.verdict for r in alg.rows} == {i: "violated" for i in CA._APPENDIX_ALGEBRA_ROWS}


def test_denominator_check_tells_the_printed_condition_from_the_needed_one(session):
    rows = {r.id: r for r in CS.thm1_denominator(session)}
    printed = rows["fedshift.thm1.denominator"]
    assert printed.verdict == "violated" and printed.measured == -5.0
    assert "eps = 1, tau = 1, gamma = 7" in printed.detail
    assert printed.is_finding and printed.finding_class == "false_as_stated"
    assert rows["fedshift.thm1.rederived.denominator"].verdict == "holds"
    out = run_control(all_checks()["fedshift.thm1.denominator"], session)
    assert [r.verdict for r in out.rows] == ["violated"] and "gamma - 1" in out.rows[0].detail


def test_the_measured_thm1_violation_is_the_same_false_statement(session):
    row = next(r for r in C1.thm1(session) if r.id == "fedshift.thm1" and r.verdict == "violated")
    assert row.finding == CS.THM1_DEN_FINDING and row.finding_class == "false_as_stated"
    assert row.seeds == 10 and row.extra["t_critical"] > 3.0  # Student-t with 9 degrees of freedom, not z = 3


# ------------------------------------------------------------------------------------ rule 5: statistics policy


def _pair(n, rel, spread=0.002, seed=0):
    rng = np.random.default_rng(seed)
    base = 1.0 + 0.05 * rng.standard_normal(n)
    return base, base * (1.0 + rel) + spread * rng.standard_normal(n)


def test_claims_declare_a_minimum_effect_and_take_the_policy():
    for rec in CLAIMS:
        assert rec.min_effect and "min_effect" in rec.note, rec.id
        assert "stats" in inspect.signature(rec.predicate).parameters, rec.id
        assert "z" not in rec.parameters, rec.id
    assert not any(hasattr(F, name) for name in ("_paired", "_decide"))  # one rule, in checks.claims


def test_a_refutation_needs_ten_seeds_and_the_declared_effect():
    base, shift = _pair(10, 0.05)  # drift 5% larger with the shift, on every seed
    assert claim_result(F.CLAIM_DRIFT, {"drift_base": base, "drift_shift": shift}, seeds=10).verdict == "claim_refuted"
    b5, s5 = _pair(5, 0.05)
    assert claim_result(F.CLAIM_DRIFT, {"drift_base": b5, "drift_shift": s5}, seeds=5).verdict == "inconclusive"
    b, s = _pair(10, 0.002, spread=1e-5)  # 0.2% larger, very significant, below min_effect 0.01
    res = claim_result(F.CLAIM_DRIFT, {"drift_base": b, "drift_shift": s}, seeds=10)
    assert res.verdict == "inconclusive" and "below the declared minimum" in res.detail


def test_support_uses_student_t_critical_values():
    # 3 paired seeds, a 5% reduction at t = 3.5: beyond a normal z = 3, short of Student-t's 4.30 (2 degrees of freedom)
    s = 0.05 * np.sqrt(3) / 3.5
    base = np.ones(3)
    shift = base - 0.05 + s * np.array([-1.0, 0.0, 1.0])
    m = {"divergence_base": base, "divergence_shift": shift}
    assert F.CLAIM_DIVERGENCE.evaluate(m, stats=StatsPolicy(min_effect=0.01)).supported is None
    # with 10 seeds at the same effect and spread, the t critical value (2.26) is passed: supported
    shift10 = 1.0 - 0.05 + s * np.linspace(-1, 1, 10)
    m10 = {"divergence_base": np.ones(10), "divergence_shift": shift10}
    assert F.CLAIM_DIVERGENCE.evaluate(m10, stats=StatsPolicy(min_effect=0.01)).supported is True


def test_every_bit_width_is_one_family_over_its_bit_widths():
    # one bit width worse at t = 3.5 on 10 seeds: beyond the critical value over the 5 bit widths (3.25), short of
    # the one over 5 bit widths x 6 settings (4.42)
    rng = np.random.default_rng(1)
    bits = np.array([4, 5, 6, 7, 8])
    base = 0.7 + 0.01 * rng.standard_normal((5, 10))
    shift = base + 0.02
    d = np.linspace(-1, 1, 10)
    d = d / d.std(ddof=1) * 0.02 * np.sqrt(10) / 3.5
    shift[0] = base[0] - 0.02 + d  # 4 bits: 2 points worse, t = 3.5
    m = {"bits": bits, "metric_shift": shift, "metric_base": base, "higher_is_better": True}
    alone = claim_result(F.CLAIM_ACCURACY, m, settings=1, seeds=10)
    family = claim_result(F.CLAIM_ACCURACY, m, settings=6, seeds=10)
    assert alone.verdict == "claim_refuted" and family.verdict == "inconclusive"


def test_claims_on_the_control_problem_are_refuted_with_ten_seeds(session):
    for cid in ("fedshift.claim.divergence", "fedshift.claim.drift", "fedshift.claim.mean_to_zero",
                "fedshift.claim.every_bit_width"):
        out = run_control(all_checks()[cid], session)
        assert out.status == "fails_as_required", cid
        assert all(r.verdict == "claim_refuted" and r.seeds == 10 for r in out.rows), cid


# ------------------------------------------------------------------------------------ issue 36


def test_theorem_1s_m_term_main_text_against_eq20():
    """Issue 36, item 6: the main text (004:215) and the appendix's eq. (20) (004:490) print Theorem 1's M-term
    differently; the main text equals the proof's line (4) (004:486), eq. (20) drops its 1/(tau+gamma)."""
    from fedtheory.plugins import record

    assert record("fedshift.thm1.eq20").quote.startswith("004_319ac838b1cb3f8f.txt:490")
    rows = {r.id: r for r in CS._printing_rows()}
    assert rows["fedshift.thm1.m_term"].verdict == "holds"
    eq20 = rows["fedshift.thm1.eq20.m_term"]
    assert eq20.verdict == "violated" and eq20.is_finding and eq20.finding_class == "erratum"
    assert eq20.finding == CS.EQ20_FINDING and eq20.extra["robustness"]["exact"]


def test_the_claims_controls_reach_the_counted_path():
    """Issue 36, item 5: every FedShift claim control refuted only outside the claim's regime (regime boundary, not
    counted); now each also refutes inside it, on pl_nonconvex (optimum weight mean 0), a counted row."""
    from fedtheory.checks import Session, all_checks, run_control

    s = Session("quick", 0)
    for cid in ("fedshift.claim.divergence", "fedshift.claim.drift", "fedshift.claim.mean_to_zero",
                "fedshift.claim.every_bit_width"):
        out = run_control(all_checks()[cid], s)
        assert out.status == "fails_as_required" and "pl_nonconvex" in out.counted_row, (cid, out.counted_text)
    thm2 = run_control(all_checks()["fedshift.thm2"], s)
    assert thm2.status == "fails_as_required" and thm2.counted_row.startswith("fedshift.thm2 ")


def test_the_denominator_finding_states_its_robustness():
    """Issue 36, item 7: eps, gamma and tau swept at the witness: it survives for every eps < tau + gamma - 2."""

    rob = CS._denominator_robustness()
    eps = next(c for c in rob["choices"] if c["name"] == "eps")
    assert not rob["fragile"] and eps["survives"] == [0.1, 5.9] and eps["lost_at"] == 6.1


# ------------------------------------------------------------------------------------ issue 45: the proof of Theorem 1


def test_the_induction_constant_grows_with_tau_a_loose_step_not_a_false_theorem(session):
    """004:467-480: upsilon contains B_2 M (tau + gamma)^2 and (tau + gamma)/eps, so it depends on the induction
    variable; it is non-decreasing where its denominator is positive, so the induction goes through at a fixed horizon
    (a step the proof does not state): proof_step_loose, listed apart, not counted. Before: not checked."""
    ind, lem = CS.thm1_proof(session)
    assert ind.id == "fedshift.thm1.induction_constant" and ind.verdict == "proof_step_loose" and not ind.is_finding
    assert ind.extra["upsilon_in_tau"] == "increasing" and "004:467" in ind.detail
    # the check can tell: a constant that falls with tau breaks the induction; one that does not depend on it is fine
    falling = CS._induction_row(F.B1 * F.beta**2 + F.B2 * F.M, F.tau + F.gamma)
    assert falling.verdict == "violated" and falling.is_finding and falling.finding_class == "erratum"
    assert CS._induction_row(F.B1 * F.beta**2, F.gamma + 1).verdict == "holds"


def test_lemma1_prints_the_distance_to_the_optima_where_lemma3_bounds_the_local_models(session):
    """004:399 and 004:449 print ||w_bar - w_k^*||^2; the proof bounds that term with Lemma 3 (004:413: ||w_bar -
    w_k^tau||^2), which is 0 at E = 1 while the printed term is at least the spread of the clients' optima: one counted
    erratum. The other slips (004:449 drops p_k, 004:461 ||1_P|| = P) are explained in fedshift.lemma1's note."""
    ind, lem = CS.thm1_proof(session)
    assert lem.verdict == "violated" and lem.is_finding and lem.finding == CS.LEMMA1_FINDING
    assert lem.finding_class == "erratum" and lem.bound == 0.0 and lem.measured > 0.1
    spread, at_w0 = CS.lemma1_optima_spread(session.seed)
    assert 0 < spread <= at_w0 and lem.measured == spread
    assert "004:449 drops p_k" in F.LEMMA1_PRINTED.note and "004:461" in F.LEMMA1_PRINTED.note
    assert CS._lemma1_row(session.seed, printed=F.dev_local).verdict == "holds"  # Li et al.'s form
    assert run_control(all_checks()["fedshift.thm1.proof"], session).status == "fails_as_required"
