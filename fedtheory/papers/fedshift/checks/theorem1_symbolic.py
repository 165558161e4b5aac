"""Theorem 1's statement and proof, symbolically: the stated eps against the denominator the proof divides by, the
induction's constant and Lemma 1, the printings of the M-term, the stated rate."""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.checks import CheckResult, Control, Session, check, faster_order, rate_check
from fedtheory.sim import heterogeneous_least_squares
from fedtheory.theory import growth

from .. import records as fedshift_records
from .common import PAPER, exact_robustness

THM1_DEN_FINDING = "fedshift.thm1.denominator"  # 'eps > 0' does not keep the proof's denominator positive
THM1_DEN_CLASS = "false_as_stated"  # inside Thm 1's stated choice (eps > 0) the printed bound is negative


# Theorem 1's stated eps against the denominator D = (1 + 1/eps) beta mu - (tau + gamma)/eps - 1 the proof divides
# by (step (3) and upsilon, 004:467-478), at the stated beta = 2/mu; gamma = max{8L/mu, E} - 1 >= 7 since L >= mu.
GAMMA_MIN = 7


def _den_at_beta():
    R = fedshift_records
    return sp.simplify(R.THM1_DEN.subs(R.beta, R.BETA_CHOICE))


def _eps_needed():
    """The boundary of fedshift.thm1.rederived's condition denominator_positive at beta = 2/mu, solved for eps."""
    R = fedshift_records
    cond = next(c for c in R.THM1_REDERIVED.conditions if c.name == "denominator_positive").relation
    sol = sp.solve(sp.Eq(cond.lhs, cond.rhs).subs(R.beta, R.BETA_CHOICE), R.eps)
    return sp.simplify(sol[0])


def _denominator_row(row_id, record, eps_lower, stated, *, finding="", finding_class=""):
    """Does every eps above ``eps_lower`` (the record's stated condition on eps) keep D > 0, for every tau >= 1 and
    gamma >= 7? D increases with eps (dD/deps = (tau + gamma - 2)/eps^2 > 0), so it does iff D(eps_lower) >= 0.
    Violated with an exact witness (tau, gamma, eps just above eps_lower where D <= 0); holds when D(eps_lower) >= 0
    is proved for all tau >= 1, gamma >= 7; inconclusive otherwise."""
    R = fedshift_records
    den = _den_at_beta()
    a, b = sp.symbols("a b", nonnegative=True)
    grid = {R.tau: 1 + a, R.gamma: GAMMA_MIN + b}
    increasing = bool(sp.simplify(sp.diff(den, R.eps).subs(grid) * R.eps**2).is_positive)
    points = []  # (tau, gamma, eps just above eps_lower, D there) on a small grid; a negative D first, then D = 0
    for t in range(1, 7):
        for g in range(GAMMA_MIN, GAMMA_MIN + 4):
            for d in (sp.Integer(1), sp.Rational(1, 10), sp.Rational(1, 100)):
                e = sp.nsimplify(eps_lower).subs({R.tau: t, R.gamma: g}) + d
                if e > 0:
                    points.append((t, g, e, den.subs({R.tau: t, R.gamma: g, R.eps: e})))
    witness = next((p for p in points if p[3] < 0), None) or next((p for p in points if p[3] == 0), None)
    head = f"stated: eps > {sp.sstr(eps_lower)} ({stated}); with beta = 2/mu, D = {sp.sstr(den)}"
    if witness is not None:
        t, g, e, v = witness
        what = ("< 0: step (3) of the proof fails, and the B_1 and M terms of the bound (whose denominators are D and "
                "D/(tau + gamma)) are negative" if v < 0 else "(zero): the bound is undefined")
        detail = f"{head}. The stated condition admits eps = {e}, tau = {t}, gamma = {g}, where D = {v} {what}"
        return CheckResult(row_id, PAPER, "symbolic", "violated", measured=float(v), bound=0.0, source=record.source,
                           detail=detail, conditions_failed=[f"denominator_positive: not implied by eps > {eps_lower}"],
                           finding=finding, finding_class=finding_class)
    at_lower = sp.simplify(den.subs(R.eps, eps_lower).subs(grid))
    ok = increasing and bool(at_lower.is_nonnegative)
    detail = (f"{head}. D increases with eps and D(eps = {sp.sstr(eps_lower)}) = {sp.sstr(at_lower)} "
              f"(tau = 1 + a, gamma = 7 + b, a, b >= 0): D > 0 at every admissible eps" if ok else
              f"{head}. Could not decide the sign of D at eps = {sp.sstr(eps_lower)}: {sp.sstr(at_lower)}")
    return CheckResult(row_id, PAPER, "symbolic", "holds" if ok else "inconclusive", source=record.source,
                       detail=detail)


