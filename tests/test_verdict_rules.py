"""The general verdict rules of issue 15: findings counted by cause and scope, the simultaneous (Holm) rule over
horizons, the vacuous flag, self-checks listed apart."""
from __future__ import annotations

import io

import numpy as np
import pytest

from fedtheory._validation import FedTheoryDeprecationWarning
from fedtheory.checks import CheckResult, assess_bound, compare_rounds
from fedtheory.checks.comparisons import holm_reject
from fedtheory.checks.output import print_results, results_payload, summarize_findings
from fedtheory.checks.results import exit_code, group_findings
from fedtheory.theory.core import Bound, SymbolSet


def _row(id_, verdict="violated", **kw):
    return CheckResult(id_, "p", "bound", verdict, **kw)


def test_exit_code_counts_distinct_in_scope_findings():
    rows = [_row("a.1", finding="typo"), _row("a.2", finding="typo"), _row("a.3", finding="typo")]
    assert len(group_findings(rows)) == 1 and exit_code(rows) == 1
    rows.append(_row("b", scope="units_artifact"))
    rows.append(_row("c", self_check=True))
    rows.append(_row("d", verdict="holds"))
    assert list(group_findings(rows)) == ["typo"]
    # only out-of-scope rows and self-checks: nothing counts
    assert exit_code([_row("b", scope="units_artifact"), _row("c", self_check=True),
                      _row("e", verdict="claim_refuted", scope="not_reproduced")]) == 0
    # rows without a cause key are each their own finding (problem and setting tell them apart)
    two = [_row("x", problem="p1"), _row("x", problem="p2")]
    assert len(group_findings(two)) == 2
    s = summarize_findings(rows)
    assert s["findings"]["typo"] and len(s["findings"]["typo"]) == 3
    assert "b" in s["not_counted"] and s["not_counted"]["b"]["scope"] == ["units_artifact"]
    assert len(s["self_checks"]) == 1


def test_unknown_scope_rejected():
    with pytest.raises(ValueError):
        _row("a", scope="somewhere")


def test_print_results_lists_findings_and_payload_carries_them():
    rows = [_row("a.1", finding="typo"), _row("a.2", finding="typo"), _row("b", scope="regime_boundary"),
            _row("v", verdict="holds", vacuous=True, ratio=1e9)]
    buf = io.StringIO()
    print_results(rows, 1.0, file=buf)
    out = buf.getvalue()
    assert "1 distinct finding(s)" in out and "typo  (2 rows)" in out and "[regime_boundary]" in out
    assert "[vacuous]" in out and "looser than" in out
    payload = results_payload(rows, command="check")
    assert payload["exit_code"] == 1 and list(payload["findings"]["findings"]) == ["typo"]
    assert payload["results"][0]["finding"] == "typo" and "vacuous" in payload["results"][3]


def test_holm_corrects_a_pure_noise_family():
    """Pure-noise horizons (the bound holds with equality in expectation): over 300 horizons x 6 runs the
    uncorrected 3-SE rule fires somewhere, Holm does not."""
    rng = np.random.default_rng(1)
    fired_naive = fired_holm = 0
    for _ in range(20):
        lhs = rng.standard_normal((300, 6))  # independent horizons, mean gap exactly 0
        rhs = np.zeros((300, 6))
        v_naive, info_n = compare_rounds(lhs, rhs, correction="none")
        v_holm, info_h = compare_rounds(lhs, rhs)
        fired_naive += v_naive == "violated"
        fired_holm += v_holm == "violated"
        assert info_h["family_size"] == 300 and info_h["runs"] == 6
    assert fired_naive >= 10  # with n = 6 the 3-SE rule has ~1.5% false alarms per horizon
    assert fired_holm == 0


def test_holm_still_detects_a_real_violation():
    rng = np.random.default_rng(2)
    lhs = 1.0 + 0.01 * rng.standard_normal((300, 6))  # the bound 0.5 is violated at every horizon
    verdict, info = compare_rounds(lhs, np.full((300, 6), 0.5))
    assert verdict == "violated" and info["rounds_significant_holm"] == 300 and info["runs_violating_at_worst"] == 6


def test_holm_reject_step_down():
    assert holm_reject([0.001, 0.04, 0.03], 0.05).tolist() == [True, False, False]
    assert holm_reject([0.001, 0.012, 0.03], 0.05).tolist() == [True, True, True]


def _toy_bound(expr_value, lhs_kind=""):
    S = SymbolSet("toy")
    a = S.add("a", "a constant")
    return Bound(id="toy.b", paper="toy", title="toy", source="none", symbols=S, lhs="x", expr=a * expr_value,
                 lhs_kind=lhs_kind)


