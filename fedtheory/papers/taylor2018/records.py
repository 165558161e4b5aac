"""Taylor, Hendrickx & Glineur (2018), Theorem 3.1, read with f_2 = 0 (the proximal step is then the identity and
the proximal gradient method is gradient descent):

    x_{k+1} = x_k - gamma grad f(x_k),  f L-smooth and mu-strongly convex,  gamma > 0,
    ||x_N - x*||^2 <= max{(1 - gamma L)^2, (1 - gamma mu)^2}^N ||x_0 - x*||^2,

tight: on f(x) = L x^2/2 or mu x^2/2 (whichever factor is the larger) from any x_0 the two sides are equal; at
gamma = 2/(L + mu) both factors are ((L - mu)/(L + mu))^2 = ((kappa - 1)/(kappa + 1))^2, and a quadratic with
eigenvalues mu and L attains it from every start.

Transcribed from PEPit's ``composite_convex_minimization/proximal_gradient.py`` (PerformanceEstimation/PEPit), which
states the rate as tight and cites [Taylor, Hendrickx, Glineur 2018, Theorem 3.1] (and Polyak 1987, Ryu & Boyd 2016,
Lessard et al. 2016 for gradient descent), and from PEPit's ``wc_gradient_descent_contraction`` (the same factor
for two GD sequences ||x_N - y_N||^2, tight on quadratics; y_0 = x* gives this record). The JOTA abstract says the
rates are established "for any step size"; the arXiv text itself could not be read here.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, SymbolSet, register, register_paper

PAPER = "taylor2018"
CITATION = "arXiv:1705.04398 (JOTA 178:455-476, 2018), Thm 3.1 with f_2 = 0"
SOURCE = ("A. Taylor, J. Hendrickx, F. Glineur, Exact worst-case convergence rates of the proximal gradient method "
          "for composite convex minimization, JOTA 178 (2018) 455-476, arXiv:1705.04398, Theorem 3.1 (f_2 = 0)")
TEXT = ("PEPit (PerformanceEstimation/PEPit) PEPit/examples/composite_convex_minimization/proximal_gradient.py "
        "(docstring: the tight guarantee, citing THG 2018 Thm 3.1) and wc_gradient_descent_contraction (the same "
        "factor for gradient descent, tight on quadratics)")

register_paper(PAPER, collection="zoo", citation=CITATION,
               title="Exact worst-case convergence rates of the proximal gradient method for composite convex "
                     "minimization")

S = SymbolSet(PAPER, strict=True)
L, mu, lr, N, D0 = S.table("""
    L   f/w^2  positive     smoothness of f
    mu  f/w^2  positive     strong convexity of f
    lr  w^2/f  positive     the constant step gamma of x_{k+1} = x_k - gamma grad f(x_k)
    N   1      count        number of gradient steps x_0 -> x_N (one client, one local step per round: N rounds)
    D0  w^2    nonnegative  ||x_0 - x*||^2
""")

THM31 = Bound(
    id="taylor2018.thm3_1", paper=PAPER, title="Gradient descent, L-smooth mu-strongly convex f: distance to x*",
    source=SOURCE, symbols=S,
    assumptions=("L_smooth_global", "strongly_convex(mu)"),
    lhs="dist2_opt", lhs_kind="dist2",
    lhs_description="||x_N - x*||^2 after N exact gradient steps of size gamma (the simulator's dist2_opt at round N, "
                    "one local step per round)",
    expr=sp.Max((1 - lr * L) ** 2, (1 - lr * mu) ** 2) ** N * D0,
    conditions=(Condition("step_positive", sp.Gt(lr, 0), source=SOURCE, note="any step gamma > 0"),
                Condition("mu_at_most_L", sp.Le(mu, L), source=SOURCE, note="the class F_{mu,L}: 0 < mu <= L")),
    requires={"local_steps": 1, "oracle": "exact", "full_participation": True, "aggregation": "mean of the models",
              "lr_schedule": "constant"},
    quantities={"N": "rounds: one exact gradient step per round", "lr": "lr"},
    quote="||x_n - x*||^2 <= max{(1 - L gamma)^2, (1 - mu gamma)^2}^n ||x_0 - x*||^2 (tight)",
    transcription=f"checked against {TEXT}; the arXiv text (1705.04398) not read",
    note="Checked against PEPit's statements (which call the rate tight and cite THG 2018 Thm 3.1 for the proximal "
         "gradient method; with f_2 = 0 it is gradient descent), not against the arXiv PDF. The step range: PEPit "
         "states none and the JOTA abstract says 'for any step size', so the record asks gamma > 0 only (for "
         "gamma >= 2/L the factor is >= 1 and the bound is a growth bound, still true: the gradient step is "
         "max{|1 - gamma L|, |1 - gamma mu|}-Lipschitz on F_{mu,L}). The checks stay at gamma < 2/L.",
)
register(THM31)
