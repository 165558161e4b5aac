"""The catalogue of every measure ``simulate`` can record: the engine's, and those of the shipped plug-ins (the
rule modules' ones too, so this module stands above them). :class:`TrackGradients`, the plug-in that adds a
measure to any algorithm, is ``sim/recorders.py``'s (re-exported here).

Indexing of a recorded measure ``trace[name]`` (one column per run):
  state    (T+1, R):   t = 0..T, at the global model w^t
  round    (T, R):     t = 0..T-1, the round that maps w^t to w^{t+1} (plug-in measures too)
  visited  (1, R):     the maximum over every point the run visited, the whole run (one row)
  step     (T K + 1, R): s = t K + k = 0..T K, at the averaged iterate xbar_s of local step k of round t

A plug-in's measures are recorded whenever the plug-in is part of the algorithm (``simulate`` adds them to the
``measures`` it is given), unless the plug-in sets ``measures_on_request = True``; then only when named.
"""
from __future__ import annotations

import re

from .config import StepWeights
from .gossip import Gossip
from .hyperbolic import HyperbolicRegularizer, NormalizedAggregation
from .measure_tables import ROUND_MEASURES, STATE_MEASURES, STEP_MEASURES, VISITED_MEASURES
from .mixed_precision import WeightShift
from .quantize import Quantize
from .recorders import TrackGradients
from .rules import Plugin, RelaxedInit
from .topology import ring

INDEXING = {
    "state": "(T+1, R): t = 0..T, at the global model w^t",
    "round": "(T, R): t = 0..T-1, the round that maps w^t to w^{t+1}",
    "visited": "(1, R): the maximum over every point the run visited (the whole run)",
    "step": "(T K + 1, R): s = t K + k = 0..T K, at the averaged iterate of local step k of round t",
}

__all__ = ["INDEXING", "MEASURE_DIMENSIONS", "STEP_MEASURES", "StepWeights", "TrackGradients", "measure_catalogue",
           "measure_dimension", "register_measure", "registered_measures"]

# The dimension of every shipped measure, in the loss [f] and the parameter [w] (plain data: the checks read it, see
# fedtheory.theory.dimensions). A bound's left side is a measure: its dimension is the formula's target.
# R (FedMRUR's regulariser) is read in loss units with gamma a dimensionless weight, the reading Thm 1's L + r needs.
MEASURE_DIMENSIONS = {
    "loss": "f", "opt_error": "f", "grad_norm2": "f^2/w^2", "delta": "w^2", "population": "f", "gen_gap": "f",
    "test_loss": "f", "client_grad_norm2": "f^2/w^2", "dist2_opt": "w^2", "delta_code": "w^2", "drift": "w^2",
    "unbiased_gap": "w", "init_offset": "w", "V1": "w^2", "V2": "w^2", "local_grad_sum2": "f^2/w^2",
    "visited_max_loss": "f", "visited_max_grad": "f/w", "visited_max_dist2": "w^2", "visited_max_grad_var": "f^2/w^2",
    "eq15_residual": "1",
    "visited_client_grad2": "f^2/w^2", "visited_client_grad2_running": "f^2/w^2", "quant_error2": "w^2",
    "shift_m_prev": "w", "shift_m_next": "w",
    "shift_m_hat": "w", "shift_rms_next": "w", "shift_D_FA2": "w^2", "shift_D_FS2": "w^2", "shift_I": "1",
    "shift_divergence": "w", "shift_drift": "w", "shift_drift_local": "w", "consensus": "w^2", "consensus_init": "w^2",
    "consensus_max": "w", "client_deviation_max": "w",
    "hyp_R": "f", "hyp_radius": "w", "hyp_r_bound": "f/w^2", "d_t": "1", "update_norm": "w", "update_norm_plain": "w",
    "cos_pairwise": "1", "cos_to_aggregate": "1", "geometry_residual": "1",
    # the step measures (at the averaged iterate of every local step and its running averages)
    "step_opt_error": "f", "step_dist2": "w^2", "step_grad_norm2": "f^2/w^2", "step_grad_norm2_mean": "f^2/w^2",
    "avg_opt_error": "f", "avg_dist2": "w^2", "wavg_opt_error": "f", "wavg_dist2": "w^2",
}


# Measures a user's plug-in declares once, by name (register_measure): {name: {"definition", "dimension", "indexing"}}.
_REGISTERED: dict[str, dict[str, str]] = {}


