"""What several FedMRUR checks share: the constants and step sizes Theorem 1 admits, the problems, and the batches of
runs (R runs per setting: A and B admissible under each reading of eta_g, P the paper's practice)."""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.checks import Session, certify
from fedtheory.sim import (
    AdditiveNoise,
    Algorithm,
    ClientSampling,
    NormalizedAggregation,
    RunConfig,
    pl_nonconvex,
    simulate,
    synthetic_logistic,
)
from fedtheory.sim.hyperbolic import r_bound
from fedtheory.validation import ParameterError

from .. import records as fedmrur_records
from ..algorithms import fedmrur

PAPER = "fedmrur"
ALPHA, RHO, K_LOCAL, SIGMA2 = 0.1, 0.05, 5, 0.05
N_CLIENTS, S_PART = 10, 5
HYP = {"gamma": 0.05, "sigma": 10.0, "beta": 1.0}
PRACTICE = {"eta_l": 0.1, "eta_g": 1.0, "alpha": 0.1, "rho": 0.5, "gamma": 0.005, "sigma": 1e4, "beta": 1.0}
STEP_READINGS = ("A", "B")  # the global step's two readings: the admissible settings
LABEL = {"A": "A (displacement)", "B": "B (grad. units)", "P": "practice"}  # admissible A / B; Sec. 5.1
# Per-profile sizes, read with ``session.pick(SIZES)``: seeds per setting; rounds (logistic, PL non-convex) indexed
# by ``key == "pl_nonconvex"``; the points the regulariser's gradient is compared at.
SIZES = {
    "quick": {"runs": 10, "rounds": (120, 300), "regulariser_points": 24},
    "full": {"runs": 24, "rounds": (600, 1000), "regulariser_points": 96},
}


# ------------------------------------------------------------------------------------ constants and steps


def logistic_sigma_g2_bound(problem, reading: str = "client_mean") -> float:
    """A valid sigma_g^2 for Assumption 3 on multinomial logistic regression with a common L2 term:
    grad f_p - grad f = grad ce_p - mean_q grad ce_q (the L2 parts cancel), ||grad ce_p(W)|| <= b_p = sqrt(2)
    mean_j ||x_j|| (||softmax - onehot|| <= sqrt(2)). reading 'client_mean': mean_p ||g_p - mean g||^2 <=
    mean_p ||g_p||^2 <= mean_p b_p^2; 'client_max': ||g_p - mean g|| <= b_p + mean_q b_q, so max_p (b_p +
    mean b)^2."""
    if reading not in ("client_mean", "client_max"):
        raise ParameterError("reading", reading, "'client_mean' or 'client_max'")
    b = problem.ce_gradient_bounds()
    return float(np.mean(b**2)) if reading == "client_mean" else float(np.max((b + b.mean()) ** 2))


def admissible_steps(L: float, r: float, alpha: float, K: int, N: int, S: int, frac_g: float = 0.9,
                     frac_C: float = 0.5) -> tuple[float, float]:
    """(eta_g, eta_l) meeting every condition of Theorem 1 (seed 003): eta_g = frac_g S/(2 alpha L (S-1)) and
    the eta_l at which C_max = frac_C * C_max(eta_l = 0), capped by 1/sqrt(30 alpha K L)."""
    Lr = L + r
    eta_g = frac_g * (S / (2 * alpha * L * (S - 1)) if S > 1 else 1.0)
    c0 = 0.75 - 2 * (1 - alpha * L) / (K * N) - 3 * alpha * Lr * eta_g / (2 * S)
    if c0 <= 0:
        raise ValueError(f"C_max <= 0 even at eta_l = 0 (c0 = {c0:.3g}); lower eta_g")
    eta_l = np.sqrt((1 - frac_C) * c0 / (70 * (1 - alpha) * K**2 * Lr**2 + 90 * alpha * Lr**3 * eta_g / S))
    return float(eta_g), float(min(eta_l, 1 / np.sqrt(30 * alpha * K * L)))


_C_MAX_ARGS = ("L", "r", "alpha", "K", "N", "eta_l", "eta_g", "S")
_C_MAX_FN = []