def _denominator_robustness():
    """The witness (tau = 1, gamma = 7, eps = 1) with each free choice swept: eps (the statement's 'eps > 0'), gamma
    (>= 7 by the stated choice), tau (the horizon). D = 1 + (2 - tau - gamma)/eps at beta = 2/mu."""
    from fedtheory.checks import robustness, sweep

    R = fedshift_records
    den = _den_at_beta()

    def neg(**at):
        point = {"tau": 1, "gamma": GAMMA_MIN, "eps": 1, **at}
        v = float(den.subs({R.tau: point["tau"], R.gamma: point["gamma"], R.eps: point["eps"]}))
        return v < 0, -v

    return robustness(5.0, "D = -5 at eps = 1, tau = 1, gamma = 7 (D < 0 for every eps < tau + gamma - 2)", [
        sweep("eps", 1.0, (0.1, 0.5, 0.9, 1.1, 2, 4, 5.5, 5.9, 6.1, 10), lambda e: neg(eps=e),
              kind="a constant the statement leaves free ('eps > 0')"),
        sweep("gamma", 7.0, (7.7, 8, 10, 20, 100), lambda g: neg(gamma=g), kind="the stated choice max{8L/mu, E} - 1"),
        sweep("tau", 1.0, (1.1, 2, 5, 10, 100, 1000), lambda t: neg(tau=t), kind="the horizon")])


def _m_term_note():
    R = fedshift_records
    m_term = (R.L / 2 * R.B2 * R.M / ((1 + 1 / R.eps) * R.beta * R.mu / (R.tau + R.gamma) - 1 / R.eps
                                      - 1 / (R.tau + R.gamma))).subs(R.beta, R.BETA_CHOICE)
    lim = sp.simplify(sp.limit(m_term, R.tau, sp.oo))
    grow = growth(sp.simplify(R.THM1_REDERIVED.expanded(m_term).subs(R.eps, 2 * (R.tau + R.gamma))), R.tau, ())
    return (f"At fixed eps the M-term tends to {lim} < 0 as tau grows (the appendix's own -eps L B2 M/2, 004:497). "
            f"With eps = 2 (tau + gamma) (admissible for all tau) the M-term grows like tau^{grow.t_power}: the bound "
            "vanishes only if M = 0.")


@check("fedshift.thm1.denominator", PAPER, "symbolic", records=("fedshift.thm1", "fedshift.thm1.rederived"),
       cost="symbolic",
       control=Control("fedshift.thm1.rederived's condition on eps taken at the first step of the induction only "
                       "(tau = 1: eps > gamma - 1): the denominator must then vanish or turn negative at a later tau",
                       lambda s: [_denominator_row("fedshift.thm1.rederived.denominator",
                                                   fedshift_records.THM1_REDERIVED,
                                                   _eps_needed().subs(fedshift_records.tau, 1),
                                                   "the rederived condition at tau = 1 only (the control)")]))
def thm1_denominator(session):
    """The stated condition on eps against the denominator the proof divides by: Theorem 1 as printed ('eps > 0',
    004:211; the finding) and as re-derived (eps > tau + gamma - 2)."""
    printed = _denominator_row("fedshift.thm1.denominator", fedshift_records.THM1, sp.Integer(0),
                               "Thm 1 as printed, 004:211: 'epsilon > 0'", finding=THM1_DEN_FINDING,
                               finding_class=THM1_DEN_CLASS)
    printed.detail += ". " + _m_term_note()
    if printed.verdict == "violated":
        printed.extra["robustness"] = _denominator_robustness()
    needed = _denominator_row("fedshift.thm1.rederived.denominator", fedshift_records.THM1_REDERIVED, _eps_needed(),
                              "fedshift.thm1.rederived's condition denominator_positive, solved for eps")
    return [printed, needed]


LEMMA1_FINDING = "fedshift.lemma1_misprint"  # Lemma 1 prints w_k^* where its use (Lemma 3) and its source need w_k^tau


