"""The catalogue of every measure ``simulate`` can record: the engine's, and those of the shipped plug-ins (the
paper modules' ones too, so this module stands above them). :class:`TrackGradients`, the plug-in that adds a
measure to any algorithm, is the engine's (re-exported here).

Indexing of a recorded measure ``trace[name]`` (one column per run):
  state    (T+1, R): t = 0..T, at the global model w^t
  round    (T, R):   t = 0..T-1, the round that maps w^t to w^{t+1} (plug-in measures too)
  visited  (1, R):   a running maximum over every point the run visited
"""
from __future__ import annotations

from .engine import ROUND_MEASURES, STATE_MEASURES, VISITED_MEASURES, TrackGradients
from .fedmrur import HyperbolicRegularizer, NormalizedAggregation
from .fedshift import WeightShift
from .gossip import Gossip
from .plugins import Plugin, RelaxedInit
from .quantize import Quantize
from .topology import ring

INDEXING = {
    "state": "(T+1, R): t = 0..T, at the global model w^t",
    "round": "(T, R): t = 0..T-1, the round that maps w^t to w^{t+1}",
    "visited": "(1, R): running maximum over the points the run visited",
}

__all__ = ["INDEXING", "TrackGradients", "measure_catalogue"]


def _builtin_plugins() -> list[Plugin]:
    """One instance of every shipped plug-in that declares measures (their names do not depend on settings)."""
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
