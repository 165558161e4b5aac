"""Every built-in check of a kind that must show it can fail (identity, claim, symbolic, rate) declares a negative
control, and every control makes its check report a finding (issue 27, rule 2)."""
from __future__ import annotations

import pytest

from fedtheory.checks import CONTROLLED_KINDS, Session, all_checks, run_control
from fedtheory.plugins import BUILTIN_PAPERS

BUILTIN = {s.id: s for s in all_checks().values() if s.paper in BUILTIN_PAPERS and not s.needs_runs}
CONTROLLED = sorted(i for i, s in BUILTIN.items() if s.control is not None)


@pytest.fixture(scope="module")
def session():
    return Session(profile="quick", seed=0)


@pytest.mark.parametrize("check_id", CONTROLLED)
def test_control_makes_the_check_fail(check_id, session):
    out = run_control(BUILTIN[check_id], session)
    assert out.status == "fails_as_required", (out.description, [(r.verdict, r.detail[:200]) for r in out.rows])


def test_every_builtin_check_shows_it_can_fail_or_says_why_not():
    """A built-in check of a controlled kind declares a negative control, or says why it is an implementation
    self-check by design (``@check(..., self_check=REASON)``); none is left to the rule by accident."""
    bare = sorted(i for i, s in BUILTIN.items() if s.kind in CONTROLLED_KINDS and s.control is None and not s.self_check)
    assert bare == [], bare


def test_controls_verbose_shows_the_rows_that_fail(capsys):
    """`check --controls -v` prints, under each control, the rows that show its failure with their notes (a new
    user's trial could only see 'fails_as_required  violated' and wrote a second plug-in to see the row)."""
    from fedtheory import cli

    assert cli.main(["check", "--controls", "-v", "--only", "fedshift.thm1.rate", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "fedshift.thm1.rate under its control (fails_as_required):" in out
    assert "rate_inconsistent" in out.split("under its control", 1)[1]
    assert cli.main(["check", "--controls", "--only", "fedshift.thm1.rate", "--no-progress"]) == 0
    assert "under its control" not in capsys.readouterr().out