def _induction_row(numerator=None, denominator=None):
    """The induction of Theorem 1's proof (004:467-480): its constant upsilon (fedshift.upsilon) against the induction
    variable tau. Constant in tau: holds. Non-decreasing where its denominator D(tau) is positive: the step 'Delta_tau
    <= upsilon/(tau+gamma) => Delta_{tau+1} <= upsilon/(tau+gamma+1)' proves Delta_tau <= upsilon(tau)/(tau+gamma) only
    because upsilon(tau) <= upsilon(tau+1), which the proof does not say: proof_step_loose (rule 4: a loose step is not
    a false theorem; fedshift.thm1.rederived reads the theorem at a fixed horizon). Decreasing: the induction does not
    go through as written (violated, an erratum of the proof). numerator, denominator: upsilon's first entry (default
    004:467's; the control passes another)."""
    R = fedshift_records
    num_e = R.B1 * R.beta**2 + R.B2 * R.M * (R.tau + R.gamma) ** 2 if numerator is None else numerator
    den_e = R.THM1_DEN if denominator is None else denominator
    first = num_e / den_e
    d = sp.Symbol("D", positive=True)  # D(tau) > 0 where the bracket of step (3) can be made <= 0
    is_den = sp.simplify(den_e - R.THM1_DEN) == 0
    # d/dtau (N/Q) = (N' Q - N Q')/Q^2: the sign of N' Q - N Q', with Q read as D(tau) > 0 where Q is D(tau)
    num_d = sp.expand(sp.diff(num_e, R.tau) * (d if is_den else den_e) - num_e * sp.diff(den_e, R.tau))
    if num_d == 0:
        sign = "constant"
    elif num_d.is_nonnegative:
        sign = "increasing"
    elif num_d.is_nonpositive:
        sign = "decreasing"
    else:
        sign = "undecided"
    verdict = {"constant": "holds", "increasing": "proof_step_loose", "decreasing": "violated",
               "undecided": "inconclusive"}[sign]
    detail = (f"004:467 defines upsilon = max{{{sp.sstr(first)}, (gamma+1) Delta1}} (with D(tau) = (1+1/eps) beta mu - "
              f"(tau+gamma)/eps - 1 its first entry's denominator); d/dtau of the first entry has the sign of "
              f"{sp.sstr(num_d)}" + (" (D = D(tau))" if is_den else "") + ": ")
    if sign == "increasing":
        detail += ("non-negative wherever D(tau) > 0 (positive unless B_1 = B_2 M = 0), so upsilon grows with the "
                   "induction variable. The induction (004:469-480: 'assuming Delta_tau <= upsilon/(tau+gamma) ... <= "
                   "upsilon/(tau+gamma+1) ... holds for all tau = 1, 2, ...') treats upsilon as a constant. It proves "
                   "Delta_tau <= upsilon(tau)/(tau+gamma) only because upsilon(tau) <= upsilon(tau+1), a step the "
                   "proof does not state; and through B_2 M (tau+gamma)^2 the bound it proves does not fall like 1/tau "
                   "when M > 0. A loose step of the proof, not a false theorem (rule 4; fedshift.thm1.rederived reads "
                   "upsilon at the horizon, the largest it takes; the condition D > 0 the step needs is "
                   "fedshift.thm1.denominator's finding): not counted")
    elif sign == "decreasing":
        detail += ("non-positive: upsilon shrinks as tau grows, so the step from tau to tau + 1 needs a "
                   "hypothesis the previous step did not give (upsilon(tau+1) < upsilon(tau)): the induction does not "
                   "go through as written")
    elif sign == "constant":
        detail += "upsilon does not depend on tau: the induction is valid as written"
    else:
        detail += "sympy could not decide its sign"
    return CheckResult("fedshift.thm1.induction_constant", PAPER, "symbolic", verdict, source=R.UPSILON.source,
                       quote=f"{R.SEED}:467-480 (App. A-D, the induction)", detail=detail,
                       finding="fedshift.thm1.induction" if verdict == "violated" else "",
                       finding_class="erratum" if verdict == "violated" else "",
                       extra={"upsilon_in_tau": sign, **({"robustness": exact_robustness(
                           "exact (a sign)", "the sign of d upsilon/d tau for every "
                                             "value of the constants where D > 0")}
                           if verdict == "violated" else {})})


