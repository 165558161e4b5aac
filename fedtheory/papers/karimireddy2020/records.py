"""Karimireddy, Kale, Mohri, Reddi, Stich & Suresh, *SCAFFOLD: Stochastic Controlled Averaging for Federated
Learning* (ICML 2020; arXiv:1910.06378v4): the strongly convex bounds of SCAFFOLD and of FedAvg, zoo theorems.

SCAFFOLD. Theorem III (Sec. 5, p. 5) states the strongly convex rate as a number of rounds, R = O~(...), with the
step sizes it needs (eta_g = sqrt(S), eta_l <= min{1/(81 beta K eta_g), S/(15 mu N K eta_g)}); the explicit bound
behind it is the one-round progress of Lemma 15 (App. E.1, p. 30) summed with geometric weights (the first
averaging display of p. 31). That finite-round form is what is encoded, as stated (with every constant, and the
initial controls' term) in the public Lean statement SCAFFOLD.ConvexFiniteRoundConvergence of prove2me/formalpedia,
which cites Lemma 15 (p. 30), the display of p. 31 and Theorem III, and carries a machine-checked proof (status
'Proved') for Algorithm 1 option II:

    h = K eta_l eta_g <= 1/(81 beta),  mu h <= S/(15 N),  eta_g >= 1,  q = 1 - mu h/2,  w_r = q^{-(r+1)},
    W_T = sum_{r<T} w_r:   (1/W_T) sum_{r<T} w_r E[f(x^r) - f*] <= V_0/(h W_T) + (12 h sigma^2/(K S)) (1 + S/eta_g^2),
    V_0 = ||x^0 - x*||^2 + (9 N h^2/S) C_0,  C_0 = (1/N) sum_i ||c_i^0 - grad f_i(x*)||^2,

each f_i beta-smooth and mu-strongly convex, S of the N clients drawn uniformly without replacement every round,
unbiased stochastic gradients with variance at most sigma^2. The Theorem III form (eta_g = sqrt(S), O~) is its
consequence after tuning; its O~ hides constants, so it is not encoded as a number.

FedAvg. Theorem I (Sec. 3; restated with its proof as Theorem V in App. D) is stated only as an O~ complexity; no
public copy of its text or of the explicit bound behind it was found. It is recorded as an order statement,
transcribed from memory and marked unverified, and no simulation row is made of it (an O~ hides the constants a
row would compare).
"""
from __future__ import annotations

import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, OrderStatement, SymbolSet, Units, register, register_paper

PAPER = "karimireddy2020"
ARXIV = "arXiv:1910.06378v4"
SOURCE = "Karimireddy et al., SCAFFOLD: Stochastic Controlled Averaging for Federated Learning, ICML 2020; " + ARXIV
TEXT = (f"{ARXIV} Lemma 15 (App. E.1, p. 30), the averaging display of p. 31 and Theorem III (p. 5), as stated with "
        "every constant in the public Lean statement SCAFFOLD.ConvexFiniteRoundConvergence (prove2me/formalpedia, "
        "proved there for Algorithm 1 option II); the PDF itself was not read")

register_paper(PAPER, collection="zoo", citation=f"{ARXIV}, Lemma 15 and Thm III (SCAFFOLD); Thm I (FedAvg)",
               title="Karimireddy et al. 2020: SCAFFOLD and FedAvg, strongly convex")

S_ = SymbolSet(PAPER, strict=True)
_pos, _nonneg = sp.Interval.open(0, sp.oo), sp.Interval(0, sp.oo)
beta, mu, sigma, N, S, K, T, eta_l, eta_g, dist0, C0, h, q, W_T, V0 = S_.table("""
    beta   f/w^2    positive     smoothness of every f_i (A4: grad f_i beta-Lipschitz)
    mu     f/w^2    positive     strong convexity of every f_i (A2 with mu > 0)
    sigma  f/w      nonnegative  E||g_i(x) - grad f_i(x)||^2 <= sigma^2 (A5)
    N      1        count        number of clients
    S      1        count        clients sampled per round (uniformly, without replacement)
    K      1        count        local steps per round
    T      1        count        rounds: the weighted average is over x^0..x^{T-1}
    eta_l  w^2/f    positive     local step size
    eta_g  1        positive     global step size (x <- x + eta_g mean_i (y_i - x))
    dist0  w^2      nonnegative  ||x^0 - x*||^2
    C0     f^2/w^2  nonnegative  C_0 = (1/N) sum_i ||c_i^0 - grad f_i(x*)||^2 (the initial controls' error)
    h      w^2/f    positive     h = K eta_l eta_g: the effective step
    q      1        fraction     q = 1 - mu h/2: the weights are w_r = q^{-(r+1)}
    W_T    1        positive     W_T = sum_{r=0}^{T-1} q^{-(r+1)}
    V0     w^2      nonnegative  V_0 = ||x^0 - x*||^2 + (9 N h^2/S) C_0
""")

H_DEF = Definition(id=f"{PAPER}.h", paper=PAPER, symbol=h, expr=K * eta_l * eta_g, source=f"{SOURCE}, App. E",
                   title="h = K eta_l eta_g (the effective step)")
