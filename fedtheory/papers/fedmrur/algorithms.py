"""FedMRUR's algorithms (seed 003_7cb41999359df859.txt): MoFedSAM, FedMRUR and its two one-component ablations, built
from the core's plug-ins (SAM, ClientMomentum, and ``fedtheory.sim.hyperbolic``'s HyperbolicRegularizer and
NormalizedAggregation), registered into the algorithm table when this plug-in loads (``fedtheory train
--algorithm FedMRUR``); eq. (7)'s left side and the structural settings the bounds require.

Seed 003, Algorithm 1, read with the descent sign (as printed, Delta_p = w_K - w_0 and w^{t+1} = w^t - eta_g
Delta^{t+1} would step uphill):

  line 9   w~ = w + rho grad F_p(w)/||grad F_p(w)||                     -> SAM(rho)
  line 10  v = alpha grad F_p(w~) + (1 - alpha) Delta^t                  -> ClientMomentum(alpha, 'global_update')
  eq. (5)  F_p(w) = f_p(w) + gamma R(w, w^t)                             -> HyperbolicRegularizer(gamma, sigma, beta)
  line 13  Delta_p = w_p^{t,0} - w_p^{t,K}
  line 15  Delta^{t+1} = sum_p ||Delta_p|| / (|S_t| ||sum_p Delta_p||) sum_p Delta_p
  line 16  w^{t+1} = w^t - eta_g Delta^{t+1}                             -> NormalizedAggregation(eta_g)

Server units. Line 16 applies eta_g to Delta^{t+1} in displacement units (K local steps' worth; the paper's
eta_g = 1 is then plain averaging). Theorem 1's first term D/(C alpha eta_g sum_t d_t) is what a server step
eta_g on a gradient-sized Delta gives; that reading is the same rule with server_lr = eta_g/(K eta_l).

Momentum units. Line 10 adds Delta^t, the previous round's global update, to a gradient. Printed, Delta^t is
a displacement (K local steps' worth); FedCM and MoFedSAM divide it by K eta_l, making it gradient-sized.
The builders default to units='gradient'. With units='displacement' (as printed) the momentum recursion
Delta^{t+1} ~ d_t eta_l K (1 - alpha) Delta^t + ... grows geometrically along directions where the loss is
flat once eta_l K (1 - alpha) d_t > 1; the paper's own settings (eta_l = 0.1, alpha = 0.1, K = 15 steps:
3 epochs of 250 samples in batches of 50) give 1.35 (logistic regression then diverges; see the tests).
"""
from __future__ import annotations

import numpy as np

from fedtheory.sim import SAM, Algorithm, ClientMomentum, MeanUpdates, register_algorithm
from fedtheory.sim.hyperbolic import HyperbolicRegularizer, NormalizedAggregation


def weighted_grad_norm2(trace, runs=slice(None)) -> np.ndarray:
    """Eq. (7)'s left side per run, sum_t d_t ||grad f(w^t)||^2 / sum_t d_t over the rounds t = 0..T-1 (each w^t
    with the d_t of the round that starts from it); needs the measures grad_norm2 and d_t."""
    g, d = trace["grad_norm2"][:-1, runs], trace["d_t"][:, runs]
    return np.sum(d * g, axis=0) / np.sum(d, axis=0)


# ------------------------------------------------------------------------------------ algorithms


def fedmrur(alpha=0.1, rho=0.5, gamma=0.005, sigma=1e4, beta=1.0, server_lr=1.0, *, normalized: bool = True,
            hyperbolic: bool = True, units: str = "gradient") -> Algorithm:
    """FedMRUR = MoFedSAM + normalized aggregation (N) + hyperbolic regularizer (H). Defaults: seed 003 Sec. 5.1
    (rho = 0.5, alpha = 0.1, gamma = 0.005, sigma = 10000, beta = 1, eta_g = 1)."""
    local = ((HyperbolicRegularizer(gamma, sigma, beta),) if hyperbolic else ()) + (
        SAM(rho), ClientMomentum(alpha, delta="global_update", units=units))
    name = {(True, True): "FedMRUR", (True, False): "FedMRUR-N", (False, True): "FedMRUR-H",
            (False, False): "MoFedSAM"}[(bool(normalized), bool(hyperbolic))]
    return Algorithm(name, local=local, aggregate=NormalizedAggregation(server_lr, normalize=normalized))


def mofedsam(alpha=0.1, rho=0.5, server_lr=1.0, *, units: str = "gradient") -> Algorithm:
    """MoFedSAM (Qu et al. 2022) as FedMRUR builds on it: SAM + client momentum + plain mean of the updates."""
    return fedmrur(alpha, rho, server_lr=server_lr, normalized=False, hyperbolic=False, units=units)


register_algorithm("MoFedSAM", mofedsam, source="Qu et al. 2022; seed 003 Sec. 5 baseline (fedtheory.papers.fedmrur)")
register_algorithm("FedMRUR", fedmrur, source="seed 003 Alg. 1 (ablations: --hp normalized=false / hyperbolic=false)")


def fedmrur_n(**kw) -> Algorithm:
    """Table 4's FedMRUR-N: MoFedSAM + normalized aggregation only."""
    return fedmrur(**kw, hyperbolic=False)


def fedmrur_h(**kw) -> Algorithm:
    """Table 4's FedMRUR-H: MoFedSAM + hyperbolic regularizer only."""
    return fedmrur(**kw, normalized=False)


def settings_of(algorithm: Algorithm) -> dict:
    """The structural settings seed 003's bounds require: the server rule and the momentum's Delta."""
    agg = algorithm.aggregate
    rule = ("normalized" if agg.normalize else "mean") if isinstance(agg, NormalizedAggregation) else \
        "mean" if isinstance(agg, MeanUpdates) else type(agg).__name__ if agg is not None else None
    mom = [tr for tr in algorithm.local if isinstance(tr, ClientMomentum)]
    return {"server_rule": rule, "momentum": mom[0].delta if mom else None,
            "momentum_units": mom[0].units if mom else None,
            "hyperbolic": any(isinstance(tr, HyperbolicRegularizer) for tr in algorithm.local)}
