"""Koloskova, Loizou, Boreiri, Jaggi & Stich, *A Unified Theory of Decentralized SGD with Changing Topology and Local
Updates* (ICML 2020; arXiv:2003.10422): Theorem 2, strongly convex and non-convex, recorded as stated orders.

Theorem 2 states, for decentralized SGD whose mixing contracts the consensus distance in expectation by (1 - p) every
tau rounds (Assumption 4; a fixed symmetric W gives p = 1 - lambda^2 with tau = 1, the topologies' certificate
``consensus_rate``), the number of iterations T after which an accuracy eps is reached, as O~ (strongly convex:
weighted average of E f(xbar^(t)) - f* plus mu/2 E||xbar^(T+1) - x*||^2; non-convex: the average of
E||grad f(xbar^(t))||^2). Its O~ / O hide the constants and logarithms, and the explicit bounds behind them (the
appendix's recursions and step-size tuning) were not available: no public copy of the paper's text was found (the
stored pages and repositories hold its title, abstract and citations only). Both statements are written as known,
marked unverified, and no simulation row is made of them: a row needs the constants an O~ hides. What is checked is
their units: every term of each stated iteration count must be dimensionless (``koloskova2020.units``).
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Order, OrderStatement, SymbolSet, register, register_paper

PAPER = "koloskova2020"
ARXIV = "arXiv:2003.10422"
SOURCE = (f"Koloskova, Loizou, Boreiri, Jaggi, Stich, A Unified Theory of Decentralized SGD with Changing Topology and "
          f"Local Updates, ICML 2020; {ARXIV}, Theorem 2")
UNVERIFIED = (f"unverified: written as known; no public copy of {ARXIV}'s statement (or of the explicit bounds behind "
              "its O~) was found")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Thm 2 (strongly convex, non-convex)",
               title="Koloskova et al. 2020: decentralized SGD with changing topology and local updates")

S = SymbolSet(PAPER, strict=True)
L, mu, p = S.table("""
    L   f/w^2  positive  smoothness of every f_i
    mu  f/w^2  positive  strong convexity of every f_i (strongly convex case)
    p   1      fraction  expected consensus contraction per tau rounds (Assumption 4; 1 - lambda^2 for a fixed W)
""")
tau = S.add("tau", "rounds over which the contraction p holds (1 for a fixed W)", sp.Interval(1, sp.oo), dim="1")
n, sigma_bar, zeta_bar, zeta_hat, eps, eps2, sigma_hat, F0 = S.table("""
    n          1        count        number of nodes
    sigma_bar  f/w      nonnegative  noise at the optimum: (1/n) sum_i E||grad F_i(x*, xi) - grad f_i(x*)||^2 = sigma_bar^2
    zeta_bar   f/w      nonnegative  heterogeneity at the optimum: (1/n) sum_i ||grad f_i(x*)||^2 = zeta_bar^2
    zeta_hat   f/w      nonnegative  heterogeneity (non-convex): (1/n) sum_i ||grad f_i(x)||^2 <= zeta_hat^2 + P ||grad f(x)||^2
    eps        f        positive     target accuracy of the strongly convex statement (a loss gap)
    eps2       f^2/w^2  positive     target accuracy of the non-convex statement (an average squared gradient norm)
    sigma_hat  f/w      nonnegative  noise (non-convex): (1/n) sum_i E||grad F_i(x, xi) - grad f_i(x)||^2 <= sigma_hat^2 + M ||grad f(x)||^2
    F0         f        nonnegative  f(x^(0)) - f*
""")  # noqa: E501 - a table, one symbol per line

STRONGLY_CONVEX = OrderStatement(
    id=f"{PAPER}.thm2_sc", paper=PAPER, title="Decentralized SGD, strongly convex: iterations to accuracy eps (O~)",
    source=SOURCE, symbols=S,
    statement="T = O~( sigma_bar^2/(mu n eps) + sqrt(L) (zeta_bar tau + sigma_bar sqrt(p tau))/(mu p sqrt(eps)) "
              "+ (L tau/(mu p)) log(1/eps) ) iterations, for a constant step size it chooses",
    assumptions=("L_smooth(L)", "strongly_convex_clients(mu)", "noise_at_optimum(sigma_bar)",
                 "heterogeneity_at_optimum(zeta_bar)", "consensus_rate(p)"),
    # the iteration count as a function of eps; O~ hides the log(1/eps) of the last term
    order=Order(expr=sigma_bar ** 2 / (mu * n * eps)
                      + sp.sqrt(L) * (zeta_bar * tau + sigma_bar * sp.sqrt(p * tau)) / (mu * p * sp.sqrt(eps))
                      + L * tau / (mu * p), variable=1 / eps, up_to_log=True, source=SOURCE),
    transcription=UNVERIFIED,
    note="Not checked on runs: an O~ complexity hides the constants and logarithms a row would compare with.",
)
NON_CONVEX = OrderStatement(
    id=f"{PAPER}.thm2_nc", paper=PAPER, title="Decentralized SGD, non-convex: iterations "
                                              "to an eps-stationary average (O)",
    source=SOURCE, symbols=S,
    statement="T = O( sigma_hat^2/(n eps^2) + (zeta_hat tau + sigma_hat sqrt(p tau))/(p eps^(3/2)) + tau/(p eps) ) "
              "L (f(x^(0)) - f*), eps the target average of E||grad f||^2, up to the factors of the growth constants "
              "(M, P) of Assumption 3b",
    assumptions=("L_smooth(L)", "lower_bounded", "consensus_rate(p)"),
    order=Order(expr=(sigma_hat ** 2 / (n * eps2 ** 2) + (zeta_hat * tau + sigma_hat * sp.sqrt(p * tau))
                            / (p * eps2 ** sp.Rational(3, 2)) + tau / (p * eps2)) * L * F0,
                      variable=1 / eps2, source=SOURCE),
    transcription=UNVERIFIED,
    note="Not checked on runs (an O statement). Assumption 3b's growth conditions on the noise and the heterogeneity "
         "have no catalogue entries of that form.",
)

register(STRONGLY_CONVEX, NON_CONVEX)
