"""Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith, *Federated Optimization in Heterogeneous Networks* (MLSys 2020;
arXiv:1812.06127): FedProx's expected decrease, a zoo theorem.

Theorem 4, as known: the local functions F_k L-smooth with grad^2 F_k >= -L_- I, mu_bar = mu - L_- > 0; the F_k
B-locally dissimilar at w^t (Definition 3: E_k ||grad F_k(w)||^2 <= ||grad f(w)||^2 B^2, i.e. B(w^t) <= B); each
selected device returns a gamma-inexact minimizer of h_k(w; w^t) = F_k(w) + (mu/2) ||w - w^t||^2 (Definition 2:
||grad h_k(w*; w^t)|| <= gamma ||grad h_k(w^t; w^t)||); K devices chosen at random (by p_k, with replacement) and
their models averaged. If mu, K, gamma are such that

    rho = 1/mu - gamma B/mu - B (1 + gamma) sqrt(2)/(mu_bar sqrt(K)) - L B (1 + gamma)/(mu_bar mu)
          - L (1 + gamma)^2 B^2/(2 mu_bar^2) - L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K) > 0,

then E_{S_t}[f(w^{t+1})] <= f(w^t) - rho ||grad f(w^t)||^2.

No public copy of the paper's text was found (the stored sources hold its abstract, a section summary and third-party
notes); two independent third-party notes state the same rho. The record is marked unverified: a finding on it is
listed apart, not counted.
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, SymbolSet, Units, register, register_paper

PAPER = "fedprox"
ARXIV = "arXiv:1812.06127"
SOURCE = ("Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, Federated "
          f"Optimization in Heterogeneous Networks, MLSys 2020; {ARXIV}")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Thm 4",
               title="Li et al. 2020 (FedProx): expected decrease under B-local dissimilarity")

S = SymbolSet(PAPER, strict=True)
mu, L, L_minus = S.table("""
    mu       f/w^2  positive     the proximal coefficient of h_k(w; w^t) = F_k(w) + (mu/2)||w - w^t||^2
    L        f/w^2  positive     smoothness of every F_k
    L_minus  f/w^2  nonnegative  grad^2 F_k >= -L_minus I (0 for convex F_k)
""")
B = S.add("B", "B-local dissimilarity at w^t: E_k ||grad F_k(w^t)||^2 <= B^2 ||grad f(w^t)||^2 (Definition 3)",
          sp.Interval(1, sp.oo), dim="1")
gamma, K, gap_t, g2_t, mu_bar, rho = S.table("""
    gamma   1        unit         the local solvers' inexactness (Definition 2), the largest over the selected devices
    K       1        count        devices selected per iteration
    gap_t   f        nonnegative  f(w^t) - f*
    g2_t    f^2/w^2  nonnegative  ||grad f(w^t)||^2
    mu_bar  f/w^2    real         mu_bar = mu - L_minus
    rho     w^2/f    real         the expected decrease coefficient of Theorem 4 (its sign is the theorem's condition)
""")

MU_BAR = Definition(id=f"{PAPER}.mu_bar", paper=PAPER, symbol=mu_bar, expr=mu - L_minus, source=f"{SOURCE}, Thm 4",
                    title="mu_bar = mu - L_-")
RHO = Definition(
    id=f"{PAPER}.rho", paper=PAPER, symbol=rho,
    expr=(1 / mu - gamma * B / mu - B * (1 + gamma) * sp.sqrt(2) / (mu_bar * sp.sqrt(K))
          - L * B * (1 + gamma) / (mu_bar * mu) - L * (1 + gamma) ** 2 * B ** 2 / (2 * mu_bar ** 2)
          - L * B ** 2 * (1 + gamma) ** 2 * (2 * sp.sqrt(2 * K) + 2) / (mu_bar ** 2 * K)),
    source=f"{SOURCE}, Thm 4", title="rho")

UNVERIFIED = (f"unverified: written as known; no public copy of {ARXIV}'s statement was found; two third-party notes "
              "state the same rho")

THM4 = Bound(
    id=f"{PAPER}.thm4", paper=PAPER, title="FedProx, non-convex: the expected decrease of f per iteration",
    source=f"{SOURCE}, Theorem 4 (Definitions 2, 3)", symbols=S,
    assumptions=("L_smooth(L)", "convex"),
    lhs="expected_next_gap", lhs_kind="opt_error", units=Units(lhs="f"),
    lhs_description="E_{S_t}[f(w^{t+1})] - f* over K devices drawn with replacement (uniform p_k), computed exactly "
                    "from every device's local solution at w^t: opt_error row t + prox_expected_change row t",
    expr=gap_t - rho * g2_t,
    definitions=(MU_BAR, RHO),
    conditions=(Condition("rho_positive", sp.Gt(rho, 0), source=f"{SOURCE}, Thm 4", note="rho > 0"),
                Condition("mu_bar_positive", sp.Gt(mu_bar, 0), source=f"{SOURCE}, Thm 4", note="mu_bar > 0")),
    requires={"sampling": "K devices drawn with replacement, uniform p_k, models averaged (expectation exact)"},
    quantities={"K": "clients_per_round: drawn with replacement (the expectation over the draw is computed exactly)"},
    transcription=UNVERIFIED,
    note="Convex F_k (least squares): L_- = 0 is certified by convexity. B and gamma are the run's own at w^t (the "
         "smallest values the hypotheses admit): B(w^t) from the clients' gradients, gamma the largest inexactness "
         "any device's local solver reached in that round.",
)

register(MU_BAR, RHO, THM4)


def rho_at(values):
    """rho at ``values`` (mu, L, L_minus, B, gamma, K; arrays broadcast), from the record's definitions."""
    return THM4.evaluate_expr(rho, values)