Q_DEF = Definition(id=f"{PAPER}.q", paper=PAPER, symbol=q, expr=1 - mu * h / 2, source=f"{SOURCE}, p. 31",
                   title="q = 1 - mu h/2")
# W_T in closed form: sum_{r=0}^{T-1} q^{-(r+1)} = (q^{-T} - 1)/(1 - q)  (q < 1; mu > 0)
W_DEF = Definition(id=f"{PAPER}.W_T", paper=PAPER, symbol=W_T, expr=(q ** (-T) - 1) / (1 - q),
                   source=f"{SOURCE}, p. 31 (the geometric sum in closed form)", title="W_T = sum_{r<T} q^{-(r+1)}")
V0_DEF = Definition(id=f"{PAPER}.V0", paper=PAPER, symbol=V0, expr=dist0 + 9 * N * h ** 2 / S * C0,
                    source=f"{SOURCE}, Lemma 15 (p. 30)", title="V_0 (distance and initial controls)")

SCAFFOLD_SC = Bound(
    id=f"{PAPER}.scaffold_sc", paper=PAPER,
    title="SCAFFOLD, strongly convex clients: the geometrically weighted average of the optimality gaps",
    source=f"{SOURCE}, Lemma 15 (App. E.1, p. 30) summed as on p. 31; Theorem III (Sec. 5, p. 5)", symbols=S_,
    assumptions=("L_smooth(beta)", "strongly_convex_clients(mu)", "bounded_variance(sigma)",
                 "sampling_without_replacement(S, N)"),
    lhs="weighted_opt_error", lhs_kind="opt_error", units=Units(lhs="f"),
    lhs_description="(1/W_T) sum_{r=0}^{T-1} q^{-(r+1)} E[f(x^r) - f*] (from opt_error rows 0..T-1, mean over runs)",
    expr=V0 / (h * W_T) + 12 * h * sigma ** 2 / (K * S) * (1 + S / eta_g ** 2),
    definitions=(H_DEF, Q_DEF, W_DEF, V0_DEF),
    conditions=(Condition("h_beta", sp.Le(h, 1 / (81 * beta)), source=f"{SOURCE}, Lemma 15",
                          note="h = K eta_l eta_g <= 1/(81 beta)"),
                Condition("h_mu", sp.Le(mu * h, S / (15 * N)), source=f"{SOURCE}, Lemma 15",
                          note="mu h <= S/(15 N)"),
                Condition("eta_g", sp.Ge(eta_g, 1), source=f"{SOURCE}, Lemma 15", note="eta_g >= 1")),
    requires={"algorithm": "SCAFFOLD option II (c_i <- mean of the round's gradients), controls c_i^0 given",
              "server": "x <- x + (eta_g/S) sum_{i in S} (y_i - x)"},
    quantities={"N": "clients", "S": "clients_per_round", "K": "local_steps", "T": "rounds", "eta_l": "lr"},
    transcription=f"checked against {TEXT}",
    note="C_0 is the initial controls' error: the simulator starts every control at 0, so C_0 = (1/N) sum_i "
         "||grad f_i(x*)||^2 (computed from the problem's exact client gradients at x*). The printed Theorem III is "
         "the tuned O~ consequence (eta_g = sqrt(S)); its constants are hidden and not encoded.",
)

# FedAvg, Theorem I (Sec. 3) / Theorem V (App. D): an O~ statement, from memory (no copy of the text was found)
G = S_.add("G", "(G, B)-bounded gradient dissimilarity, A1: (1/N) sum_i ||grad f_i(x)||^2 <= G^2 + B^2 ||grad f(x)||^2",
           _nonneg, dim="f/w")
B = S_.add("B", "B of A1 (B >= 1)", sp.Interval(1, sp.oo), dim="1")
eps = S_.add("eps", "target accuracy E[f(x^R)] - f* <= eps", _pos, dim="f")
FEDAVG_SC = OrderStatement(
    id=f"{PAPER}.fedavg_sc", paper=PAPER, title="FedAvg, strongly convex clients: rounds "
                                                "to accuracy eps (an O~ statement)",
    source=f"{SOURCE}, Theorem I (Sec. 3), Theorem V (App. D)", symbols=S_,
    statement="R = O~( sigma^2/(mu K S eps) + (1 - S/N) G^2/(mu S eps) + sqrt(beta) G/(mu sqrt(eps)) + B^2 beta/mu ) "
              "rounds, with eta_g >= sqrt(S) and eta_l <= 1/((1 + B^2) 8 beta K eta_g)",
    assumptions=("L_smooth(beta)", "strongly_convex_clients(mu)", "bounded_variance(sigma)",
                 "heterogeneity(G=G, B=B)", "sampling_without_replacement(S, N)"),
    transcription="unverified: written from memory; no public copy of Theorem I / Theorem V's text or of the explicit "
                  "bound behind it was found (the pages and code corpora hold the abstract and introduction only)",
    note="Not checked on runs: an O~ complexity hides the constants and logarithms a row would compare with.",
)

register(H_DEF, Q_DEF, W_DEF, V0_DEF, SCAFFOLD_SC, FEDAVG_SC)
