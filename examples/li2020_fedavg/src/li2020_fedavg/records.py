"""Li et al. (ICLR 2020), Theorem 1: FedAvg with full participation on strongly convex, non-IID clients.

    E[F(w_T)] - F* <= kappa/(gamma + T - 1) * (2B/mu + (mu gamma/2) E||w_1 - w*||^2),
    kappa = L/mu, gamma = max{8 kappa, E}, eta_t = 2/(mu (gamma + t)),
    B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2,  Gamma = F* - sum_k p_k F_k*.

and the partial-participation theorems (K of the N devices per round):

    Theorem 2 (Scheme I: K devices drawn with replacement by p_k, w <- (1/K) sum of their models): the same bound
        with B + C in place of B, C = (4/K) E^2 G^2;
    Theorem 3 (Scheme II: K devices drawn uniformly without replacement, balanced data p_k = 1/N,
        w <- (N/K) sum p_k w^k): the same with C = ((N - K)/(N - 1)) (4/K) E^2 G^2.

Index convention: w_1 is the starting point and t counts SGD iterations (not rounds), so after R rounds
of E local steps the global model is w_T with T = R E + 1.

Transcription: no public copy of arXiv:1907.02189's text was found (the stored pages hold its abstract and
introduction only); the statements are written as known, and one third-party summary seen agrees on B, gamma,
kappa and C = (4/K) E^2 G^2. Every record says so (``transcription``): a finding on them is listed apart, not counted.
"""
import dataclasses

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, Order, SymbolSet, register, register_paper

PAPER = "li2020"
SOURCE = "Li, Huang, Yang, Wang, Zhang, ICLR 2020, Theorem 1"
ARXIV = "arXiv:1907.02189v4"
UNVERIFIED = (f"unverified: no public copy of {ARXIV}'s statement was found (the stored pages hold the abstract and "
              "introduction only); written as known, and a third-party summary agrees on B, gamma, kappa and C")
register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Thms 1-3",
               title="Li, Huang, Yang, Wang, Zhang 2020: FedAvg on non-IID data, full and partial participation")
NONNEG = sp.Interval(0, sp.oo)

S = SymbolSet(PAPER)
L = S.add("L", "smoothness of every F_k (Assumption 1): max_k L_k", dim="f/w^2")
mu = S.add("mu", "strong convexity of every F_k (Assumption 2): min_k mu_k", dim="f/w^2")
E = S.add("E", "local SGD steps per round", integer=True, dim="1")
T = S.add("T", "iteration index of w_T (w_1 = start; after R rounds T = R E + 1)", integer=True, dim="1")
sum_p2_sigma2, Gamma, G, Delta1, lr, lr_offset, kappa, gamma, B = S.table("""
    sum_p2_sigma2  f^2/w^2  nonnegative  sum_k p_k^2 sigma_k^2 (Assumption 3: E||g_k - grad F_k||^2 <= sigma_k^2)
    Gamma          f        nonnegative  F* - sum_k p_k F_k* (degree of non-IID-ness)
    G              f/w      nonnegative  E||g_k(w, xi)||^2 <= G^2 for every client and iterate (Assumption 4)
    Delta1         w^2      nonnegative  E||w_1 - w*||^2
    lr             w^2/f    positive     numerator of the step-size schedule eta_t = lr/(t + lr_offset)
    lr_offset      1        nonnegative  offset of the step-size schedule
    kappa          1        positive     condition number L/mu
    gamma          1        positive     schedule offset max{8 kappa, E}
    B              f^2/w^2  nonnegative  the noise-and-heterogeneity constant of Theorem 1
""")

KAPPA = Definition(id="li2020.kappa", paper=PAPER, symbol=kappa, expr=L / mu, source=SOURCE, title="kappa")
GAMMA = Definition(id="li2020.gamma", paper=PAPER, symbol=gamma, expr=sp.Max(8 * kappa, E), source=SOURCE,
                   title="gamma")
B_DEF = Definition(id="li2020.B", paper=PAPER, symbol=B, expr=sum_p2_sigma2 + 6 * L * Gamma + 8 * (E - 1) ** 2 * G ** 2,
                   source=SOURCE, title="B")

