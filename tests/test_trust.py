"""Issue 27's rules, each held by a test that failed on the code before it: errors are never findings (exit 3),
what a check returns is validated, findings carry a severity class."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fedtheory.checks import CheckResult
from fedtheory.checks.execution import checked_rows
from fedtheory.checks.output import results_payload, summarize_findings
from fedtheory.checks.registry import CheckSpec
from fedtheory.checks.results import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, exit_code, group_findings


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=600)


PLUGIN = textwrap.dedent("""
    import math
    import sys
    from fedtheory.checks import CheckResult, Control, check

    @check("errplug.boom", "errplug", "bound")
    def boom(s):
        '''Raises.'''
        raise KeyError("boom")

    @check("errplug.fortytwo", "errplug", "bound")
    def fortytwo(s):
        '''Returns a number, not rows.'''
        return 42

    @check("errplug.nan", "errplug", "bound")
    def nan(s):
        '''A NaN measurement.'''
        return [CheckResult("errplug.nan", "errplug", "bound", "violated", measured=float("nan"), bound=1.0)]

    @check("errplug.exits", "errplug", "bound")
    def exits(s):
        '''Exits the process.'''
        sys.exit(0)

    @check("errplug.fine", "errplug", "bound")
    def fine(s):
        '''A bound that holds.'''
        return [CheckResult("errplug.fine", "errplug", "bound", "holds", measured=0.5, bound=1.0, ratio=2.0)]

    @check("errplug.found", "errplug", "claim", control=Control("the same refutation", lambda s: found(s)))
    def found(s):
        '''A refuted claim, with a control.'''
        return [CheckResult("errplug.found", "errplug", "claim", "claim_refuted")]

    @check("errplug.uncontrolled", "errplug", "claim")
    def uncontrolled(s):
        '''A refuted claim without a control.'''
        return [CheckResult("errplug.uncontrolled", "errplug", "claim", "claim_refuted")]
""")


@pytest.fixture(scope="module")
def errplug(tmp_path_factory):
    f = tmp_path_factory.mktemp("errplug") / "errplug.py"
    f.write_text(PLUGIN)
    return str(f)


def test_a_check_that_raises_is_an_error_not_a_finding(errplug, tmp_path):
    """The issue's reproduction: one raising check gave 'error 1; 1 distinct finding(s)' and exit 1."""
    out = tmp_path / "r.json"
    p = _cli("check", "--plugin", errplug, "--only", "errplug.boom", "--out", str(out))
    assert p.returncode == EXIT_ERROR, p.stdout + p.stderr
    assert "0 distinct finding(s)" in p.stdout and "FAILED with an error" in p.stdout
    assert "KeyError: 'boom'" in p.stdout and "Traceback" not in p.stdout + p.stderr
    payload = json.loads(out.read_text())
    assert payload["exit_code"] == EXIT_ERROR and payload["findings"]["findings"] == {}
    assert payload["findings"]["errors"][0]["error"] == "KeyError: 'boom'"
    assert "Traceback" in payload["results"][0]["extra"]["traceback"]  # kept in the record, for a bug report


