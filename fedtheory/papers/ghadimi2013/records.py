"""Ghadimi & Lan (2013), arXiv:1309.5549v1: the randomized stochastic gradient (RSG) method,

    x_{k+1} = x_k - gamma_k G(x_k, xi_k), k = 1..N,  output x_R, P(R = k) = (2 gamma_k - L gamma_k^2) / sum_j (...),

on f L-smooth (C^{1,1}_L, possibly non-convex), bounded below (f*), with G unbiased and E||G - grad f||^2 <= sigma^2
(Assumption A1).

* Theorem 2.1(a), eq. (2.4), p. 6: for 0 < gamma_k < 2/L, (1/L) E||grad f(x_R)||^2 <= (D_f^2 + sigma^2 sum_k
  gamma_k^2) / sum_k (2 gamma_k - L gamma_k^2), with D_f = [2 (f(x_1) - f*)/L]^(1/2) (eq. (2.5)). Encoded for a
  constant step gamma_k = gamma, where the sums are N gamma^2 and N (2 gamma - L gamma^2) and P_R is uniform, so
  E||grad f(x_R)||^2 = (1/N) sum_{k=1}^N E||grad f(x_k)||^2.
* Corollary 2.2, eqs. (2.13)-(2.14), p. 8: with gamma_k = min{1/L, D~/(sigma sqrt(N))} for a D~ > 0,
  (1/L) E||grad f(x_R)||^2 <= B_N := L D_f^2 / N + (D~ + D_f^2 / D~) sigma / sqrt(N).

Transcribed from the statements in the prove2me Lean library (files Thm_GhadimiLan_RSG_theorem_2_1_a and
Thm_GhadimiLan_TwoPhase corollary_2_2 with Def_GhadimiLan_TwoPhase_Model), which cite arXiv:1309.5549v1 with page,
theorem and equation numbers; the arXiv PDF itself could not be read here. Cross-check against the proof, done here:
the descent lemma along the run gives (gamma_k - L gamma_k^2/2) E||grad f(x_k)||^2 <= E f(x_k) - E f(x_{k+1}) +
L gamma_k^2 sigma^2 / 2 (eq. (2.8)-(2.9) summed), so sum_k (2 gamma_k - L gamma_k^2) E||grad f(x_k)||^2 <=
2 (f(x_1) - f*) + L sigma^2 sum_k gamma_k^2 = L (D_f^2 + sigma^2 sum gamma_k^2): eq. (2.4) after dividing by L and
the sum; the constants agree.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, Order, SymbolSet, register, register_paper

PAPER = "ghadimi2013"
CITATION = "arXiv:1309.5549v1 (SIAM J. Optim. 23(4), 2013), Thm 2.1(a), Cor. 2.2"
SOURCE_21 = ("S. Ghadimi, G. Lan, Stochastic first- and zeroth-order methods for nonconvex stochastic programming, "
             "arXiv:1309.5549v1, Theorem 2.1(a), eqs. (2.3)-(2.5), p. 6")
SOURCE_22 = "S. Ghadimi, G. Lan, arXiv:1309.5549v1, Corollary 2.2, eqs. (2.13)-(2.14), p. 8"
TEXT = ("the prove2me Lean library's statements of Ghadimi & Lan (Theorems/Thm_GhadimiLan_RSG_theorem_2_1_a, "
        "GhadimiLan.TwoPhase.corollary_2_2 and Definitions/Def_GhadimiLan_TwoPhase_Model: (2.13) step, (2.14) B_N), "
        "which cite arXiv:1309.5549v1 by page and equation, and the proof's descent-lemma sum re-derived here")

register_paper(PAPER, collection="zoo", citation=CITATION,
               title="Stochastic first- and zeroth-order methods for nonconvex stochastic programming")

S = SymbolSet(PAPER, strict=True)
L, sigma, N, lr, Df0, Df2, Dt = S.table("""
    L      f/w^2  positive     smoothness of f (f in C^{1,1}_L)
    sigma  f/w    nonnegative  E||G(x, xi) - grad f(x)||^2 <= sigma^2 (Assumption A1)
    N      1      count        iteration limit: x_1..x_N, the output index R in {1..N} (one client, one step per round: the average over rounds 0..N-1)
    lr     w^2/f  positive     the constant step gamma_k = gamma
    Df0    f      nonnegative  f(x_1) - f*
    Df2    w^2    nonnegative  D_f^2 = 2 (f(x_1) - f*)/L (eq. (2.5))
    Dt     w      positive     D~ > 0, the free parameter of the step rule (2.13)
