"""What several FedShift checks share: the profile sizes, the mixed-precision batches (bits x {shift, no shift} x seeds
on least squares, the PL problem and digits) and their slices."""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.checks import Session
from fedtheory.sim import (
    AdditiveNoise,
    LeastSquaresProblem,
    RunConfig,
    fedavg,
    heterogeneous_least_squares,
    mixed_precision,
    pl_nonconvex,
    simulate,
)
from fedtheory.sim.mixed_precision import WeightShift

from ..algorithms import DIGITS_LAYERS, digits_parity_logistic

PAPER = "fedshift"
K_LOCAL = 5
SIGMA2 = 0.05
# Per-profile sizes, read with ``session.pick(SIZES)``: bit widths of the mixed-precision batches; (seeds, rounds) of
# the digits and of the synthetic batches; seeds and rounds of Thm 1's runs; horizons of the measured rate.
# The synthetic batches and Thm 1's runs have at least 10 seeds (a refutation needs them: the statistics policy);
# the digits runs keep 2 in the quick profile: there the shift acts at rounding level and cannot refute anything.
SIZES = {
    "quick": {"bits": (4, 6, 8), "digits": (2, 30), "synthetic": (10, 50), "runs": 10, "rounds": 100,
              "rate_horizons": (50, 100, 200, 400)},
    "full": {"bits": (4, 5, 6, 7, 8), "digits": (8, 150), "synthetic": (16, 200), "runs": 32, "rounds": 400,
             "rate_horizons": (50, 100, 200, 400, 800, 1600)},
}


def odd_clients(C):
    return np.arange(C) % 2 == 1


# ------------------------------------------------------------------------------------ runs

_SHIFT_MEASURES = ("shift_m_prev", "shift_m_next", "shift_m_hat", "shift_rms_next", "shift_D_FA2", "shift_D_FS2",
                   "shift_I", "shift_divergence", "shift_drift")
PROBLEMS = {  # key -> description shown in the table
    "ls": "ls(d=32)",
    "pl": "pl_nonconvex(d=32)",
    "digits": "digits parity (2 layers)",
}
# The claims' negative control: ls(d=32) with its optimum translated by OFFSET_RMS RMS(w*) along 1_P
# (|mean(w*)|/RMS(w*) from 0.345 to 0.93 at seed 0). Every round the shift moves all P weights by (I/K) m^{t+1} toward
# 0, away from the optimum, and local training must undo it:
# FedShift must lose on divergence, drift, weight mean and error.
OFFSET_RMS = 2.0
CONTROL_PROBLEMS = {"ls_offset": f"ls(d=32), optimum + {OFFSET_RMS:g} RMS(w*) 1_P"}
LABELS = {**PROBLEMS, **CONTROL_PROBLEMS}


def _ls_offset(seed: int) -> LeastSquaresProblem:
    base = heterogeneous_least_squares(10, 32, 64, random_state=seed)
    w = np.asarray(base.constants["w_star"].value, float)
    off = np.full(base.dim, OFFSET_RMS * float(np.sqrt(np.mean(w**2))))
    return LeastSquaresProblem(base.X[0], base.y[0] + base.X[0] @ off, name="ls_optimum_offset")


def _bits(session: Session):
    return session.pick(SIZES)["bits"]


OVERSHIFT = 10.0  # the claims' in-regime negative control: the simulator shifts by OVERSHIFT (I/K) m^{t+1}


class _OverShift(WeightShift):
    """A mutated FedShift for the claims' negative control: the shifted runs continue from w_fa - OVERSHIFT (I/K)
    m^{t+1} 1 (the blend on w_fs + (1 - on) w_fa with on = OVERSHIFT): the weight mean overshoots 0 every round."""

    def setup(self, state, runs, n_clients, dim):
        super().setup(state, runs, n_clients, dim)
        self.set_param("shift", OVERSHIFT * self.param("shift")[:, 0, 0])