def test_every_other_result_survives_bad_checks(errplug, tmp_path):
    """A check returning 42, a NaN row without a divergence and a check calling sys.exit(0) are each one error row;
    the good rows and the real finding are still there, and --out is written."""
    out = tmp_path / "r.json"
    p = _cli("check", "--plugin", errplug, "--only", "errplug", "--out", str(out), "--format", "json")
    assert p.returncode == EXIT_ERROR, p.stderr
    rows = {r["id"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["errplug.fine"]["verdict"] == "holds" and rows["errplug.found"]["verdict"] == "claim_refuted"
    assert rows["errplug.fortytwo"]["verdict"] == "error" and "returned int" in rows["errplug.fortytwo"]["detail"]
    assert rows["errplug.nan"]["verdict"] == "error" and "NaN" in rows["errplug.nan"]["detail"]
    assert rows["errplug.exits"]["verdict"] == "error" and "SystemExit" in rows["errplug.exits"]["detail"]
    assert json.loads(out.read_text())["findings"]["findings"] == {"errplug.found": ["errplug.found claim_refuted"]}
    # a claim check with no negative control cannot show it can fail: a self-check by rule, never a finding
    assert rows["errplug.uncontrolled"]["self_check"] and "by rule" in rows["errplug.uncontrolled"]["detail"]


def _spec():
    return CheckSpec("x.c", "x", "bound", lambda s: [], ("x.c",))


@pytest.mark.parametrize("returned,needle", [(42, "returned int"), (None, "returned NoneType"),
                                             ([CheckResult("x.c", "x", "bound", "holds"), "row"], "holding str")])
def test_checked_rows_rejects_what_is_not_results(returned, needle):
    rows = checked_rows(_spec(), returned)
    assert len(rows) == 1 and rows[0].verdict == "error" and needle in rows[0].detail


def test_a_recorded_divergence_is_not_an_error():
    r = CheckResult("x.c", "x", "bound", "violated", measured=float("nan"), bound=1.0,
                    extra={"diverged_runs": 2})
    assert checked_rows(_spec(), [r]) == [r]


def test_exit_code_errors_outrank_findings():
    ok = CheckResult("a", "p", "bound", "holds")
    bad = CheckResult("b", "p", "bound", "violated")
    err = CheckResult("c", "p", "bound", "error", detail="KeyError: 'x'")
    assert exit_code([ok]) == EXIT_OK and exit_code([ok, bad]) == EXIT_FINDINGS
    assert exit_code([ok, err]) == EXIT_ERROR and exit_code([bad, err]) == EXIT_ERROR
    assert not group_findings([err])  # never a finding


@pytest.mark.parametrize("verdict,cls", [("violated", "false_as_stated"), ("rate_inconsistent", "inconsistent_rate"),
                                         ("claim_refuted", "claim_refuted")])
def test_findings_carry_a_class(verdict, cls):
    assert CheckResult("a", "p", "bound", verdict).finding_class == cls
    assert CheckResult("a", "p", "bound", verdict, finding_class="erratum").finding_class == "erratum"
    assert CheckResult("a", "p", "bound", "holds", finding_class="erratum").finding_class == ""
    with pytest.raises(ValueError):
        CheckResult("a", "p", "bound", verdict, finding_class="serious")


def test_summary_and_payload_group_findings_by_class():
    rows = [CheckResult("a", "p", "identity", "violated", finding="typo", finding_class="erratum"),
            CheckResult("b", "p", "symbolic", "rate_inconsistent"),
            CheckResult("c", "p", "claim", "ambiguous", detail="reading A: claim_refuted; reading B: claim_supported"),
            CheckResult("d", "p", "symbolic", "proof_step_loose")]
    s = summarize_findings(rows)
    assert s["classes"] == {"erratum": ["typo"], "inconsistent_rate": ["b"]}
    assert s["ambiguous"] == ["c ambiguous"] and s["proof_step_loose"] == ["d proof_step_loose"]
    assert results_payload(rows)["exit_code"] == EXIT_FINDINGS
    assert exit_code(rows[2:]) == EXIT_OK  # ambiguous and proof-step-loose rows never count


def test_an_internal_error_of_the_tool_exits_3():
    """A bug of the tool (not a check's) is exit 3 with one line, not a traceback counted as exit 1."""
    code = subprocess.run([sys.executable, "-c", "import sys\nfrom fedtheory import cli\nfrom fedtheory.cli import "
                           "list_explain\ndef boom(args): raise RuntimeError('injected')\nlist_explain.cmd_list = "
                           "boom\nsys.exit(cli.main(['list']))"], capture_output=True, text=True)
    assert code.returncode == EXIT_ERROR and "internal error: RuntimeError: injected" in code.stderr
    assert "Traceback" not in code.stderr


# ------------------------------------------------------------------------------------ trivial bounds by rule

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from fedtheory.checks import (  # noqa: E402
    TRIVIAL_BOUNDS,
    Control,
    StatsPolicy,
    assess_bound,
    combine_readings,
    compare_mean,
    faster_order,
    rate_check,
    run_control,
    trivial_bound_of,
)
from fedtheory.sim import Exact, RunConfig, fedavg, heterogeneous_least_squares, pl_nonconvex, simulate  # noqa: E402
from fedtheory.theory import Bound, Order, SymbolSet  # noqa: E402


@settings(max_examples=30)
@given(st.integers(0, 10_000), st.floats(0.1, 5.0), st.sampled_from(["ls", "pl"]))
def test_trivial_bounds_hold_at_random_points(seed, scale, kind):
    """The catalogue's inequalities at random points w of problems with exact constants: f(w) - f* <= (L/2)
    ||w - w*||^2 and ||grad f(w)||^2 <= L^2 ||w - w*||^2 (strongly convex least squares and the PL non-convex
    problem), the closed forms behind 'opt_error' and 'grad_norm2'."""
    p = (heterogeneous_least_squares(4, 5, 10, random_state=seed % 97) if kind == "ls"
         else pl_nonconvex(4, 5, 10, random_state=seed % 97))
    rng = np.random.default_rng(seed)
    w_star = np.asarray(p.constants["w_star"].value, float)
    w = w_star + scale * rng.normal(size=(8, p.dim))
    L = p.constants["L"].value
    r2 = np.sum((w - w_star) ** 2, axis=1)
    q = {"L": L, "visited_max_dist2": r2}
    gap = p.loss(w) - p.constants["f_star"].value
    g2 = np.sum(p.grad(w) ** 2, axis=1)
    assert np.all(gap <= TRIVIAL_BOUNDS["opt_error"].value(q) * (1 + 1e-9) + 1e-12)
    assert np.all(g2 <= TRIVIAL_BOUNDS["grad_norm2"].value(q) * (1 + 1e-9) + 1e-12)


def _naive_visited_max_dist2(p, w0, K, T, lr):
    """FedAvg with exact gradients written as loops: every point visited (w^0, every local iterate, the local end
    points, the global models), the largest ||w - w*||^2 among them."""
    w_star = np.asarray(p.constants["w_star"].value, float)
    w = w0.copy()
    best = np.sum((w - w_star) ** 2)
    for _ in range(T):
        ends = []
        for i in range(p.n_clients):
            x = w.copy()
            for _k in range(K):
                best = max(best, np.sum((x - w_star) ** 2))
                x = x - lr * p.view(np.array([[i]]), np.array([0])).grad(x[None, None])[0, 0]
            best = max(best, np.sum((x - w_star) ** 2))
            ends.append(x)
        w = np.mean(ends, axis=0)
        best = max(best, np.sum((w - w_star) ** 2))
    return best


def test_visited_max_dist2_equals_a_naive_loop():
    p = heterogeneous_least_squares(4, 3, 10, random_state=3)
    w0 = p.initial_point(0, scale=3.0)
    tr = simulate(p, fedavg(), RunConfig(rounds=6, local_steps=4, lr=0.3, oracle=Exact()), [0], w0=w0,
                  measures=("visited_max_dist2", "dist2_opt"))
    want = _naive_visited_max_dist2(p, w0, 4, 6, 0.3)
    np.testing.assert_allclose(tr["visited_max_dist2"][0, 0], want, rtol=1e-12)
    assert tr["visited_max_dist2"][0, 0] >= np.max(tr["dist2_opt"]) - 1e-12


def _bound(lhs_kind="opt_error", expr_scale=1.0):
    S = SymbolSet("t_triv")
    a = S.add("a", "a constant")
    return Bound(id="t_triv.b", paper="t_triv", title="", source="test", symbols=S, expr=expr_scale * a,
                 lhs="x", lhs_kind=lhs_kind)


def test_assess_bound_computes_vacuity_from_the_lhs_kind():
    """f(w^0) - f* was typed in by hand before; now the kind decides, from the run's own visited region."""
    measured = np.array([0.1, 0.2, 0.15])
    q = {"L": 2.0, "visited_max_dist2": np.array([1.0, 2.0, 3.0])}  # trivial bound (L/2) R^2: mean 2.0
    loose = assess_bound(_bound(), [{"a": 5.0}], measured, trivial=q)
    tight = assess_bound(_bound(), [{"a": 1.0}], measured, trivial=q)
    assert loose.vacuous and loose.trivial_bound == pytest.approx(2.0) and loose.extra["vacuity"] == "vacuous"
    assert not tight.vacuous and tight.extra["vacuity"] == "informative"
    unknown = assess_bound(_bound(), [{"a": 5.0}], measured)  # the check supplied nothing: said, not guessed
    assert not unknown.vacuous and unknown.extra["vacuity"].startswith("vacuity unknown")
    none = assess_bound(_bound(lhs_kind=""), [{"a": 5.0}], measured, trivial=q)
    assert "declares no lhs_kind" in none.extra["vacuity"]


def test_every_trivial_bound_kind_names_what_it_needs():
    for kind, tb in TRIVIAL_BOUNDS.items():
        q = {n: 1.0 for n in tb.needs}
        value, formula = trivial_bound_of(_bound(lhs_kind=kind), q)
        assert value is not None and np.isfinite(value) and formula == tb.formula, kind


# ------------------------------------------------------------------------------------ the statistics policy


def test_student_t_critical_values_and_bonferroni():
    pol = StatsPolicy(alpha=0.05)
    assert pol.critical(10) == pytest.approx(2.262157, abs=1e-5)  # t_{0.975, 9}
    assert pol.critical(10, family=5) == pytest.approx(3.249836, abs=1e-5)  # t_{1 - 0.05/(2*5), 9}
    assert StatsPolicy(settings=5).critical(10) == pytest.approx(pol.critical(10, family=5))


def test_compare_mean_uses_student_t_not_3_standard_errors():
    """Six runs whose mean gap is 3.5 standard errors below zero: 'violated' under the old 3-SE normal rule, but
    the one-sided Student-t critical value at the same level (1.35e-3) with 5 degrees of freedom is 5.51:
    inconclusive."""
    gap = np.array([-1.0, -1.2, -0.8, -1.1, -0.9, -1.0])
    gap = (gap - gap.mean()) + 3.5 * gap.std(ddof=1) / np.sqrt(6) * -1  # mean = -3.5 SE
    verdict, info = compare_mean(np.zeros(6) - gap, np.zeros(6))
    assert verdict == "inconclusive" and info["t_critical"] == pytest.approx(5.5071, abs=1e-3)


def test_a_refutation_needs_the_family_level_the_effect_and_the_seeds():
    rng = np.random.default_rng(0)
    A = rng.normal(1.0, 0.01, 12)
    B = A + 0.03 + rng.normal(0, 0.005, 12)  # a 3% rise, very significant
    assert StatsPolicy(min_effect=0.01).compare(A, B, paired=True).refutes("above")
    assert not StatsPolicy(min_effect=0.05).compare(A, B, paired=True).refutes("above")  # below the effect size
    assert "effect" in StatsPolicy(min_effect=0.05).compare(A, B, paired=True).why_not("above")
    assert not StatsPolicy().compare(A, B, paired=True).refutes("above")  # no effect size declared: never
    few = StatsPolicy(min_effect=0.01).compare(A[:5], B[:5], paired=True)
    assert few.above and not few.refutes("above") and "5 seeds < 10" in few.why_not("above")


def test_the_family_wise_error_rate_is_held_under_the_null():
    """Pure noise: 2000 claims of 20 paired comparisons (12 seeds each) with no effect; the share of claims where
    any comparison is 'significant' stays below alpha = 0.05 (Bonferroni), while a per-comparison 3-SE normal rule
    on the same data fires far more often."""
    rng = np.random.default_rng(1)
    pol = StatsPolicy(alpha=0.05)
    crit = pol.critical(12, family=20)
    d = rng.normal(size=(2000, 20, 12))
    t = d.mean(axis=2) / (d.std(axis=2, ddof=1) / np.sqrt(12))
    fwer = np.mean(np.any(np.abs(t) > crit, axis=1))
    naive = np.mean(np.any(np.abs(t) > 3.0, axis=1))
    assert fwer <= 0.05 and naive > 2 * fwer, (fwer, naive)


def test_equivalence_refutes_only_with_enough_seeds():
    pol = StatsPolicy()
    x = np.full(12, 0.3) + np.linspace(-0.01, 0.01, 12)
    assert pol.within(x, 0.1).refutes and pol.within(x, 0.1).decision is False
    assert pol.within(x[:5], 0.1).decision is None and "5 seeds < 10" in pol.within(x[:5], 0.1).text()
    assert pol.within(x - 0.3, 0.1).decision is True


# ------------------------------------------------------------------------------------ readings, proof steps, controls


def _r(verdict, **kw):
    return CheckResult("p.x", "p", "bound", verdict, **kw)


def test_combine_readings_counts_a_finding_only_when_every_reading_gives_it():
    both = combine_readings({"A": _r("violated", finding="k"), "B": _r("violated", finding="k")})
    assert both.verdict == "violated" and both.is_finding and set(both.extra["readings"]) == {"A", "B"}
    split = combine_readings({"A": _r("violated", detail="mean sigma_g"), "B": _r("holds", detail="max sigma_g")})
    assert split.verdict == "ambiguous" and not split.is_finding and exit_code([split]) == EXIT_OK
    assert "reading A: violated (mean sigma_g)" in split.detail and "reading B: holds" in split.detail
    scoped = combine_readings({"A": _r("violated"), "B": _r("violated", scope="units_artifact")})
    assert scoped.verdict == "ambiguous"


def _rate_record(exact=None):
    """A toy record: loosened 1/T, stated O(1/T^2), c = exp(-g) in (0, 1) through the order's substitution."""
    S = SymbolSet("t_rate")
    T = S.add("T", "rounds")
    c = S.add("c", "a constant in (0, 1)")
    g = S.add("g", "-log c > 0")
    order = Order(1 / T**2, T, {}, substitute={c: sp.exp(-g)}, source="test")
    ex = exact(T, c) if exact is not None else None
    return Bound(id="t_rate.b", paper="t_rate", title="", source="test", symbols=S, lhs="x", lhs_kind="dist2",
                 expr=1 / T, exact=ex, exact_note="the sum kept in closed form", order=order)


def test_a_loose_proof_step_is_not_a_wrong_rate():
    """The loosened 1/T misses the stated 1/T^2; the exact form c^T + 1/T^2 is covered: proof_step_loose, never
    counted. Without an exact form, or with an exact form that misses too, it stays rate_inconsistent."""
    loose = rate_check(_rate_record(exact=lambda T, c: c**T + 1 / T**2))
    assert loose.verdict == "proof_step_loose" and not loose.is_finding and "proof step loose" in loose.detail
    assert rate_check(_rate_record()).verdict == "rate_inconsistent"
    assert rate_check(_rate_record(exact=lambda T, c: 1 / T + c**T)).verdict == "rate_inconsistent"
    rec = _rate_record(exact=lambda T, c: c**T + 1 / T**2)
    assert rate_check(rec, order=faster_order(rec)).verdict == "rate_inconsistent"  # the control: one power faster


def test_run_control_judges_the_mutation():
    ok = CheckSpec("x.c", "x", "claim", lambda s: [], ("x.c",),
                   control=Control("refutes", lambda s: [CheckResult("x.c", "x", "claim", "claim_refuted")]))
    weak = CheckSpec("x.d", "x", "claim", lambda s: [], ("x.d",),
                     control=Control("still holds", lambda s: [CheckResult("x.d", "x", "claim", "claim_supported")]))
    boom = CheckSpec("x.e", "x", "claim", lambda s: [], ("x.e",),
                     control=Control("raises", lambda s: 1 / 0))
    from fedtheory.checks import Session

    s = Session()
    assert run_control(ok, s).status == "fails_as_required"
    assert run_control(weak, s).status == "did_not_fail"
    assert run_control(boom, s).status == "error"


def test_the_report_lists_errors_classes_and_rows_apart():
    from fedtheory.report import render_report

    rows = [CheckResult("p.a", "p", "identity", "violated", finding="typo", finding_class="erratum"),
            CheckResult("p.b", "p", "bound", "error", detail="KeyError: 'boom'"),
            CheckResult("p.c", "p", "claim", "ambiguous",
                        detail="reading A: claim_refuted; reading B: claim_supported"),
            CheckResult("p.d", "p", "symbolic", "proof_step_loose")]
    html = render_report(results_payload(rows, command=["fedtheory", "check"]))
    assert "Checks that failed with an error (not findings)" in html and "KeyError: &#39;boom&#39;" in html
    assert ">erratum</span> <code>typo</code>" in html
    assert "Ambiguous (the readings of the text disagree; not counted)" in html and "p.c ambiguous" in html
    assert "Loose proof steps" in html and "p.d proof_step_loose" in html


# ------------------------------------------------------------------------------------ issue 36


def test_a_control_must_exercise_the_counted_path_or_say_why_not():
    """Issue 36, item 5: before, any finding verdict satisfied a control, also one only out of scope (the FedShift
    claims' controls refuted only at the regime boundary) or a self-check: the counted path was never exercised."""
    from fedtheory.checks import Session

    s = Session()
    counted = CheckSpec("x.f", "x", "claim", lambda s: [], ("x.f",),
                        control=Control("refutes inside", lambda s: [CheckResult("x.f", "x", "claim", "claim_refuted",
                                                                                 problem="p")]))
    outside = CheckSpec("x.g", "x", "claim", lambda s: [], ("x.g",),
                        control=Control("refutes outside only", lambda s: [CheckResult(
                            "x.g", "x", "claim", "claim_refuted", scope="regime_boundary")]))
    said = CheckSpec("x.h", "x", "claim", lambda s: [], ("x.h",),
                     control=Control("refutes outside only", lambda s: [CheckResult(
                         "x.h", "x", "claim", "claim_refuted", scope="extrapolation")],
                         uncounted="every row is an extrapolation"))
    by_design = CheckSpec("x.i", "x", "identity", lambda s: [], ("x.i",), self_check="the tool's own construction",
                          control=Control("a mutated tool",
                                          lambda s: [CheckResult("x.i", "x", "identity", "violated")]))
    out = run_control(counted, s)
    assert out.status == "fails_as_required" and out.counted_row == "x.f on p claim_refuted [claim_refuted]"
    assert out.to_json()["counted_row"] == out.counted_row
    assert run_control(outside, s).status == "fails_uncounted" and run_control(outside, s).counted_text == "none"
    assert run_control(said, s).status == "fails_as_required"
    assert run_control(said, s).counted_text == "none: every row is an extrapolation"
    d = run_control(by_design, s)
    assert d.status == "fails_as_required" and d.counted_row == "" and "self-check by design" in d.no_counted_path


def test_check_controls_shows_each_controls_counted_row(capsys):
    from fedtheory import cli

    assert cli.main(["check", "--controls", "--only", "fedshift.thm1.rate", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "counted row" in out.splitlines()[0] and "fedshift.thm1.rate.rate rate_inconsistent" in out


def test_a_self_check_by_design_may_keep_its_control():
    """Issue 36, item 1: a check that compares the tool with its own construction keeps the control that shows its
    logic can fail, and its rows are self-checks all the same (before: a ParameterError, so such checks declared the
    control alone and their rows counted)."""
    from fedtheory.checks import Session
    from fedtheory.checks.execution import run_spec
    from fedtheory.checks.registry import _CHECKS, check

    @check("issue36.bydesign", "issue36", "identity", self_check="the simulator builds it so",
           control=Control("a mutated simulator", lambda s: [CheckResult("issue36.bydesign", "issue36", "identity",
                                                                         "violated")]))
    def _by_design(session):
        """A self-check by design."""
        return [CheckResult("issue36.bydesign", "issue36", "identity", "violated")]

    try:
        spec = _CHECKS["issue36.bydesign"]
        rows = run_spec(spec, Session())
        assert rows[0].self_check and not rows[0].is_finding and "the simulator builds it so" in rows[0].detail
        assert "implementation self-check" in spec.describe() and "negative control" in spec.describe()
        assert run_control(spec, Session()).status == "fails_as_required"
    finally:
        _CHECKS.pop("issue36.bydesign", None)
