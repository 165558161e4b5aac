"""Drori & Teboulle (2014), Theorem 3.1: the gradient method on L-smooth convex functions.

    x_{k+1} = x_k - (h/L) grad f(x_k),  k = 0..N-1,  0 < h <= 1,
    f(x_N) - f* <= L R^2 / (4 N h + 2),   ||x_0 - x*|| <= R,  x* a minimizer of f,

and the bound is attained (for every such h): the one-dimensional Huber-type function
phi(x) = L R |x| / (2 N h + 1) - L R^2 / (2 (2 N h + 1)^2) for |x| >= R/(2 N h + 1), L x^2 / 2 otherwise, from
x_0 = R, stays on the linear part for N steps and ends at f(x_N) - f* = L R^2 / (4 N h + 2) exactly.

Transcribed from the statement in PEPit's example ``unconstrained_convex_minimization/gradient_descent.py``
(PerformanceEstimation/PEPit), which quotes [Drori & Teboulle 2014, Theorem 3.1] for a fixed step gamma <= 1/L as
f(x_n) - f* <= L ||x_0 - x*||^2 / (4 n L gamma + 2) and calls it tight on Huber functions; the step is written here
as D&T's normalised h = L gamma. The arXiv text itself could not be read where this plug-in was written (the
stored copies hold its abstract only); what that leaves open is in the record's ``note``. The attaining function
above is re-derived (checks.py computes it and the check shows equality).
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Order, SymbolSet, register, register_paper

PAPER = "drori2014"
CITATION = "arXiv:1206.3209 (Math. Program. 145:451-482, 2014), Thm 3.1"
SOURCE = ("Y. Drori, M. Teboulle, Performance of first-order methods for smooth convex minimization: a novel "
          "approach, Math. Program. 145 (2014) 451-482, arXiv:1206.3209, Theorem 3.1")
TEXT = ("PEPit (PerformanceEstimation/PEPit) PEPit/examples/unconstrained_convex_minimization/gradient_descent.py, "
        "docstring 'Theoretical guarantee', which states Drori & Teboulle 2014 Thm 3.1 for gamma <= 1/L and its "
        "tightness on Huber functions")

register_paper(PAPER, collection="zoo", citation=CITATION,
               title="Performance of first-order methods for smooth convex minimization: a novel approach")

S = SymbolSet(PAPER, strict=True)
L, R2, N, lr = S.table("""
    L   f/w^2  positive     smoothness of f: ||grad f(x) - grad f(y)|| <= L ||x - y||
    R2  w^2    nonnegative  R^2 >= ||x_0 - x*||^2, x* a minimizer of f
    N   1      count        number of gradient steps x_0 -> x_N (one client, one local step per round: N rounds)
    lr  w^2/f  positive     the constant step size h/L of x_{k+1} = x_k - (h/L) grad f(x_k)
""")

THM31 = Bound(
    id="drori2014.thm3_1", paper=PAPER, title="Gradient descent, L-smooth convex f, step h/L with 0 < h <= 1",
    source=SOURCE, symbols=S,
    # f convex and L-smooth with a minimizer (D&T's class C^{1,1}_L, x* in the solution set); the method sees exact
    # gradients of f (one client, or the mean of the clients' exact gradients: requires below)
    assumptions=("L_smooth_global", "convex_global", "lower_bounded"),
    lhs="opt_error", lhs_kind="opt_error",
    lhs_description="f(x_N) - f* after N exact gradient steps of size h/L (the simulator's opt_error at round N, "
                    "one local step per round)",
    expr=L * R2 / (4 * N * L * lr + 2),
    conditions=(Condition("step_positive", sp.Gt(lr * L, 0), source=SOURCE, note="h = L * step > 0"),
                Condition("step_at_most_1_over_L", sp.Le(lr * L, 1), source=SOURCE, note="h = L * step <= 1")),
    requires={"local_steps": 1, "oracle": "exact", "full_participation": True, "aggregation": "mean of the models",
              "lr_schedule": "constant"},
    order=Order(expr=1 / N, variable=N, source=SOURCE, note="read off the bound: L R^2/(4 N h + 2) = O(1/N)"),
    quantities={"N": "rounds: one exact gradient step per round", "lr": "lr"},
    quote="f(x_N) - f* <= L R^2 / (4 N h + 2) for x_{k+1} = x_k - (h/L) f'(x_k), 0 < h <= 1; tight",
    transcription=f"checked against {TEXT}; the arXiv text (1206.3209) not read",
    note="Checked against PEPit's statement of Thm 3.1 (step gamma <= 1/L; tight on Huber functions), not against "
         "the arXiv PDF, which could not be read here: D&T's own wording of the step range (0 < h <= 1), of R "
         "(R >= ||x_0 - x*|| for a minimizer x*, or the distance to the solution set) and the theorem number are "
         "PEPit's. Both readings of R give the same check: every problem used has a unique minimizer. The "
         "attaining Huber function is re-derived in checks.py (equality at the horizon N it is built for).",
)
register(THM31)
