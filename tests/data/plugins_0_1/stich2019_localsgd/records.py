"""Stich, *Local SGD Converges Fast and Communicates Little* (ICLR 2019), Theorem 2.2: a theorem stated per local
iteration.

    E f(xhat_T) - f* <= mu a^3 / (2 S_T) ||x_0 - x*||^2 + 4 T (T + 2a) / (mu K S_T) sigma^2
                        + 256 T / (mu^2 S_T) G^2 H^2 L,                                         (4)

    xhat_T = (1/S_T) sum_{t=0}^{T-1} w_t xbar_t,  w_t = (a + t)^2,  S_T = sum_{t=0}^{T-1} w_t >= T^3/3,

for local SGD on K workers that all sample stochastic gradients of the same f (L-smooth, mu-strongly convex),
E||g_t^k - grad f(x_t^k)||^2 <= sigma^2 and E||g_t^k||^2 <= G^2 for t = 0..T-1 and every worker k, averaging the
workers' models at least every H steps (gap(I_T) <= H), step sizes eta_t = 4/(mu (a + t)) with a > max{16 kappa, H},
kappa = L/mu. xbar_t = (1/K) sum_k x_t^k is the mean of the workers' iterates after t steps (a "virtual" sequence:
it exists at every step, also between synchronizations).

The paper's symbols are not the simulator's: Stich's K counts workers (fedtheory's clients), H is the number of
local steps between two averagings (fedtheory's local_steps), and t, T count local iterations, not rounds. The
record says so once (``quantities``); every output then speaks in Stich's symbols.
"""
import sympy as sp

from fedtheory.theory import Bound, Condition, Definition, StatedOrder, SymbolSet, register, register_assumption

PAPER = "stich2019"
SOURCE = ("S. U. Stich, Local SGD Converges Fast and Communicates Little, ICLR 2019 (arXiv:1805.09767), "
          "Theorem 2.2, eq. (4)")
NONNEG = sp.Interval(0, sp.oo)

register_assumption("identical_data", "every worker samples stochastic gradients of the same f (Stich 2019, Sec. 2: "
                                      "f = E_xi f(x, xi), the same distribution on every worker)")
register_assumption("bounded_second_moment(G)", "E||grad f(x_t^k, xi_t^k)||^2 <= G^2 for t = 0..T-1 and every worker "
                                                "k (on the iterates the algorithm produces; Stich 2019, Theorem 2.2)")

S = SymbolSet(PAPER)
L = S.add("L", "smoothness of f", dim="f/w^2")
mu = S.add("mu", "strong convexity of f", dim="f/w^2")
K = S.add("K", "number of workers, each taking a stochastic gradient step at every iteration", integer=True, dim="1")
H = S.add("H", "the largest gap between two averagings, gap(I_T) <= H (local steps between communications)",
          integer=True, dim="1")
T = S.add("T", "number of iterations t = 0..T-1 that xhat_T averages over (xbar_0..xbar_{T-1})", integer=True, dim="1")
a = S.add("a", "shift of the step sizes eta_t = 4/(mu (a + t)) and of the weights w_t = (a + t)^2", dim="1")
sigma2 = S.add("sigma2", "sigma^2: E||g_t^k - grad f(x_t^k)||^2 <= sigma^2 for every worker", NONNEG, dim="f^2/w^2")
G = S.add("G", "E||g_t^k||^2 <= G^2 for t = 0..T-1 and every worker", NONNEG, dim="f/w")
D0 = S.add("D0", "||x_0 - x*||^2", NONNEG, dim="w^2")
lr = S.add("lr", "numerator c of the run's step sizes eta_t = c/(lr_offset + t), t = 0, 1, ...", dim="w^2/f")
lr_offset = S.add("lr_offset", "offset of the run's step sizes eta_t = c/(lr_offset + t), t = 0, 1, ...", dim="1")
kappa = S.add("kappa", "condition number L/mu", dim="1")
S_T = S.add("S_T", "sum_{t=0}^{T-1} w_t with w_t = (a + t)^2", dim="1")
_t = sp.Symbol("t", integer=True, nonnegative=True)  # the summation index of S_T (not a value anyone passes)

