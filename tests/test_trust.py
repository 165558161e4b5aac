"""Issue 27's rules, each held by a test that failed on the code before it: errors are never findings (exit 3),
what a check returns is validated, findings carry a severity class."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fedtheory.checks import (EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, CheckResult, CheckSpec, checked_rows, exit_code,
                              group_findings, results_payload, summarize_findings)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=600)


PLUGIN = textwrap.dedent("""
    import math
    import sys
    from fedtheory.checks import CheckResult, Control, check

    @check("errplug.boom", "errplug", "bound")
    def boom(s):
        raise KeyError("boom")

    @check("errplug.fortytwo", "errplug", "bound")
    def fortytwo(s):
        return 42

    @check("errplug.nan", "errplug", "bound")
    def nan(s):
        return [CheckResult("errplug.nan", "errplug", "bound", "violated", measured=float("nan"), bound=1.0)]

    @check("errplug.exits", "errplug", "bound")
    def exits(s):
        sys.exit(0)

    @check("errplug.fine", "errplug", "bound")
    def fine(s):
        return [CheckResult("errplug.fine", "errplug", "bound", "holds", measured=0.5, bound=1.0, ratio=2.0)]

    @check("errplug.found", "errplug", "claim", control=Control("the same refutation", lambda s: found(s)))
    def found(s):
        return [CheckResult("errplug.found", "errplug", "claim", "claim_refuted")]

    @check("errplug.uncontrolled", "errplug", "claim")
    def uncontrolled(s):
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
    code = subprocess.run([sys.executable, "-c", "import sys\nfrom fedtheory import cli\n"
                           "def boom(args): raise RuntimeError('injected')\n"
                           "cli._cmd_list = boom\nsys.exit(cli.main(['list']))"], capture_output=True, text=True)
    assert code.returncode == EXIT_ERROR and "internal error: RuntimeError: injected" in code.stderr
    assert "Traceback" not in code.stderr
