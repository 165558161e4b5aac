"""Worst cases of Drori & Teboulle Thm 3.1: the PEP (``register_pep``) and a search over quadratics
(``register_worst_case``).

PEP: one client, one local step per round, T = N rounds, step h/L, class 'convex' (L-smooth convex, PEPit's exact
interpolation), initial condition ||x_0 - x*||^2 <= R^2, measure f(x_N) - f*: with one client the PEP is exact
(``exact: true``), the worst case of the theorem's own class. D&T's value L R^2/(4 N h + 2) is attained: the PEP
returns it (tests: within 1e-4 relative, observed ~1e-8).

Search (``--set huber=1``, the default): federated Huber regressions sharing one minimiser (``HuberClass``: convex,
L-smooth with L exact, mu = 0, ||x_0 - x*||^2 = R^2 exactly), one client, one sample, d = 1 by default (the PEP shows
the worst over the whole class is attained there, by D&T's own Huber function; ``--set d=3 --set samples=4`` searches
larger instances). Its kink ranges from 1e-4 to 10 times sqrt(S L) R; at the top the runs see a quadratic, below it
the piecewise-quadratic functions that attain the bound: the search finds a slack near 1, and the bound halved,
L R^2/(8 N h + 4), violated.
``--set huber=0``: the plain convex quadratics (``QuadraticClass(mu=0)``), f(w) = (w - w*)' H (w - w*)/2 with spectrum
in [0, L]. GD on a quadratic acts on each eigendirection alone, so its worst case puts the whole start on one
eigenvalue: d = 1 loses nothing. Over quadratics that worst case is max_lambda (lambda/2)(1 - h lambda/L)^(2N) R^2,
about L R^2/(4 e N h) for large N: a slack near e, which no quadratic closes.
"""
from __future__ import annotations

import numpy as np

from fedtheory.sim import Exact, RunConfig, fedavg
from fedtheory.validation import ParameterError
from fedtheory.worst import (
    HuberClass,
    PEPSetting,
    PEPSpec,
    QuadraticClass,
    WorstCaseSpec,
    check_reference,
    register_pep,
    register_worst_case,
)

from .checks import step_for

RID = "drori2014.thm3_1"
SETTINGS = {"local_steps": 1, "oracle": "exact", "full_participation": True, "aggregation": "mean of the models",
            "lr_schedule": "constant"}


def dt_pep(record_id: str = RID, *, L: float = 2.0, R2: float = 4.0, N: int = 8, h: float = 1.0) -> PEPSpec:
    """The PEP of Thm 3.1 at (L, R^2, N, h): exact for one client."""
    lr = step_for(h, L)
    setting = PEPSetting(C=1, K=1, T=int(N), L=L, eta=lr, mu=0.0, client_mu=0.0, function_class="convex", B=None,
                         D=R2, initial="distance", metric="opt_error")
    return PEPSpec(record_id, setting, {"L": L, "R2": R2, "N": int(N), "lr": lr}, settings=SETTINGS,
                   initial_symbol="R2",
                   params={"record_id": record_id, "L": L, "R2": R2, "N": int(N), "h": h},
                   note="one client: plain gradient descent; the PEP's class is the theorem's (L-smooth convex, "
                        "||x_0 - x*||^2 <= R^2), so its value is the exact worst case")


def dt_search(record_id: str = RID, *, L: float = 2.0, R2: float = 4.0, N: int = 50, h: float = 1.0, d: int = 1,
              huber: int = 1, samples: int = 1) -> WorstCaseSpec:
    """Gradient descent (step h/L, N steps) on L-smooth convex functions with ||x_0 - x*||^2 = R^2: Huber regressions
    (``huber=1``, ``samples`` per client) or quadratics with spectrum in [0, L] (``huber=0``)."""
    lr = step_for(h, L)
    if huber not in (0, 1):
        raise ParameterError("huber", huber, "1 (Huber regressions, the default) or 0 (convex quadratics)")
    space = (HuberClass(1, int(d), int(samples), L=L, dist2=R2) if huber else
             QuadraticClass(1, int(d), L=L, mu=0.0, client_mu=0.0, dist2=R2))
    config = RunConfig(rounds=int(N), local_steps=1, lr=lr, oracle=Exact())

    def measure(tr, inst, which):
        out = inst.loss(tr.final_w, which) - inst.f_star[which]
        return np.where(tr.diverged, np.inf, out)

    def constants(inst, tr, which):
        return {"L": L, "R2": R2, "N": int(N), "lr": lr}

    params = {"record_id": record_id, "L": L, "R2": R2, "N": int(N), "h": h, "d": int(d), "huber": int(huber),
              "samples": int(samples)}
    note = ("Huber regressions sharing one minimiser: a subclass of the theorem's (convex, L-smooth), not quadratic"
            if huber else "convex quadratics: a subclass of the theorem's (convex, L-smooth)")
    return WorstCaseSpec(record_id, space, fedavg(), config, measure, constants, seeds=(0,), settings=SETTINGS,
                         params=params, note=note)


# the check's row on D&T's attaining instance at h = 1 (L, R^2 certified there); N capped
register_pep(RID, dt_pep, sizes={"quick": {"N": 50}, "full": {"N": 64}},
             reference=check_reference(RID, RID, ("L", "R2", "h", "N"), problem="dt_huber", setting="h=1",
                                       convert={"N": int}))
register_worst_case(RID, dt_search, description="gradient descent on L-smooth convex Huber regressions (--set huber=0: "
                                                "convex quadratics), ||x_0 - x*||^2 = R^2 (Drori & Teboulle Thm 3.1)")
