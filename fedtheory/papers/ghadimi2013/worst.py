"""The PEPs of Ghadimi & Lan Thm 2.1(a) and Cor. 2.2: gradient descent with a constant step on the L-smooth (possibly
non-convex) class, measure (1/N) sum_{k=1}^N ||grad f(x_k)||^2 (PEPSetting metric avg_grad_norm2), initial
condition f(x_1) - f(z) <= Df0 at every queried point z (implied by f(x_1) - f* <= Df0: a relaxation, so the PEP's
value is an upper bound of the worst case; 'exact' is false). At gamma = 1/L the value equals the bound
2 L Df0 / N (attained by L x^2/2).

Thm 2.1(a) at sigma = 0 (its deterministic case). Cor. 2.2 is stated for sigma > 0 only (its step rule (2.13)
divides by sigma; the record's condition sigma_positive): its PEP is at the check's sigma with the exact oracle, one
oracle of Assumption A1's class (variance 0 <= sigma^2), and the step (2.13) that sigma gives. That is a subclass:
the PEP's value is a lower bound on the corollary's worst case (a bound below it would be refuted; one above it is
not certified)."""
from __future__ import annotations

import math

from fedtheory.worst import PEPSetting, PEPSpec, check_reference, register_pep

RID = "ghadimi2013.thm2_1a"
SETTINGS = {"local_steps": 1, "clients": 1, "lr_schedule": "constant", "aggregation": "mean of the models"}


def gl_pep(record_id: str = RID, *, L: float = 4.0, Df0: float = 1.0, N: int = 8, h: float = 1.0) -> PEPSpec:
    lr = h / L
    setting = PEPSetting(C=1, K=1, T=int(N), L=L, eta=lr, mu=0.0, client_mu=0.0, function_class="smooth", B=None,
                         D=Df0, initial="function", metric="avg_grad_norm2")
    return PEPSpec(record_id, setting, {"L": L, "Df0": Df0, "N": int(N), "lr": lr, "sigma": 0.0}, settings=SETTINGS,
                   params={"record_id": record_id, "L": L, "Df0": Df0, "N": int(N), "h": h},
                   note="sigma = 0 (the PEP is of exact gradients); the class is L-smooth, possibly non-convex")


register_pep(RID, gl_pep, sizes={"quick": {"N": 30}, "full": {"N": 50}},  # the check's row at sigma = 0, h = 1
             reference=check_reference(RID, RID, ("L", "Df0", "N"), problem="quadratic_1d", setting="gamma=1/L",
                                       convert={"N": int}, fixed={"h": 1.0}))

COR = "ghadimi2013.cor2_2"


def cor_pep(record_id: str = COR, *, L: float = 8.0, Df0: float = 1.0, N: int = 8, sigma: float = 0.7071067811865476,
            Dt: float = 0.5) -> PEPSpec:
    """Cor. 2.2 at (L, Df0, N, sigma, D~): the step (2.13) gamma = min{1/L, D~/(sigma sqrt N)}, exact gradients (one
    oracle of the class: a lower bound on the worst case)."""
    lr = min(1.0 / L, Dt / (sigma * math.sqrt(int(N))))
    setting = PEPSetting(C=1, K=1, T=int(N), L=L, eta=lr, mu=0.0, client_mu=0.0, function_class="smooth", B=None,
                         D=Df0, initial="function", metric="avg_grad_norm2")
    return PEPSpec(record_id, setting, {"L": L, "Df0": Df0, "N": int(N), "lr": lr, "sigma": sigma, "Dt": Dt},
                   settings=SETTINGS, params={"record_id": record_id, "L": L, "Df0": Df0, "N": int(N), "sigma": sigma,
                                              "Dt": Dt},
                   subclass="the exact oracle, variance 0 <= sigma^2: one oracle of Assumption A1's class",
                   note="the corollary is stated for sigma > 0 (its step rule divides by sigma): the PEP runs its step "
                        "at the check's sigma with exact gradients, a member of the class")


register_pep(COR, cor_pep, reference=check_reference(COR, COR, ("L", "Df0", "sigma", "Dt", "N"),
                                                     problem="separable_pl", setting="D~=1 D_f", convert={"N": int}),
             sizes={"quick": {"N": 30}, "full": {"N": 50}})
