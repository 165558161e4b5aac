"""Algorithm 1's server step as printed (lines 13 and 16) against the descent step the simulator runs."""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.checks import CheckResult, Control, check
from fedtheory.sim import Algorithm, NormalizedAggregation, RunConfig, simulate

from .. import records as fedmrur_records
from ..algorithms import fedmrur
from .common import ALPHA, K_LOCAL, N_CLIENTS, PAPER, RHO, S_PART, admissible_steps, bound_problems

ALG1_FINDING = "fedmrur.alg1_sign"  # Algorithm 1's printed server step moves against the clients' progress


class _PrintedServerSign(NormalizedAggregation):
    """Algorithm 1's lines 13 and 16 as printed: Delta_p = w^K - w^0 and w^{t+1} = w^t - eta_g Delta^{t+1}, i.e. the
    simulator's descent step w^t - eta_g Delta (Delta_p = w^0 - w^K) reflected through w^t."""

    def aggregate(self, rs):
        return 2 * rs.state.w - super().aggregate(rs)


def _alg1_rows(session, flip_corrected: bool = False):
    """Algorithm 1's server step: symbolically on f = ||w||^2/2 with one local gradient step (printed: w^{t+1} = (1 +
    eta_g eta_l) w^t, away from the minimum), and on the PL problem, 30 rounds of FedMRUR-N with exact gradients and
    no client momentum (alpha = 1, so that only the server's sign differs), as printed and as the simulator runs it
    (the descent sign). flip_corrected: the control's mutation, the simulator's corrected algorithm with its server
    sign reflected (it must then be found uphill)."""
    w, eg, el = sp.symbols("w eta_g eta_l", positive=True)
    wK = w - el * w  # one local step on f = w^2/2
    printed = sp.expand(w - eg * (wK - w))
    grows = sp.simplify(printed - w) == eg * el * w
    from fedtheory.checks import robustness

    out = [CheckResult("fedmrur.alg1.printed", PAPER, "identity", "violated" if grows else "inconclusive",
                       source=fedmrur_records.ALG1.source, quote=fedmrur_records.ALG1_QUOTE, finding=ALG1_FINDING,
                       finding_class="erratum", params={"setting": "f = ||w||^2/2, K = 1, alpha = 1, rho = 0"},
                       extra={"robustness": robustness(margin_text="exact (||w^(t+1)|| = (1 + eta_g eta_l) ||w^t||)",
                                                       exact="a sign, for every eta_g, eta_l > 0: no step size, "
                                                             "problem or horizon removes it")},
                       detail=f"as printed, Delta = w^K - w^0 = -eta_l w and w^(t+1) = w^t - eta_g Delta = {printed}: "
                              "every eta_g, eta_l > 0 moves away from the minimum (||w^(t+1)|| = (1 + eta_g eta_l) "
                              "||w^t||); the descent step needs Delta_p = w^0 - w^K (what the simulator runs)")]
    e = bound_problems(session)[0]
    p = e["problem"]
    def run():
        eta_g, eta_l = admissible_steps(e["L"], 0.0, ALPHA, K_LOCAL, N_CLIENTS, S_PART)
        cfg = RunConfig(rounds=30, local_steps=K_LOCAL, lr=eta_l, clients_per_round=S_PART)
        traces = {}
        for label, printed_sign in (("printed", True), ("corrected", False)):
            alg = fedmrur(1.0, RHO, 0.0, 1.0, 1.0, eta_g, normalized=True, hyperbolic=False)
            if printed_sign:
                alg = Algorithm(alg.name + " (Alg. 1 as printed)", local=alg.local,
                                aggregate=_PrintedServerSign(eta_g, normalize=True))
            traces[label] = simulate(p, alg, cfg, session.seeds(1), w0=e["w0"], measures=("opt_error",))
        return traces, eta_g, eta_l
    traces, eta_g, eta_l = session.memo(("fedmrur", "alg1"), run)
    for label in ("printed", "corrected"):
        oe = traces["printed" if label == "printed" or flip_corrected else "corrected"]["opt_error"][:, 0]
        up = bool(np.isfinite(oe[-1]) and oe[-1] > oe[0]) or not np.isfinite(oe[-1])
        rid = f"fedmrur.alg1.{label}_run"
        row = CheckResult(rid, PAPER, "identity", "violated" if up else "holds", measured=float(oe[-1]),
                          bound=float(oe[0]), problem=e["key"], source=fedmrur_records.ALG1.source,
                          quote=fedmrur_records.ALG1_QUOTE,
                          params={"setting": f"FedMRUR-N, alpha = 1, eta_g = {eta_g:.3g}, eta_l = {eta_l:.3g}, exact "
                                             "gradients, 30 rounds", "rounds": 30},
                          detail=("NEGATIVE CONTROL: the corrected algorithm's server sign reflected. "
                                  if flip_corrected and label == "corrected" else "")
                          + f"f(w^t) - f* from {oe[0]:.4g} at w^0 to {oe[-1]:.4g} after 30 rounds: "
                          + ("uphill" if up else "downhill")
                          + (" (Algorithm 1 as printed: lines 13 and 16)" if label == "printed" else
                             " (the simulator's Algorithm 1: Delta_p = w^{t,0} - w^{t,K}, the descent sign every "
                             "FedMRUR row runs; the correction of the printed lines 13 and 16)"),
                          finding=ALG1_FINDING if label == "printed" or flip_corrected else "",
                          finding_class="erratum" if up else "")
        out.append(row)
    return out


@check("fedmrur.alg1", PAPER, "identity", records=("fedmrur.alg1",),
       control=Control("the simulator's corrected Algorithm 1 with its server step reflected (the printed sign) under "
                       "the corrected row: it must be found uphill", lambda s: _alg1_rows(s, flip_corrected=True)))
def alg1(session):
    """Algorithm 1's server step as printed (lines 13, 16) against the descent step the simulator runs: symbolically
    and on 30 rounds of the PL problem."""
    return _alg1_rows(session)