def register_measure(name: str, dimension: str, definition: str = "", *, indexing: str = "round") -> None:
    """Declare a plug-in's measure once, by name: its dimension in the loss f and the parameter w ('w', 'f^2/w^2',
    '1', ...), what it is, and how ``trace[name]`` is indexed (a key of ``INDEXING``). The catalogue
    (``fedtheory list --measures``) lists it, and a record whose left side is the measure has its units checked
    against the dimension (docs/extending.md, "A measure of your own"). The same name twice must mean the same.

    Parameters
    ----------
    name : str
        The measure's name (a Python identifier), as the plug-in's ``measures()`` returns it.
    dimension : str
        Its dimension text in the loss f and the parameter w.
    definition : str, default ""
        What it is, in words.
    indexing : {"round", "state", "visited", "step"}, default "round"
        How ``trace[name]`` is indexed (``INDEXING``).

    Raises
    ------
    ParameterError
        For a name that is not an identifier, an unknown indexing, or a name declared before with another
        dimension.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        from .._validation import ParameterError

        raise ParameterError("name", name, "a measure name (a Python identifier)")
    if indexing not in INDEXING:
        from .._validation import ParameterError

        raise ParameterError("indexing", indexing, "one of " + ", ".join(INDEXING))
    entry = {"definition": str(definition), "dimension": str(dimension), "indexing": indexing}
    old = _REGISTERED.get(name) or ({"dimension": MEASURE_DIMENSIONS[name]} if name in MEASURE_DIMENSIONS else None)
    if old is not None and old["dimension"] != entry["dimension"]:
        from .._validation import ParameterError

        raise ParameterError("dimension", dimension, f"{old['dimension']!r}, the dimension {name!r} already has")
    _REGISTERED[name] = entry


def registered_measures() -> dict[str, dict[str, str]]:
    """The measures declared with :func:`register_measure`, by name."""
    return {k: dict(v) for k, v in _REGISTERED.items()}


def measure_dimension(name: str, *plugins: Plugin) -> str:
    """A measure's dimension ('f^2/w^2', '1', ...): the shipped table (a per-block FedShift measure, ``NAME_b<j>``,
    is its NAME's), a measure declared with :func:`register_measure`, else what a plug-in declares in
    ``measure_dimensions()``; '' when nobody declares one."""
    base = re.sub(r"_b\d+$", "", name)
    for key in (name, base):
        if key in MEASURE_DIMENSIONS:
            return MEASURE_DIMENSIONS[key]
        if key in _REGISTERED:
            return _REGISTERED[key]["dimension"]
    for p in plugins:
        d = p.measure_dimensions().get(name)
        if d:
            return d
    return ""


def _builtin_plugins() -> list[Plugin]:
    """One instance of every shipped plug-in that declares measures (their names do not depend on settings)."""
    return [RelaxedInit(0.0), TrackGradients(), Quantize("uniform", 8), WeightShift(), Gossip(ring(3)),
            HyperbolicRegularizer(), NormalizedAggregation()]


def measure_catalogue(*plugins: Plugin) -> dict[str, dict[str, str]]:
    """Every measure name -> {"definition", "indexing", "source", "dimension"}: the engine's state, round, visited and
    step measures, the shipped plug-ins' measures (recorded whenever the algorithm includes the plug-in), and those
    of any extra ``plugins`` given (e.g. your own). ``indexing`` is the shape of ``trace[name]`` (see INDEXING);
    ``dimension`` its dimension in the loss [f] and the parameter [w] ('' where none is declared)."""
    out: dict[str, dict[str, str]] = {}
    for table, kind in ((STATE_MEASURES, "state"), (ROUND_MEASURES, "round"), (VISITED_MEASURES, "visited"),
                        (STEP_MEASURES, "step")):
        for name, text in table.items():
            out[name] = {"definition": text, "indexing": INDEXING[kind], "source": "engine"}
    for p in [*_builtin_plugins(), *plugins]:
        for name, text in p.measures().items():
            out.setdefault(name, {"definition": text, "indexing": INDEXING["round"],
                                  "source": f"plug-in {type(p).__name__}"})
    for name, entry in _REGISTERED.items():
        out.setdefault(name, {"definition": entry["definition"], "indexing": INDEXING[entry["indexing"]],
                              "source": "register_measure"})
    all_plugins = [*_builtin_plugins(), *plugins]
    for name, row in out.items():
        row["dimension"] = measure_dimension(name, *all_plugins)
    return out