KAPPA = Definition(id="stich2019.kappa", paper=PAPER, symbol=kappa, expr=L / mu, source=SOURCE, title="kappa = L/mu")
S_T_DEF = Definition(id="stich2019.S_T", paper=PAPER, symbol=S_T, expr=sp.factor(sp.summation((a + _t) ** 2, (_t, 0, T - 1))),
                     source=SOURCE, title="S_T = sum_{t=0}^{T-1} (a + t)^2 (in closed form)",
                     note="The theorem states S_T >= T^3/3; the record uses the exact sum.")

THM22 = Bound(
    id="stich2019.thm2_2", paper=PAPER, title="Local SGD, identical data, strongly convex f, weighted average",
    source=SOURCE, symbols=S,
    assumptions=("L_smooth", "strongly_convex(mu)", "identical_data", "bounded_variance",
                 "bounded_second_moment(G)"),
    lhs="wavg_opt_error", lhs_kind="opt_error",
    lhs_description="E f(xhat_T) - f*, xhat_T = (1/S_T) sum_{t=0}^{T-1} (a + t)^2 xbar_t: the simulator's step "
                    "measure wavg_opt_error with StepWeights(power=2, offset=a), row T - 1 (its rows average "
                    "xbar_0..xbar_s inclusive)",
    expr=mu * a**3 / (2 * S_T) * D0 + 4 * T * (T + 2 * a) / (mu * K * S_T) * sigma2
    + 256 * T / (mu**2 * S_T) * G**2 * H**2 * L,
    definitions=(S_T_DEF, KAPPA),
    conditions=(
        Condition("shift_kappa", sp.Gt(a, 16 * kappa), source=SOURCE, note="a > max{16 kappa, H}"),
        Condition("shift_H", sp.Gt(a, H), source=SOURCE, note="a > max{16 kappa, H}"),
        # the schedule is part of the statement: exact equalities, checked both ways
        Condition("step_numerator", sp.Eq(lr * mu, 4), source=SOURCE, note="eta_t = 4/(mu (a + t))"),
        Condition("step_offset", sp.Eq(lr_offset, a), source=SOURCE, note="eta_t = 4/(mu (a + t)), t = 0, 1, ..."),
    ),
    # structural premises: the schedule's form counted from t = 0, identical data, every worker every step, the
    # workers' models averaged (local SGD's eq. (2))
    requires={"lr_schedule": "inverse_step", "step_origin": 0, "identical_clients": True, "full_participation": True,
              "aggregation": "mean of the models"},
    order=StatedOrder(expr=1 / T, variable=T, source=SOURCE,
                      note="as T -> oo with a, H, K fixed: the sigma^2 term is ~ 12 sigma^2/(mu K T), the others "
                           "O(1/T^2) and O(1/T^3) (S_T ~ T^3/3); read off eq. (4), not from the paper's corollary"),
    quantities={"K": "clients", "H": "local_steps",
                "T": "steps: xhat_T averages xbar_0..xbar_{T-1}: row T - 1 of the step measures wavg_*",
                "t": "step_index"},
    quote="Theorem 2.2: E f(xhat_T) - f* <= mu a^3/(2 S_T) ||x_0 - x*||^2 + 4T(T + 2a)/(mu K S_T) sigma^2 + "
          "256 T/(mu^2 S_T) G^2 H^2 L",
    note="Transcribed from the author's memory of the ICLR 2019 camera-ready version (arXiv:1805.09767v3); no copy "
         "of the paper was available where this plug-in was written, so the constants 4 (step numerator), 16 and the "
         "strict inequality in a > max{16 kappa, H}, 1/2, 4 and 256 in eq. (4), and the form of S_T's lower bound "
         "are NOT verified against the text: check them before relying on a verdict near the bound. Earlier arXiv "
         "versions state the theorem with other constants. The corollary's O(.) form was not transcribed; the "
         "stated order above is read off eq. (4).",
)
register(KAPPA, S_T_DEF, THM22)