def mp_batch(session: Session, key: str, quantizer: str, mutation: str = ""):
    """One batch per problem and quantizer: bits x {shift, no shift} x seeds; the same seeds (hence the same
    client sampling and noise) at every bit width, with and without the shift. mutation 'overshift': the negative
    control's simulator (``_OverShift``)."""
    def run():
        bits = _bits(session)
        nb = len(bits)
        if key == "digits":
            R, Tn = session.pick(SIZES)["digits"]
            p, inferior = session.memo(("fedshift", "digits_problem"),
                                       lambda: digits_parity_logistic(10, random_state=session.seed))
            layers, w0, lr, oracle = DIGITS_LAYERS, np.zeros(p.dim), 0.5, None
        else:
            R, Tn = session.pick(SIZES)["synthetic"]
            if key == "ls":
                p = heterogeneous_least_squares(10, 32, 64, random_state=session.seed)
            elif key == "ls_offset":
                p = _ls_offset(session.seed)
            else:
                p = pl_nonconvex(10, 32, 64, heterogeneity=1.0, random_state=session.seed)
            inferior, layers = odd_clients(10), None
            w0, lr, oracle = session.initial_point(p), 0.5 / p.constants["L"].value, AdditiveNoise(SIGMA2)
        b = np.repeat(np.tile(bits, 2), R)
        shift = np.repeat([True] * nb + [False] * nb, R)
        seeds = np.tile(session.seeds(R), 2 * nb)
        alg = mixed_precision(fedavg(), inferior, bits=b, quantizer=quantizer, layers=layers, shift=shift)
        if mutation == "overshift":
            alg = dataclasses.replace(alg, aggregate=_OverShift(alg.aggregate.base, inferior, layers, shift),
                                      name=alg.name + f"(shift x{OVERSHIFT:g})")
        blocks = [f"shift_m_{k}_b{j}" for k in ("prev", "next", "hat") for j in range(2)] if layers else []
        cfg = RunConfig(rounds=Tn, local_steps=K_LOCAL, lr=lr, clients_per_round=4,
                        **({"oracle": oracle} if oracle is not None else {}))
        tr = simulate(p, alg, cfg, seeds, w0=w0, measures=("loss" if key == "digits" else "opt_error", *_SHIFT_MEASURES,
                                                           *blocks))
        if key == "digits":
            metric, higher = p.test_accuracy(np.nan_to_num(tr.final_w)), True  # final test accuracy
        else:
            metric, higher = np.nanmean(tr["opt_error"][-10:], axis=0), False  # f(w^t) - f*, last 10 rounds
        return {"trace": tr, "problem": p, "R": R, "T": Tn, "bits": bits, "metric": metric, "higher": higher,
                "key": key, "quantizer": quantizer, "lr": lr, "mutation": mutation}
    return session.memo(("fedshift", "mp", key, quantizer) + ((mutation,) if mutation else ()), run)


def at_bits(run, bits):
    """The sub-batch of a mp_batch run at one bit width: runs [shift x seeds, no shift x seeds]."""
    tr = run["trace"]
    R, nb = run["R"], len(run["bits"])
    j = list(run["bits"]).index(bits)
    idx = np.concatenate([np.arange(j * R, (j + 1) * R), np.arange((nb + j) * R, (nb + j + 1) * R)])
    return {**run, "trace": tr.select(idx), "metric": run["metric"][idx]}


def halves(run):
    R = run["trace"].runs // 2
    return slice(0, R), slice(R, 2 * R)


def batch_label(run):
    mut = {"overshift": f", shift x{OVERSHIFT:g} (control)"}.get(run.get("mutation", ""), "")
    return f"{LABELS[run['key']]}, {run['quantizer']}{mut}"


def exact_robustness(margin_text, why):
    from fedtheory.checks import robustness

    return robustness(margin_text=margin_text, exact=why)
