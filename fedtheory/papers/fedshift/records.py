"""FedShift (Seo, Kim, Rong): weight shifting for mixed-precision aggregation; divergence and convergence.

Source: ``004_319ac838b1cb3f8f.txt`` ("004" below), HTML-to-text with the LaTeX of every formula.
The LaTeX was read, not the rendered glyphs. Main text and appendix are both present.

Notation (004 Sec. IV-A, Table IV): K selected clients per round, I of them inferior (quantized),
S = K - I superior; P weights in a layer; m^{t+1} the mean of a layer of the aggregate before the
shift (eq. 8), m^t the mean of the model the round started from; w_hat^{t+1} = w^{t+1} - (I/K)
m^{t+1} 1_P (eq. 10); alpha = I/N in the convergence analysis (full participation, K = N).

Reading decisions:
* Theorem 2 is printed twice, differently. Main text eq. (12):
    D_FA^2 - D_FS^2 = (IP/K) ((K+S)/K (m^{t+1})^2 - 2 m^t / (m^{t+1})^2),
  the appendix (eqs. 27-30) derives
    D_FA^2 - D_FS^2 = (2IP/K) m^{t+1}(m^{t+1} - m^t) - P (I/K m^{t+1})^2
                    = (IP/K) ((m^{t+1})^2 (2 - I/K) - 2 m^{t+1} m^t),
  and 2 - I/K = (K+S)/K. The two differ in the last term: m^t/(m^{t+1})^2 versus m^{t+1} m^t (eq. 12
  is not even homogeneous in the weights). Both are encoded; the checks show which one holds.
  The derivation is exact for any base aggregate (it only uses 1' (w^{t+1} - w^t) = P (m^{t+1} - m^t)),
  provided m^t is the mean of the model the round started from (for a FedShift run, the shifted
  w_hat^t, not the pre-shift m^t of eq. (8)). Per layer the identity holds block by block; D^2 sums
  over layers.
* Conditions (31)/(32) follow from (30) for either sign of m^{t+1}:
  (30) = 2 (IP/K) (m^{t+1})^2 ((K+S)/(2K) - m^t/m^{t+1}), so with I >= 1 and m^{t+1} != 0 the sign of
  D_FA^2 - D_FS^2 is that of (K+S)/(2K) - m^t/m^{t+1}. The 50/50 example (S = K/2) gives 3/4, i.e.
  the threshold m^{t+1} = (4/3) m^t for m^{t+1} > 0 (for m^{t+1} < 0 the inequality on m^{t+1} flips).
* Eq. (11) m_hat^{t+1} = (S/K) m^{t+1} holds for eq. (10); eq. (9) (shifting each inferior client,
  then the plain 1/K mean) equals eq. (10) only with equal aggregation weights (Algorithm 2 line 17
  writes p_k, line 19 |I^t|/K).
* Theorem 1 (main text, and App. A eq. (20)) is encoded twice: as printed (the choice beta = 2/mu,
  gamma = max{8L/mu, E} - 1 substituted; the only condition on epsilon is epsilon > 0), and as the
  appendix proof supports it (fedshift.thm1.rederived). The proof's induction (App. A-D) needs
      D(tau) = (1 + 1/eps) beta mu - (tau + gamma)/eps - 1 > 0
  (step (3) multiplies by it; upsilon is defined through it). With beta = 2/mu this is
  eps > tau + gamma - 2 >= tau + 5: epsilon must grow with the horizon, and for a fixed epsilon the
  printed bound turns negative (the appendix's own limit -eps L B_2 M / 2 < 0). The proof also uses a
  horizon-dependent upsilon; read as a fixed-horizon statement (upsilon evaluated at tau, the
  hardest step), the printed right side is valid whenever D(tau) > 0.
* B_1, B_2 (App. A-D): the proof goes through with
      B_1 = (1 + 1/eps)(6 L Gamma + 8 (E-1)^2 G^2) + sum_k p_k^2 sigma_k^2,  B_2 = (1 + eps) P alpha^2,
  where Gamma = F* - sum_k p_k F_k*, P the number of weights, alpha = I/N, and M bounds E[(m)^2] of
  every layer. The printed B_1 has sum_k p_k sigma_k^2 (Lemma 2 gives p_k^2): larger, so still valid.
  "||1_P|| = P" in App. A-D is a typo for ||1_P||^2 = P; B_2 uses the latter. Lemma 1 as printed has
  ||w_bar - w_k^*||^2 where Li et al.'s Lemma 1 (and Lemma 3 here) has ||w_bar - w_k^tau||^2.
  "E[Q_2] = 0" in App. A-C holds when m^{t+1} is the mean of the expected model (Table IV); for the
  algorithm's own m^{t+1} (which contains the gradient noise) the cross term is
  -2 eta^2 alpha E[(1'(g - g_bar))^2]/P <= 0, so Lemma 1 still holds.
* The proof applies the shift at every local step tau ("w_bar^{tau+1} = w_bar^tau - eta g - alpha m 1"),
  the algorithm only at synchronisation; at other steps the recursion holds a fortiori.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
import sympy as sp

from fedtheory.theory import (
    Bound,
    Claim,
    ClaimOutcome,
    Condition,
    Definition,
    Evaluator,
    Identity,
    Order,
    OrderStatement,
    SymbolSet,
    Units,
    register,
)

PAPER = "fedshift"
SEED = "004_319ac838b1cb3f8f.txt"
LI2020 = "Li, Huang, Yang, Wang, Zhang, ICLR 2020, Thm 1 (seeds/README.md)"

S_ = SymbolSet(PAPER, strict=True)
_nonneg, _real = sp.Interval(0, sp.oo), sp.Reals
# Theorem 2 / eq. (11)
I = S_.add("I", "inferior clients among the K selected", _nonneg, dim="1")
S = S_.add("S", "superior clients among the K selected (S = K - I)", _nonneg, dim="1")
K = S_.add("K", "clients selected per round", sp.Interval(1, sp.oo), dim="1")
P = S_.add("P", "number of weights (of the layer, for Thm 2; of the model, for Thm 1)", sp.Interval(1, sp.oo), dim="1")
m_t = S_.add("m_t", "m^t: mean of the layer of the model the round started from", _real, dim="w")
m_t1 = S_.add("m_t1", "m^{t+1}: mean of the layer of the aggregate before the shift (eq. 8)", _real, dim="w")
# Theorem 1
L = S_.add("L", "smoothness of each F_k (Assumption 1)", dim="f/w^2")
mu = S_.add("mu", "strong convexity of each F_k (Assumption 2)", dim="f/w^2")
E = S_.add("E", "local steps per round", sp.Interval(1, sp.oo), dim="1")
tau = S_.add("tau", "step counter (the global model after t rounds is w_bar at tau = t E + 1)",
             sp.Interval(1, sp.oo), dim="1")
eps, beta, gamma, Gamma, G, sum_p_sigma2, sum_p2_sigma2, alpha, M, Delta1, B1, B2 = S_.table("""
    eps            1        positive     epsilon > 0 of the Young inequality (eq. 17-18)
    beta           w^2/f    positive     step-size constant: eta_tau = beta/(tau + gamma)
    gamma          1        positive     step-size offset: eta_tau = beta/(tau + gamma)
    Gamma          f        nonnegative  heterogeneity F* - sum_k p_k F_k* (Li et al.)
    G              f/w      nonnegative  E||grad F_k(w, xi)||^2 <= G^2 (Assumption 4)
    sum_p_sigma2   f^2/w^2  nonnegative  sum_k p_k sigma_k^2 (as printed in B_1)
    sum_p2_sigma2  f^2/w^2  nonnegative  sum_k p_k^2 sigma_k^2 (Lemma 2)
    alpha          1        nonnegative  I/N, share of inferior clients (full participation; at most 1)
    M              w^2      nonnegative  E[(m^tau)^2] <= M for every layer and step (Assumption 5)
    Delta1         w^2      nonnegative  E||w_bar^1 - w*||^2 (the start)
    B1             f^2/w^2  nonnegative  B_1 (App. A-D)
    B2             1        nonnegative  B_2 (App. A-D)
