"""Khaled, Mishchenko & Richtarik (AISTATS 2020, arXiv:1909.04746): local SGD, M workers, a constant step gamma,
synchronisations at most H steps apart (here: every H steps), xhat_t = (1/M) sum_m x_t^m the virtual average, every
stochastic sample function f_m(., xi) convex and L-smooth, the variance measured at the optimum only.

WRITTEN FROM MEMORY (``transcription``): the stored copies of the paper (arXiv, ar5iv, PMLR, OpenReview mirrors) hold
its abstract and introduction only, and no public repository states the theorems. What is remembered with some
confidence is each bound's structure (a contraction or 1/(gamma T) term in the start, a variance term divided by M,
a drift term in gamma^2 L (H - 1) that vanishes at H = 1, and the variance at the optimum as the noise measure:
sigma^2 = E||grad f(x*, xi)||^2 on identical data, sigma_dif^2 = (1/M) sum_m E||grad f_m(x*, xi_m)||^2 on
heterogeneous data). The constants (1, 2; 4, 4, 32 below), the powers of (H - 1) and the step conditions are not
reliably remembered: every one is a reading of the author's memory, to be checked against the text.

* identical data, f mu-strongly convex: for gamma <= 1/(4L) and 8 gamma L (H - 1) <= 1,
  E||xhat_T - x*||^2 <= (1 - gamma mu)^T ||x_0 - x*||^2 + gamma sigma^2/(mu M) + 2 gamma^2 sigma^2 L (H - 1)/mu;
* heterogeneous data, every f_m convex: for gamma <= 1/(4L) and 8 gamma L (H - 1) <= 1, with
  xbar_T = (1/T) sum_{t<T} xhat_t,
  E f(xbar_T) - f* <= 4 ||x_0 - x*||^2/(gamma T) + 4 gamma sigma_dif^2/M + 32 gamma^2 L (H - 1)^2 sigma_dif^2.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, SymbolSet, register, register_paper

PAPER = "khaled2020"
CITATION = "arXiv:1909.04746 (AISTATS 2020, PMLR 108:4519-4529); theorem numbers not verified"
SOURCE = ("A. Khaled, K. Mishchenko, P. Richtarik, Tighter theory for local SGD on identical and heterogeneous data, "
          "AISTATS 2020, arXiv:1909.04746")
UNVERIFIED = ("unverified: written from memory; no public copy of the theorems could be read (the stored arXiv, ar5iv "
              "and PMLR copies hold the abstract and introduction only): every constant, the power of (H - 1) and the "
              "step conditions are the author's recollection")

register_paper(PAPER, collection="zoo", citation=CITATION,
               title="Tighter theory for local SGD on identical and heterogeneous data")

S = SymbolSet(PAPER, strict=True)
L, mu, lr, M, H, T, D0, sigma, zeta, sdif2 = S.table("""
    L      f/w^2    positive     smoothness of every sample function f_m(., xi)
    mu     f/w^2    positive     strong convexity of f (identical data)
    lr     w^2/f    positive     the constant step gamma
    M      1        count        number of workers
    H      1        count        the largest number of local steps between two synchronisations
    T      1        count        number of local steps (iterations) t = 0..T
    D0     w^2      nonnegative  ||x_0 - x*||^2
    sigma  f/w      nonnegative  sigma^2 = E||grad f(x*, xi)||^2 (identical data: the noise at the optimum)
    zeta   f/w      nonnegative  zeta^2 = (1/M) sum_m ||grad f_m(x*)||^2 (heterogeneity at the optimum)
    sdif2  f^2/w^2  nonnegative  sigma_dif^2 = (1/M) sum_m E||grad f_m(x*, xi_m)||^2
