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

from fedtheory.theory import OrderStatement, StatedOrder, SymbolSet, register, register_paper

PAPER = "koloskova2020"
ARXIV = "arXiv:2003.10422"
SOURCE = (f"Koloskova, Loizou, Boreiri, Jaggi, Stich, A Unified Theory of Decentralized SGD with Changing Topology and "
          f"Local Updates, ICML 2020; {ARXIV}, Theorem 2")
UNVERIFIED = (f"unverified: written as known; no public copy of {ARXIV}'s statement (or of the explicit bounds behind "
              "its O~) was found")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Thm 2 (strongly convex, non-convex)",
               title="Koloskova et al. 2020: decentralized SGD with changing topology and local updates")

S = SymbolSet(PAPER, strict=True)
_pos, _nonneg = sp.Interval.open(0, sp.oo), sp.Interval(0, sp.oo)
L = S.add("L", "smoothness of every f_i", _pos, dim="f/w^2")
mu = S.add("mu", "strong convexity of every f_i (strongly convex case)", _pos, dim="f/w^2")
p = S.add("p", "expected consensus contraction per tau rounds (Assumption 4; 1 - lambda^2 for a fixed W)",
          sp.Interval.Lopen(0, 1), dim="1")
tau = S.add("tau", "rounds over which the contraction p holds (1 for a fixed W)", sp.Interval(1, sp.oo), dim="1")
n = S.add("n", "number of nodes", sp.Interval(1, sp.oo), integer=True, dim="1")
sigma_bar = S.add("sigma_bar", "noise at the optimum: (1/n) sum_i E||grad F_i(x*, xi) - grad f_i(x*)||^2 = sigma_bar^2",
                  _nonneg, dim="f/w")
zeta_bar = S.add("zeta_bar", "heterogeneity at the optimum: (1/n) sum_i ||grad f_i(x*)||^2 = zeta_bar^2", _nonneg,
                 dim="f/w")
zeta_hat = S.add("zeta_hat", "heterogeneity (non-convex): (1/n) sum_i ||grad f_i(x)||^2 <= zeta_hat^2 + P ||grad f(x)||^2",
                 _nonneg, dim="f/w")
eps = S.add("eps", "target accuracy of the strongly convex statement (a loss gap)", _pos, dim="f")
eps2 = S.add("eps2", "target accuracy of the non-convex statement (an average squared gradient norm)", _pos,
             dim="f^2/w^2")
sigma_hat = S.add("sigma_hat", "noise (non-convex): (1/n) sum_i E||grad F_i(x, xi) - grad f_i(x)||^2 <= sigma_hat^2 + "
                               "M ||grad f(x)||^2", _nonneg, dim="f/w")
F0 = S.add("F0", "f(x^(0)) - f*", _nonneg, dim="f")

STRONGLY_CONVEX = OrderStatement(
    id=f"{PAPER}.thm2_sc", paper=PAPER, title="Decentralized SGD, strongly convex: iterations to accuracy eps (O~)",
    source=SOURCE, symbols=S,
    statement="T = O~( sigma_bar^2/(mu n eps) + sqrt(L) (zeta_bar tau + sigma_bar sqrt(p tau))/(mu p sqrt(eps)) "
              "+ (L tau/(mu p)) log(1/eps) ) iterations, for a constant step size it chooses",
    assumptions=("L_smooth(L)", "strongly_convex_clients(mu)", "noise_at_optimum(sigma_bar)",
                 "heterogeneity_at_optimum(zeta_bar)", "consensus_rate(p)"),
    # the iteration count as a function of eps; O~ hides the log(1/eps) of the last term
    order=StatedOrder(expr=sigma_bar ** 2 / (mu * n * eps)
                      + sp.sqrt(L) * (zeta_bar * tau + sigma_bar * sp.sqrt(p * tau)) / (mu * p * sp.sqrt(eps))
                      + L * tau / (mu * p), variable=1 / eps, up_to_log=True, source=SOURCE),
    transcription=UNVERIFIED,
    note="Not checked on runs: an O~ complexity hides the constants and logarithms a row would compare with.",
)
NON_CONVEX = OrderStatement(
    id=f"{PAPER}.thm2_nc", paper=PAPER, title="Decentralized SGD, non-convex: iterations to an eps-stationary average (O)",
    source=SOURCE, symbols=S,
    statement="T = O( sigma_hat^2/(n eps^2) + (zeta_hat tau + sigma_hat sqrt(p tau))/(p eps^(3/2)) + tau/(p eps) ) "
              "L (f(x^(0)) - f*), eps the target average of E||grad f||^2, up to the factors of the growth constants "
              "(M, P) of Assumption 3b",
    assumptions=("L_smooth(L)", "lower_bounded", "consensus_rate(p)"),
    order=StatedOrder(expr=(sigma_hat ** 2 / (n * eps2 ** 2) + (zeta_hat * tau + sigma_hat * sp.sqrt(p * tau))
                            / (p * eps2 ** sp.Rational(3, 2)) + tau / (p * eps2)) * L * F0,
                      variable=1 / eps2, source=SOURCE),
    transcription=UNVERIFIED,
    note="Not checked on runs (an O statement). Assumption 3b's growth conditions on the noise and the heterogeneity "
         "have no catalogue entries of that form.",
)

register(STRONGLY_CONVEX, NON_CONVEX)
