"""Remark 3's stability claims on coupled runs over neighbouring data sets (one sample replaced, every random stream
shared): the gap falls with beta and with better connectivity."""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.checks import CheckResult, Control, Session, check, claim_result
from fedtheory.sim import Minibatch, oledfl_sgd, simulate
from fedtheory.sim.topology import paper_topologies

from .. import records as oledfl_records
from .common import (
    LR,
    PAPER,
    SIZES,
    STAB_BETAS,
    WEIGHTS,
    beta_grid_rows,
    join_w,
    problem_label,
    run_config,
    shared_problem,
    topology_info,
)
from .mutations import DECOUPLED_FOR_OLE, DECOUPLED_WELL_CONNECTED, SimMutation


def coupled_gap(pn, tr, variants):
    """Per coupled pair (runs 2j, 2j+1): max over the pooled samples z of |f(x_bar^T; z) - f(x~_bar^T; z)|, and
    whether either run diverged (flagged, or ended above its starting error)."""
    variants = np.asarray(variants)
    oe = tr["opt_error"]
    bad = tr.diverged | ~(oe[-1] <= oe[0])
    wA, wB = np.nan_to_num(tr.final_w[0::2]), np.nan_to_num(tr.final_w[1::2])
    vA, vB = variants[0::2], variants[1::2]
    n = len(vA)
    with np.errstate(all="ignore"):
        gap = np.maximum(np.nanmax(np.abs(pn.sample_losses(wA, vA) - pn.sample_losses(wB, vA)).reshape(n, -1), axis=1),
                         np.nanmax(np.abs(pn.sample_losses(wA, vB) - pn.sample_losses(wB, vB)).reshape(n, -1), axis=1))
    div = bad[0::2] | bad[1::2]
    return np.where(div, np.nan, gap), div


def _stability(session: Session, laziness: float, mutation: SimMutation | None = None):
    """Coupled runs on neighbouring data sets (one sample replaced), sharing every random stream; single-sample
    SGD (uniform stability's setting), the four static topologies (a mutation's) x STAB_BETAS in one batch
    (sim.coupled_runs runs one configuration per call; the grid here reuses the same replacements across all its
    cells)."""
    def run():
        z = session.pick(SIZES)
        P, Tn = (mutation.seeds if mutation else z["pairs"]), z["T_stab"]
        p, _ = shared_problem(session)
        reps = p.random_replacements(P, random_state=session.seed + 11)
        pn = p.neighbours(reps, random_state=session.seed + 13)
        which = mutation.topologies if mutation else (0, 1, 2, 3)
        every = paper_topologies(p.n_clients, laziness=laziness)
        tops = [every[j] for j in which]
        mut = mutation or SimMutation("none")
        w0 = session.initial_point(p, scale=1.0)
        run_tops, run_betas, run_lr, seeds, variants = [], [], [], [], []
        pair_seeds = session.seeds(P)
        other_seeds = session.seeds(2 * P)[P:]
        for jt, t in zip(which, tops):
            for b in STAB_BETAS:
                for j in range(P):
                    run_tops += [t, t]
                    run_betas += [mut.sim_beta(jt, b)] * 2
                    run_lr += [LR * mut.lr_scale(jt, b)] * 2
                    seeds += [pair_seeds[j], other_seeds[j] if mut.decouple(jt, b) else pair_seeds[j]]
                    variants += [0, j + 1]
        cfg = dataclasses.replace(run_config(Tn, Minibatch(1)), lr=np.array(run_lr))
        tr = simulate(pn, oledfl_sgd(run_tops, np.array(run_betas)), cfg, seeds, variants=variants, w0=w0,
                      measures=("opt_error",))
        gap, div = coupled_gap(pn, tr, variants)
        shape = (len(tops), len(STAB_BETAS), P)
        return {"tops": tops, "info": topology_info(tops), "gap": np.where(div, np.nan, gap).reshape(shape),
                "diverged": div.reshape(shape), "P": P, "T": Tn}
    key = ("oledfl", "stability", laziness) + ((mutation.label,) if mutation else ())
    return session.memo(key, run)


STAB_NOTE = ("measured: mean over coupled pairs of max over the pooled samples z of |f(x_bar^T; z) - f(x~_bar^T; z)|, "
              "single-sample SGD; pairs share seeds, start and the replaced sample across beta and topology (paired)")


@check("oledfl.claim.ole_lowers_stability_gap", PAPER, "claim",
       control=Control(DECOUPLED_FOR_OLE.label, lambda s: claim_stability_beta(s, DECOUPLED_FOR_OLE)))
def claim_stability_beta(session, mutation=None):
    """Remark 3 (002:109): a larger beta lowers the generalization error. On coupled runs over neighbouring data sets
    (single-sample SGD, every random stream shared), the stability gap max_z |f(x_bar^T; z) - f(x~_bar^T; z)| must
    decrease in beta over {0, 0.3, 0.6, 0.9}, per static topology, on both readings of W."""
    def params(st, j, label):
        return {"setting": f"{st['info'][j]['name']}, {label}", "eta": LR, "rounds": st["T"], "pairs": st["P"],
                "oracle": "minibatch(1)"}
    return beta_grid_rows(session, oledfl_records.CLAIM_STAB_BETA, _stability, STAB_BETAS, "gap", "P", params,
                           lambda st, j, info: STAB_NOTE, mutation)


@check("oledfl.claim.connectivity_lowers_stability_gap", PAPER, "claim",
       control=Control(DECOUPLED_WELL_CONNECTED.label,
                       lambda s: claim_stability_topology(s, DECOUPLED_WELL_CONNECTED)))
def claim_stability_topology(session, mutation=None):
    """Remark 3 (002:109): better connectivity (smaller lambda) gives a smaller generalization error. DFedAvg's (beta =
    0) stability gap on coupled runs must not decrease as lambda grows over the four static topologies, on both readings
    of W."""
    out = []
    p, _ = shared_problem(session)
    weights = WEIGHTS[:1] if mutation else WEIGHTS
    by_w: dict[str, list[CheckResult]] = {}
    for laziness, label in weights:
        st = _stability(session, laziness, mutation)
        mm = {"x": [i["lam"] for i in st["info"]], "samples": st["gap"][:, 0],
              "names": [i["name"] for i in st["info"]], "paired": True}
        by_w.setdefault(label, []).append(claim_result(oledfl_records.CLAIM_STAB_TOPO, mm, problem=problem_label(p),
                                                       settings=len(weights),
                                seeds=st["P"],
                                params={"setting": f"DFedAvg (beta=0), {label}", "eta": LR, "rounds": st["T"],
                                        "pairs": st["P"], "oracle": "minibatch(1)"},
                                detail=(("NEGATIVE CONTROL: " + mutation.label + ". ") if mutation else "")
                                + STAB_NOTE))
    return out + join_w(by_w)
