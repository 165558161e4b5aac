"""The catalogue of every measure ``simulate`` can record: the engine's, and those of the shipped plug-ins (the
paper modules' ones too, so this module stands above them). :class:`TrackGradients`, the plug-in that adds a
measure to any algorithm, is the engine's (re-exported here).

Indexing of a recorded measure ``trace[name]`` (one column per run):
  state    (T+1, R):   t = 0..T, at the global model w^t
  round    (T, R):     t = 0..T-1, the round that maps w^t to w^{t+1} (plug-in measures too)
  visited  (1, R):     the maximum over every point the run visited, the whole run (one row)
  step     (T K + 1, R): s = t K + k = 0..T K, at the averaged iterate xbar_s of local step k of round t

A plug-in's measures are recorded whenever the plug-in is part of the algorithm (``simulate`` adds them to the
``measures`` it is given), unless the plug-in sets ``measures_on_request = True``; then only when named.
"""
from __future__ import annotations

from .engine import ROUND_MEASURES, STATE_MEASURES, STEP_MEASURES, VISITED_MEASURES, StepWeights, TrackGradients
from .fedmrur import HyperbolicRegularizer, NormalizedAggregation
from .fedshift import WeightShift
from .gossip import Gossip
from .plugins import Plugin, RelaxedInit
from .quantize import Quantize
from .topology import ring

INDEXING = {
    "state": "(T+1, R): t = 0..T, at the global model w^t",
    "round": "(T, R): t = 0..T-1, the round that maps w^t to w^{t+1}",
    "visited": "(1, R): the maximum over every point the run visited (the whole run)",
    "step": "(T K + 1, R): s = t K + k = 0..T K, at the averaged iterate of local step k of round t",
}

__all__ = ["INDEXING", "STEP_MEASURES", "StepWeights", "TrackGradients", "measure_catalogue"]


def _builtin_plugins() -> list[Plugin]:
    """One instance of every shipped plug-in that declares measures (their names do not depend on settings)."""
    return [RelaxedInit(0.0), TrackGradients(), Quantize("uniform", 8), WeightShift(), Gossip(ring(3)),
            HyperbolicRegularizer(), NormalizedAggregation()]


def measure_catalogue(*plugins: Plugin) -> dict[str, dict[str, str]]:
    """Every measure name -> {"definition", "indexing", "source"}: the engine's state, round, visited and step
    measures, the shipped plug-ins' measures (recorded whenever the algorithm includes the plug-in), and those of
    any extra ``plugins`` given (e.g. your own). ``indexing`` is the shape of ``trace[name]`` (see INDEXING)."""
    out: dict[str, dict[str, str]] = {}
    for table, kind in ((STATE_MEASURES, "state"), (ROUND_MEASURES, "round"), (VISITED_MEASURES, "visited"),
                        (STEP_MEASURES, "step")):
        for name, text in table.items():
            out[name] = {"definition": text, "indexing": INDEXING[kind], "source": "engine"}
    for p in [*_builtin_plugins(), *plugins]:
        for name, text in p.measures().items():
            out.setdefault(name, {"definition": text, "indexing": INDEXING["round"],
                                  "source": f"plug-in {type(p).__name__}"})
    return out
