"""Li et al. (ICLR 2020), Theorem 1: FedAvg with full participation on strongly convex, non-IID clients.

    E[F(w_T)] - F* <= kappa/(gamma + T - 1) * (2B/mu + (mu gamma/2) E||w_1 - w*||^2),
    kappa = L/mu, gamma = max{8 kappa, E}, eta_t = 2/(mu (gamma + t)),
    B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2,  Gamma = F* - sum_k p_k F_k*.

Index convention: w_1 is the starting point and t counts SGD iterations (not rounds), so after R rounds
of E local steps the global model is w_T with T = R E + 1.
"""
import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, StatedOrder, SymbolSet, register, register_assumption

PAPER = "li2020"
SOURCE = "Li, Huang, Yang, Wang, Zhang, ICLR 2020, Theorem 1"
NONNEG = sp.Interval(0, sp.oo)

register_assumption("strongly_convex_each(mu)", "each client objective F_k is mu-strongly convex (Li et al. Assumption 2)")
register_assumption("bounded_variance_each(sigma_k)",
                    "E||grad F_k(w, xi) - grad F_k(w)||^2 <= sigma_k^2 for each client k (Li et al. Assumption 3)")

S = SymbolSet(PAPER)
L = S.add("L", "smoothness of every F_k (Assumption 1): max_k L_k", dim="f/w^2")
mu = S.add("mu", "strong convexity of every F_k (Assumption 2): min_k mu_k", dim="f/w^2")
E = S.add("E", "local SGD steps per round", integer=True, dim="1")
T = S.add("T", "iteration index of w_T (w_1 = start; after R rounds T = R E + 1)", integer=True, dim="1")
sum_p2_sigma2 = S.add("sum_p2_sigma2", "sum_k p_k^2 sigma_k^2 (Assumption 3: E||g_k - grad F_k||^2 <= sigma_k^2)", NONNEG, dim="f^2/w^2")
Gamma = S.add("Gamma", "F* - sum_k p_k F_k* (degree of non-IID-ness)", NONNEG, dim="f")
G = S.add("G", "E||g_k(w, xi)||^2 <= G^2 for every client and iterate (Assumption 4)", NONNEG, dim="f/w")
Delta1 = S.add("Delta1", "E||w_1 - w*||^2", NONNEG, dim="w^2")
lr = S.add("lr", "numerator of the step-size schedule eta_t = lr/(t + lr_offset)", dim="w^2/f")
lr_offset = S.add("lr_offset", "offset of the step-size schedule", NONNEG, dim="1")
kappa = S.add("kappa", "condition number L/mu", dim="1")
gamma = S.add("gamma", "schedule offset max{8 kappa, E}", dim="1")
B = S.add("B", "the noise-and-heterogeneity constant of Theorem 1", NONNEG, dim="f^2/w^2")

KAPPA = Definition(id="li2020.kappa", paper=PAPER, symbol=kappa, expr=L / mu, source=SOURCE, title="kappa")
GAMMA = Definition(id="li2020.gamma", paper=PAPER, symbol=gamma, expr=sp.Max(8 * kappa, E), source=SOURCE,
                   title="gamma")
B_DEF = Definition(id="li2020.B", paper=PAPER, symbol=B, expr=sum_p2_sigma2 + 6 * L * Gamma + 8 * (E - 1) ** 2 * G ** 2,
                   source=SOURCE, title="B")

THM1 = Bound(
    id="li2020.thm1", paper=PAPER, title="FedAvg, full participation, strongly convex non-IID clients",
    source=SOURCE, symbols=S,
    assumptions=("L_smooth", "strongly_convex_each(mu)", "bounded_variance_each(sigma_k)", "bounded_gradient(G)"),
    lhs="opt_error", lhs_kind="opt_error",
    lhs_description="E[F(w_T)] - F* (simulator measure opt_error at round (T - 1)/E)",
    expr=kappa / (gamma + T - 1) * (2 * B / mu + mu * gamma / 2 * Delta1),
    definitions=(B_DEF, GAMMA, KAPPA),
    conditions=(
        # The schedule is part of the statement: exact equalities, checked both ways.
        Condition("step_numerator", sp.Eq(lr * mu, 2), source=SOURCE, note="eta_t = 2/(mu (gamma + t))"),
        Condition("step_offset", sp.Eq(lr_offset, gamma), source=SOURCE, note="gamma = max{8 kappa, E}"),
    ),
    requires={"lr_schedule": "inverse_step", "full_participation": True},
    order=StatedOrder(expr=1 / T, variable=T, source=SOURCE),
    # Li et al.'s E counts local steps (fedtheory's local_steps) and T iterations from w_1 (T - 1 steps taken)
    quantities={"E": "local_steps", "T": "steps: T - 1 local steps taken (w_1 is the start; after R rounds T = R E + 1)"},
    note="Transcribed from the theorem statement; Assumption 4 (bounded gradients) is measured along the run.",
)
register(KAPPA, GAMMA, B_DEF, THM1)
