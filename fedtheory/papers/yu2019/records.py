"""Yu, Yang & Zhu, *Parallel Restarted SGD with Faster Convergence and Less Communication: Demystifying Why Model
Averaging Works for Deep Learning* (AAAI 2019; arXiv:1807.06629): non-convex local SGD, a zoo theorem.

Theorem 1, as known (Algorithm 1, PR-SGD: N workers take SGD steps x_i^t = x_i^{t-1} - gamma grad F_i(x_i^{t-1}; z)
and every I iterations replace their models by the average; xbar^t = (1/N) sum_i x_i^t): under Assumption 1 (each
f_i L-smooth; E||grad F_i(x; z) - grad f_i(x)||^2 <= sigma^2 and E||grad F_i(x; z)||^2 <= G^2 for every x and i),
if 0 < gamma <= 1/L, then for every T >= 1

    (1/T) sum_{t=1}^{T} E||grad f(xbar^{t-1})||^2 <= 2 (f(xbar^0) - f*)/(gamma T) + 4 gamma^2 I^2 G^2 L^2 + L gamma
    sigma^2/N,

f = (1/N) sum_i f_i, f* its minimum. No public copy of the paper's text was found (the stored pages hold its
introduction only): the record is written as known and marked unverified, so a finding on it is listed apart.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, SymbolSet, register, register_paper

PAPER = "yu2019"
ARXIV = "arXiv:1807.06629"
SOURCE = ("Yu, Yang & Zhu, Parallel Restarted SGD with Faster Convergence and Less Communication, AAAI 2019; "
          f"{ARXIV}, Theorem 1")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Thm 1",
               title="Yu, Yang & Zhu 2019: parallel restarted (local) SGD, non-convex")

S = SymbolSet(PAPER, strict=True)
gamma, L, sigma, G, N, I, T, Df0 = S.table("""
    gamma  w^2/f  positive     the SGD step size
    L      f/w^2  positive     smoothness of every f_i (Assumption 1)
    sigma  f/w    nonnegative  E||grad F_i(x; z) - grad f_i(x)||^2 <= sigma^2 (Assumption 1)
    G      f/w    nonnegative  E||grad F_i(x; z)||^2 <= G^2 for every x and i (Assumption 1)
    N      1      count        number of workers
    I      1      count        iterations between two averagings
    T      1      count        iterations: the average is over xbar^0..xbar^{T-1}
    Df0    f      nonnegative  f(xbar^0) - f*
""")

THM1 = Bound(
    id=f"{PAPER}.thm1", paper=PAPER, title="PR-SGD (local SGD), non-convex: the average squared gradient norm",
    source=SOURCE, symbols=S,
    assumptions=("L_smooth(L)", "lower_bounded", "bounded_variance(sigma)", "bounded_gradient(G)"),
    lhs="step_grad_norm2_mean", lhs_kind="grad_norm2",
    lhs_description="(1/T) sum_{t=1}^T E||grad f(xbar^{t-1})||^2: step measure step_grad_norm2_mean, row T - 1 "
                    "(xbar_s the workers' average at every local step), mean over runs",
    expr=2 * Df0 / (gamma * T) + 4 * gamma ** 2 * I ** 2 * G ** 2 * L ** 2 + L * gamma * sigma ** 2 / N,
    conditions=(Condition("step", sp.Le(gamma * L, 1), source=SOURCE, note="0 < gamma <= 1/L"),),
    requires={"aggregation": "the workers' models averaged every I iterations", "full_participation": True},
    quantities={"N": "clients", "I": "local_steps", "gamma": "lr",
                "T": "steps: T iterations, the average over xbar^0..xbar^{T-1} (row T - 1 of step measures)"},
    transcription="unverified: written as known; no public copy of the statement was found (the stored pages of "
                  f"{ARXIV} hold its introduction only)",
    note="Assumption 1's bounds are over every x; the check uses Huber regression (global gradient bound) with "
         "additive noise, so G^2 = G_grad^2 + sigma^2 is certified globally.",
)

register(THM1)