def test_vacuous_flag_when_bound_exceeds_trivial_bound():
    b = _toy_bound(1, lhs_kind="loss_range")  # trivial bound U: a loss in [0, U]
    runs = np.array([0.1, 0.2, 0.15])
    r = assess_bound(b, [{"a": 5.0}], runs, trivial={"U": 1.0})
    assert r.verdict == "holds" and r.vacuous and r.trivial_bound == 1.0 and r.seeds == 3
    assert r.extra["vacuity"] == "vacuous" and r.extra["trivial_bound_formula"].startswith("U:")
    r = assess_bound(b, [{"a": 0.5}], runs, trivial={"U": 1.0})
    assert r.verdict == "holds" and not r.vacuous and r.extra["vacuity"] == "informative"
    r = assess_bound(b, [{"a": 5.0}], runs)
    assert not r.vacuous and r.extra["vacuity"].startswith("vacuity unknown")  # no trivial bound given: never flagged


def test_a_trivial_bound_typed_in_is_deprecated_and_still_decides_vacuity():
    """trivial= (the run quantities, the trivial bound computed by rule) is the documented way; trivial_bound= (a
    number the check computed) still works for one release, with a warning that names trivial= and the caller's
    line."""
    b = _toy_bound(1)
    runs = np.array([0.1, 0.2, 0.15])
    with pytest.warns(FedTheoryDeprecationWarning, match=r"assess_bound\(trivial_bound=\) is deprecated.*pass trivial="
                      ) as said:
        r = assess_bound(b, [{"a": 5.0}], runs, trivial_bound=1.0)
    assert [w.filename for w in said] == [__file__]
    assert r.verdict == "holds" and r.vacuous and r.trivial_bound == 1.0
    assert r.extra["trivial_bound_formula"] == "(given by the check)"
    with pytest.warns(FedTheoryDeprecationWarning):
        r = assess_bound(b, [{"a": 0.5}], runs, trivial_bound=1.0)
    assert r.verdict == "holds" and not r.vacuous


def test_no_built_in_paper_or_example_types_in_a_trivial_bound():
    """The deprecated assess_bound(trivial_bound=) is used by no built-in paper, example or skeleton."""
    import ast
    from pathlib import Path

    import fedtheory

    roots = [Path(fedtheory.__file__).parent, Path(__file__).resolve().parents[1] / "examples"]
    users = []
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                        "assess_bound" and any(k.arg == "trivial_bound" for k in node.keywords):
                    users.append(f"{path}:{node.lineno}")
    assert users == []


def test_per_round_bound_is_tested_at_its_least_favourable_valid_candidate():
    # every valid candidate (e.g. each (G, B) pair) is an instance of the statement: a violation at one of them
    # is a violation, however loose the others are
    b = _toy_bound(1)
    rng = np.random.default_rng(0)
    lhs = 1.0 + 0.01 * rng.standard_normal((6, 8))  # rounds x runs

    def per_round(vals):
        return lhs, np.full(lhs.shape, float(vals["a"]))

    r = assess_bound(b, [{"a": 100.0}, {"a": 0.5}, {"a": 3.0}], per_round, per_round=True)
    assert r.verdict == "violated" and r.params["a"] == 0.5
    r = assess_bound(b, [{"a": 100.0}, {"a": 3.0}], per_round, per_round=True)
    assert r.verdict == "holds" and r.params["a"] == 3.0 and abs(r.ratio - 3.0 / lhs.mean(axis=1).max()) < 1e-12


def test_session_pick_and_initial_point():
    """Session.pick reads a per-profile SIZES table; Session.initial_point is the checks' recipe
    w* + scale z / sqrt(d), z ~ default_rng(seed), bit for bit."""
    import numpy as np
    import pytest

    from fedtheory._validation import ParameterError
    from fedtheory.checks import Session
    from fedtheory.sim import heterogeneous_least_squares

    table = {"quick": {"runs": 8}, "full": {"runs": 32}}
    assert Session("quick").pick(table)["runs"] == 8 and Session("full").pick(table)["runs"] == 32
    with pytest.raises(ParameterError):
        Session("quick").pick({"quick": 1})
    p = heterogeneous_least_squares(4, 5, 10, random_state=0)
    for seed, scale in ((0, 3.0), (7, 1.0)):
        recipe = (p.constants["w_star"].value
                  + scale * np.random.default_rng(seed).standard_normal(p.dim) / np.sqrt(p.dim))
        assert np.array_equal(Session(seed=seed).initial_point(p, scale=scale), recipe)


# ------------------------------------------------------------------------------------ issue 36: rule 8, robustness


def _units_record(expr_fn, rid="issue36.rule8", lhs="f"):
    from fedtheory.theory import Units

    S = SymbolSet(f"{rid}.symbols")
    D = S.add("D", "a loss gap", dim="f")
    T = S.add("T", "rounds", dim="1")
    sigma = S.add("sigma", "a gradient norm", dim="f/w")
    return Bound(id=rid, paper="issue36", title="t", source="s", symbols=S, units=Units(lhs=lhs),
                 lhs="x", lhs_kind="none", expr=expr_fn(D, T, sigma))


