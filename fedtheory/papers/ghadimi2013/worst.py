"""The PEP of Ghadimi & Lan Thm 2.1(a) at sigma = 0: gradient descent with a constant step on the L-smooth (possibly
non-convex) class, measure (1/N) sum_{k=1}^N ||grad f(x_k)||^2 (PEPSetting metric avg_grad_norm2), initial
condition f(x_1) - f(z) <= Df0 at every queried point z (implied by f(x_1) - f* <= Df0: a relaxation, so the PEP's
value is an upper bound of the worst case; 'exact' is false). At gamma = 1/L the value equals the bound
2 L Df0 / N (attained by L x^2/2)."""
from __future__ import annotations

from fedtheory.worst import PEPSetting, PEPSpec, register_pep

RID = "ghadimi2013.thm2_1a"
SETTINGS = {"local_steps": 1, "clients": 1, "lr_schedule": "constant", "aggregation": "mean of the models"}


def gl_pep(record_id: str = RID, *, L: float = 4.0, Df0: float = 1.0, N: int = 8, h: float = 1.0) -> PEPSpec:
    lr = h / L
    setting = PEPSetting(C=1, K=1, T=int(N), L=L, eta=lr, mu=0.0, client_mu=0.0, function_class="smooth", B=None,
                         D=Df0, initial="function", metric="avg_grad_norm2")
    return PEPSpec(record_id, setting, {"L": L, "Df0": Df0, "N": int(N), "lr": lr, "sigma": 0.0}, settings=SETTINGS,
                   params={"record_id": record_id, "L": L, "Df0": Df0, "N": int(N), "h": h},
                   note="sigma = 0 (the PEP is of exact gradients); the class is L-smooth, possibly non-convex")


register_pep(RID, gl_pep)
