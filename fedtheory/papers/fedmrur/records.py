"""FedMRUR (An, Shen, Hu, Luo, NeurIPS 2023) and the MoFedSAM bound it compares itself with.

Source: ``003_7cb41999359df859.txt`` ("003" below), clean Markdown + LaTeX of the main text; the
appendix (proofs) is not part of the seed, so no constant could be cross-checked against a proof.
MoFedSAM's Theorem D.7 (Qu et al., ICML 2022) is encoded as 003's Remark 2 states it, not from
the MoFedSAM paper.

Reading decisions that apply to several records:
* Notation. 003 writes P for the number of clients in eq. (1) and N in Theorem 1 (the MoFedSAM
  paper's letter); both are read as the total number of clients. S = |S_t| clients take part per
  round, K local steps, T rounds, sigma_t^2 the stochastic-gradient variance (Assumption 2),
  sigma_g^2 the heterogeneity (Assumption 3), r the smoothness of the regularizer R (Assumption 1).
* C. Theorem 1 reads 'satisfying 3/4 - 2(1-alpha L)/(KN) - 70(1-alpha)K^2(L+r)^2 eta_l^2 -
  90 alpha (L+r)^3 eta_g eta_l^2/S - 3 alpha (L+r) eta_g/(2S)' and stops: the comparison is missing.
  Read as 'this expression >= C > 0'. The bounds decrease in C, so checks evaluate them at
  C = C_max (the expression itself), and the theorem does not apply where C_max <= 0.
* Phi's second term is printed '35 alpha^2 K (L+r)^2 eta_l^2 3(sigma_g^2 + 6(L+r)^2 rho^2)'
  (LaTeX ``\\eta_l^23(``): read literally as 35 * 3 = 105 times (sigma_g^2 + 6 (L+r)^2 rho^2). The
  other plausible reading, 35 (3 sigma_g^2 + 6 (L+r)^2 rho^2), is smaller; a bound that holds under
  it holds under the literal one.
* Phi's fourth term carries L^4, not (L+r)^4, as printed.
* eta_l <= 1/sqrt(30 alpha K L) is printed with K L inside the square root (dimensionally odd: a
  step size scales like 1/L). Encoded as printed. In practice the positivity of C is the binding
  step-size condition: it needs 70 (1-alpha) K^2 (L+r)^2 eta_l^2 < 3/4.
* eta_g <= S/(2 alpha L (S-1)) is encoded as 2 alpha L (S-1) eta_g <= S, which is the same for S >= 2
  and holds for every eta_g at S = 1 (the printed bound is then +infinity).
* Eq. (8): its left side is printed as a sum over t; a sum of T terms that is O(1/sqrt(SKT)) would
  force the gradients to vanish, so it is read as the weighted average of eq. (7). The stated step
  sizes are eta_g = Theta(sqrt(SK/T)) and eta_l = Theta(1/sqrt(STK(L+r))) ((L+r) inside the square
  root as printed; placing it outside changes no exponent of T, S or K).
* Index (a reading, ``READINGS`` below): Algorithm 1 runs t = 0..T-1 from w^0, eq. (7) sums t = 1..T. As
  printed the average covers w^1..w^T (w^0 left out; d_T would need a round T + 1, so the checks stop one round
  short); the other reading is the rounds as Algorithm 1 runs them, w^0..w^{T-1}, each w^t with the d_t of the
  round that starts from it. F^0 = F(w^0) in both.
* Assumption 3 (eq. 6, 'E||grad F_p(x) - grad F(x)||^2 <= sigma_g^2', a reading): E over the clients (the mean,
  as written) or a bound for every client (the maximum, the usual reading of 'bounded dissimilarity'). Both
  readings and both indexings are decided; a finding counts only when all four give it.
* F, F^0, F^*. F(w) = (1/P) sum_p [f_p(w_p) + gamma R(w_p, w_g)] (eq. 2). At a consensus point
  (all w_p = w_g = w) R = exp(0) = 1, so F(w) = f(w) + gamma and F^0 - F^* = f(w^0) - f^*; and
  grad_w R(w, w_g) vanishes at w = w_g (the squared Lorentzian distance has its minimum 0 there),
  so grad F(w^t) = grad f(w^t). The measured left sides use the global gradient of f.
* Units (the check fedmrur.units, docs/units.md). eta_g has two readings: A, Alg. 1 line 16 as printed applies it to
  a displacement (dimensionless); B, a step on a gradient-sized update ([w]^2/[f]). rho is a radius ([w]; line 9
  normalises the gradient). r is read in loss units (gamma a dimensionless weight): the reading under which L + r
  adds like with like. Under both readings Phi, C_max ('1 - alpha L') and eta_l <= 1/sqrt(30 alpha K L) are
  dimensionally inconsistent as printed; the seed has no appendix to take a consistent form from.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.theory import (
    Bound,
    Claim,
    ClaimOutcome,
    Condition,
    Definition,
    Identity,
    Order,
    OrderStatement,
    SymbolSet,
    Units,
    register,
)

PAPER = "fedmrur"
SEED = "003_7cb41999359df859.txt"

S_ = SymbolSet(PAPER, strict=True)
_nonneg = sp.Interval(0, sp.oo)
L, r, sigma_t, sigma_g, rho, alpha, eta_l = S_.table("""
    L        f/w^2  positive     smoothness of each f_p (Assumption 1)
    r        f/w^2  nonnegative  smoothness of R(., x_0) for fixed x_0 (Assumption 1); 0 when the regularizer is off
    sigma_t  f/w    nonnegative  std of the stochastic gradient: E||g - grad F_p||^2 <= sigma_t^2 (Assumption 2)
    sigma_g  f/w    nonnegative  heterogeneity: E||grad F_p(x) - grad F(x)||^2 <= sigma_g^2 (Assumption 3, eq. 6)
    rho      w      nonnegative  SAM perturbation radius (Alg. 1 line 9)
    alpha    1      fraction     client-momentum coefficient (Alg. 1 line 10)
    eta_l    w^2/f  positive     local learning rate