THM1 = Bound(
    id="li2020.thm1", paper=PAPER, title="FedAvg, full participation, strongly convex non-IID clients",
    source=SOURCE, symbols=S,
    # Li et al.'s Assumptions 1-4, by catalogue name (fedtheory.theory.CATALOGUE): each F_k L-smooth and mu-strongly
    # convex, each client's variance sigma_k^2 bounded (the catalogue's sigma is the largest), E||g_k||^2 <= G^2
    assumptions=("L_smooth", "strongly_convex_clients(mu)", "bounded_variance", "bounded_gradient(G)"),
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
    order=Order(expr=1 / T, variable=T, source=SOURCE),
    # Li et al.'s E counts local steps (fedtheory's local_steps) and T iterations from w_1 (T - 1 steps taken)
    quantities={"E": "local_steps",
                "T": "steps: T - 1 local steps taken (w_1 is the start; after R rounds T = R E + 1)"},
    transcription=UNVERIFIED,
    note="Transcribed from the theorem statement; Assumption 4 (bounded gradients) is certified on the region the run "
         "visits (least squares has no global gradient bound).",
)
register(KAPPA, GAMMA, B_DEF, THM1)

# Theorems 2 and 3: partial participation, K of N devices per round; the bound of Theorem 1 with B + C for B
N = S.add("N", "number of devices", sp.Interval(2, sp.oo), integer=True, dim="1")
K = S.add("K", "devices that take part in a round", sp.Interval(1, sp.oo), integer=True, dim="1")
C = S.add("C", "the sampling constant of Theorems 2 and 3", NONNEG, dim="f^2/w^2")
C_SCHEME1 = Definition(id="li2020.C_scheme1", paper=PAPER, symbol=C, expr=4 * E ** 2 * G ** 2 / K,
                       source="Li et al., ICLR 2020, Theorem 2", title="C = (4/K) E^2 G^2 (Scheme I)")
C_SCHEME2 = Definition(id="li2020.C_scheme2", paper=PAPER, symbol=C, expr=(N - K) / (N - 1) * 4 * E ** 2 * G ** 2 / K,
                       source="Li et al., ICLR 2020, Theorem 3",
                       title="C = ((N - K)/(N - 1)) (4/K) E^2 G^2 (Scheme II)")
_PARTIAL = {"E": "local_steps", "N": "clients", "K": "clients_per_round",
            "T": "steps: T - 1 local steps taken (w_1 is the start; after R rounds T = R E + 1)"}
THM2 = dataclasses.replace(
    THM1, id="li2020.thm2", title="FedAvg, K of N devices drawn with replacement (Scheme I), strongly convex non-IID",
    source="Li, Huang, Yang, Wang, Zhang, ICLR 2020, Theorem 2 (Assumption 5, Scheme I)",
    assumptions=("L_smooth", "strongly_convex_clients(mu)", "bounded_variance", "bounded_gradient(G)",
                 "sampling_with_replacement(S=K, N=N)"),
    expr=kappa / (gamma + T - 1) * (2 * (B + C) / mu + mu * gamma / 2 * Delta1),
    definitions=(C_SCHEME1, B_DEF, GAMMA, KAPPA),
    requires={"lr_schedule": "inverse_step", "aggregation": "(1/K) sum of the sampled models"},
    quantities=_PARTIAL,
    note="Scheme I draws the K devices with replacement according to p_k (here p_k = 1/N) and averages their models. "
         "The simulator draws without replacement, which is Scheme I only at K = 1. G (Assumption 4) is certified on "
         "the region the sampled devices visit; the proof's full-device virtual sequence also runs the others.",
)
THM3 = dataclasses.replace(
    THM2, id="li2020.thm3", title="FedAvg, K of N devices drawn without replacement (Scheme II), balanced data",
    source="Li, Huang, Yang, Wang, Zhang, ICLR 2020, Theorem 3 (Assumption 6, Scheme II)",
    assumptions=("L_smooth", "strongly_convex_clients(mu)", "bounded_variance", "bounded_gradient(G)",
                 "sampling_without_replacement(S=K, N=N)"),
    definitions=(C_SCHEME2, B_DEF, GAMMA, KAPPA),
    note="Scheme II: K devices uniformly without replacement, balanced data (p_k = 1/N: every simulator problem "
         "weighs its clients equally), w <- (N/K) sum_k p_k w^k, the plain mean of the sampled models. G as in Thm 2.",
)
register(C_SCHEME1, C_SCHEME2, THM2, THM3)
