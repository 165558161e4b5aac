"""What :func:`~fedtheory.sim.simulate` returns: :class:`Trace`, the measurements of a batch of runs (one column
per run), read run by run or setting by setting (``Trace.select``), as a frame, or as a reproducible record."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import ParameterError
from .algorithms import Algorithm
from .config import RunConfig
from .rounds import versions

__all__ = ["Trace"]


@dataclass
class Trace:
    """Measurements of a batch of runs. ``measures[name]`` (or ``trace[name]``) is (T+1, R) for state measures,
    (T, R) for round measures and (T K + 1, R) for step measures (``fedtheory list --measures``); entries after a
    run diverged are NaN. With ``simulate(..., keep_iterates=True)``, ``iterates`` holds the global models
    w^0..w^T, (T+1, R, d); with ``keep_step_iterates=True``, ``step_iterates`` the averaged iterates xbar_s at
    every local step, (T K + 1, R, d).

    ``simulate`` returns one; ``select(runs)`` reads a sub-batch (one setting of a batch that ran several).

    Parameters
    ----------
    measures : dict of str to numpy.ndarray
        Each recorded measure by name.
    seeds : numpy.ndarray
        (R,) each run's seed.
    variants : numpy.ndarray
        (R,) each run's data variant (0: the data; see ``Problem.neighbour``).
    run_params : dict of str to numpy.ndarray
        Per-run hyperparameters, each (R,): ``lr`` and each rule's numeric ones (``relaxed.beta``, ``sam.rho``).
    config : RunConfig
        The run configuration.
    algorithm : Algorithm
        The algorithm run.
    problem : str
        The problem's name.
    diverged_at : numpy.ndarray
        (R,) the first round whose result was non-finite or too large; -1 where the run did not diverge.
    diverged_quantity : list of str or None
        What diverged in each run (None where it did not).
    final_w : numpy.ndarray
        (R, d) the last global models (NaN for a run that diverged).
    iterates : numpy.ndarray, optional
        (T+1, R, d) the global models, with ``keep_iterates=True``.
    step_iterates : numpy.ndarray, optional
        (T K + 1, R, d) the averaged iterates, with ``keep_step_iterates=True``.
    """

    measures: dict[str, np.ndarray]
    seeds: np.ndarray
    variants: np.ndarray
    run_params: dict[str, np.ndarray]
    config: RunConfig
    algorithm: Algorithm
    problem: str
    diverged_at: np.ndarray  # (R,) first round whose result was non-finite or too large, -1 if none
    diverged_quantity: list[str | None]
    final_w: np.ndarray
    iterates: np.ndarray | None = None  # (T+1, R, d) global models w^0..w^T when keep_iterates=True
    step_iterates: np.ndarray | None = None  # (T K + 1, R, d) averaged iterates xbar_s when keep_step_iterates=True

    @property
    def runs(self) -> int:
        return len(self.seeds)

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_at >= 0

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.measures[name]
        except KeyError:
            raise KeyError(f"measure {name!r} was not recorded; recorded: {sorted(self.measures)}") from None

    def select(self, runs) -> "Trace":
        """The sub-batch of the given runs (a slice, indices or a boolean mask over the R runs), in that order: every
        measure, seed, variant, per-run parameter (a per-run step size too) and divergence of those runs. A batch that
        simulated several settings at once (runs independent of each other, same seed same bits) is read setting by
        setting this way."""
        idx = np.arange(self.runs)[runs]
        if idx.ndim != 1:
            raise ParameterError("runs", runs, f"a slice, indices or a boolean mask over the {self.runs} runs")
        config = self.config
        if np.ndim(config.lr) == 1:
            config = dataclasses.replace(config, lr=np.asarray(config.lr)[idx])
        return Trace({k: v[:, idx] for k, v in self.measures.items()}, self.seeds[idx], self.variants[idx],
                     {k: np.asarray(v)[idx] for k, v in self.run_params.items()}, config, self.algorithm, self.problem,
                     self.diverged_at[idx], [self.diverged_quantity[i] for i in idx], self.final_w[idx],
                     None if self.iterates is None else self.iterates[:, idx],
                     None if self.step_iterates is None else self.step_iterates[:, idx])

    def to_frame(self):
        import pandas as pd

        rows = []
        for name, arr in self.measures.items():
            for r in range(arr.shape[1]):
                rows.append(pd.DataFrame({"measure": name, "run": r, "seed": int(self.seeds[r]),
                                          "round": np.arange(arr.shape[0]), "value": arr[:, r],
                                          **{k: v[r] for k, v in self.run_params.items()}}))
        return pd.concat(rows, ignore_index=True)

    def record(self) -> dict[str, Any]:
        """Everything needed to reproduce this batch, JSON-serialisable."""
        from .. import __version__

        cfg = {}
        for k, v in dataclasses.asdict(self.config).items():
            if k == "oracle":
                continue
            cfg[k] = np.asarray(v).tolist() if np.ndim(v) else v
        cfg["oracle"] = {"name": self.config.oracle.name, **self.config.oracle.params()}
        return {"problem": self.problem, "algorithm": self.algorithm.describe(), "config": cfg,
                "seeds": self.seeds.tolist(), "variants": self.variants.tolist(),
                "diverged_at": self.diverged_at.tolist(), "versions": versions(), "fedtheory": __version__}
