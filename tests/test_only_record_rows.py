"""Issue 43, item 6: ``--only ID`` selects the record's derived rows, ``ID.units`` (a row of the check PAPER.units)
and ``ID.rate``, as docs/extending.md says; another record's rows of PAPER.units stay out."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fedtheory.checks.registry import record_row_filter, select

PLUGIN = textwrap.dedent('''
    import sympy as sp
    from fedtheory.checks import CheckResult, Control, check, register_rate_check
    from fedtheory.theory import Bound, Order, SymbolSet, register, register_paper

    register_paper("gdzoo", collection="zoo", citation="a user's zoo (issue 43)")
    S = SymbolSet("gdzoo", strict=True)
    L, R2, K = S.table("""
        L   f/w^2  positive     smoothness
        R2  w^2    nonnegative  ||x_0 - x*||^2
        K   1      count        steps
    """)
    K4 = Bound(id="gdzoo.k4", paper="gdzoo", title="k4", source="-", symbols=S, expr=L * R2 / (4 * K),
               lhs="opt_error", lhs_kind="opt_error", order=Order(expr=1 / K, variable=K, source="-"))
    K5 = Bound(id="gdzoo.k5", paper="gdzoo", title="k5", source="-", symbols=S, expr=L * R2 / (5 * K),
               lhs="opt_error", lhs_kind="opt_error")
    register(K4, K5)

    @check("gdzoo.k4", "gdzoo", "bound", records=("gdzoo.k4",),
           control=Control("the same row", lambda s: k4(s)))
    def k4(session):
        """A row that holds."""
        return [CheckResult("gdzoo.k4", "gdzoo", "bound", "holds", measured=1.0, bound=2.0, ratio=2.0)]

    register_rate_check(K4)
''')


@pytest.fixture(scope="module")
def gdzoo(tmp_path_factory):
    f = tmp_path_factory.mktemp("gdzoo") / "gdzoo.py"
    f.write_text(PLUGIN)
    from fedtheory.plugins import load_plugins

    load_plugins([str(f)])
    return str(f)


def test_only_a_record_selects_its_units_and_rate_rows(gdzoo):
    ids = {s.id for s in select(only=["gdzoo.k4"])}
    assert ids == {"gdzoo.k4", "gdzoo.k4.rate", "gdzoo.units"}
    specs = select(only=["gdzoo.k4"])
    assert record_row_filter(specs, ["gdzoo.k4"]) == {"gdzoo.k5.units"}  # the other record's row stays out
    # the row's own id, a glob, and the paper (the whole units check) select as expected
    assert {s.id for s in select(only=["gdzoo.k4.units"])} == {"gdzoo.units"}
    assert record_row_filter(select(only=["gdzoo.k4.units"]), ["gdzoo.k4.units"]) == {"gdzoo.k5.units"}
    assert {s.id for s in select(only=["gdzoo.k*"])} == {"gdzoo.k4", "gdzoo.k4.rate", "gdzoo.units"}
    assert record_row_filter(select(only=["gdzoo"]), ["gdzoo"]) == set()
    assert record_row_filter(select(only=["gdzoo.k4", "gdzoo.units"]), ["gdzoo.k4", "gdzoo.units"]) == set()


def test_cli_only_a_record_prints_its_units_row(gdzoo, tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", gdzoo, "--only", "gdzoo.k4",
                        "--out", str(out), "--no-progress"], capture_output=True, text=True, env=dict(os.environ),
                       timeout=600)
    assert p.returncode == 0, p.stderr
    rows = [r["id"] for r in json.loads(out.read_text())["results"]]
    assert sorted(rows) == ["gdzoo.k4", "gdzoo.k4.rate", "gdzoo.k4.units"]