def c_max(vals) -> float:
    if not _C_MAX_FN:  # compiled once: the robustness sweeps evaluate it thousands of times
        _C_MAX_FN.append(sp.lambdify([fedmrur_records.S_[n].symbol for n in _C_MAX_ARGS], fedmrur_records.C_MAX_EXPR,
                                     "math"))
    return float(_C_MAX_FN[0](*(float(vals[n]) for n in _C_MAX_ARGS)))


# ------------------------------------------------------------------------------------ runs


def bound_problems(session: Session) -> list[dict]:
    """The problems the bound checks run on, one dict each (key, problem, L, sigma_g2 and sigma_g2_max: Assumption
    3 as the client mean and per client, sigma_g2_kind, w0, D, hyperbolic), memoized per session: the worst-case
    declarations (fedtheory.papers.fedmrur.worst) start their search from the check's instance."""
    def make():
        out = []
        p = pl_nonconvex(N_CLIENTS, 10, 50, heterogeneity=0.5, random_state=session.seed)
        out.append({"key": "pl_nonconvex", "problem": p, "L": p.certify("L_smooth").constants["L"],
                    "sigma_g2": float(p.heterogeneity_G2(1.0).value),
                    "sigma_g2_max": float(np.max(np.sum(p.h[0] ** 2, axis=1))), "sigma_g2_kind": "exact",
                    "hyperbolic": False})
        q = synthetic_logistic(N_CLIENTS, 10, 3, 20, random_state=session.seed)
        out.append({"key": "synthetic_logistic", "problem": q, "L": float(q.certify("L_smooth").constants["L"]),
                    "sigma_g2": logistic_sigma_g2_bound(q), "sigma_g2_max": logistic_sigma_g2_bound(q, "client_max"),
                    "sigma_g2_kind": "bound", "hyperbolic": True})
        for e in out:
            pr = e["problem"]
            e["w0"] = session.initial_point(pr)
            e["D"] = float(pr.loss(e["w0"][None])[0] - pr.constants["f_star"].value)
        return out
    return session.memo(("fedmrur", "problems"), make)


def _r_prior(e) -> float:
    """An a-priori r for choosing step sizes on the logistic problem (the checks use the measured one)."""
    p, w0 = e["problem"], e["w0"]
    sel = np.arange(p.n_clients)[None]
    v = p.view(sel, np.zeros(1, np.int64))
    z = v.representation(np.broadcast_to(w0, (1, p.n_clients, p.dim)))
    return 1.5 * float(r_bound(v.representation_inputs(), v.sample_weights(), z, HYP["beta"], HYP["sigma"],
                               np.array([2 * RHO])).max())


_MEASURES = ("grad_norm2", "opt_error", "d_t", "update_norm", "update_norm_plain", "cos_pairwise",
             "geometry_residual", "V2", "visited_max_dist2")