def test_rule8_a_statement_inconsistent_under_every_reading_is_counted():
    """Issue 36, item 9: before, a user's dimensionally wrong theorem (no normalisation, no consistent form) was a
    units artifact, never counted: `fedtheory check` exited 0."""
    from fedtheory.checks.dimensions import units_result

    row = units_result(_units_record(lambda D, T, s: D / T + s))
    assert row.verdict == "violated" and row.scope == "inside" and row.is_finding
    assert row.finding_class == "erratum" and row.finding == "issue36.rule8.units" and exit_code([row]) == 1
    assert "inconsistent under every reading" in row.detail.lower() and "parameters x 10^" in row.detail
    assert row.extra["robustness"]["exact"]  # a unit mismatch has no free choice


def test_rule8_the_bound_is_decided_on_the_run_rescaled_so_that_its_inconsistent_terms_shrink():
    """D/T + sigma against a loss: sigma ([f]/[w]) shrinks against the left side when the parameters are measured
    in smaller units (s > 1). A run measured at 1.5 with D/T = 1, sigma = 1 holds (bound 2) and fails once the
    parameters are rescaled by 10^0.4 = 2.51 (the same run in other units: bound 1.398, measurement 1.5), inside rule
    8's regime (sigma moved by 2.51 < 10)."""
    rec = _units_record(lambda D, T, s: D / T + s, rid="issue36.rule8b")
    vals = {"D": 1.0, "T": 1.0, "sigma": 1.0}
    row = assess_bound(rec, [vals], np.full(4, 1.5))
    assert row.verdict == "violated" and row.finding == "issue36.rule8b.units"
    assert row.finding_class == "false_as_stated" and row.is_finding
    inst = row.extra["rescaled_instance"]
    assert inst["t"] == 0.4 and abs(inst["s"] - 10 ** 0.4) < 1e-9 and abs(inst["c"] - 1.0) < 1e-9
    assert abs(row.bound - (1 + 10 ** -0.4)) < 1e-9 and abs(row.measured - 1.5) < 1e-9
    assert inst["regime"]["factor"] == 10 and inst["regime"]["by"] == "sigma" and inst["regime"]["moved"] < 10
    assert "rule 8's regime" in row.detail
    assert row.extra["robustness"]["choices"][0]["survives"] is not None
    # below the consistent part it holds on every rescaled instance, and says so
    ok = assess_bound(rec, [vals], np.full(4, 0.5))
    assert ok.verdict == "holds" and ok.extra["rescaled"]["verdict"] == "holds" and "stays an erratum" in ok.detail
    # a consistent bound gets no such test
    fine = assess_bound(_units_record(lambda D, T, s: D / T, rid="issue36.rule8c"), [vals], np.full(4, 1.5))
    assert fine.verdict == "violated" and "rescaled" not in fine.extra and "rescaled_instance" not in fine.extra


def test_rule8_a_rescaling_beyond_its_regime_is_no_evidence():
    """Issue 45, item 1: a run measured at 1.05 with D/T = 1, sigma = 1 fails only once sigma shrinks below 0.05, a
    change of the parameters' units by more than 20: outside rule 8's regime (every value of the statement within a
    factor 10 of the run's). Before: violated at 10^2 (false as stated on sigma x 0.01); now the units finding stays
    an erratum, and the row says where the regime ends."""
    rec = _units_record(lambda D, T, s: D / T + s, rid="issue45.rule8a")
    row = assess_bound(rec, [{"D": 1.0, "T": 1.0, "sigma": 1.0}], np.full(4, 1.05))
    assert row.verdict == "holds" and not row.finding and "rescaled_instance" not in row.extra
    x = row.extra["rescaled"]
    assert x["verdict"] == "holds" and max(x["tested"]) == 1.0 and x["regime"]["left_at"] == 1.1
    assert x["regime"]["by"] == "sigma" and "stays an erratum" in row.detail and "regime" in row.detail


def test_rule8_the_run_as_measured_escalates_the_units_finding():
    """Issue 45, item 1: a statement inconsistent in units under every reading that fails on the run as measured is
    false as stated under its units finding's key (one cause: the erratum escalates). Before: the row was its own
    finding, beside the units erratum."""
    rec = _units_record(lambda D, T, s: D / T + s, rid="issue45.rule8b")
    row = assess_bound(rec, [{"D": 1.0, "T": 1.0, "sigma": 1.0}], np.full(4, 3.0))
    assert row.verdict == "violated" and row.finding == "issue45.rule8b.units"
    assert row.finding_class == "false_as_stated" and "run as measured" in row.detail
    assert "rescaled_instance" not in row.extra and "rescaled" not in row.extra


