"""Worst-case declarations of FedMRUR's eq. (7) (``fedmrur.thm1``) and MoFedSAM's Thm D.7 as FedMRUR's Remark 2
states it (``fedmrur.mofedsam_thmD7``); the FedMRUR plug-in, ``fedtheory.papers.fedmrur``, imports this module.

Both are non-convex statements under Assumptions 1 (each f_p L-smooth; r = 0: no regularizer), 2 (gradient noise
of variance sigma_t^2: the check's additive oracle) and 3 (E||grad F_p(x) - grad F(x)||^2 <= sigma_g^2 for every x),
with F^0 - F^* = D. The class is the separable PL family (:class:`~fedtheory.worst.SeparablePLClass`): non-convex
clients (Hessians down to -L/2), a PL mean, Assumption 3 met with equality by the clients' linear terms, and the
check's own ``pl_nonconvex`` instance as a member (the search starts from it, so the worst case found is at least
as bad as the check's). A quadratic class cannot serve here: Assumption 3 for every x forces quadratic clients to
share one Hessian (module docstring of ``fedtheory.worst.nonconvex``).

Algorithm, step sizes and left side are the check's (``fedtheory.papers.fedmrur.checks``): FedMRUR-N (SAM + client
momentum + normalized aggregation; the PL problem has no representation, so no hyperbolic term) for eq. (7),
MoFedSAM (the plain mean) for Thm D.7; N = 10 clients, S = 5 per round, K = 5, alpha = 0.1, rho = 0.05, the
admissible (eta_g, eta_l) of ``admissible_steps``; each of the T horizons T' = 1..T is a statement (the theorem
holds 'for all T >= 1'), eq. (7)'s left side the d_t-weighted average of ||grad f(w^t)||^2 with each run's own
sum_t d_t in its bound, MoFedSAM's the plain average. Both readings of Algorithm 1's global step are declared:
``gradient_units=1`` (reading B: the simulator's server step is eta_g / (K eta_l)) and ``gradient_units=0``
(reading A: eta_g times the displacement; the check reports a violation there as a units artifact).
``client_max=1`` reads Assumption 3 per client (max_p ||grad F_p - grad F||^2 <= sigma_g^2) instead of on average.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.checks import Session, run_checks
from fedtheory.sim import AdditiveNoise, Exact, RunConfig
from fedtheory.validation import ParameterError
from fedtheory.worst import SeparablePLClass, WorstCaseSpec, register_worst_case

from . import checks as CF
from .algorithms import fedmrur, settings_of

RECORDS = ("fedmrur.thm1", "fedmrur.mofedsam_thmD7")
READINGS = {1: "B (grad. units)", 0: "A (displacement)"}


def _cumulative(tr, normalized: bool):
    """(T, R): the left side at every horizon T' = 1..T, and (T, R) cumulative sum_t d_t (None for the plain mean)."""
    g = tr["grad_norm2"][:-1]
    if normalized:
        d = tr["d_t"]
        cum_d = np.cumsum(d, axis=0)
        return np.cumsum(d * g, axis=0) / cum_d, cum_d
    return np.cumsum(g, axis=0) / np.arange(1, g.shape[0] + 1, dtype=float)[:, None], None


def fedmrur_spec(record_id: str = "fedmrur.thm1", *, D: float, sigma_g: float, eta_l: float, eta_g: float,
                 L: float = 8.0, sigma_t: float = float(np.sqrt(0.05)), alpha: float = 0.1, rho: float = 0.05,
                 K: int = 5, S: int = 5, N: int = 10, T: int = 300, d: int = 10, runs: int = 4, gradient_units: int = 1,
                 client_max: int = 0, s_min: float = 0.01, a_min: float = 0.0, a_max: float = 3.0,
                 check_seed: int | None = None) -> WorstCaseSpec:
    """FedMRUR eq. (7) (``fedmrur.thm1``, FedMRUR-N) or MoFedSAM's bound (``fedmrur.mofedsam_thmD7``, MoFedSAM) on
    the separable PL class at the stated constants. check_seed: start the search from the PL instance of
    ``fedtheory check --seed check_seed`` (None: random start only). runs: seeds per instance (sigma_t > 0)."""

    if record_id not in RECORDS:
        raise ParameterError("record_id", record_id, " or ".join(RECORDS))
    K, S, N, T, d = int(K), int(S), int(N), int(T), int(d)
    if gradient_units not in (0, 1):
        raise ParameterError("gradient_units", gradient_units, "1 (reading B: gradient units) or 0 (reading A)")
    if client_max not in (0, 1):
        raise ParameterError("client_max", client_max, "0 (Assumption 3 on average over clients) or 1 (per client)")
    if not 1 <= S <= N:
        raise ParameterError("S", S, f"1 <= S <= N = {N}")
    for name, v in (("eta_l", eta_l), ("eta_g", eta_g), ("D", D)):
        if not v > 0:
            raise ParameterError(name, v, "a positive number")
    if sigma_t < 0:
        raise ParameterError("sigma_t", sigma_t, "a non-negative number")
    normalized = record_id == "fedmrur.thm1"
    start = check_instance(int(check_seed), N, d) if check_seed is not None else None
    offset = 2.0 if start is None else max(2.0, 1.01 * float(np.abs(start[0]).max()))  # the start inside the box
    space = SeparablePLClass(N, d, L=L, sigma_g2=float(sigma_g) ** 2, D=D, reading="max" if client_max else "mean",
                             s_min=s_min, a_min=a_min, a_max=a_max, offset_scale=offset)
    server = eta_g if gradient_units == 0 else eta_g / (K * eta_l)
    algorithm = fedmrur(alpha, rho, server_lr=server, normalized=normalized, hyperbolic=False)
    stochastic = sigma_t > 0
    config = RunConfig(rounds=T, local_steps=K, lr=eta_l, clients_per_round=S,
                       oracle=AdditiveNoise(sigma_t**2) if stochastic else Exact())
    base = {"L": L, "r": 0.0, "sigma_t": sigma_t, "sigma_g": sigma_g, "rho": rho, "alpha": alpha, "eta_l": eta_l,
            "eta_g": eta_g, "K": K, "S": S, "N": N, "T": T, "D": D}
    cm = CF.c_max(base)
    base["C"] = cm if cm > 0 else 1e-3  # C = 1e-3 then fails C_admissible: not applicable, as in the check

    def measure(tr, inst, which):
        lhs, _ = _cumulative(tr, normalized)
        return np.where(tr.diverged[None, :], np.inf, lhs)

    def constants(inst, tr, which):
        if normalized:
            _, cum_d = _cumulative(tr, True)
            return dict(base, sum_d=cum_d.T)  # (R, T): each run's own sum_t d_t at every horizon
        return dict(base, T=np.arange(1, T + 1, dtype=float)[None, :])

    starts = None
    if start is not None:
        starts = space.encode(np.ones(d), np.full(d, 3.0), *start)[None]
    params = {"record_id": record_id, "D": D, "sigma_g": sigma_g, "eta_l": eta_l, "eta_g": eta_g, "L": L,
              "sigma_t": sigma_t, "alpha": alpha, "rho": rho, "K": K, "S": S, "N": N, "T": T, "d": d, "runs": runs,
              "gradient_units": gradient_units, "client_max": client_max, "s_min": s_min, "a_min": a_min,
              "a_max": a_max, "check_seed": check_seed}
    return WorstCaseSpec(
        record_id=record_id, space=space, algorithm=algorithm, config=config, measure=measure,
        constants_from_instance=constants, measures=("grad_norm2", "d_t"),
        seeds=tuple(range(int(runs))) if stochastic else (0,), settings=settings_of(algorithm), params=params,
        bound_per_run=normalized, starts=starts,
        note=f"reading {READINGS[gradient_units]}; class: separable PL family, L = {L:g}, Assumption 3 "
             f"({'per client' if client_max else 'client mean'}) sigma_g^2 = {float(sigma_g) ** 2:.4g}, D = {D:.4g}; "
             "every horizon T' = 1..T is a statement (the worst one reported)"
             + ("; the check counts a violation only where both readings of eta_g give it (rule 3)"
                if gradient_units == 0 else ""))


