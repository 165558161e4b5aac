"""Generic measures: the catalogue of every measure ``simulate`` can record, and plug-ins that add measures
any algorithm can use (:class:`TrackGradients`).

Indexing of a recorded measure ``trace[name]`` (one column per run):
  state    (T+1, R): t = 0..T, at the global model w^t
  round    (T, R):   t = 0..T-1, the round that maps w^t to w^{t+1} (plug-in measures too)
  visited  (1, R):   a running maximum over every point the run visited
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .engine import ROUND_MEASURES, STATE_MEASURES, VISITED_MEASURES
from .plugins import LocalTransform, Plugin, RoundState

INDEXING = {
    "state": "(T+1, R): t = 0..T, at the global model w^t",
    "round": "(T, R): t = 0..T-1, the round that maps w^t to w^{t+1}",
    "visited": "(1, R): running maximum over the points the run visited",
}

__all__ = ["INDEXING", "MEASURE_DIMENSIONS", "TrackGradients", "measure_catalogue", "measure_dimension"]

# The dimension of every shipped measure, in the loss [f] and the parameter [w] (plain data: the checks read it, see
# fedtheory.theory.dimensions). A bound's left side is a measure: its dimension is the formula's target.
# R (FedMRUR's regulariser) is read in loss units with gamma a dimensionless weight, the reading Thm 1's L + r needs.
MEASURE_DIMENSIONS = {
    "loss": "f", "opt_error": "f", "grad_norm2": "f^2/w^2", "delta": "w^2", "population": "f", "gen_gap": "f",
    "test_loss": "f", "client_grad_norm2": "f^2/w^2", "dist2_opt": "w^2", "delta_code": "w^2", "drift": "w^2",
    "unbiased_gap": "w", "init_offset": "w", "V1": "w^2", "V2": "w^2", "local_grad_sum2": "f^2/w^2",
    "visited_max_loss": "f", "visited_max_grad": "f/w", "visited_max_grad_var": "f^2/w^2", "eq15_residual": "1",
    "visited_client_grad2": "f^2/w^2", "quant_error2": "w^2", "shift_m_prev": "w", "shift_m_next": "w",
    "shift_m_hat": "w", "shift_rms_next": "w", "shift_D_FA2": "w^2", "shift_D_FS2": "w^2", "shift_I": "1",
    "shift_divergence": "w", "shift_drift": "w", "shift_drift_local": "w", "consensus": "w^2", "consensus_init": "w^2",
    "hyp_R": "f", "hyp_radius": "w", "hyp_r_bound": "f/w^2", "d_t": "1", "update_norm": "w", "update_norm_plain": "w",
    "cos_pairwise": "1", "cos_to_aggregate": "1", "geometry_residual": "1",
}


def measure_dimension(name: str, *plugins: Plugin) -> str:
    """A measure's dimension ('f^2/w^2', '1', ...): the shipped table (a per-block FedShift measure, ``NAME_b<j>``,
    is its NAME's), else what a plug-in declares in ``measure_dimensions()``; '' when nobody declares one."""
    base = re.sub(r"_b\d+$", "", name)
    for key in (name, base):
        if key in MEASURE_DIMENSIONS:
            return MEASURE_DIMENSIONS[key]
    for p in plugins:
        d = p.measure_dimensions().get(name)
        if d:
            return d
    return ""


class TrackGradients(LocalTransform):
    """Leaves the direction unchanged; records the measure ``visited_client_grad2``: per round, the max over
    the local iterates (and the round's start and end points) and the selected clients of ||grad f_k(w_{k,j})||^2
    (exact local gradients). It is the visited-region part of a bounded-gradient assumption such as seed 004's
    Assumption 4 (E||g||^2 <= G^2 = this + sigma^2 for additive noise of variance sigma^2).

    Add it to any algorithm: ``dataclasses.replace(alg, local=(*alg.local, TrackGradients()))``.
    """

    name = "track_gradients"

    def round_start(self, rs: RoundState) -> None:
        rs.extra["visited_client_grad2"] = np.zeros(rs.sel.shape[0])

    def direction(self, rs: RoundState, g, w, grad_at):
        gn = np.sum(rs.view.grad(w) ** 2, axis=-1).max(axis=1)
        rs.extra["visited_client_grad2"] = np.maximum(rs.extra["visited_client_grad2"], gn)
        return g

    def measures(self) -> dict[str, str]:
        return {"visited_client_grad2": "max over this round's local iterates and clients of ||grad f_k(w)||^2"}

    def measure(self, rs: RoundState) -> dict[str, Any]:
        g0 = np.sum(rs.view.grad(rs.w0) ** 2, axis=-1).max(axis=1)
        gK = np.sum(rs.view.grad(rs.wK) ** 2, axis=-1).max(axis=1)
        return {"visited_client_grad2": np.maximum(rs.extra["visited_client_grad2"], np.maximum(g0, gK))}


def _builtin_plugins() -> list[Plugin]:
    """One instance of every shipped plug-in that declares measures (their names do not depend on settings)."""
    from .fedmrur import HyperbolicRegularizer, NormalizedAggregation
    from .fedshift import WeightShift
    from .gossip import Gossip
    from .plugins import RelaxedInit
    from .quantize import Quantize
    from .topology import ring

    return [RelaxedInit(0.0), TrackGradients(), Quantize("uniform", 8), WeightShift(), Gossip(ring(3)),
            HyperbolicRegularizer(), NormalizedAggregation()]


def measure_catalogue(*plugins: Plugin) -> dict[str, dict[str, str]]:
    """Every measure name -> {"definition", "indexing", "source", "dimension"}: the engine's state, round and visited
    measures, the shipped plug-ins' measures (recorded when the algorithm includes the plug-in), and those of
    any extra ``plugins`` given (e.g. your own). ``indexing`` is the shape of ``trace[name]`` (see INDEXING);
    ``dimension`` its dimension in the loss [f] and the parameter [w] ('' where none is declared)."""
    out: dict[str, dict[str, str]] = {}
    for table, kind in ((STATE_MEASURES, "state"), (ROUND_MEASURES, "round"), (VISITED_MEASURES, "visited")):
        for name, text in table.items():
            out[name] = {"definition": text, "indexing": INDEXING[kind], "source": "engine"}
    for p in [*_builtin_plugins(), *plugins]:
        for name, text in p.measures().items():
            out.setdefault(name, {"definition": text, "indexing": INDEXING["round"],
                                  "source": f"plug-in {type(p).__name__}"})
    all_plugins = [*_builtin_plugins(), *plugins]
    for name, row in out.items():
        row["dimension"] = measure_dimension(name, *all_plugins)
    return out