def test_rule8_a_stated_order_stays_a_units_artifact():
    from fedtheory.checks.dimensions import units_result
    from fedtheory.plugins import record

    row = units_result(record("fedinit.thm6"))
    assert row.verdict == "violated" and row.scope == "units_artifact" and not row.is_finding
    assert "a stated order" in row.detail


def test_a_cause_takes_the_most_severe_class_of_its_rows():
    from fedtheory.checks.results import finding_class_of

    rows = [_row("u", finding="k", finding_class="erratum"), _row("m", finding="k", finding_class="false_as_stated")]
    assert finding_class_of(rows) == "false_as_stated"
    assert summarize_findings(rows)["classes"] == {"false_as_stated": ["k"]}


def test_robustness_sweeps_a_free_choice_and_labels_the_fragile():
    """Issue 36, item 7: a finding that disappears within 10% of a free choice is fragile, in the summary, the JSON
    and the report; a counted row that states nothing is said to state nothing."""
    from fedtheory.checks import robustness, sweep
    from fedtheory.report import render_report

    fragile = sweep("C/C_max", 1.0, (0.5, 0.8, 0.9, 0.95), lambda f: (f > 0.96, 1 - f))
    assert fragile["fragile"] and fragile["lost_at"] == 0.95 and fragile["survives"] == [1.0, 1.0]
    sturdy = sweep("C/C_max", 1.0, (0.5, 0.8, 0.9, 0.95), lambda f: (f > 0.6, None))
    assert not sturdy["fragile"] and sturdy["survives"] == [0.8, 1.0] and sturdy["lost_at"] == 0.5
    at_zero = sweep("r/L", 0.0, (0.01, 0.05, 0.2), lambda a: (a < 0.03, None), scale=1.0)
    assert at_zero["fragile"] and at_zero["lost_at"] == 0.05
    rows = [_row("p.a", finding="f1", extra={"robustness": robustness(0.02, "2%", [fragile])}),
            _row("p.b", finding="f2", extra={"robustness": robustness(0.5, "50%", [sturdy])}),
            _row("p.c", finding="f3")]
    from fedtheory.checks.robustness import robustness_rule

    robustness_rule(rows)
    assert rows[2].extra["robustness"]["stated"] is False
    s = summarize_findings(rows)
    assert s["fragile"] == ["f1"] and s["robustness"]["f2"]["fragile"] is False
    assert "not stated" in s["robustness"]["f3"]["text"]
    buf = io.StringIO()
    print_results(rows, 1.0, file=buf)
    out = buf.getvalue()
    assert "f1 [fragile]" in out and "1 of them fragile" in out and "lost at C/C_max = 0.95" in out
    payload = results_payload(rows, command="check")
    assert payload["findings"]["fragile"] == ["f1"]
    html = render_report(payload)
    assert '<span class="mark">fragile</span> <code>f1</code>' in html
    # a finding counts as long as one of its rows survives: fragile only when every stated row is
    both = [_row("a", finding="k", extra={"robustness": robustness(0.02, "", [fragile])}),
            _row("b", finding="k", extra={"robustness": robustness(0.5, "", [sturdy])})]
    assert summarize_findings(both)["fragile"] == []


# ------------------------------------------------------------------------------------ issue 45: one cause, one finding


def test_cited_lines_reads_every_citation_style():
    from fedtheory.checks.output import cited_lines

    r = _row("a", quote="003_7cb41999359df859.txt:142, 144, 148: 'x' and (003:134-136)", source="004:211")
    assert cited_lines(r) == {("003", 142), ("003", 144), ("003", 148), ("003", 134), ("003", 135), ("003", 136),
                              ("004", 211)}


def test_counted_findings_citing_one_printed_line_must_say_why_they_are_two():
    """Issue 45, item 2: two counted findings on the same printed line are listed, with the reason one of them gives
    (extra['independent_of']) or 'NOT DECLARED' (before: nothing looked)."""
    from fedtheory.checks.output import shared_lines

    a = _row("p.a", finding="p.a", quote="003_7cb41999359df859.txt:144: 'x'")
    b = _row("p.b", finding="p.b", quote="003:144")
    c = _row("p.c", finding="p.c", quote="003:145")
    pairs = shared_lines([a, b, c])
    assert pairs == [{"findings": ["p.a", "p.b"], "lines": ["003:144"], "independent": None}]
    assert "NOT DECLARED" in summarize_text([a, b, c])
    b.extra["independent_of"] = {"p.a": "decided against the repaired order"}
    assert shared_lines([a, b, c])[0]["independent"] == "decided against the repaired order"
    assert summarize_findings([a, b, c])["shared_lines"][0]["independent"]


def summarize_text(rows):
    from fedtheory.checks.output import _findings_text

    return _findings_text(rows)