def lemma1_optima_spread(seed: int) -> tuple[float, float]:
    """On the check's Theorem 1 problem (heterogeneous least squares, 10 clients): the smallest value Lemma 1's printed
    term sum_k p_k ||w_bar - w_k^*||^2 takes over every point w_bar (the weighted spread of the clients' optima, p_k =
    1/10), and its value at the start w^0. Both are > 0 while Lemma 3's bound 4 eta^2 (E-1)^2 G^2 is 0 at E = 1."""
    p = heterogeneous_least_squares(10, 10, 50, condition=3.0, random_state=seed + 3)
    opt = np.asarray(p.constants["w_star_clients"].value, float).reshape(p.n_clients, -1)
    wts = np.full(p.n_clients, 1.0 / p.n_clients)
    centre = wts @ opt
    spread = float(wts @ np.sum((opt - centre) ** 2, axis=1))
    w0 = Session(seed=seed).initial_point(p)
    return spread, float(wts @ np.sum((opt - w0) ** 2, axis=1))


def _lemma1_row(seed: int, printed=None, bounded=None):
    """Lemma 1 as printed (004:399; its proof 004:449) against its use in the proof of Theorem 1 (004:430-438: the term
    2 E[sum_k p_k ||w_bar - w_k||^2] is bounded by Lemma 3, 004:413, into B_1's (1+1/eps) 8 (E-1)^2 G^2): the quantity
    Lemma 1 prints and the one Lemma 3 bounds must be the same. printed, bounded: those quantities' symbols (the
    control swaps them)."""
    R = fedshift_records
    printed = R.dev_star if printed is None else printed
    bounded = R.dev_local if bounded is None else bounded
    same = printed == bounded
    spread, at_w0 = lemma1_optima_spread(seed)
    at_e1 = R.LEMMA3.expr.subs(R.E, 1)
    name = {R.dev_star: "E[sum_k p_k ||w_bar^tau - w_k^*||^2] (the clients' optima)",
            R.dev_local: "E[sum_k p_k ||w_bar^tau - w_k^tau||^2] (the clients' local models)"}
    detail = (f"Lemma 1 prints {name[printed]} (004:399; the proof's A_1 bound, 004:449, the same); the proof of "
              f"Theorem 1 bounds that term by Lemma 3 (004:413), which bounds {name[bounded]}: "
              + ("the same quantity" if same else
                 f"another quantity. At E = 1 Lemma 3's bound is {sp.sstr(at_e1)} (every step synchronises), while the "
                 f"printed term is at least the spread of the clients' optima, min over w_bar of sum_k p_k ||w_bar - "
                 f"w_k^*||^2 = {spread:.4g} on the check's Theorem 1 problem (heterogeneous least squares, 10 clients; "
                 f"{at_w0:.4g} at w^0): Lemma 3 cannot bound it. Li et al.'s Lemma 1 [57], which 004:449 cites for "
                 "A_1, has the local models w_k^tau: the printed w_k^* is an erratum of the lemma, and Theorem 1 "
                 "stands with the lemma as derived (fedshift.thm1.rederived's B_1). Not counted with it (explained in "
                 "fedshift.lemma1's note): 004:449 drops p_k, 004:461 writes ||1_P|| = P for ||1_P||^2 = P"))
    return CheckResult("fedshift.lemma1.printed", PAPER, "symbolic", "holds" if same else "violated",
                       source=R.LEMMA1_PRINTED.source, quote=R.LEMMA1_QUOTE, measured=spread, bound=float(at_e1),
                       params={"E": 1, "problem": "ls(d=10, condition=3), 10 clients"}, detail=detail,
                       finding="" if same else LEMMA1_FINDING, finding_class="" if same else "erratum",
                       extra={} if same else {"robustness": exact_robustness(
                           "exact (two different quantities)", "the printed symbol against the bounded one: no "
                           "constant, problem or horizon makes them the same")})


def _proof_control(session):
    R = fedshift_records
    return [_induction_row(R.B1 * R.beta**2 + R.B2 * R.M, R.tau + R.gamma),
            _lemma1_row(session.seed, printed=R.dev_local, bounded=R.dev_star)]


@check("fedshift.thm1.proof", PAPER, "symbolic", records=("fedshift.upsilon", "fedshift.lemma1", "fedshift.lemma3"),
       cost="symbolic",
       control=Control("upsilon's first entry replaced by (B_1 beta^2 + B_2 M)/(tau + gamma), which falls with tau "
                       "(the induction must then be reported not to go through), and Lemma 1's term and Lemma 3's "
                       "swapped (they must still be found to differ)", _proof_control))