""")

SDIF = Definition(id="khaled2020.sigma_dif", paper=PAPER, symbol=sdif2, expr=zeta**2 + sigma**2, source=SOURCE,
                  title="sigma_dif^2 = (1/M) sum_m E||grad f_m(x*, xi_m)||^2 = zeta^2 + sigma^2",
                  note="the bias-variance split of an unbiased oracle whose noise at x* has variance sigma^2 on every "
                       "worker: E||grad f_m(x*) + noise||^2 = ||grad f_m(x*)||^2 + sigma^2, averaged over m")
_STEP = (Condition("step_at_most_1_over_4L", sp.Le(4 * lr * L, 1), source=SOURCE, note="gamma <= 1/(4L) (memory)"),
         Condition("step_local_steps", sp.Le(8 * lr * L * (H - 1), 1), source=SOURCE,
                   note="8 gamma L (H - 1) <= 1 (memory)"))
# The papers assume every stochastic sample function f_m(., xi) convex and L-smooth, more than the catalogue's L_smooth
# and convex (about each f_m). With additive noise, f_m(x, xi) = f_m(x) + <xi, x> has f_m's Hessian, so the catalogue's
# certificates of f_m are the sample functions' too: the records require that oracle (a structural premise).
_REQUIRES = {"lr_schedule": "constant", "full_participation": True, "aggregation": "mean of the models",
             "oracle": "additive"}

IDENTICAL = Bound(
    id="khaled2020.identical", paper=PAPER, title="Local SGD, identical data, strongly convex f (from memory)",
    source=SOURCE + ", identical-data theorem (strongly convex)", symbols=S,
    assumptions=("identical_data", "L_smooth", "convex", "strongly_convex(mu)", "noise_at_optimum(sigma)"),
    lhs="dist2_opt", lhs_kind="dist2",
    lhs_description="E||xhat_T - x*||^2 at T = t H, the end of round t (the workers' models averaged: the global "
                    "model, the simulator's dist2_opt at round t)",
    expr=(1 - lr * mu) ** T * D0 + lr * sigma**2 / (mu * M) + 2 * lr**2 * sigma**2 * L * (H - 1) / mu,
    conditions=_STEP, requires={**_REQUIRES, "identical_clients": True},
    quantities={"M": "clients", "H": "local_steps", "T": "steps: T = t H at the end of round t", "lr": "lr"},
    transcription=UNVERIFIED,
    note="From memory (see the module docstring): the form (1 - gamma mu)^T D0 + gamma sigma^2/(mu M) + "
         "c gamma^2 sigma^2 L (H - 1)/mu with c = 2 and the step conditions are not checked against the text.",
)

HETEROGENEOUS = Bound(
    id="khaled2020.heterogeneous", paper=PAPER, title="Local SGD, heterogeneous data, convex f_m (from memory)",
    source=SOURCE + ", heterogeneous-data theorem (convex)", symbols=S,
    assumptions=("L_smooth", "convex", "heterogeneity_at_optimum(zeta)", "noise_at_optimum(sigma)"),
    lhs="avg_opt_error", lhs_kind="opt_error",
    lhs_description="E f(xbar_T) - f*, xbar_T = (1/T) sum_{t=0}^{T-1} xhat_t: the simulator's step measure "
                    "avg_opt_error at row T - 1 (the uniform average of xbar_0..xbar_{T-1})",
    expr=4 * D0 / (lr * T) + 4 * lr * sdif2 / M + 32 * lr**2 * L * (H - 1) ** 2 * sdif2,
    definitions=(SDIF,), conditions=_STEP, requires=_REQUIRES,
    quantities={"M": "clients", "H": "local_steps", "T": "steps: xbar_T averages xhat_0..xhat_{T-1}", "lr": "lr"},
    transcription=UNVERIFIED,
    note="From memory (see the module docstring): the constants 4, 4, 32 and the power (H - 1)^2 are not checked "
         "against the text. No stated order is encoded: at a fixed step the bound does not vanish, and the paper's "
         "step choice and corollary are not remembered.",
)
register(SDIF, IDENTICAL, HETEROGENEOUS)
