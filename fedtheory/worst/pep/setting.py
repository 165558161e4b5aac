"""The PEP's class and algorithm, as the user states them: :class:`PEPSetting` (C clients, K local steps, T rounds,
the step sizes, the server rule, the function class, the heterogeneity constraint, the measure), and whether the
optional extra that builds and solves it is installed."""
from __future__ import annotations

from dataclasses import dataclass

from ..._validation import FedTheoryError, ParameterError, check_choice, check_float, check_int

__all__ = ["FUNCTION_CLASSES", "INITIALS", "MAX_STEPS", "METRICS", "MissingExtraError", "PEPSetting", "PEP_EXTRA",
           "SERVER_RULES", "pep_available", "require_pep"]

PEP_EXTRA = "pep"
FUNCTION_CLASSES = ("convex", "smooth")
METRICS = ("opt_error", "avg_grad_norm2", "dist2")
INITIALS = ("function", "distance")
SERVER_RULES = ("algorithm1", "code")
MAX_STEPS = 64  # C K T: the reduced SDP grows like (K T)^2 orbit variables (docs/worst-case.md: timings)


class MissingExtraError(FedTheoryError):
    """The optional extra ``fedtheory[pep]`` (PEPit + cvxpy) is not installed: raised by what builds or solves a
    PEP. A :class:`~fedtheory.validation.FedTheoryError`.

    Parameters
    ----------
    *args : object
        The exception's arguments, as for :class:`Exception`; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


def pep_available() -> bool:
    """Whether PEPit and cvxpy can be imported (the extra ``fedtheory[pep]``).

    Returns
    -------
    bool
        True where both import.
    """
    try:
        import cvxpy  # noqa: F401
        import PEPit  # noqa: F401
    except ImportError:
        return False
    return True


def require_pep() -> None:
    """Raise MissingExtraError unless the extra ``fedtheory[pep]`` is installed."""
    if not pep_available():
        raise MissingExtraError("the PEP needs the optional extra: pip install 'fedtheory[pep]' (PEPit + cvxpy)")


@dataclass(frozen=True)
class PEPSetting:
    """One hand-written PEP: FedAvg / FedInit (C clients, full participation, exact gradients), the function class
    and the measure; built by :func:`build_pep`, solved by :func:`solve_pep`. The class in words:
    ``describe()``; the algorithm: ``algorithm()``; whether the SDP's value is the worst case of the class as
    stated (no relaxation): ``exact``. The algorithm and the class: the module ``fedtheory.worst.pep`` and
    docs/worst-case.md, "PEP: exact worst cases".

    Parameters
    ----------
    C : int
        Clients (>= 1); C K T <= ``MAX_STEPS`` (64).
    K : int
        Local steps per round (>= 1).
    T : int
        Rounds (>= 1).
    L : float
        Every f_i L-smooth (> 0).
    eta : float
        The local step size (> 0).
    mu : float, default 0.0
        The mean f's strong convexity, in [0, L) (imposed between the queried points where mu > client_mu: a
        relaxation).
    client_mu : float, default 0.0
        Every f_i client_mu-strongly convex, in [0, mu].
    function_class : {"convex", "smooth"}, default "convex"
        "convex": PEPit's ``SmoothStronglyConvexFunction``; "smooth": L-smooth, possibly non-convex (then mu =
        client_mu = 0, metric "avg_grad_norm2", initial "function").
    beta : float, default 0.0
        FedInit's relaxation (>= 0): client i starts from w^t + beta (w^t - w_i^last); 0 is FedAvg.
    server_rule : {"algorithm1", "code"}, default "algorithm1"
        "algorithm1": w^{t+1} = mean_i w_{i,K}; "code": w^{t+1} = w^t - server_lr mean_i (w_{i,0} - w_{i,K}).
    server_lr : float, default 1.0
        The server step of the "code" rule (> 0).
    B : float or None, default 1.0
        The heterogeneity constraint (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 at every queried
        point (B >= 1); None: no heterogeneity constraint.
    G : float, default 0.0
        Its G (>= 0).
    D : float, default 1.0
        The initial condition's bound (> 0).
    initial : {"function", "distance"}, default "function"
        "function": f(w^0) - f* <= D ("smooth": f(w^0) - f(z) <= D at every queried z); "distance":
        ||w^0 - w*||^2 <= D.
    metric : {"opt_error", "avg_grad_norm2", "dist2"}, default "opt_error"
        The measure maximised: f(w^T) - f(w*), (1/T) sum_{t<T} ||grad f(w^t)||^2, or ||w^T - w*||^2.

    Raises
    ------
    ParameterError
        A value outside its range, or a combination the class refuses.
    """

    C: int
    K: int
    T: int
    L: float
    eta: float
    mu: float = 0.0
    client_mu: float = 0.0
    function_class: str = "convex"
    beta: float = 0.0
    server_rule: str = "algorithm1"
    server_lr: float = 1.0
    B: float | None = 1.0
    G: float = 0.0
    D: float = 1.0
    initial: str = "function"
    metric: str = "opt_error"

    def __post_init__(self):
        s = object.__setattr__
        s(self, "C", check_int("C", self.C, 1))
        s(self, "K", check_int("K", self.K, 1))
        s(self, "T", check_int("T", self.T, 1))
        if self.C * self.K * self.T > MAX_STEPS:
            raise ParameterError("C*K*T", self.C * self.K * self.T,
                                 f"at most {MAX_STEPS} (C={self.C}, K={self.K}, T={self.T}: the PEP is for small "
                                 f"settings; --set C=.. --set K=.. --set T=..)")
        s(self, "L", check_float("L", self.L, 0.0, low_inclusive=False))
        s(self, "eta", check_float("eta", self.eta, 0.0, low_inclusive=False))
        check_choice("function_class", self.function_class, FUNCTION_CLASSES)
        if self.function_class == "smooth":
            if self.mu != 0 or self.client_mu != 0:
                raise ParameterError("mu", (self.client_mu, self.mu), "0 for the non-convex class 'smooth'")
            if self.metric != "avg_grad_norm2" or self.initial != "function":
                raise ParameterError("metric", (self.metric, self.initial), "avg_grad_norm2 with initial='function' "
                                     "for the non-convex class (it has no w*)")
        s(self, "mu", check_float("mu", self.mu, 0.0, self.L, high_inclusive=False))
        s(self, "client_mu", check_float("client_mu", self.client_mu, 0.0, self.mu))
        s(self, "beta", check_float("beta", self.beta, 0.0))
        check_choice("server_rule", self.server_rule, SERVER_RULES)
        s(self, "server_lr", check_float("server_lr", self.server_lr, 0.0, low_inclusive=False))
        if self.B is not None:
            s(self, "B", check_float("B", self.B, 1.0))
        s(self, "G", check_float("G", self.G, 0.0))
        s(self, "D", check_float("D", self.D, 0.0, low_inclusive=False))
        check_choice("initial", self.initial, INITIALS)
        check_choice("metric", self.metric, METRICS)

    @property
    def has_star(self) -> bool:
        return self.function_class == "convex"

    @property
    def exact(self) -> bool:
        """Whether the SDP's value is the worst case of the class as stated (no relaxation): one client (the
        heterogeneity constraint is then ||grad f||^2 <= G^2 + B^2 ||grad f||^2, true for every function) and
        every f_i as strongly convex as f."""
        return self.C == 1 and self.function_class == "convex" and self.client_mu == self.mu

    def describe(self) -> str:
        if self.function_class == "convex":
            cls = (f"every f_i {self.L:g}-smooth and {self.client_mu:g}-strongly convex (PEPit "
                   "SmoothStronglyConvexFunction, exact interpolation)")
            if self.mu > self.client_mu:
                cls += (f"; f = mean f_i meets the {self.mu:g}-strongly convex, {self.L:g}-smooth interpolation "
                        "inequalities between the queried points (relaxes 'f mu-strongly convex')")
            start = (f"f(w^0) - f(w*) <= {self.D:g}" if self.initial == "function" else
                     f"||w^0 - w*||^2 <= {self.D:g}")
            start += ", w* a stationary point of f"
        else:
            cls = f"every f_i {self.L:g}-smooth, possibly non-convex (PEPit SmoothFunction)"
            start = (f"f(w^0) - f(z) <= {self.D:g} at every queried point z (implied by f(w^0) - inf f <= "
                     f"{self.D:g}: a relaxation)")
        het = ("no heterogeneity constraint" if self.B is None else
               f"(1/C) sum_i ||grad f_i(w)||^2 <= {self.G:g}^2 + {self.B:g}^2 ||grad f(w)||^2 at every queried point"
               + (" and at w*" if self.has_star else "") + " (relaxes 'for all w')")
        return f"C={self.C} clients: {cls}; {het}; {start}; any dimension"

    def algorithm(self) -> str:
        name = "FedAvg" if self.beta == 0 else f"FedInit(beta={self.beta:g})"
        rule = ("w^{t+1} = mean_i w_{i,K}" if self.server_rule == "algorithm1" else
                f"w^{{t+1}} = w^t - {self.server_lr:g} mean_i (w_{{i,0}} - w_{{i,K}})")
        return (f"{name}, full participation, exact gradients, C={self.C}, K={self.K}, T={self.T}, eta={self.eta:g}, "
                f"server rule {self.server_rule}: {rule}")