def thm1_proof(session):
    """Theorem 1's proof against itself: the induction's constant upsilon against the induction variable (004:467-480),
    and Lemma 1's printed term against the one Lemma 3 bounds where the proof combines them (004:399, 413, 438)."""
    return [_induction_row(), _lemma1_row(session.seed)]


EQ20_FINDING = "fedshift.eq20_denominator"  # eq. (20)'s last line drops the 1/(tau+gamma) of its own line (4)


def _printing_rows(printed=None):
    """Theorem 1's M-term as the main text (004:215) and as eq. (20) (004:490) print it, each against the proof's line
    (4) (004:486), of which it claims to be the algebra: equal for every value, or the difference. printed: the
    (row id, source, expression) pairs to compare (a negative control passes a mutated one)."""
    R = fedshift_records
    printed = printed or (("fedshift.thm1.m_term", f"{R.SEED}, Thm 1 (main text, 004:215)", R.THM1_MAIN_M_TERM),
                          ("fedshift.thm1.eq20.m_term", f"{R.SEED}, App. A-D, eq. (20) (004:490)", R.EQ20_M_TERM))
    out = []
    for row_id, source, expr in printed:
        gap = sp.simplify(sp.together(expr - R.THM1_LINE4_M_TERM))
        ok = gap == 0
        ratio = sp.simplify(sp.together(expr / R.THM1_LINE4_M_TERM))
        main = row_id == "fedshift.thm1.m_term"
        out.append(CheckResult(row_id, PAPER, "symbolic", "holds" if ok else "violated", source=source,
                               finding="" if ok or main else EQ20_FINDING, finding_class="" if ok else "erratum",
                               extra={} if ok else {"robustness": exact_robustness(
                                   "exact (a symbolic difference)", "the printed line against the line before it, for "
                                   "every value of the constants: no free choice removes it")},
                               quote=R.THM1_EQ20.quote if not main else R.THM1_QUOTE,
                               detail=("equals the proof's line (4), (L/2)(1/(tau+gamma)) B_2 M "
                                       "(tau+gamma)^2/((1+1/eps) beta mu - (tau+gamma)/eps - 1), for every value"
                                       if ok else
                                       f"differs from the proof's line (4), of which it is the last step: printed / "
                                       f"line (4) = {sp.sstr(ratio)}, not 1" + (
                                           " (beta mu not divided by tau + gamma; where both denominators are positive "
                                           "and tau + gamma > 1, eq. (20)'s M-term is the smaller). The main text's "
                                           "second term (004:215) equals line (4): main text and appendix disagree, "
                                           "both encoded (fedshift.thm1, fedshift.thm1.eq20)"
                                           if expr is R.EQ20_M_TERM else ""))))
    return out


def _printing_control(session):
    R = fedshift_records
    mutated = R.L / 2 * R.B2 * R.M / ((1 + 1 / R.eps) * R.beta * R.mu / (R.tau + R.gamma) - 1 / R.eps)
    return _printing_rows((("fedshift.thm1.eq20.m_term", "control", mutated),))


@check("fedshift.thm1.printings", PAPER, "symbolic", records=("fedshift.thm1", "fedshift.thm1.eq20"), cost="symbolic",
       control=Control("the M-term with the last 1/(tau + gamma) of its denominator dropped, as eq. (20)'s row: it "
                       "must differ from line (4)", _printing_control))
def thm1_printings(session):
    """Theorem 1's M-term as printed in the main text and in eq. (20), each against the proof's line (4)."""
    return _printing_rows()


def _thm1_rate_control(session):
    rec = fedshift_records.THM1_RATE
    return [rate_check(rec, order=faster_order(rec))]


@check("fedshift.thm1.rate", PAPER, "symbolic", records=("fedshift.thm1.rate",), cost="symbolic",
       control=Control("the stated order one power of tau faster (O(1/tau^2)): the explicit bound must miss it",
                       _thm1_rate_control))
def thm1_rate(session):
    """Theorem 1's stated O(1/tau) when the weight mean M goes to 0 (004:183) against its explicit bound, term by term
    (the symbolic rate check of fedshift.thm1.rate)."""
    return [rate_check(fedshift_records.THM1_RATE)]