""")  # noqa: E501 - a table, one symbol per line

DF2 = Definition(id="ghadimi2013.Df2", paper=PAPER, symbol=Df2, expr=2 * Df0 / L, source=SOURCE_21,
                 title="D_f^2 = 2 (f(x_1) - f*)/L (eq. (2.5))")
_LHS = ("E||grad f(x_R)||^2 = (1/N) sum_{k=1}^N E||grad f(x_k)||^2 (R uniform for a constant step): the simulator's "
        "step_grad_norm2_mean at row N - 1 (one client, one local step per round: x_k is the model after k - 1 rounds)")
_REQUIRES = {"local_steps": 1, "clients": 1, "lr_schedule": "constant", "aggregation": "mean of the models"}
_ASSUMPTIONS = ("L_smooth_global", "lower_bounded", "bounded_variance(sigma)")

THM21A = Bound(
    id="ghadimi2013.thm2_1a", paper=PAPER, title="RSG (SGD, random output), L-smooth non-convex f, constant step",
    source=SOURCE_21, symbols=S, assumptions=_ASSUMPTIONS,
    lhs="step_grad_norm2_mean", lhs_kind="grad_norm2", lhs_description=_LHS,
    expr=L * (Df2 + sigma**2 * N * lr**2) / (N * (2 * lr - L * lr**2)),
    definitions=(DF2,),
    conditions=(Condition("step_positive", sp.Gt(lr, 0), source=SOURCE_21, note="0 < gamma_k < 2/L"),
                Condition("step_below_2_over_L", sp.Lt(lr * L, 2), source=SOURCE_21, note="0 < gamma_k < 2/L")),
    requires=_REQUIRES,
    quantities={"N": "rounds: one stochastic gradient step per round", "lr": "lr"},
    quote="(1/L) E||grad f(x_R)||^2 <= (D_f^2 + sigma^2 sum_k gamma_k^2) / sum_k (2 gamma_k - L gamma_k^2), "
          "gamma_k < 2/L (2.4)",
    transcription=f"checked against {TEXT}; the arXiv PDF not read",
    note="Encoded for a constant step (the theorem allows any gamma_k < 2/L; the sums then reduce to N gamma^2 and "
         "N (2 gamma - L gamma^2), and the output distribution (2.3) is uniform). The left side is the expectation "
         "over R and the noise, i.e. the mean over k of E||grad f(x_k)||^2. At sigma = 0 and gamma = 1/L the bound "
         "2 L (f(x_1) - f*)/N is attained by f = L x^2/2 (x_2 = x* after one step).",
)

COR22 = Bound(
    id="ghadimi2013.cor2_2", paper=PAPER, title="RSG with the step rule (2.13): B_N",
    source=SOURCE_22, symbols=S, assumptions=_ASSUMPTIONS,
    lhs="step_grad_norm2_mean", lhs_kind="grad_norm2", lhs_description=_LHS,
    expr=L * (L * Df2 / N + (Dt + Df2 / Dt) * sigma / sp.sqrt(N)),
    definitions=(DF2,),
    conditions=(Condition("step_rule", sp.Eq(lr, sp.Min(1 / L, Dt / (sigma * sp.sqrt(N)))), source=SOURCE_22,
                          note="gamma_k = min{1/L, D~/(sigma sqrt(N))} (2.13)"),
                Condition("sigma_positive", sp.Gt(sigma, 0), source=SOURCE_22,
                          note="the step rule divides by sigma")),
    requires=_REQUIRES,
    order=Order(expr=1 / N + 1 / sp.sqrt(N), variable=N, source=SOURCE_22,
                      note="(2.14): L D_f^2/N + (D~ + D_f^2/D~) sigma/sqrt(N)"),
    quantities={"N": "rounds: one stochastic gradient step per round (the step rule depends on N)", "lr": "lr"},
    quote="(1/L) E||grad f(x_R)||^2 <= B_N = L D_f^2/N + (D~ + D_f^2/D~) sigma/sqrt(N), gamma_k = min{1/L, "
          "D~/(sigma sqrt(N))} (2.13)-(2.14)",
    transcription=f"checked against {TEXT}; the arXiv PDF not read",
    note="The step depends on the horizon N, so each N is its own run (not every round of one run). (2.14) follows "
         "from (2.4) with gamma = min{1/L, D~/(sigma sqrt N)}: 2 gamma - L gamma^2 >= gamma, then 1/gamma <= L + "
         "sigma sqrt(N)/D~ and sigma^2 gamma <= sigma D~/sqrt(N) (re-derived here; consistent with the statement).",
)
register(DF2, THM21A, COR22)
