"""Generic measures: the catalogue of every measure ``simulate`` can record, and plug-ins that add measures
any algorithm can use (:class:`TrackGradients`).

Indexing of a recorded measure ``trace[name]`` (one column per run):
  state    (T+1, R): t = 0..T, at the global model w^t
  round    (T, R):   t = 0..T-1, the round that maps w^t to w^{t+1} (plug-in measures too)
  visited  (1, R):   a running maximum over every point the run visited
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .engine import ROUND_MEASURES, STATE_MEASURES, VISITED_MEASURES
from .plugins import LocalTransform, Plugin, RoundState

INDEXING = {
    "state": "(T+1, R): t = 0..T, at the global model w^t",
    "round": "(T, R): t = 0..T-1, the round that maps w^t to w^{t+1}",
    "visited": "(1, R): running maximum over the points the run visited",
}

__all__ = ["INDEXING", "TrackGradients", "measure_catalogue"]


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
    """Every measure name -> {"definition", "indexing", "source"}: the engine's state, round and visited
    measures, the shipped plug-ins' measures (recorded when the algorithm includes the plug-in), and those of
    any extra ``plugins`` given (e.g. your own). ``indexing`` is the shape of ``trace[name]`` (see INDEXING)."""
    out: dict[str, dict[str, str]] = {}
    for table, kind in ((STATE_MEASURES, "state"), (ROUND_MEASURES, "round"), (VISITED_MEASURES, "visited")):
        for name, text in table.items():
            out[name] = {"definition": text, "indexing": INDEXING[kind], "source": "engine"}
    for p in [*_builtin_plugins(), *plugins]:
        for name, text in p.measures().items():
            out.setdefault(name, {"definition": text, "indexing": INDEXING["round"],
                                  "source": f"plug-in {type(p).__name__}"})
    return out
