"""Every built-in check of a kind that must show it can fail (identity, claim, symbolic, rate) declares a negative
control, and every control makes its check report a finding (issue 27, rule 2)."""
from __future__ import annotations

import pytest

from fedtheory.checks import Session, all_checks, run_control
from fedtheory.checks.registry import CONTROLLED_KINDS
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
    bare = sorted(i for i, s in BUILTIN.items()
                  if s.kind in CONTROLLED_KINDS and s.control is None and not s.self_check)
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


def test_every_check_says_what_it_measures():
    """Issue 46, item 4: every registered check has a description (its function's docstring, what `fedtheory explain`
    prints); before, 39 of the 103 built-in checks had none (`fedtheory explain fedinit.thm1` showed an empty check)."""
    bare = sorted(i for i, s in all_checks().items() if not s.description)
    assert bare == [], bare


def test_a_check_without_a_description_is_refused(tmp_path, capsys):
    """`check` refuses a function without a docstring (or with a blank one), in one line that names the check, and
    registers nothing; a plug-in that declares one fails to load with that line (exit 2)."""
    from fedtheory import cli
    from fedtheory.checks import check
    from fedtheory.checks.registry import check_spec

    def undocumented(session):
        return []

    def blank(session):
        """ """
        return []

    for cid, fn in (("nodesc.bare", undocumented), ("nodesc.blank", blank)):
        with pytest.raises(ValueError, match=rf"^check {cid} has no description") as err:
            check(cid, "nodesc", "bound")(fn)
        assert "\n" not in str(err.value) and check_spec(cid) is None
    plug = tmp_path / "nodesc_plugin.py"
    plug.write_text("from fedtheory.checks import check\n\n@check('nodescplug.c', 'nodescplug', 'bound')\n"
                    "def c(session):\n    return []\n")
    assert cli.main(["list", "--plugin", str(plug)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "check nodescplug.c has no description" in err, err
