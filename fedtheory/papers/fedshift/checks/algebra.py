"""The algebra of Theorem 2 and its consequences from the definitions (symbolic): eq. (12) and eq. (30) against the
derivation, eq. (29), the factorisation behind (31)/(32), the 50/50 example."""
from __future__ import annotations

import sympy as sp

from fedtheory.checks import CheckResult, Control, check

from .. import records as fedshift_records
from .common import PAPER, exact_robustness
from .theorem2 import EQ12_CLASS, EQ12_EXACT, EQ12_FINDING, counterexample_text, eq12_as_appendix


def _algebra_rows(appendix, threshold):
    """The algebra of Theorem 2 and its consequences, from the definitions: eq. (12) and ``appendix`` (the record
    giving D_FA^2 - D_FS^2, eq. (30)) against the re-derivation, eq. (29) against ``appendix``, conditions (31)/(32)
    as the factorisation of ``appendix``, the 50/50 example against the stated ``threshold``, and both forms on
    exact rational instances. The misprint rows of eq. (12) are the finding (erratum)."""
    R = fedshift_records
    out = []
    # D_FA^2 - D_FS^2 from the definitions: a = w^{t+1} - w^t, 1'a = P (m^{t+1} - m^t), shift c = (I/K) m^{t+1}
    c = R.I / R.K * R.m_t1
    derived = 2 * c * R.P * (R.m_t1 - R.m_t) - R.P * c**2  # ||a||^2 - ||a - c 1||^2
    for rec in (R.THM2_MAIN, appendix):
        gap = sp.simplify((rec.expr - derived).subs(R.S, R.K - R.I))
        ok = gap == 0
        main = rec.id == R.THM2_MAIN.id
        out.append(CheckResult(rec.id + ".derivation", PAPER, "symbolic", "holds" if ok else "violated",
                               source=rec.source, finding=EQ12_FINDING if main else "",
                               finding_class=EQ12_CLASS if main and not ok else "",
                               extra={"robustness": exact_robustness("exact (a symbolic difference)", EQ12_EXACT)}
                               if main and not ok else {},
                               detail=("equals ||a||^2 - ||a - (I/K) m^(t+1) 1||^2 with 1'a = P (m^(t+1) - m^t) "
                                       "identically (S = K - I)" if ok else
                                       f"differs from the derivation by {sp.factor(gap)}; not homogeneous in the "
                                       "weights")))
    eq29 = sp.simplify(R.EQ29_EXPR - appendix.expr) == 0
    out.append(CheckResult("fedshift.eq29_eq30", PAPER, "symbolic", "holds" if eq29 else "violated",
                           source=f"{R.SEED}, App. B-A, eqs. (29)-(30)",
                           detail="eq. (29) and eq. (30) are the same polynomial" if eq29 else
                                  f"eq. (29) differs from {appendix.id}'s expression"))
    # conditions (31)/(32): (30) = 2 (IP/K) (m^{t+1})^2 ((K+S)/(2K) - m^t/m^{t+1})
    fac = sp.simplify((appendix.expr - 2 * R.I * R.P / R.K * R.m_t1**2 * R.COND31_MARGIN).subs(R.S, R.K - R.I))
    out.append(CheckResult("fedshift.cond31_32.derivation", PAPER, "symbolic", "holds" if fac == 0 else "violated",
                           source=R.COND31_32.source,
                           detail=("eq. (30) = 2 (IP/K) (m^(t+1))^2 ((K+S)/(2K) - m^t/m^(t+1)): with I >= 1, "
                                   "m^(t+1) != 0 the sign of D_FA^2 - D_FS^2 is that of (K+S)/(2K) - m^t/m^(t+1), for "
                                   "either sign of m^(t+1)" if fac == 0 else f"remainder {sp.factor(fac)}")))
    # worked example: S = K/2
    sol = sp.solve(sp.Eq(R.COND31_MARGIN.subs(R.S, R.K / 2), 0), R.m_t1)
    thr = [sp.simplify(v / R.m_t) for v in sol]
    ok = thr == [sp.Rational(threshold)]
    out.append(CheckResult("fedshift.example_4_3", PAPER, "symbolic", "holds" if ok else "violated",
                           source=R.EXAMPLE_4_3.source, measured=str(thr[0]) if thr else None, bound=str(threshold),
                           detail=f"(K+S)/(2K) = m^t/m^(t+1) at S = K/2 gives m^(t+1) = {thr} m^t; for m^(t+1) > 0, "
                                  f"D_FS < D_FA iff m^(t+1) > {thr[0] if thr else '?'} m^t; stated: {threshold}"))
    # the same comparison from eq. (12): its sign rule differs
    ok12, txt = counterexample_text(R.THM2_MAIN)
    out.append(CheckResult("fedshift.thm2.counterexample", PAPER, "symbolic", "holds" if ok12 else "violated",
                           source=R.THM2_MAIN.source, detail=txt, finding=EQ12_FINDING,
                           finding_class=EQ12_CLASS if not ok12 else "",
                           extra={"robustness": exact_robustness("exact rational counterexamples", EQ12_EXACT)}
                           if not ok12 else {}))
    ok30, txt30 = counterexample_text(appendix)
    out.append(CheckResult("fedshift.thm2.appendix.instances", PAPER, "symbolic", "holds" if ok30 else "violated",
                           source=appendix.source, detail=txt30))
    return out


_APPENDIX_ALGEBRA_ROWS = ("fedshift.thm2.appendix.derivation", "fedshift.eq29_eq30", "fedshift.cond31_32.derivation",
                          "fedshift.example_4_3", "fedshift.thm2.appendix.instances")


def _algebra_control(session):
    """Every row the appendix form decides, with the printed eq. (12) in place of eq. (30) and the example's
    threshold read inverted (m^t/m^(t+1) = 4/3, i.e. m^(t+1) = (3/4) m^t)."""
    rows = _algebra_rows(eq12_as_appendix(), sp.Rational(3, 4))
    return [r for r in rows if r.id in _APPENDIX_ALGEBRA_ROWS]


@check("fedshift.algebra", PAPER, "symbolic", records=("fedshift.thm2", "fedshift.thm2.appendix", "fedshift.cond31_32",
                                                       "fedshift.example_4_3"), cost="symbolic",
       control=Control("the printed eq. (12) in place of the appendix form eq. (30) (derivation, eq. (29), the "
                       "factorisation behind (31)/(32), the exact instances) and the 50/50 threshold read inverted "
                       "(3/4 for 4/3): each of these rows must be violated", _algebra_control))
def algebra(session):
    """Theorem 2 and conditions (31)/(32) from the definitions (eq. 10, D = ||w^{t+1} - w^t||): eq. (12) as printed
    against its derivation (the misprint finding), the appendix form eq. (30), eq. (29), the factorisation behind
    (31)/(32), the 4/3 threshold of the 50/50 example, and exact rational instances."""
    return _algebra_rows(fedshift_records.THM2_APPENDIX, sp.Rational(4, 3))