def setting_runs(session: Session, e, variant: str, clients_per_round: int = S_PART, settings=("A", "B", "P"),
          server_scale: float = 1.0, noise: float = SIGMA2):
    """One batch: R runs per setting (A, B: admissible under each reading; P: the paper's practice).
    server_scale, noise: the negative controls' mutations (the server step times server_scale; the gradient noise
    E||xi||^2 = noise)."""
    def run():
        z = session.pick(SIZES)
        R, Tn = z["runs"], z["rounds"][e["key"].startswith("pl_nonconvex")]
        p = e["problem"]
        r0 = _r_prior(e) if e["hyperbolic"] else 0.0
        eta_g, eta_l = admissible_steps(e["L"], r0, ALPHA, K_LOCAL, N_CLIENTS, clients_per_round) \
            if set(settings) - {"P"} else (None, None)
        lr, server, rho, gamma, sigma = [], [], [], [], []
        for s in settings:
            if s == "P":
                lr.append(PRACTICE["eta_l"]), server.append(PRACTICE["eta_g"]), rho.append(PRACTICE["rho"])
                gamma.append(PRACTICE["gamma"]), sigma.append(PRACTICE["sigma"])
            else:
                lr.append(eta_l), server.append(eta_g if s == "A" else eta_g / (K_LOCAL * eta_l)), rho.append(RHO)
                gamma.append(HYP["gamma"]), sigma.append(HYP["sigma"])
        server = [server_scale * v for v in server]
        rep = lambda x: np.repeat(np.asarray(x, float), R)
        normalized = variant in ("FedMRUR", "FedMRUR-N")
        hyperbolic = variant in ("FedMRUR", "FedMRUR-H") and e["hyperbolic"]
        if variant == "FedAvg":  # plain local SGD and the plain mean, with the update-geometry measures
            alg = Algorithm("FedAvg", aggregate=NormalizedAggregation(rep(server), normalize=False))
        else:
            alg = fedmrur(ALPHA, rep(rho), rep(gamma), rep(sigma), HYP["beta"], rep(server), normalized=normalized,
                          hyperbolic=hyperbolic)
        measures = _MEASURES + (("hyp_r_bound", "hyp_radius") if hyperbolic else ())
        seeds = np.tile(session.seeds(R), len(settings))
        oracle = AdditiveNoise(noise)
        tr = simulate(p, alg, RunConfig(rounds=Tn, local_steps=K_LOCAL, lr=rep(lr), clients_per_round=clients_per_round,
                                        oracle=oracle),
                      seeds, w0=e["w0"], measures=measures, progress=session.progress)
        acc = None
        if hasattr(p, "test_accuracy"):
            acc = np.where(tr.diverged, np.nan, p.test_accuracy(np.nan_to_num(tr.final_w)))
        return {"trace": tr, "R": R, "T": Tn, "eta_g": eta_g, "eta_l": eta_l, "settings": tuple(settings), "alg": alg,
                "acc": acc, "S": clients_per_round, "hyperbolic": hyperbolic, "oracle": oracle}
    key = ("fedmrur", "runs", e["key"], variant, clients_per_round, tuple(settings))
    return session.memo(key + ((server_scale, noise) if (server_scale, noise) != (1.0, SIGMA2) else ()), run)


def setting_slice(run, s):
    j = run["settings"].index(s)
    return slice(j * run["R"], (j + 1) * run["R"])


def certification(bound, e, run, sl, noise_certificate=None):
    """What setting ``sl`` of a batch certifies of ``bound``'s assumptions: the problem (L, sigma_g), the oracle
    (sigma_t), the client sampling, the algorithm (r: the regularizer's smoothness over the region the runs
    visited, or 0 without one). noise_certificate: a negative control's own bounded-variance certificate."""
    return certify(bound, problem=e["problem"], oracle=run["oracle"], sampling=ClientSampling(N_CLIENTS, run["S"]),
                   algorithm=run["alg"], visited=run["trace"].select(sl),
                   extra=(noise_certificate,) if noise_certificate is not None else ())


def thm1_values(e, run, s, sl, cert, assumption3: str = "client_mean"):
    """The values Theorem 1 is evaluated at for setting s of a batch, its constants as ``cert`` certifies them,
    sigma_g under the reading ``assumption3`` of Assumption 3 ('client_mean': the certified mean dissimilarity;
    'client_max': the problem's certified largest one, which also satisfies the mean reading)."""
    tr = run["trace"]
    if s == "P":
        eta_g, eta_l, rho = PRACTICE["eta_g"], PRACTICE["eta_l"], PRACTICE["rho"]
    else:
        eta_g, eta_l, rho = run["eta_g"], run["eta_l"], RHO
    certified = cert.values
    r = float(np.max(certified["r"]))  # the largest run's: valid for every run of the setting
    sigma_g = (certified["sigma_g"] if assumption3 == "client_mean"
               else e["problem"].certify("heterogeneity_max").constants["zeta"])
    vals = {"L": certified["L"], "r": r, "sigma_t": certified["sigma_t"], "sigma_g": sigma_g,
            "rho": rho, "alpha": ALPHA, "eta_l": eta_l, "eta_g": eta_g, "K": K_LOCAL, "S": run["S"], "N": N_CLIENTS,
            "T": run["T"], "D": e["D"]}
    cm = c_max(vals)
    vals["C"] = cm if cm > 0 else 1e-3  # C = 1e-3 then fails C_admissible: reported as not applicable
    d = tr["d_t"][:, sl]
    vals["sum_d"] = np.nansum(d, axis=0)
    return vals
