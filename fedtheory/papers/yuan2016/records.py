"""Yuan, Ling & Yin, *On the Convergence of Decentralized Gradient Descent* (SIAM J. Optim. 26(3), 2016;
arXiv:1310.7063v3): decentralized gradient descent (DGD) with a fixed step size, a zoo theorem.

The text read: arXiv:1310.7063v3 as stated, page by page and with its equation numbers, in the public Lean
statements of prove2me/formalpedia (``YuanDGD.Linear``: the setting, ``theorem_1_bound``, ``lemma_1``,
``theorem_3_rate``; each quotes the page and equation it formalises). The PDF itself was not read. What the text
says, in its own notation:

* problem (2): min_x f(x) = sum_i f_i(x) over n agents; iteration (4), from x_(i)(0) = 0:
  x_(i)(k+1) = sum_j w_ij x_(j)(k) - alpha grad f_i(x_(i)(k)); beta = max{|lambda_2(W)|, |lambda_n(W)|} (5);
* Assumption 1 (p. 4): each f_i convex, differentiable, bounded below, grad f_i L_{f_i}-Lipschitz; the graph
  connected; W symmetric, doubly stochastic, on the graph, beta < 1;
* (10): D = sqrt(2 L_h sum_i (f_i(0) - f_i^o)), L_h = max_i L_{f_i}, f_i^o = inf f_i; **D bounds the stacked
  gradient** h(k) = [grad f_1(x_(1)(k)); ...; grad f_n(x_(n)(k))] in the Euclidean norm of R^{np}: Theorem 1
  (p. 7) proves ||h(k)|| <= D under (9), alpha <= (1 + lambda_n(W))/L_h;
* Lemma 1 (p. 8): if (10) holds, ||x_(i)(k) - xbar(k)|| <= alpha D/(1 - beta) for every agent i and every k;
* Theorem 3 (pp. 12-13, with the constant of its proof): f strongly convex with mu_fbar = mu_f/n,
  L_fbar = (1/n) sum_i L_{f_i} (Lemma 3, case a): c1 = 1/(mu_fbar + L_fbar), c2 = mu_fbar L_fbar/(mu_fbar + L_fbar);
  0 < alpha <= min{(1 + lambda_n(W))/L_h, c1}; delta = c2/(2 (1 - alpha c2)); c3 = sqrt(1 - alpha c2/2),
  c4^2 = alpha^3 (alpha + 1/delta) L_h^2 D^2/(1 - beta)^2; then ||xbar(k) - x*|| <= c3^k ||xbar(0) - x*||
  + c4/sqrt(1 - c3^2): linear convergence of the mean to a neighbourhood of radius O(alpha/(1 - beta)).

The question issue 34 asked, settled from the text: D is the bound of the *stacked* gradient (its definition (10),
the norm of R^{np} in Theorem 1, and Lemma 1's hypothesis "(10) holds"), not a bound on each agent's gradient. A
per-agent reading (D = max_i ||grad f_i||) is a mis-transcription: on a complete graph of 16 agents with one agent's
Huber loss opposed to the other fifteen it gives a consensus bound alpha D that the first step exceeds 1.875 times
(the previous trial's 1.9x; the check's negative control runs exactly that reading). With the text's D (here
sqrt(16) times the per-agent bound at the start) the lemma holds: not an erratum.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, SymbolSet, Units, register, register_paper

PAPER = "yuan2016"
ARXIV = "arXiv:1310.7063v3"
SOURCE = "Yuan, Ling & Yin, On the Convergence of Decentralized Gradient Descent, SIAM J. Optim. 2016; " + ARXIV
TEXT = (f"{ARXIV} as stated page by page (with its equation numbers) in the public Lean statements of "
        "prove2me/formalpedia (YuanDGD.Linear); the PDF itself was not read")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Lemma 1, Thm 1 (10), Thm 3",
               title="Yuan, Ling & Yin 2016: decentralized gradient descent with a fixed step")

S = SymbolSet(PAPER, strict=True)
_pos = sp.Interval.open(0, sp.oo)
alpha = S.add("alpha", "the fixed step size of iteration (4)", _pos, dim="w^2/f")
beta = S.add("beta", "beta = max{|lambda_2(W)|, |lambda_n(W)|} (5): second largest eigenvalue modulus of W",
             sp.Interval.Ropen(0, 1), dim="1")
lam_n = S.add("lam_n", "lambda_n(W): the smallest eigenvalue of W", sp.Interval(-1, 1), dim="1")
n = S.add("n", "number of agents", sp.Interval(2, sp.oo), integer=True, dim="1")
k, D, L_h, gap0, mu_fbar, L_fbar, e0, c1, c2, delta, c3, c4 = S.table("""
    k        1      index        iteration index: x(k) after k iterations of (4) from x(0) = 0
    D        f/w    nonnegative  bound on the stacked gradient, ||h(k)|| = (sum_i ||grad f_i(x_(i)(k))||^2)^(1/2) <= D for every k ((10); the Euclidean norm of R^{np}, not a bound on each agent's gradient)
    L_h      f/w^2  positive     L_h = max_i L_{f_i} (Assumption 1)
    gap0     f      nonnegative  sum_i (f_i(0) - f_i^o): the agents' gaps at the start x_(i)(0) = 0, f_i^o = inf f_i
    mu_fbar  f/w^2  positive     mu_fbar = mu_f/n: strong convexity of fbar = (1/n) sum_i f_i (Lemma 3, case a)
    L_fbar   f/w^2  positive     L_fbar = (1/n) sum_i L_{f_i}: a Lipschitz constant of grad fbar (p. 10)
    e0       w      nonnegative  ||xbar(0) - x*||, x* the minimizer of f (xbar(0) = 0)
    c1       w^2/f  positive     c1 = 1/(mu_fbar + L_fbar) (Lemma 3, case a)
    c2       f/w^2  positive     c2 = mu_fbar L_fbar/(mu_fbar + L_fbar) (Lemma 3, case a)
    delta    f/w^2  positive     delta = c2/(2 (1 - alpha c2)) (Theorem 3's choice)
    c3       1      positive     c3 = sqrt(1 - alpha c2 + alpha delta - alpha^2 delta c2) = sqrt(1 - alpha c2/2)
    c4       w      nonnegative  c4 = sqrt(alpha^3 (alpha + 1/delta) L_h^2 D^2/(1 - beta)^2)
""")  # noqa: E501 - a table, one symbol per line

D_DEF = Definition(id=f"{PAPER}.D", paper=PAPER, symbol=D, expr=sp.sqrt(2 * L_h * gap0),
                   source=f"{SOURCE}, (10) (p. 7)", title="D = sqrt(2 L_h sum_i (f_i(0) - f_i^o))")
C1_DEF = Definition(id=f"{PAPER}.c1", paper=PAPER, symbol=c1, expr=1 / (mu_fbar + L_fbar),
                    source=f"{SOURCE}, Lemma 3 (p. 12)", title="c1 (strongly convex f)")
C2_DEF = Definition(id=f"{PAPER}.c2", paper=PAPER, symbol=c2, expr=mu_fbar * L_fbar / (mu_fbar + L_fbar),
                    source=f"{SOURCE}, Lemma 3 (p. 12)", title="c2 (strongly convex f)")
DELTA_DEF = Definition(id=f"{PAPER}.delta", paper=PAPER, symbol=delta, expr=c2 / (2 * (1 - alpha * c2)),
                       source=f"{SOURCE}, Theorem 3 (p. 12)", title="delta of Theorem 3's particular choice")
C3_DEF = Definition(id=f"{PAPER}.c3", paper=PAPER, symbol=c3,
                    expr=sp.sqrt(1 - alpha * c2 + alpha * delta - alpha ** 2 * delta * c2),
                    source=f"{SOURCE}, Theorem 3 (p. 12)", title="c3 (the linear rate)")
C4_DEF = Definition(id=f"{PAPER}.c4", paper=PAPER, symbol=c4,
                    expr=sp.sqrt(alpha ** 3 * (alpha + 1 / delta) * L_h ** 2 * D ** 2 / (1 - beta) ** 2),
                    source=f"{SOURCE}, Theorem 3 (p. 12)", title="c4 (the neighbourhood)")

STEP_9 = Condition("step_9", sp.Le(alpha, (1 + lam_n) / L_h), source=f"{SOURCE}, (9) (p. 7)",
                   note="alpha <= (1 + lambda_n(W))/L_h")
# what the text's iteration is, and where it starts (x_(i)(0) = 0, p. 7); the check passes the run's settings
REQUIRES = {"algorithm": "DGD (4): local_steps = 1, mix then step, exact gradients", "start": "x(0) = 0"}
QUANTITIES = {"n": "clients", "alpha": "lr",
              "k": "round_index: x(k) is the agents' models after k rounds of DGD (one gradient step per round)"}

LEMMA1 = Bound(
    id=f"{PAPER}.lemma1", paper=PAPER, title="DGD: every agent within alpha D/(1 - beta) of the mean (consensus)",
    source=f"{SOURCE}, Lemma 1 (p. 8), with (10) (p. 7)", symbols=S,
    assumptions=("L_smooth(L_h)", "convex", "mixing_matrix(beta)"),
    lhs="consensus_max", lhs_kind="deviation",
    lhs_description="max_i ||x_(i)(k) - xbar(k)|| (gossip measure consensus_max, row k - 1: the models after k rounds)",
    expr=alpha * D / (1 - beta),
    requires=REQUIRES, quantities=QUANTITIES,
    transcription=f"checked against {TEXT}: Lemma 1 (p. 8) and (10), Theorem 1 (p. 7)",
    note="D is the text's stacked bound ((10): ||h(k)|| <= D, the norm of R^{np}); the check applies the lemma with "
         "the smallest D for which its hypothesis holds on the run, D = max_k ||h(k)|| (measure dgd_stacked_grad). The "
         "per-agent reading (D = max_i ||grad f_i||) is refuted by the text and is the check's negative control. "
         "Assumption 1's 'each f_i bounded below' has no catalogue entry (the lemma does not use it).",
)

THM1 = Bound(
    id=f"{PAPER}.thm1", paper=PAPER, title="DGD: the stacked gradient stays below "
                                           "D = sqrt(2 L_h sum_i (f_i(0) - f_i^o))",
    source=f"{SOURCE}, Theorem 1, (9)-(10) (p. 7)", symbols=S,
    assumptions=("L_smooth(L_h)", "convex", "mixing_matrix(beta)"),
    lhs="dgd_stacked_grad", lhs_kind="stacked_grad_norm",
    lhs_description="||h(k)|| = (sum_i ||grad f_i(x_(i)(k))||^2)^(1/2) (measure dgd_stacked_grad, row k), for k >= 1",
    expr=D, definitions=(D_DEF,), conditions=(STEP_9,),
    requires=REQUIRES, quantities=QUANTITIES,
    transcription=f"checked against {TEXT}: Theorem 1, (9) and (10) (p. 7)",
    note="The page states (10) for k = 1, 2, ...; the check compares from k = 1. f_i^o are the agents' exact minima.",
)

THM3 = Bound(
    id=f"{PAPER}.thm3", paper=PAPER, title="DGD, strongly convex f: the mean converges linearly to an "
                                          "O(alpha/(1 - beta)) neighbourhood of x*",
    source=f"{SOURCE}, Theorem 3 ('in particular', p. 12) with the constant of its proof (p. 13), Lemma 3 (a)",
    symbols=S,
    assumptions=("L_smooth(L_h)", "convex", "strongly_convex(mu_fbar)", "L_smooth_global(L_fbar)",
                 "mixing_matrix(beta)"),
    lhs="dist_opt", lhs_kind="dist", units=Units(lhs="w"),
    lhs_description="||xbar(k) - x*|| (sqrt of dist2_opt at round k: the gossip state's w is the agents' mean)",
    expr=c3 ** k * e0 + c4 / sp.sqrt(1 - c3 ** 2),
    definitions=(C1_DEF, C2_DEF, DELTA_DEF, C3_DEF, C4_DEF, D_DEF),
    conditions=(STEP_9, Condition("step_c1", sp.Le(alpha, c1), source=f"{SOURCE}, Theorem 3 (p. 12)",
                                  note="alpha <= c1 = 1/(mu_fbar + L_fbar)")),
    requires=REQUIRES, quantities=QUANTITIES,
    transcription=f"checked against {TEXT}: Theorem 3 ('in particular', p. 12), its proof's constant (p. 13), "
                  "Lemma 3 (p. 12), (10)",
    note="Case (a) of Lemma 3 (f strongly convex); the restricted strongly convex case (b) is not encoded. "
         "L_fbar is the text's (1/n) sum_i L_{f_i} (the agents' exact L_i); it is bound to L_smooth_global, so a value "
         "below the certified smoothness of fbar would not be admitted.",
)

register(D_DEF, C1_DEF, C2_DEF, DELTA_DEF, C3_DEF, C4_DEF, LEMMA1, THM1, THM3)