""")
SYMBOLS = S_


@dataclass
class ExactIdentity(Identity):
    """An identity whose right side is a sympy expression: ``lhs`` (a measured quantity) == ``expr``."""

    lhs: str = ""
    expr: sp.Expr = sp.S.Zero
    conditions: tuple[Condition, ...] = ()

    def evaluate(self, values: Mapping[str, Any]) -> np.ndarray:
        ev = self.__dict__.get("_ev")
        if ev is None:
            ev = self.__dict__["_ev"] = Evaluator(self.expr, self.symbols, self.id)
        return ev(values)

    def explain(self) -> str:
        lines = [f"{self.id}  [identity]  {self.title}", f"source: {self.source}",
                 f"statement: {self.lhs_text} = {self.rhs_text}", f"encoded: {self.lhs} = {sp.sstr(self.expr)}"]
        lines += [f"  {c.name}: {sp.sstr(c.relation)}" for c in self.conditions]
        return "\n".join(lines + ([f"note: {self.note}"] if self.note else []))


# ------------------------------------------------------------------------------------ eq. (11), Theorem 2

# the identities' residual tolerance, relative (to D_FA^2 + D_FS^2; to max(|m|, RMS(w)) for eq. 11)
IDENTITY_TOL = 1e-10
EQ11 = ExactIdentity(
    id="fedshift.eq11", paper=PAPER, title="Mean of the shifted model", source=f"{SEED}, Sec. IV-A, eq. (11)",
    symbols=S_, lhs_text="m_hat^{t+1}", rhs_text="(S/K) m^{t+1}", lhs="shift_m_hat", expr=S / K * m_t1,
    note="Exact for eq. (10) (the aggregate shifted by (I/K) "
         "m^{t+1}); evaluated per layer with S = K - I of the round.",
    tolerance=IDENTITY_TOL)

THM2_MAIN_EXPR = I * P / K * ((K + S) / K * m_t1**2 - 2 * m_t / m_t1**2)
THM2_APPENDIX_EXPR = I * P / K * (m_t1**2 * (2 - I / K) - 2 * m_t1 * m_t)
EQ29_EXPR = 2 * I * P / K * m_t1 * (m_t1 - m_t) - P * (I / K * m_t1) ** 2
THM2_MAIN = ExactIdentity(
    id="fedshift.thm2", paper=PAPER, title="Theorem 2: divergence difference (main text, eq. 12)",
    source=f"{SEED}, Sec. IV-B, Thm 2, eq. (12)", symbols=S_,
    lhs_text="D_FA^2 - D_FS^2", rhs_text="(IP/K)((K+S)/K (m^{t+1})^2 - 2 m^t/(m^{t+1})^2)",
    units=Units(lhs="w^2", alternative="fedshift.thm2.appendix", finding="fedshift.eq12_misprint"),
    lhs="D_FA^2 - D_FS^2", expr=THM2_MAIN_EXPR,
    conditions=(Condition("S_is_K_minus_I", sp.Eq(S, K - I), f"{SEED}, Sec. IV-A"),),
    note="As printed: LaTeX '2\\frac{m^{t}}{(m^{t+1})^{2}}'. It differs from the appendix's eq. (30) "
         "(2 m^{t+1} m^t): see fedshift.thm2.appendix. Undefined at m^{t+1} = 0.",
    tolerance=IDENTITY_TOL)
THM2_APPENDIX = ExactIdentity(
    id="fedshift.thm2.appendix", paper=PAPER, title="Theorem 2 as derived in Appendix B (eqs. 29-30)",
    source=f"{SEED}, App. B-A, eqs. (25)-(30)", symbols=S_,
    lhs_text="D_FA^2 - D_FS^2", rhs_text="(IP/K)((m^{t+1})^2 (2 - I/K) - 2 m^{t+1} m^t)",
    units=Units(lhs="w^2"),
    lhs="D_FA^2 - D_FS^2", expr=THM2_APPENDIX_EXPR,
    note="Eq. (30); eq. (29) is the same before collecting terms (checked symbolically). Re-derived: "
         "D_FS^2 = ||a - (I/K) m^{t+1} 1||^2 with a = w^{t+1} - w^t and 1'a = P (m^{t+1} - m^t), per layer.",
    tolerance=IDENTITY_TOL)

COND31_MARGIN = (K + S) / (2 * K) - m_t / m_t1


def _sign_rule(m, rel_tol=1e-9):
    """Over the measured rounds with I >= 1, m^{t+1} != 0 and |D_FA^2 - D_FS^2| > rel_tol (D_FA^2 + D_FS^2):
    supported when sign(D_FA^2 - D_FS^2) = sign((K+S)/(2K) - m^t/m^{t+1}) in every one of them (conditions
    (31)/(32)); refuted when some round disagrees; inconclusive when no round qualifies."""
    fa, fs = np.ravel(m["D_FA2"]).astype(float), np.ravel(m["D_FS2"]).astype(float)
    mt, mt1 = np.ravel(m["m_t"]).astype(float), np.ravel(m["m_t1"]).astype(float)
    Ii, Kk = np.ravel(m["I"]).astype(float), np.ravel(m["K"]).astype(float)
    ok = np.isfinite(fa) & np.isfinite(fs) & (Ii >= 1) & (mt1 != 0) & (np.abs(fa - fs) > rel_tol * (fa + fs))
    if not ok.any():
        return ClaimOutcome(None, "no round with an inferior client, m^{t+1} != 0 and a non-negligible difference", 0)
    margin = _COND31(mt[ok], mt1[ok], Ii[ok], Kk[ok])
    agree = np.sign(fa[ok] - fs[ok]) == np.sign(margin)
    n, a = int(ok.sum()), int(agree.sum())
    smaller = int(np.sum(fa[ok] > fs[ok]))
    return ClaimOutcome(a == n, f"sign rule right in {a} of {n} rounds; D_FS < D_FA in {smaller} of them", a / n)


_cond31_ev = None


def _COND31(mt, mt1, Ii, Kk):
    global _cond31_ev
    if _cond31_ev is None:
        _cond31_ev = Evaluator(COND31_MARGIN, S_, "fedshift.cond31_32")
    return _cond31_ev({"m_t": mt, "m_t1": mt1, "K": Kk, "S": Kk - Ii})


COND31_32 = Claim(
    id="fedshift.cond31_32", quote="004_319ac838b1cb3f8f.txt:536-542: '1. Condition that FedShift "
                                   "divergence is smaller: D_FA - D_FS > 0 ... (K+S)/(2K) > m^t/m^{t+1} "
                                   "(31) ... 2. Condition that FedShift divergence is greater: D_FA - "
                                   "D_FS < 0 ... (K+S)/(2K) < m^t/m^{t+1} (32)' (LaTeX alt text)", paper=PAPER,
    title="Conditions (31)/(32): when FedShift's round diverges less",
    source=f"{SEED}, App. B-A, conditions (31) and (32)", symbols=S_,
    statement="D_FA > D_FS iff (K+S)/(2K) > m^t/m^{t+1}; D_FA < D_FS iff (K+S)/(2K) < m^t/m^{t+1}",
    predicate=_sign_rule, parameters={"rel_tol": 1e-9}, measurements=("D_FA2", "D_FS2", "m_t", "m_t1", "I", "K"),
    note="Derived from eq. (30) (not from eq. (12)); valid for either sign of m^{t+1} when I >= 1 (module docstring). "
         "Checked per round on single-layer runs (with several layers the sign of the sum is not a per-layer rule).")
EXAMPLE_4_3 = Claim(
    id="fedshift.example_4_3", quote="004_319ac838b1cb3f8f.txt:544: 'Assume m^{t+1} > 0 and inferior and superior "
                                     "clients are 50% and 50%; then, when m^{t+1} > (4/3) m^t holds, the divergence of "
                                     "Fedshift's update is smaller than that of FedAvg's update.' (LaTeX alt text)",
    paper=PAPER, title="Worked example: 50/50 split, threshold m^{t+1} = (4/3) m^t",
    source=f"{SEED}, App. B-A (after condition (32))", symbols=S_,
    statement="with m^{t+1} > 0 and I = S = K/2, D_FS < D_FA iff m^{t+1} > (4/3) m^t",
    measurements=(), note="Checked symbolically: solve (K+S)/(2K) = m^t/m^{t+1} at S = K/2.")
register(EQ11, THM2_MAIN, THM2_APPENDIX, COND31_32, EXAMPLE_4_3)

# ------------------------------------------------------------------------------------ Theorem 1

B1_PRINTED = Definition(
    "fedshift.B1", PAPER, B1, (1 + 1 / eps) * 6 * L * Gamma + (1 + 1 / eps) * 8 * (E - 1) ** 2 * G**2 + sum_p_sigma2,
    f"{SEED}, App. A-D (after Lemma 1)",
    "As printed: sum_k p_k sigma_k^2. Lemma 2 (Li et al.'s Lemma 2) gives sum_k p_k^2 sigma_k^2 <= the printed sum.",
    title="B_1 (as printed)")
B1_NEEDED = Definition(
    "fedshift.B1.needed", PAPER, B1, (1 + 1 / eps) * (6 * L * Gamma + 8 * (E - 1) ** 2 * G**2) + sum_p2_sigma2,
    f"{SEED}, App. A-B/A-C, Lemma 1 with Lemmas 2-3 ({LI2020}: B = sum p_k^2 sigma_k^2 + 6 L Gamma + 8 (E-1)^2 G^2)",
    "The smallest B_1 the proof needs: (1+1/eps) multiplies Li et al.'s 6 L Gamma + 8 (E-1)^2 G^2 (Lemma 1's "
    "bracket, with Lemma 3's 4 eta^2 (E-1)^2 G^2 times 2); the noise term eta^2 E||g - g_bar||^2 stays outside.",
    title="B_1 (what the proof needs)")
B2_DEF = Definition(
    "fedshift.B2", PAPER, B2, (1 + eps) * P * alpha**2, f"{SEED}, App. A-D",
    "(1+eps) ||1_P||^2 alpha^2 with ||1_P||^2 = P (the text's '||1_P|| = P' is a typo; the printed B_2 uses P). "
    "With per-layer shifts, ||sum_l alpha m_l 1_{P_l}||^2 <= alpha^2 P max_l m_l^2, so M must bound every layer's "
    "E[m^2].", title="B_2")
register(B1_PRINTED, B1_NEEDED, B2_DEF)

THM1_DEN = (1 + 1 / eps) * beta * mu - (tau + gamma) / eps - 1
THM1_EXPR = (L / 2 / (tau + gamma) * (B1 * beta**2 / THM1_DEN + (gamma + 1) * Delta1)
             + L / 2 * B2 * M / ((1 + 1 / eps) * beta * mu / (tau + gamma) - 1 / eps - 1 / (tau + gamma)))
BETA_CHOICE = 2 / mu
GAMMA_CHOICE = sp.Max(8 * L / mu, E) - 1
THM1_PRINTED_EXPR = THM1_EXPR.subs({beta: BETA_CHOICE, gamma: GAMMA_CHOICE})

_thm1_requires = {"full_participation": True, "lr_schedule": "inverse_step"}
THM1_QUOTE = (f"{SEED}:211: 'for the choice of beta = 2/mu, gamma = max{{8L/mu, E}} - 1, epsilon > 0, then eta_tau = "
              "(2/mu) 1/(gamma + tau), the error after tau local steps of update with full client participation "
              "satisfies E[F(w_bar_tau)] - F* <= ...' (LaTeX alt text)")
THM1 = Bound(
    id="fedshift.thm1", paper=PAPER, title="Theorem 1: convergence of FedShift (as printed)",
    source=f"{SEED}, Sec. IV-B, Thm 1; App. A-D, eq. (20)", symbols=S_,
    assumptions=("L_smooth", "strongly_convex_clients(mu)", "bounded_variance", "bounded_gradient(G)",
                 "bounded_weight_mean(M)"),
    units=Units(lhs="f"),
    lhs="opt_error_tau", lhs_description="E[F(w_bar_tau)] - F* (the global model after t rounds at tau = t E + 1)",
    lhs_kind="opt_error", quote=THM1_QUOTE,
    expr=THM1_PRINTED_EXPR, definitions=(B1_PRINTED, B2_DEF), requires=_thm1_requires,
    note="The printed statement: beta = 2/mu, gamma = max{8L/mu, E} - 1, eta_tau = (2/mu)/(gamma + tau), 'eps > 0', "
         "full participation. No condition keeps the denominators positive; see fedshift.thm1.rederived.")
THM1_CONDITIONS = (
    Condition("beta_gt_1_over_mu", beta * mu > 1, f"{SEED}, App. A-D ('for some beta > 1/mu')"),
    Condition("eta1_le_1_over_4L", 4 * L * beta <= 1 + gamma, f"{SEED}, App. A-D, Lemma 1 (eta_1 <= 1/(4L))"),
    Condition("eta_halves_in_E_steps", E <= 1 + gamma, f"{SEED}, Lemma 3 (eta_tau <= 2 eta_{{tau+E}} for tau >= 1)"),
    Condition("denominator_positive", (tau + gamma) / eps + 1 < (1 + 1 / eps) * beta * mu,
              f"{SEED}, App. A-D, step (3) and the definition of upsilon (derived)",
              "(1+1/eps) beta mu - (tau+gamma)/eps - 1 > 0; with beta = 2/mu: eps > tau + gamma - 2"),
)
THM1_REDERIVED = replace(  # the same statement with the B_1 and the condition the proof needs
    THM1, id="fedshift.thm1.rederived", title="Theorem 1 as the appendix proof supports it",
    source=f"{SEED}, App. A-B to A-D (Lemma 1, the induction, eq. (20)); {LI2020}",
    quote=f"{SEED}:486-490: eq. (20), the last display of the proof of Theorem 1 (App. A-D)",
    expr=THM1_EXPR, definitions=(B1_NEEDED, B2_DEF), conditions=THM1_CONDITIONS,
    units=Units(lhs="f"),
    note="Eq. (20) for any beta, gamma the proof allows, with the B_1 the proof needs and the condition that keeps "
         "the denominator positive at the horizon tau (so at every earlier step). Read as a fixed-horizon statement: "
         "upsilon at tau dominates the upsilon every earlier induction step needs.")
THM1_RATE = OrderStatement(
    id="fedshift.thm1.rate", paper=PAPER, title="Theorem 1: O(1/T) when the weight mean M goes to 0",
    source=f"{SEED}, Sec. IV-B ('when ... M goes to 0, FedShift converges ... O(1/T)') and App. A-D", symbols=S_,
    assumptions=THM1.assumptions, statement="E[F(w_bar_tau)] - F* = O(1/tau) when M = 0",
    order=Order(1 / tau, tau, {beta: BETA_CHOICE, eps: 2 * (tau + gamma)}, substitute={M: 0},
                      source=f"{SEED}, Sec. IV-B"),
    explicit=THM1_REDERIVED,
    note="The paper fixes no rule for eps; since the bound needs eps > tau + gamma - 2, eps = 2 (tau + gamma) is "
         "used (our choice). With M > 0 the M-term under any admissible eps grows like tau^2 (see the "
         "fedshift.thm1.denominator check): the O(1/T) is a statement about M = 0 only.")
# Theorem 1's M-term, printed three times. The proof's line (4) of App. A-D (004:486) gives
#   (L/2) (1/(tau+gamma)) B_2 M (tau+gamma)^2 / ((1+1/eps) beta mu - (tau+gamma)/eps - 1),
# which is (L/2) B_2 M / ((1+1/eps) beta mu/(tau+gamma) - 1/eps - 1/(tau+gamma)) after dividing by (tau+gamma): the main
# text's second term (004:215, THM1_EXPR). The appendix's eq. (20) (004:490, its last line) prints
# (L/2) B_2 M / ((1+1/eps) beta mu - 1/eps - 1/(tau+gamma)): beta mu is no longer divided by (tau+gamma).
THM1_LINE4_M_TERM = (L / 2 / (tau + gamma) * B2 * M * (tau + gamma) ** 2
                     / ((1 + 1 / eps) * beta * mu - (tau + gamma) / eps - 1))
THM1_MAIN_M_TERM = L / 2 * B2 * M / ((1 + 1 / eps) * beta * mu / (tau + gamma) - 1 / eps - 1 / (tau + gamma))
EQ20_M_TERM = L / 2 * B2 * M / ((1 + 1 / eps) * beta * mu - 1 / eps - 1 / (tau + gamma))
EQ20_EXPR = L / 2 / (tau + gamma) * (B1 * beta**2 / THM1_DEN + (gamma + 1) * Delta1) + EQ20_M_TERM
THM1_EQ20 = replace(
    THM1_REDERIVED, id="fedshift.thm1.eq20", title="Theorem 1 as eq. (20) prints it (App. A-D)",
    source=f"{SEED}, App. A-D, eq. (20) (its last line, 004:490)",
    quote=f"{SEED}:490 (LaTeX alt text): '= L/2 1/(tau+gamma) (B_1 beta^2 / ((1+1/eps) beta mu - 1/eps (tau+gamma) - "
          "1) + (gamma+1) Delta_1) + L/2 B_2 M / ((1+1/eps) beta mu - 1/eps - 1/(tau+gamma)) (20)'",
    expr=EQ20_EXPR, units=Units(lhs="f"),
    note="The appendix's last line of eq. (20): the M-term's denominator (1+1/eps) beta mu - 1/eps - 1/(tau+gamma) "
         "differs from the line before it (line (4), 004:486), whose division by (tau+gamma) gives the main text's "
         "(1+1/eps) beta mu/(tau+gamma) - 1/eps - 1/(tau+gamma) (004:215). Main text and appendix disagree; both are "
         "encoded (fedshift.thm1 is the main text's). Eq. (20)'s denominator is the larger by (1+1/eps) beta mu (1 - "
         "1/(tau+gamma)) > 0 for tau + gamma > 1: it prints a smaller M-term than its own derivation gives.")
register(THM1, THM1_REDERIVED, THM1_RATE, THM1_EQ20)

# ------------------------------------------------------------------------------------ the proof of Theorem 1 (issue 45)

upsilon, eta_t, Delta_t, Delta_next, dev_star, dev_local, var_g, m_sq = S_.table("""
    upsilon     w^2      nonnegative  the induction's constant upsilon (App. A-D, 004:467)
    eta_t       w^2/f    positive     the step eta_tau at step tau
    Delta_t     w^2      nonnegative  E||w_bar^tau - w*||^2
    Delta_next  w^2      nonnegative  E||w_bar^{tau+1} - w*||^2
    dev_star    w^2      nonnegative  E[sum_k p_k ||w_bar^tau - w_k^*||^2] (Lemma 1 as printed: the clients' optima)
    dev_local   w^2      nonnegative  E[sum_k p_k ||w_bar^tau - w_k^tau||^2] (Lemma 3: the clients' local models)
    var_g       f^2/w^2  nonnegative  E||g_tau - g_bar_tau||^2 (Lemma 2)
    m_sq        w^2      nonnegative  E[(m^{tau+1})^2]
""")
# upsilon as 004:467 defines it, at the step tau the induction is at: max{-(B_1 beta^2 + B_2 M (tau+gamma)^2)/
# (1 - (1+1/eps) beta mu + (tau+gamma)/eps), (gamma+1) Delta_1}; the first entry's denominator is -THM1_DEN.
UPSILON_FIRST = (B1 * beta**2 + B2 * M * (tau + gamma) ** 2) / THM1_DEN
UPSILON = Definition(
    "fedshift.upsilon", PAPER, upsilon, sp.Max(UPSILON_FIRST, (gamma + 1) * Delta1),
    f"{SEED}, App. A-D (004:467: 'upsilon = max{{-(B_1 beta^2 + B_2 M (tau+gamma)^2)/(1 - (1+1/eps) beta mu + "
    "(tau+gamma)/eps), (gamma+1) Delta_1}}')",
    "The constant of the induction 'Delta_tau <= upsilon/(tau+gamma) for all tau = 1, 2, ...' (004:469-480). Its first "
    "entry contains B_2 M (tau+gamma)^2 and, through its denominator, (tau+gamma)/eps: it depends on tau, the "
    "induction variable, which the proof treats as a constant. The step goes through as a fixed-horizon argument "
    "because upsilon is non-decreasing in tau where its denominator is positive (checked symbolically: "
    "fedshift.thm1.induction_constant), which the proof does not say; fedshift.thm1.rederived reads the theorem so.",
    title="upsilon, the induction's constant")
LEMMA1_QUOTE = (f"{SEED}:395-399 (Lemma 1, LaTeX alt text): 'E[||w_bar^{{tau+1}} - w*||^2] <= (1 + 1/eps)((1 - eta_tau "
                "mu) E[||w_bar^tau - w*||^2] + 6 L eta_tau^2 Gamma + 2 E[sum_k p_k ||w_bar^tau - w_k^*||^2]) + "
                "eta_tau^2 E[||g_tau - g_bar_tau||^2] + (1 + eps) ||1_P||^2 E[(alpha m^{{t+1}})^2]'")
LEMMA1_PRINTED = Bound(
    id="fedshift.lemma1", paper=PAPER, title="Lemma 1: one step of FedShift (as printed)",
    source=f"{SEED}, App. A-B, Lemma 1 (004:395-399); its proof App. A-C (004:449)", symbols=S_,
    assumptions=("L_smooth", "strongly_convex_clients(mu)"), units=Units(lhs="w^2"),
    lhs="dist2_next", lhs_kind="dist2", lhs_description="E||w_bar^{tau+1} - w*||^2",
    expr=((1 + 1 / eps) * ((1 - eta_t * mu) * Delta_t + 6 * L * eta_t**2 * Gamma + 2 * dev_star) + eta_t**2 * var_g
          + (1 + eps) * P * alpha**2 * m_sq),
    conditions=(Condition("eta_le_1_over_4L", 4 * L * eta_t <= 1, f"{SEED}, Lemma 1 ('eta_tau <= 1/(4L)')"),),
    quote=LEMMA1_QUOTE,
    note="As printed, the third term is the distance to the clients' OPTIMA w_k^* (004:399; the proof's A_1 bound at "
         "004:449 writes the same). The lemma it restates (Li et al. [57], Lemma 1) and the bound the proof of Theorem "
         "1 uses for this term (Lemma 3, 004:413, which bounds the distance to the clients' LOCAL MODELS w_k^tau by 4 "
         "eta_tau^2 (E-1)^2 G^2, whence B_1's (1+1/eps) 8 (E-1)^2 G^2 at 004:438) have w_k^tau: an erratum "
         "(fedshift.lemma1_misprint), checked by fedshift.thm1.proof. Two further slips of the same proof, explained "
         "here and not counted, since neither reaches a stated formula: 004:449 drops p_k (2 sum_k ||w_bar - w_k||^2; "
         "the lemma's statement keeps it, and with sum_k p_k = 1 the statement's form is the one Li et al. derive); "
         "004:461 writes ||1_P|| = P for ||1_P||^2 = P (B_2 = (1+eps) P alpha^2 at 004:439 uses the latter, so B_2 is "
         "right). Lemma 1 is not run: Theorem 1 is checked as a whole (fedshift.thm1, with the B_1 the proof needs).")
LEMMA3 = Bound(
    id="fedshift.lemma3", paper=PAPER, title="Lemma 3 (Li et al.'s Lemma 3): the clients' drift from the average",
    source=f"{SEED}, App. A-B, Lemma 3 (004:405-406, 413)", symbols=S_,
    assumptions=("bounded_gradient(G)",), units=Units(lhs="w^2"),
    lhs="client_drift", lhs_kind="divergence", lhs_description="E[sum_k p_k ||w_bar^tau - w_k^tau||^2]",
    expr=4 * eta_t**2 * (E - 1) ** 2 * G**2,
    quote=(f"{SEED}:413 (LaTeX alt text): 'E[sum_k p_k ||w_bar^tau - w_k^tau||^2] <= 4 eta_tau^2 (E-1)^2 G^2'"),
    note="Recalled from Li et al. (004:400: 'We recall Lemma 2 and 3 of [57]'). At E = 1 every step is a "
         "synchronisation: w_k^tau = w_bar^tau and the bound is 0.")
register(UPSILON, LEMMA1_PRINTED, LEMMA3)

# ------------------------------------------------------------------------------------ claims
#
# The claims below are decided from per-seed values under the checks' statistics policy (``stats``: Student-t over
# the seeds, Bonferroni over the comparisons of the claim and the settings the check decides it on, the record's
# min_effect, at least 10 seeds to refute; docs/verdict-rules.md). Every comparison is paired over seeds (the runs
# with and without the shift share seeds, hence client sampling and noise). A difference within rel_tol of the
# compared scale is rounding level (the shift of a zero-mean model), never evidence either way.

MIN_EFFECT_NOTE = ("min_effect 0.01: the smallest relative difference the paper itself reports as an effect is Table "
                   "I's FedEF 32+4, 64.8 -> 65.5 (+1.1%, 004:279); a significant difference of that size against the "
                   "claim is one the paper's own yardstick would register.")


def _rounding(c, floor: float) -> bool:
    """The compared means differ by no more than ``floor`` (rounding level)."""
    return not abs(c.diff) > floor


def _reduces(key, sentence_word):
    def pred(m, stats, rel_tol=1e-6):
        base, shift = np.asarray(m[f"{key}_base"], float), np.asarray(m[f"{key}_shift"], float)
        c = stats.compare(base, shift, paired=True)  # diff = shift - base; the claim: below
        sb, ss = float(np.nanmean(base)), float(np.nanmean(shift))
        text = (f"mean over rounds and seeds: {ss:.4g} with shift vs {sb:.4g} without, paired difference "
                f"{c.text()}; relative effect {c.effect:.3g} (declared minimum {c.min_effect})")
        if "same_run_fraction" in m:
            text += f"; same-run D_FS < D_FA in {100 * float(m['same_run_fraction']):.0f}% of rounds"
        ratio = ss / sb if sb else None
        if _rounding(c, rel_tol * abs(sb)):
            return ClaimOutcome(None, text + "; the difference is at rounding level", ratio)
        if c.refutes("above"):
            return ClaimOutcome(False, text, ratio)
        if c.below and c.large:
            return ClaimOutcome(True, text, ratio)
        why = c.why_not("above") or (f"a reduction of {c.effect:.3g}, below the declared minimum effect: not what "
                                     f"'{sentence_word}' says" if c.below else "")
        return ClaimOutcome(None, text + (f"; {why}" if why else ""), ratio)
    pred.__doc__ = (f"Paired over seeds (same client sampling), the {key} of the FedShift run averaged over rounds "
                    "against the run without the shift (stats.compare): supported when it is significantly below and "
                    f"the reduction reaches the record's min_effect (the sentence says '{sentence_word}'); refuted "
                    "when it is significantly above by at least min_effect on at least 10 seeds; inconclusive "
                    "otherwise. Differences within rel_tol of the baseline are rounding level.")
    return pred


def _reduction_claim(key, sentence_word, *, note, **fields) -> Claim:
    """A claim that the shift reduces the measured ``key`` against the run without it: the predicate
    _reduces(key, sentence_word) on the measurements key_shift and key_base, min_effect 0.01 (MIN_EFFECT_NOTE)."""
    return Claim(paper=PAPER, symbols=S_, predicate=_reduces(key, sentence_word), parameters={"rel_tol": 1e-6},
                 measurements=(f"{key}_shift", f"{key}_base"), min_effect=0.01,
                 note=f"{note} Support needs the declared effect too: '{sentence_word}' is not a 0.1% reduction. "
                      + MIN_EFFECT_NOTE, **fields)


CLAIM_DIVERGENCE = _reduction_claim(
    "divergence", "effectively reduces",
    id="fedshift.claim.divergence", quote="004_319ac838b1cb3f8f.txt:310: 'Notably, as shown in the plot, FedShift "
                                          "effectively reduces the global model divergence across consecutive rounds "
                                          "compared to models without shift adjustments.'",
    title="FedShift reduces round-to-round divergence",
    source=f"{SEED}, Sec. V-B3 and Fig. 9 (top)",
    statement="||w^{t+1} - w^t|| is smaller with the shift than without, across rounds",
    note="Compared between runs with and without the shift on the same seeds (as Fig. 9 does); the same-run comparison "
         "D_FS vs D_FA of Theorem 2 is reported alongside.")
CLAIM_DRIFT = _reduction_claim(
    "drift", "significantly mitigates",
    id="fedshift.claim.drift", quote="004_319ac838b1cb3f8f.txt:312: 'Again, the application of FedShift significantly "
                                     "mitigates the client drift effect, offering more stable convergence compared to "
                                     "non-shifting algorithms.'", title="FedShift reduces client drift",
    source=f"{SEED}, Sec. V-B3 and Fig. 9 (bottom)",
    statement="the mean L2 distance of the selected local models to "
              "the previous global model is smaller with the shift",
    note="Distance of the models the server receives (after dequantization) to the global model of the round's start.")


def _mean_to_zero(m, stats, near_zero=0.1, rel_tol=1e-6):
    """Three paired comparisons over seeds (a family of 3): (a1) FedShift's |weight mean| / RMS(w) over the last
    quarter of rounds within near_zero (stats.within, one-sided), (a2) FedShift's |weight mean| below the run
    without the shift (stats.compare), (b) FedShift's loss oscillation (mean |f(w^{t+1}) - f(w^t)| over the second
    half) not above the baseline's by the record's min_effect. Supported when (a1), (a2) and (b) hold; refuted
    when (a1) is significantly beyond near_zero, or (a2) or (b) is significantly the other way by at least
    min_effect, on at least 10 seeds; inconclusive otherwise. Differences below rel_tol x RMS (means) or rel_tol x
    the baseline's oscillation are rounding level."""
    rms = np.maximum(np.asarray(m["rms_shift"], float), 1e-300)
    ratio = np.asarray(m["abs_mean_shift"], float) / rms
    a1 = stats.within(ratio, near_zero, family=3, absolute=False)
    a2 = stats.compare(m["abs_mean_base"], m["abs_mean_shift"], paired=True, family=3)
    b = stats.compare(m["osc_base"], m["osc_shift"], paired=True, family=3)
    a2_round = _rounding(a2, rel_tol * float(np.nanmean(rms)))
    b_round = _rounding(b, rel_tol * abs(float(np.nanmean(m["osc_base"]))))
    text = (f"(a1) |m|/RMS with shift {a1.text()}; (a2) |m| {np.nanmean(m['abs_mean_shift']):.3g} with shift vs "
            f"{np.nanmean(m['abs_mean_base']):.3g} without, paired {a2.text()}"
            + (" (rounding level)" if a2_round else "") + f"; (b) loss oscillation {np.nanmean(m['osc_shift']):.3g} vs "
            f"{np.nanmean(m['osc_base']):.3g}, paired {b.text()}, relative effect {b.effect:.3g}"
            + (" (rounding level)" if b_round else ""))
    measured = float(np.nanmean(ratio))
    refuted = [w for w, hit in (("(a1) |m|/RMS beyond the tolerance", a1.refutes),
                                ("(a2) |m| above the baseline's", not a2_round and a2.refutes("above")),
                                ("(b) less stable than the baseline", not b_round and b.refutes("above"))) if hit]
    if refuted:
        return ClaimOutcome(False, "refuted by " + ", ".join(refuted) + ". " + text, measured)
    less_stable = not b_round and b.above and b.large
    if a1.within and not a2_round and a2.below and not less_stable:
        return ClaimOutcome(True, text, measured)
    why = [w for w in (a2.why_not("above"), b.why_not("above")) if w]
    return ClaimOutcome(None, text + (f"; {'; '.join(why)}" if why else ""), measured)


CLAIM_MEAN = Claim(
    id="fedshift.claim.mean_to_zero", quote="004_319ac838b1cb3f8f.txt:183: 'This finding is in accordance with the "
                                            "simulation results in which the average of weights becomes very close to "
                                            "0 and shows stable training with FedShift.'", paper=PAPER,
    title="The weight mean goes to 0 and training is stabler",
    source=f"{SEED}, Sec. IV-B ('the average of weights becomes very close to 0 and shows stable training with "
           "FedShift') and eq. (11)", symbols=S_,
    statement="under FedShift the mean of the weights approaches 0 and the training curve is steadier",
    predicate=_mean_to_zero, parameters={"near_zero": 0.1, "rel_tol": 1e-6},
    measurements=("abs_mean_shift", "abs_mean_base", "rms_shift", "osc_shift", "osc_base"), min_effect=0.1,
    note="'Very close to 0' is read as |m| <= 0.1 RMS(w) (a stated tolerance, not the paper's). Eq. (11) shrinks the "
         "mean by S/K per round; local training pulls it back toward the optimum's mean, which need not be 0. "
         "min_effect 0.1: 'stable training' is qualitative; a loss oscillation 10% above the run without the shift "
         "is what a reader would call less stable, a smaller one is not.")


def _every_bit_width(m, stats, rel_tol=1e-6):
    """Per bit width, paired over seeds, the metric's improvement with the shift (higher_is_better orients it), one
    comparison per bit width (the family): supported when every bit width improves significantly; refuted when
    some bit width is significantly worse by at least the record's min_effect on at least 10 seeds; inconclusive
    otherwise (differences within rel_tol of the baseline are rounding level)."""
    bits = np.asarray(m["bits"]).astype(int)
    sgn = 1.0 if bool(m.get("higher_is_better", True)) else -1.0
    parts, verdicts, why = [], [], []
    for j, b in enumerate(bits):
        base = np.asarray(m["metric_base"], float)[j]
        c = stats.compare(sgn * base, sgn * np.asarray(m["metric_shift"], float)[j], paired=True, family=len(bits))
        if _rounding(c, rel_tol * abs(float(np.nanmean(base)))):
            verdicts.append(0)
        else:
            verdicts.append(1 if c.above else -1 if c.refutes("below") else 0)
            if c.why_not("below"):
                why.append(f"{b}b: {c.why_not('below')}")
        parts.append(f"{b}b {sgn * c.diff:+.3g}+-{c.se:.2g} (effect {c.effect:.2g})")
    text = (f"shift - no shift: {', '.join(parts)} (n = {c.n}, t crit {c.crit:.2f} over a family of {c.family})"
            + (f"; {'; '.join(why)}" if why else ""))
    if any(v < 0 for v in verdicts):
        return ClaimOutcome(False, text, verdicts)
    if all(v > 0 for v in verdicts):
        return ClaimOutcome(True, text, verdicts)
    return ClaimOutcome(None, text, verdicts)


CLAIM_ACCURACY = Claim(
    id="fedshift.claim.every_bit_width", quote="004_319ac838b1cb3f8f.txt:291: 'Finally, the integration of FedShift "
                                               "improved the performance of all baseline algorithms across all "
                                               "quantization bit-widths.'", paper=PAPER,
    title="FedShift improves accuracy at every bit width",
    source=f"{SEED}, Sec. V-B1 and Table I ('improved the performance of all baseline algorithms across all "
           "quantization bit-widths'); Table II", symbols=S_,
    statement="for every mixed-precision setting 32+b, b = 4..8, the metric is better with the shift",
    predicate=_every_bit_width, parameters={"rel_tol": 1e-6},
    measurements=("bits", "metric_shift", "metric_base", "higher_is_better"), min_effect=0.01,
    note="Checked on simulated problems: test accuracy (digits, label-parity split as Fig. 6) and optimization error "
         "(least squares, whose optimum has a non-zero weight mean; PL non-convex, optimum 0). Table I's CIFAR-10 CNN "
         "belongs to the empirical layer. In softmax regression the weight mean is invariant under the gradients, so "
         "from a zero start the shift acts only at rounding level. 'Improved' carries no size: support needs "
         "significance at every bit width only. " + MIN_EFFECT_NOTE)
register(CLAIM_DIVERGENCE, CLAIM_DRIFT, CLAIM_MEAN, CLAIM_ACCURACY)