""")
eta_g = S_.add("eta_g", "global learning rate (Alg. 1 line 16)", dim={"A": "1", "B": "w^2/f"})
K = S_.add("K", "local steps per round", sp.Interval(1, sp.oo), dim="1")
S = S_.add("S", "clients taking part per round |S_t|", sp.Interval(1, sp.oo), dim="1")
N = S_.add("N", "number of clients (P in eq. 1)", sp.Interval(1, sp.oo), dim="1")
T = S_.add("T", "communication rounds", sp.Interval(1, sp.oo), dim="1")
D = S_.add("D", "F^0 - F^* (= f(w^0) - f^*, see the module note)", _nonneg, dim="f")
C = S_.add("C", "the positive constant of Theorem 1 (C <= C_max)", dim="1")
sum_d = S_.add("sum_d", "sum_{t} d_t over the T rounds (>= T since d_t >= 1), measured", sp.Interval(1, sp.oo), dim="1")
Lr = S_.add("Lr", "L + r, as one symbol in the rate check (keeps (L+r)^n as one factor)", dim="f/w^2")
C_max = S_.add("C_max", "largest admissible C", dim="1")
Phi_ = S_.add("Phi", "the constant term Phi of eq. (7)", _nonneg, dim="f^2/w^2")
S_.add("d_t", "d_t of Thm 1 (a ratio of norms, >= 1); the symbol of fedmrur.d_t", sp.Interval(1, sp.oo), dim="1")
SYMBOLS = S_

# ------------------------------------------------------------------------------------ definitions

# Theorem 1's unit slips (Phi's terms under both readings of eta_g, C_max's '1 - alpha L', the step condition
# eta_l <= 1/sqrt(30 alpha K L), and under reading A eq. (7)'s first term) are one cause: every record that carries
# them (Phi, C_max, eq. (7), MoFedSAM's bound as Remark 2 quotes it, Remark 2) shares this finding key, so it counts
# once (docs/verdict-rules.md, rule 8: inconsistent under every reading, no stated normalisation).
UNITS_FINDING = "fedmrur.thm1.units"

LR = L + r
C_MAX_EXPR = (sp.Rational(3, 4) - 2 * (1 - alpha * L) / (K * N) - 70 * (1 - alpha) * K**2 * LR**2 * eta_l**2
              - 90 * alpha * LR**3 * eta_g * eta_l**2 / S - 3 * alpha * LR * eta_g / (2 * S))
C_MAX = Definition(
    "fedmrur.C_max", PAPER, C_max, C_MAX_EXPR, f"{SEED}, Thm 1 (the 'satisfying ...' clause)",
    "Printed without its comparison; read as 'C_max >= C > 0' (module note). Every bound below decreases in C, so "
    "checks use C = C_max where it is positive.", title="admissible C (upper end)",
    units=Units(finding=UNITS_FINDING))

_OUTER = alpha * LR * eta_g / (K**2 * S * N)
PHI_TERMS = (  # the printed terms of Phi's bracket, in order, each to be divided by C
    ("10 a^2 (L+r)^4 eta_l^2 rho^2 sigma_t^2", 10 * alpha**2 * LR**4 * eta_l**2 * rho**2 * sigma_t**2),
    ("35 a^2 K (L+r)^2 eta_l^2 3 sigma_g^2", 35 * alpha**2 * K * LR**2 * eta_l**2 * 3 * sigma_g**2),
    ("35 a^2 K (L+r)^2 eta_l^2 3 6 (L+r)^2 rho^2", 35 * alpha**2 * K * LR**2 * eta_l**2 * 3 * 6 * LR**2 * rho**2),
    ("28 a^2 K^3 (L+r)^6 eta_l^4 rho^2", 28 * alpha**2 * K**3 * LR**6 * eta_l**4 * rho**2),
    ("2 K^2 L^4 eta_l^2 rho^2", 2 * K**2 * L**4 * eta_l**2 * rho**2),
    ("a (L+r)^3 eta_g^2 rho^2 sigma_t^2/(2KS)", alpha * LR**3 * eta_g**2 * rho**2 * sigma_t**2 / (2 * K * S)),
    ("[a (L+r) eta_g/(K^2 S N)] 30 N K^2 (L+r)^4 eta_l^2 rho^2 sigma_t^2",
     _OUTER * 30 * N * K**2 * LR**4 * eta_l**2 * rho**2 * sigma_t**2),
    ("[...] 270 N K^3 (L+r)^2 eta_l^2 sigma_g^2", _OUTER * 270 * N * K**3 * LR**2 * eta_l**2 * sigma_g**2),
    ("[...] 540 N K^2 (L+r)^4 eta_l^2 rho^2", _OUTER * 540 * N * K**2 * LR**4 * eta_l**2 * rho**2),
    ("[...] 72 K^4 (L+r)^6 eta_l^4 rho^2", _OUTER * 72 * K**4 * LR**6 * eta_l**4 * rho**2),
    ("[...] 6 N K^4 (L+r)^2 eta_l^2 rho^2", _OUTER * 6 * N * K**4 * LR**2 * eta_l**2 * rho**2),
    ("[...] 4 N K^2 sigma_g^2", _OUTER * 4 * N * K**2 * sigma_g**2),
    ("[...] 3 N K^2 (L+r)^2 rho^2", _OUTER * 3 * N * K**2 * LR**2 * rho**2),
)
PHI_BRACKET = sp.Add(*(t for _, t in PHI_TERMS))
PHI_EXPR = PHI_BRACKET / C
PHI = Definition(
    "fedmrur.Phi", PAPER, Phi_, PHI_EXPR, f"{SEED}, Thm 1, the display after eq. (7)",
    "Transcribed term by term from the clean LaTeX: (1/C)[10 a^2 (L+r)^4 eta_l^2 rho^2 sigma_t^2 + 35 a^2 K (L+r)^2 "
    "eta_l^2 * 3(sigma_g^2 + 6 (L+r)^2 rho^2) + 28 a^2 K^3 (L+r)^6 eta_l^4 rho^2 + 2 K^2 L^4 eta_l^2 rho^2 + "
    "a (L+r)^3 eta_g^2 rho^2 sigma_t^2/(2KS) + a (L+r) eta_g/(K^2 S N) (30 N K^2 (L+r)^4 eta_l^2 rho^2 sigma_t^2 + "
    "270 N K^3 (L+r)^2 eta_l^2 sigma_g^2 + 540 N K^2 (L+r)^4 eta_l^2 rho^2 + 72 K^4 (L+r)^6 eta_l^4 rho^2 + "
    "6 N K^4 (L+r)^2 eta_l^2 rho^2 + 4 N K^2 sigma_g^2 + 3 N K^2 (L+r)^2 rho^2)]. The '...eta_l^2 3(...)' factor "
    "is read as a product with 3 (module note). No proof was available to cross-check any coefficient.",
    title="Phi (the non-vanishing part of the bound)", units=Units(finding=UNITS_FINDING))
D_T = Definition(
    "fedmrur.d_t", PAPER, sp.Symbol("d_t", positive=True), None, f"{SEED}, Thm 1 ('d_t = sum_i ||Delta_i^t|| / "
    "||sum_i Delta_i^t|| >= 1') and Alg. 1 line 15",
    "d_t >= 1 by the triangle inequality; it is the factor by which normalized aggregation lengthens the plain mean "
    "of the client updates: ||Delta^{t+1}|| = d_t ||mean_p Delta_p^t|| = mean_p ||Delta_p^t||. With all client "
    "updates zero d_t is taken as 1 (no update, nothing enlarged).", title="norm-enlargement factor d_t")
register(C_MAX, PHI, D_T)

# ------------------------------------------------------------------------------------ conditions

_cond = lambda name, rel, src="", note="": Condition(name, rel, src, note)
ETA_L = _cond("eta_l_le_1_over_sqrt_30_alpha_K_L", eta_l <= 1 / sp.sqrt(30 * alpha * K * L), f"{SEED}, Thm 1",
              "printed as 1/sqrt(30 alpha K L)")
ETA_G = _cond("eta_g_le_S_over_2_alpha_L_Sm1", 2 * alpha * L * (S - 1) * eta_g <= S, f"{SEED}, Thm 1",
              "eta_g <= S/(2 alpha L (S-1)), multiplied out so that S = 1 is admissible")
C_POS = _cond("C_max_positive", C_MAX_EXPR > 0, f"{SEED}, Thm 1 ('satisfying ...'; C > 0)",
               "some C > 0 exists only if C_max > 0; the step sizes must make it so")
C_OK = _cond("C_admissible", C <= C_MAX_EXPR, f"{SEED}, Thm 1 ('satisfying ...')")
S_LE_N = _cond("S_at_most_N", S <= N)
THM1_CONDITIONS = (S_LE_N, ETA_L, ETA_G, C_POS, C_OK)

# ------------------------------------------------------------------------------------ Theorem 1 and MoFedSAM

# The readings of eq. (7) and of MoFedSAM's bound: Assumption 3 x the index of the average (module note). The first is
# the text as printed; names are the keys of the rows' extra['readings'].
READINGS = {
    "client-mean, t=1..T": "Assumption 3 with E the mean over clients, (1/N) sum_p ||grad F_p - grad F||^2 <= "
                           "sigma_g^2 (as written); the average over w^1..w^T (as printed)",
    "client-mean, t=0..T-1": "Assumption 3 as the client mean; the average "
                             "over the rounds Algorithm 1 runs, w^0..w^{T-1}",
    "client-max, t=1..T": "Assumption 3 for every client, max_p ||grad F_p - grad F||^2 <= sigma_g^2; the average over "
                          "w^1..w^T",
    "client-max, t=0..T-1": "Assumption 3 for every client; the average over w^0..w^{T-1}",
}
THM1_QUOTE = ("003_7cb41999359df859.txt:134-136: 'Theorem 1. Let all the assumptions hold and with partial client "
              "participation. If eta_l <= 1/sqrt(30 alpha K L), eta_g <= S/(2 alpha L (S-1)) satisfying ..., then for "
              "all K >= 0 and T >= 1, we have: (1/sum_{t=1}^T d_t) sum_{t=1}^T E||grad F(w^t)||^2 d_t <= (F^0 - "
              "F^*)/(C alpha eta_g sum_{t=1}^T d_t) + Phi, (7)'")
RATE_QUOTE = ("003_7cb41999359df859.txt:142, 144, 148: 'Specifically, we set eta_g = Theta(sqrt(SK)/sqrt(T)) and eta_l "
              "= Theta(1/sqrt(STK(L+r))), the convergence rate of the FedMRUR under partial client participation can "
              "be bounded as: sum_{t=1}^T E||grad F(x_t)||^2 = O(1/sqrt(SKT)) + O(sqrt(K)/(ST)) + O(1/sqrt(KT)). (8)' "
              "and Remark 3: 'when T is large enough, the dominant term O(1/sqrt(SKT)) in the bound achieves a linear "
              "speedup property'")
REMARK2_QUOTE = ("003_7cb41999359df859.txt:146: 'Remark 2. Compared with the inequality (F^0 - F^*)/(C alpha eta_g T) "
                 "+ Phi of Theorem D.7 in MoFedSAM paper[31], the second constant term in (7) is same and the first "
                 "term is less than the first term in MoFedSAM paper, which validates FedMRUR achieves faster "
                 "convergence than MoFedSAM.'")

THM1_FIRST = D / (C * alpha * eta_g * sum_d)
MOFEDSAM_FIRST = D / (C * alpha * eta_g * T)
_rate_choice = {eta_g: sp.sqrt(S * K / T), eta_l: 1 / sp.sqrt(S * T * K * Lr)}
THM1_ORDER = Order(1 / sp.sqrt(S * K * T) + sp.sqrt(K) / (S * T) + 1 / sp.sqrt(K * T), T, _rate_choice,
                         source=f"{SEED}, Thm 1, eq. (8)", track=(S, K),
                         substitute={sum_d: T, LR: Lr},
                         note="sum_d -> T: d_t = 1 is the largest value of the first term (d_t >= 1). L + r is renamed "
                              "Lr so that (L+r)^n stays one factor; neither L nor r is tracked.")
THM1 = Bound(
    id="fedmrur.thm1", paper=PAPER, title="Theorem 1: convergence of FedMRUR (non-convex, partial participation)",
    source=f"{SEED}, Thm 1, eq. (7) and rate eq. (8)", symbols=S_,
    assumptions=("L_smooth", "regularizer_smooth(r)", "bounded_variance(sigma_t)", "heterogeneity_global(sigma_g)"),
    units=Units(lhs="f^2/w^2", finding=UNITS_FINDING),
    lhs="weighted_grad_norm2", lhs_kind="grad_norm2",
    lhs_description="(1/sum_t d_t) sum_t d_t E||grad F(w^t)||^2 over t = 1..T or 0..T-1 (eq. 7; READINGS)",
    expr=THM1_FIRST + PHI_EXPR, definitions=(C_MAX,), conditions=THM1_CONDITIONS,
    order=THM1_ORDER, requires={"server_rule": "normalized", "momentum": "global_update"}, quote=THM1_QUOTE,
    readings=READINGS,
    note="Run with Algorithm 1's descent sign (Delta_p = w^{t,0} - w^{t,K}; as printed, lines 13 and 16 step uphill: "
         "fedmrur.alg1). sum_d is measured on the run (it is part of the statement); eq. (7) holds for each run's own "
         "d_t. The regularizer's weight gamma does not appear: Assumption 1 bounds R's smoothness by r and the theorem "
         "uses L + r (F_p = f_p + gamma R is (L + gamma r)-smooth, <= L + r when gamma <= 1); a run without the "
         "regularizer (gamma = 0) is the instance r = 0, the limit of the paper's R as sigma -> oo. Conditions as "
         "printed (module note). lhs_kind grad_norm2: a weighted average of ||grad f(w^t)||^2 is at most L^2 max_t "
         "||w^t - w*||^2.")

MOFEDSAM = Bound(
    id="fedmrur.mofedsam_thmD7", paper=PAPER, title="MoFedSAM's Theorem D.7 as FedMRUR's Remark 2 states it",
    source=f"{SEED}, Remark 2 (MoFedSAM [31], Thm D.7: '(F^0 - F^*)/(C alpha eta_g T) + Phi')", symbols=S_,
    units=Units(lhs="f^2/w^2", finding=UNITS_FINDING),
    assumptions=THM1.assumptions, lhs="avg_grad_norm2", lhs_kind="grad_norm2",
    lhs_description="(1/T) sum_t E||grad F(w^t)||^2 over t = 1..T or 0..T-1 (MoFedSAM: plain aggregation, d_t not "
                    "applied; READINGS)",
    expr=MOFEDSAM_FIRST + PHI_EXPR, definitions=(C_MAX,), conditions=THM1_CONDITIONS,
    requires={"server_rule": "mean", "momentum": "global_update"}, quote=REMARK2_QUOTE, readings=READINGS,
    note="Remark 2 gives only the right side and says Phi is 'the same'. The left side (the plain average) and the "
         "conditions (Theorem 1's) are this encoding's reading; Assumption 3 and the index have eq. (7)'s two readings "
         "each. With r = 0 and no regularizer this is a statement about MoFedSAM = SAM + client momentum + plain mean "
         "of the updates, server step eta_g.")

REMARK2 = Bound(
    id="fedmrur.remark2", paper=PAPER, title="Remark 2: eq. (7)'s right side is never above MoFedSAM's",
    units=Units(lhs="f^2/w^2", finding=UNITS_FINDING),
    source=f"{SEED}, Remark 2", symbols=S_, assumptions=(), lhs="thm1_rhs", lhs_kind="none",
    lhs_description="the right side of eq. (7), (F^0-F^*)/(C alpha eta_g sum_d) + Phi, at a run's measured sum_d",
    expr=MOFEDSAM_FIRST + PHI_EXPR, definitions=(C_MAX,), quote=REMARK2_QUOTE,
    conditions=(_cond("sum_d_at_least_T", sum_d >= T, f"{SEED}, Thm 1 (d_t >= 1)"),),
    note="A statement about the two right sides at the same constants: their difference is "
         "D (sum_d - T)/(C alpha eta_g T sum_d) >= 0 iff sum_d >= T, i.e. because every d_t >= 1. It compares upper "
         "bounds on different left sides (eq. (7)'s d_t-weighted average of FedMRUR's gradients, 003:136, against "
         "MoFedSAM's plain average of its own, 003:146) of different algorithms; a smaller upper bound on another "
         "quantity says nothing about which algorithm converges faster, so Remark 2's 'which validates FedMRUR "
         "achieves faster convergence than MoFedSAM' (003:146) does not follow from it (issue 45: explained here, "
         "not counted: the inference is tested where it can be, on trajectories). That is claim "
         "fedmrur.claim.faster_than_mofedsam. lhs_kind 'none': the left side is another bound's right side, not a "
         "measured quantity, so it has no trivial bound; the comparison is a tautology of the encoding (an "
         "implementation self-check).")
register(THM1, MOFEDSAM, REMARK2)

# Theorem 1's hypotheses as printed (003:134, the LaTeX of the seed): the clause after 'satisfying' is an expression
# with no comparison (C, which eq. (7) and Phi divide by, is defined nowhere else in 003), and the range 'for all K >=
# 0' includes K = 0, where C_max's 2(1 - alpha L)/(K N) and Phi's alpha (L+r) eta_g/(K^2 S N) divide by zero.
THM1_CLAUSE = (r"\eta_g \leq \frac{S}{2\alpha L(S-1)}$ satisfying $\frac{3}{4} - \frac{2(1-\alpha L)}{KN} - "
               r"70(1-\alpha)K^2(L+r)^2\eta_l^2 - \frac{90\alpha(L+r)^3\eta_g\eta_l^2}{S} - "
               r"\frac{3\alpha(L+r)\eta_g}{2S}$, then for all $K \geq 0$ and $T \geq 1$")
THM1_SATISFYING = THM1_CLAUSE.split("satisfying $", 1)[1].split("$", 1)[0]  # the math after 'satisfying'
THM1_K_RANGE = 0  # 'for all K >= 0' (003:134)
THM1_STATEMENT_QUOTE = ("003_7cb41999359df859.txt:134: 'If eta_l <= 1/sqrt(30 alpha K L), eta_g <= S/(2 alpha L (S-1)) "
                        "satisfying 3/4 - 2(1-alpha L)/(KN) - 70(1-alpha)K^2(L+r)^2 eta_l^2 - 90 alpha (L+r)^3 eta_g "
                        "eta_l^2/S - 3 alpha (L+r) eta_g/(2S), then for all K >= 0 and T >= 1, we have: ...'")

# Eq. (8) as printed: its left side is sum_{t=1}^T E||grad F(x_t)||^2, a sum over the rounds, where eq. (7), which it
# summarises, bounds an average (the checks of fedmrur.thm1's rate read it as that average, the record note). Under
# eq. (7) the sum is T times the average's bound: every term of it grows by a factor T against the stated order.
EQ8_SUM_EXPLICIT = Bound(
    id="fedmrur.eq8.sum_explicit", paper=PAPER, title="T times eq. (7)'s right side (the bound eq. (7) gives the sum)",
    source=f"{SEED}, Thm 1, eq. (7) multiplied by T", symbols=S_, lhs="sum_grad_norm2", lhs_kind="none",
    lhs_description="sum_{t=1}^T E||grad F(w^t)||^2 (eq. 8's left side as printed), at d_t = 1",
    expr=T * (THM1_FIRST + PHI_EXPR), definitions=(C_MAX,), conditions=THM1_CONDITIONS, units=Units(lhs="f^2/w^2"),
    note="With every d_t = 1 (its largest value for the first term) eq. (7) bounds the average, so T times its right "
         "side bounds the sum.")
EQ8_PRINTED = OrderStatement(
    id="fedmrur.eq8.printed", paper=PAPER, title="Eq. (8) as printed: a sum over the rounds on the left",
    source=f"{SEED}, Thm 1, eq. (8) (003:144)", symbols=S_, assumptions=THM1.assumptions,
    statement="sum_{t=1}^T E||grad F(x_t)||^2 = O(1/sqrt(SKT)) + O(sqrt(K)/(ST)) + O(1/sqrt(KT)) under the stated "
              "eta_g, eta_l",
    order=THM1_ORDER, explicit=EQ8_SUM_EXPLICIT,
    note="As printed (003:144, LaTeX '\\sum_{t=1}^T E\\|\\nabla F(x_t)\\|^2 = O(...)'): a sum of T non-negative terms "
         "that is O(1/sqrt(T)) would force the gradients to vanish like T^(-3/2); eq. (7) gives the sum only T times "
         "its average's bound. The printed left side is an erratum of the average (fedmrur.thm1's rate reads it so).")
register(EQ8_PRINTED)

# ------------------------------------------------------------------------------------ identities

EQ_DT = Identity(
    id="fedmrur.eq_dt", paper=PAPER, title="d_t >= 1 and the geometry of normalized aggregation",
    source=f"{SEED}, Thm 1 (d_t >= 1), Alg. 1 line 15 and Figure 2", symbols=S_,
    lhs_text="||Delta^{t+1}||  (normalized, Alg. 1 line 15)",
    rhs_text="mean_p ||Delta_p^t|| = d_t ||mean_p Delta_p^t||, and 1/d_t = sum_p ||Delta_p|| cos(theta_p) / sum_p "
             "||Delta_p|| <= 1 (theta_p: angle between Delta_p and the aggregate; Fig. 2)",
    note="Exact for every round; checked on runs to machine precision.",
    tolerance=1e-10)  # max relative residual of the norm identities over rounds and runs

EQ3 = Identity(
    id="fedmrur.eq3", paper=PAPER, title="Lorentz-model facts the regularizer relies on (eqs. 3-4)",
    source=f"{SEED}, eqs. (3)-(4)", symbols=S_,
    lhs_text="||L_p - L_g||_L^2 = -2 beta - 2 <L_p, L_g>_L,  <x, y>_L = -x_0 y_0 + sum_i x_i y_i",
    rhs_text=">= 0, with equality iff L_p = L_g, for points on the hyperboloid <x, x>_L = -beta, x_0 > 0",
    note="Representations z (logits for logistic regression) are lifted to the hyperboloid by "
         "L(z) = (sqrt(beta + ||z||^2), z). Then ||L(z) - L(z')||_L^2 = ||z - z'||^2 - (a - a')^2 with "
         "a = sqrt(beta + ||z||^2); a is a strict contraction of z for beta > 0, so the distance is >= 0 and 0 only "
         "at z = z'. Checked symbolically (the identity) and on the representations of visited models.",
    tolerance=1e-10)  # eq. (3) as printed vs the stable form, relative to 1 + ||z||^2
ALG1_QUOTE = ("003_7cb41999359df859.txt:76, 79 (Algorithm 1): '13: Delta_p^t = w_p^{t,K} - w_p^{t,0}' and '16: Update "
              "global parameter w^{t+1} = w^t - eta_g Delta^{t+1}'")
ALG1 = Identity(
    id="fedmrur.alg1", paper=PAPER, title="Algorithm 1's server step as printed (lines 13, 15, 16)",
    source=f"{SEED}, Algorithm 1, lines 13-16", symbols=S_,
    lhs_text="w^{t+1} - w^t = -eta_g Delta^{t+1}, Delta^{t+1} = d_t mean_p (w_p^{t,K} - w_p^{t,0})  (as printed)",
    rhs_text="a step along the clients' local progress, -eta_g d_t mean_p (w_p^{t,0} - w_p^{t,K}) (what a descent "
             "method and the proof of Theorem 1 need)",
    note="As printed, Delta_p is the local displacement w^K - w^0 (downhill) and line 16 subtracts it: the server "
         "moves against the clients' progress, uphill (one local gradient step on f = ||w||^2/2: w^{t+1} = (1 + eta_g "
         "eta_l) w^t). Line 10 adds (1 - alpha) Delta^t to a gradient with the same sign slip. The simulator runs the "
         "descent sign (Delta_p = w^{t,0} - w^{t,K}; fedtheory.papers.fedmrur.algorithms), as every FedMRUR row says; "
         "the printed sign is an erratum (fedmrur.alg1 check).",
    tolerance=0.0)
register(EQ_DT, EQ3, ALG1)

# ------------------------------------------------------------------------------------ claims
# Every predicate decides from per-seed values through the checks' statistics policy (``stats``: Student-t,
# Bonferroni over the family of the check's rows, the record's min_effect, >= 10 seeds to refute).


def _greater(c) -> bool | None:
    """'B is above A' from a ``stats.compare(A, B)``: True when significant at the family-wise level, False when
    refuted (significantly below by at least the record's min_effect, on enough seeds), None otherwise."""
    return True if c.above else False if c.refutes("below") else None


def _why(c) -> str:
    why = c.why_not("below")
    return c.text() + (f"; {why}" if why else "")


def _near_orthogonal(m, *, stats, tol=0.15):
    """Late rounds (last quarter): each run's mean pairwise cosine similarity of the client updates; 'almost zero'
    is an equivalence test over the runs (seeds), ``stats.within(per_run, tol)``: supported when the family-wise t
    interval of the mean lies inside [-tol, tol], refuted when it lies wholly outside (on enough seeds),
    inconclusive otherwise. The first round's cosine is reported, not used: the sentence states the late value."""
    cos = np.asarray(m["cos_pairwise"], float)  # (rounds, runs)
    n = cos.shape[0]
    per_run = np.nanmean(cos[-max(1, n // 4):], axis=0) if cos.ndim == 2 else cos
    eq = stats.within(per_run, tol)
    text = (f"mean pairwise cosine, last quarter of the rounds: {eq.text()}; first round "
            f"{float(np.nanmean(cos[0])):.3f}")
    return ClaimOutcome(eq.decision, text, eq.mean)


def _enlarges(m, *, stats):
    """Paired over seeds: the mean length of the global step ||w^{t+1} - w^t|| over the first half of the rounds,
    normalized aggregation (B) against the plain mean (A) on the same seeds: ``stats.compare(plain, normalized)``,
    supported when the normalized step is significantly longer, refuted when significantly shorter by at least
    the record's min_effect on enough seeds, inconclusive otherwise."""
    c = stats.compare(m["step_plain"], m["step_normalized"], paired=True)
    text = (f"mean global step: normalized {np.nanmean(m['step_normalized']):.4g}, plain "
            f"{np.nanmean(m['step_plain']):.4g} (normalized minus plain {_why(c)}); mean d_t "
            f"{float(np.nanmean(m['d_t'])):.3f}")
    return ClaimOutcome(_greater(c), text, float(np.nanmean(m["step_normalized"]) / np.nanmean(m["step_plain"])))


def _helps(m, *, stats):
    """Paired over seeds: final test accuracy with the component(s) (B) against MoFedSAM (A):
    ``stats.compare(without, with)``, supported when significantly higher, refuted when significantly lower by at
    least the record's min_effect on enough seeds, inconclusive otherwise."""
    c = stats.compare(m["acc_without"], m["acc_with"], paired=True)
    text = (f"test accuracy {np.nanmean(m['acc_with']):.4f} with vs {np.nanmean(m['acc_without']):.4f} without "
            f"(with minus without {_why(c)})")
    return ClaimOutcome(_greater(c), text, c.diff)


def _participation(m, *, stats, max_acc_spread=0.02):
    """Two comparisons (a family of 2), paired over seeds. 'Slows convergence': the training optimality gap at the
    early round is larger at the lowest participation ratio than at the highest (``stats.compare``); 'barely
    changes accuracy': the paired difference between the best and the worst ratio's final test accuracies lies
    within max_acc_spread (``stats.within``; the selection of the extremes makes this the strict reading).
    Supported when both hold; refuted when either is refuted (the lowest ratio's early gap significantly smaller
    by the record's min_effect, or the accuracy spread significantly beyond max_acc_spread), on enough seeds."""
    ratio = np.asarray(m["ratio"], float)
    gap = np.asarray(m["early_gap"], float)  # (ratios, runs)
    acc = np.asarray(m["final_acc"], float)  # (ratios, runs)
    lo, hi = int(np.argmin(ratio)), int(np.argmax(ratio))
    c = stats.compare(gap[hi], gap[lo], paired=True, family=2)
    slows = _greater(c)
    means = np.nanmean(acc, axis=1)
    hi_a, lo_a = int(np.nanargmax(means)), int(np.nanargmin(means))
    eq = stats.within(acc[hi_a] - acc[lo_a], max_acc_spread, family=2)
    text = (f"early optimality gap {np.array2string(np.nanmean(gap, axis=1), precision=4)}, final test accuracy "
            f"{np.array2string(means, precision=4)} over ratios {ratio.tolist()}; early gap, lowest minus highest "
            f"ratio: {_why(c)}; accuracy spread (best minus worst ratio, paired): {eq.text()}")
    if slows is False or eq.decision is False:
        return ClaimOutcome(False, text, eq.mean)
    return ClaimOutcome(True if (slows and eq.within) else None, text, eq.mean)


def _rounds_to(gap, target):
    hit = gap <= target
    return np.where(hit.any(axis=0), np.argmax(hit, axis=0), gap.shape[0]).astype(float)


def _faster(m, *, stats):
    """Rounds to reach the target f(w^t) - f^* <= sqrt(gap_0 x g_final), g_final the larger of the two algorithms'
    final mean gaps (a level both reach, halfway between start and finish on a log scale), paired over seeds; a run
    that never reaches it counts as T + 1. ``stats.compare(rounds FedMRUR, rounds MoFedSAM)``: supported when
    MoFedSAM needs significantly more rounds, refuted when it needs significantly fewer by at least the record's
    min_effect on enough seeds, inconclusive otherwise (or when neither algorithm lowered the gap)."""
    a, b = np.asarray(m["gap_fedmrur"], float), np.asarray(m["gap_mofedsam"], float)  # (rounds + 1, runs)
    g0 = float(np.nanmean(a[0]))
    g_final = max(float(np.nanmean(a[-1])), float(np.nanmean(b[-1])))
    if not (np.isfinite(g_final) and g_final < g0):
        return ClaimOutcome(None, f"no progress to compare: f - f* from {g0:.3g} to {g_final:.3g}", None)
    target = float(np.sqrt(g0 * g_final))
    ta, tb = _rounds_to(a, target), _rounds_to(b, target)
    c = stats.compare(ta, tb, paired=True)
    text = (f"rounds to f - f* <= {target:.3g}: FedMRUR {ta.mean():.1f}, MoFedSAM {tb.mean():.1f} (MoFedSAM minus "
            f"FedMRUR {_why(c)}); final f - f*: FedMRUR {np.nanmean(a[-1]):.3g}, MoFedSAM {np.nanmean(b[-1]):.3g}")
    return ClaimOutcome(_greater(c), text, c.diff)


CLAIM_ORTHOGONAL = Claim(
    id="fedmrur.claim.near_orthogonal", paper=PAPER, title="Client updates become nearly orthogonal",
    source=f"{SEED}, Sec. 3.2 ('after a number of communication rounds, the cosine similarities of the local updates "
           "across clients are almost zero', after Charles et al. [3]) and Sec. 1", symbols=S_,
    statement="after some rounds the pairwise cosine similarities of the client updates Delta_p^t are close to 0",
    predicate=_near_orthogonal, parameters={"tol": 0.15}, measurements=("cos_pairwise",), min_effect=0.15,
    quote="003_7cb41999359df859.txt:108: 'According to [3], after a number of communication rounds, the cosine "
          "similarities of the local updates across clients are almost zero'",
    note="'Almost zero' is not quantified in the seed; the tolerance 0.15 (an absolute cosine: an angle within about "
         "81-99 degrees) is ours, stated up front; it is the equivalence margin and so the claim's effect size "
         "(min_effect, the same number). With S clients whose updates sum to ~0 (near a stationary point of f) the "
         "mean pairwise cosine tends to -1/(S-1), not 0; the tolerance covers that only for S >= 8 (-1/7 = -0.143), "
         "not at S = 5 (-0.25), which the checks run: a refutation at S = 5 with a late cosine near -0.25 is that "
         "artefact. Under MoFedSAM 90% (1 - alpha) of each local update is the shared momentum, so its cosine is "
         "large by construction.")
CLAIM_ENLARGES = Claim(
    id="fedmrur.claim.enlarges_step", quote="003_7cb41999359df859.txt:23: 'As a result, the size of "
                                            "the global update becomes larger and compensates for "
                                            "the norm reduction introduced by model inconsistency'", paper=PAPER,
    title="Normalized aggregation enlarges the global step",
    source=f"{SEED}, Sec. 3.2 and Figure 2 ('the size of the global update becomes larger')", symbols=S_,
    statement="with normalized aggregation the global step ||w^{t+1} - w^t|| is longer than with the plain mean",
    predicate=_enlarges, measurements=("step_normalized", "step_plain", "d_t"), min_effect=0.05,
    note="Within a round the enlargement is exactly d_t >= 1 (fedmrur.eq_dt). The claim compares trajectories: "
         "FedMRUR-N vs MoFedSAM on the same seeds. min_effect 0.05: a normalized step shorter than the plain one by "
         "5% or more of the longer is what a reader would not call 'larger' (d_t is 1.08-1.9 on these runs).")
CLAIM_COMPONENTS = Claim(
    id="fedmrur.claim.components_help", paper=PAPER, title="Each component (N, H) improves on MoFedSAM (Table 4)",
    source=f"{SEED}, Sec. 5.3 'Impact of Each Component' and Table 4", symbols=S_,
    statement="test accuracy: MoFedSAM < FedMRUR-N (N only), FedMRUR-H (H only) and FedMRUR (N + H)",
    predicate=_helps, measurements=("acc_with", "acc_without"), min_effect=0.01,
    quote="003_7cb41999359df859.txt:240: 'From the results, we can find that both the normalized local update "
          "aggregation scheme and the hyperbolic graph fusion can improve performance.' (Table 4: CIFAR-100, "
          "Dirichlet-0.3)",
    note="An extrapolation on the synthetic problems (the table is a CIFAR-100 / ResNet ablation). "
         "Table 4's check marks are read as the components present (FedMRUR-N = MoFedSAM + normalized aggregation, "
         "FedMRUR-H = MoFedSAM + hyperbolic regularizer); its caption says 'without each ingredient'. Each component "
         "is tested on its own. min_effect 0.01: a loss of 1% of the accuracy, below the smallest gain Table 4 "
         "reports (FedMRUR-H, 53.57 vs 52.81: 1.4%). At the paper's gamma = 0.005, sigma = 1e4 the regulariser's "
         "gradient is ~1e-6 of the loss gradient on the synthetic problems (measured along a run), so FedMRUR-H equals "
         "MoFedSAM to ~1e-6 in the weights: the H rows do not exercise the regulariser; the check reports by how much "
         "it would have to grow to matter.")
CLAIM_PARTICIPATION = Claim(
    id="fedmrur.claim.participation", quote="003_7cb41999359df859.txt:233: 'From this figure, we can observe that the "
                                            "client participation rate (PR) has a positive impact on the convergence "
                                            "speed, but the impact on test accuracy is little.'", paper=PAPER,
    title="Lower participation slows convergence but barely changes accuracy",
    source=f"{SEED}, Sec. 5.3 'Impact of partial participation' and Figure 4(a)-(b)", symbols=S_,
    statement="a lower participation ratio S/N slows the decrease of the training loss; the final test accuracy "
              "changes little",
    predicate=_participation, parameters={"max_acc_spread": 0.02}, min_effect=0.1,
    measurements=("ratio", "early_gap", "final_acc"),
    note="'Little' is not quantified; max_acc_spread = 0.02 (two accuracy points) is ours, the equivalence margin of "
         "the accuracy part. min_effect 0.1 is the speed part's: an early optimality gap smaller at the lowest "
         "ratio by 10% or more of the larger would contradict 'a positive impact on the convergence speed'.")
CLAIM_FASTER = Claim(
    id="fedmrur.claim.faster_than_mofedsam",
    quote="003_7cb41999359df859.txt:146: '... the second constant term in (7) is same and the first term is less than "
          "the first term in MoFedSAM paper, which validates FedMRUR achieves faster convergence than MoFedSAM.'",
    paper=PAPER, title="FedMRUR converges faster than MoFedSAM (Remark 2)",
    source=f"{SEED}, Remark 2 ('validates FedMRUR achieves faster convergence than MoFedSAM') and Table 3",
    symbols=S_, statement="on the same problem, seeds and step sizes FedMRUR needs fewer rounds than MoFedSAM to reach "
                          "a given training optimality gap (Table 3 counts rounds to a target accuracy)",
    predicate=_faster, measurements=("gap_fedmrur", "gap_mofedsam"), min_effect=0.1,
    note="Remark 2 infers faster convergence from a smaller upper bound; that inference is not valid in general "
         "(fedmrur.remark2), so the claim is checked on trajectories. min_effect 0.1: FedMRUR needing 10% more rounds "
         "than MoFedSAM (or more) contradicts 'faster'; a smaller difference in the rounds to a target is within "
         "what a reader would call the same speed.")
register(CLAIM_ORTHOGONAL, CLAIM_ENLARGES, CLAIM_COMPONENTS, CLAIM_PARTICIPATION, CLAIM_FASTER)