def check_instance(seed: int, N: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The check's PL instance (``fedtheory check --seed seed``): its client terms h (N, d) and start w0 (d,); it is
    the member c = 1, a = 3 of the separable PL family."""

    e = [x for x in CF.bound_problems(Session(seed=seed)) if x["key"] == "pl_nonconvex"][0]
    p = e["problem"]
    if p.n_clients != N or p.dim != d:
        raise ParameterError("check_seed", seed, f"a check instance of the class's size (the check's has N = "
                                                 f"{p.n_clients}, d = {p.dim}; set N and d accordingly)")
    return p.h[0], e["w0"]


def check_start(space: SeparablePLClass, seed: int) -> np.ndarray:
    """The parameter vector of the check's PL instance in ``space``."""
    return space.encode(np.ones(space.dim), np.full(space.dim, 3.0),
                        *check_instance(seed, space.n_clients, space.dim))[None]


def fedmrur_reference(record_id: str):
    def reference(seed: int = 0, problem: str | None = None, gradient_units: int = 1,
                  client_max: int = 0) -> dict[str, Any]:
        """Today's check of ``record_id`` on the PL problem, admissible setting of the reading (default B): its
        constants, its ratio bound / measured, and its instance as the search's start."""

        reading = READINGS[int(gradient_units)]
        rows = [r for r in run_checks(only=[record_id], seed=seed, parallel_symbolic=False)
                if r.id == record_id and r.problem == (problem or "pl_nonconvex")
                and str(r.params.get("setting", "")).startswith(reading.split(" (")[0] + " (")]
        if not rows:
            raise ParameterError("problem", problem, f"pl_nonconvex (the check row {record_id} starts from)")
        r = rows[0]
        p = r.params
        params = {k: p[k] for k in ("D", "sigma_g", "eta_l", "eta_g", "L", "sigma_t", "alpha", "rho", "K", "S", "N",
                                    "T")}
        params.update(record_id=record_id, gradient_units=int(gradient_units), client_max=int(client_max),
                      check_seed=seed)
        sig = r.extra.get("sigma_g2_readings") or {}
        if client_max:
            params["sigma_g"] = float(np.sqrt(sig["client_max"]))
        # the check's reading that this spec measures: its Assumption 3, the average over t = 0..T-1 (_cumulative)
        reading = (r.extra.get("readings") or {}).get(f"client-{'max' if client_max else 'mean'}, t=0..T-1", {})
        return {"params": params, "random_ratio": reading.get("ratio", r.ratio),
                "label": f"fedtheory check --only {record_id} --seed {seed}: pl_nonconvex, {p['setting']} "
                         f"({r.verdict}{' [' + r.scope + ']' if r.scope not in ('', 'inside') else ''}; ratio bound / "
                         "measured at its tightest horizon, Holm over the horizons)"}
    return reference


for _rid, _what in (("fedmrur.thm1", "FedMRUR-N eq. (7)"), ("fedmrur.mofedsam_thmD7", "MoFedSAM Thm D.7 (Remark 2)")):
    register_worst_case(_rid, fedmrur_spec, reference=fedmrur_reference(_rid),
                        description=f"{_what} on the separable PL class (non-convex clients, PL mean), both readings "
                                    "of the global step (--set gradient_units=0|1)")
