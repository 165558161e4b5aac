"""Theorem 1's hypotheses as printed (003:134): whether they make a statement."""
from __future__ import annotations

import sympy as sp

from fedtheory.checks import CheckResult, Control, check

from .. import records as fedmrur_records
from .common import PAPER

STATEMENT_FINDING = "fedmrur.thm1.statement"  # Theorem 1's hypotheses as printed do not make a statement (003:134)
_RELATIONS = (r"\leq", r"\geq", r"\le ", r"\ge ", r"\lt", r"\gt", "<", ">", "=", r"\ne")


def _statement_rows(clause: str | None = None, k_min=None, expr=None, var=None, what: str = "") -> list[CheckResult]:
    """Theorem 1's hypotheses as printed (003:134): the math after 'satisfying' must be a relation (it is the only
    place that could define C), and the stated range 'for all K >= 0' must keep the statement's own expressions
    defined (C_max and Phi divide by K). clause, k_min, expr, var, what: another clause, lower end, expression and
    variable (the control's)."""
    from fedtheory.checks import robustness

    T = fedmrur_records
    clause = T.THM1_SATISFYING if clause is None else clause
    k_min = T.THM1_K_RANGE if k_min is None else k_min
    var = T.K if var is None else var
    expr = (T.C_MAX_EXPR + T.PHI_BRACKET) if expr is None else expr
    rel = [r for r in _RELATIONS if r in clause]
    exact = robustness(margin_text="exact (the printed text)", exact="the printed hypothesis itself, for every value "
                                                                      "of the constants")
    common = dict(source=f"{T.SEED}, Thm 1 (003:134)", quote=T.THM1_STATEMENT_QUOTE, finding=STATEMENT_FINDING,
                  extra={"robustness": exact, "independent_of": {T.UNITS_FINDING: (
                      "a defect of the hypotheses' text, not of their dimensions: with the comparison restored and "
                      "K >= 1 the formulas are as inconsistent in units as before, and a units-consistent printing "
                      "would still lack the comparison and admit K = 0")}})
    rows = [CheckResult("fedmrur.thm1.clause", PAPER, "symbolic", "holds" if rel else "violated",
                        finding_class="" if rel else "erratum",
                        **{**common, "finding": "" if rel else STATEMENT_FINDING,
                           "extra": {} if rel else common["extra"]},
                        detail=(f"the clause after 'satisfying' contains the comparison {rel[0]!r}" if rel else
                                f"the clause after 'satisfying' is an expression with no comparison (no \\leq, \\geq, "
                                f"<, > or =): '{clause[:90]}...'. Theorem 1's C, by which eq. (7)'s first term and "
                                "Phi are divided (003:136-140), is defined nowhere else in 003: the statement as "
                                "printed leaves C free (the checks read 'C_max >= C > 0' and take C = C_max, the "
                                "bounds' smallest; the robustness sweeps of the bound rows try C = 0.5..1 C_max). An "
                                "erratum: the printed hypothesis is incomplete" + (f" ({what})" if what else "")))]
    at = sp.simplify(expr.subs(var, k_min))
    undefined = at.has(sp.zoo, sp.nan, sp.oo, -sp.oo) or at is sp.nan
    rows.append(CheckResult("fedmrur.thm1.K_range", PAPER, "symbolic", "violated" if undefined else "holds",
                            finding_class="erratum" if undefined else "",
                            **{**common, "finding": STATEMENT_FINDING if undefined else "",
                               "extra": common["extra"] if undefined else {}},
                            detail=(f"'for all {var} >= {k_min}' includes {var} = {k_min}, where the statement's own "
                                    f"expressions are undefined (C_max's 2(1 - alpha L)/(K N) and Phi's alpha (L+r) "
                                    f"eta_g/(K^2 S N) divide by {var}: {sp.sstr(at)[:80]}); the range the statement "
                                    f"can mean is {var} >= 1 (the checks use K = 5)" if undefined else
                                    f"every expression is defined at {var} = {k_min}")
                            + (f" ({what})" if what else "")))
    return rows


def _statement_control(session):
    T = fedmrur_records
    stripped = sp.latex(T.ETA_L.relation.rhs)  # Theorem 1's first hypothesis with its comparison deleted
    return _statement_rows(clause=f"\\eta_l {stripped}", k_min=0, var=T.S, expr=T.PHI_BRACKET,
                           what="control: the hypothesis eta_l <= 1/sqrt(30 alpha K L) with its comparison deleted, "
                                "and the range S >= 0")


@check("fedmrur.thm1.statement", PAPER, "symbolic", records=("fedmrur.thm1", "fedmrur.C_max", "fedmrur.Phi"),
       cost="symbolic",
       control=Control("Theorem 1's first hypothesis with its comparison deleted, and the range S >= 0 for the clients "
                       "per round: both must be reported", _statement_control))
def thm1_statement(session):
    """Theorem 1's hypotheses as printed (003:134): the 'satisfying ...' clause has no comparison (C is undefined), and
    'for all K >= 0' includes K = 0, where C_max and Phi divide by K."""
    return _statement_rows()
