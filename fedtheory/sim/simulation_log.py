"""What was simulated, for a check's records and ``fedtheory explain``: :func:`record_simulations` collects a summary
of every ``simulate`` call made inside its block (:func:`simulation_summary`), :func:`last_simulation` the objects
of the last one (what a check is certified from), :func:`replay_simulations` reports a memoized simulation again;
``simulate`` reports each call through :func:`report_simulation`."""
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Sequence

import numpy as np

from .algorithms import Algorithm
from .certificates import ClientSampling
from .config import RunConfig
from .problems import Problem

__all__ = ["last_simulation", "record_simulations", "replay_simulations", "report_simulation", "simulation_summary"]


_RECORDERS: list[list[dict[str, Any]]] = []


@contextlib.contextmanager
def record_simulations():
    """Collect a summary of every ``simulate`` call made inside the block (problem, algorithm, runs, rounds,
    local steps, clients, oracle, step schedule, measures): what a check measured, for its records and for
    ``fedtheory explain``. Yields the list the summaries are appended to."""
    log: list[dict[str, Any]] = []
    _RECORDERS.append(log)
    _LAST_SIMULATION.append(None)
    try:
        yield log
    finally:
        inner = _LAST_SIMULATION.pop()
        if inner is not None:  # a nested block's (a memoized computation's) last simulation is the enclosing one's too
            _LAST_SIMULATION[-1] = inner
        for i in range(len(_RECORDERS) - 1, -1, -1):  # by identity: two recorders may hold equal lists
            if _RECORDERS[i] is log:
                del _RECORDERS[i]
                break


#: the objects of the last ``simulate`` call inside each active ``record_simulations`` block (a check), innermost
#: last; the first slot is the process's, outside any block
_LAST_SIMULATION: list[dict[str, Any] | None] = [None]


def last_simulation() -> dict[str, Any] | None:
    """The objects of the last ``simulate`` call inside the innermost ``record_simulations`` block (the check being
    run): its problem, oracle, algorithm and client sampling, what a check of the previous release, which passed no
    certification to ``assess_bound``, is certified from. None before any, and outside every block (a simulation of
    another check, or of a script, is never taken for this one's)."""
    last = _LAST_SIMULATION[-1] if len(_LAST_SIMULATION) > 1 else None
    return dict(last) if last is not None else None


def replay_simulations(summaries: Iterable[dict[str, Any]], last: dict[str, Any] | None = None) -> None:
    """Report summaries again to the active recorders (a memoized simulation reused by another check), and ``last``
    (the memoized computation's ``last_simulation()``) as the enclosing block's last simulation."""
    if last is not None:
        _LAST_SIMULATION[-1] = dict(last)
    items = list(summaries)
    for log in _RECORDERS:
        log.extend(items)


def _distinct(values: np.ndarray) -> Any:
    """One number when every run shares it, else the sorted distinct values (at most 8, then the range)."""
    u = np.unique(np.round(np.asarray(values, dtype=float), 12))
    if u.size == 1:
        return float(u[0])
    return [float(v) for v in u] if u.size <= 8 else [float(u[0]), "..", float(u[-1])]


def simulation_summary(problem: Problem, algorithm: Algorithm, config: RunConfig, runs: int, lr: np.ndarray,
                       measures: Sequence[str]) -> dict[str, Any]:
    """What a ``simulate`` call reports to ``record_simulations``: the problem, the algorithm (its plug-ins with
    their hyperparameters), runs, rounds, local steps, clients, the oracle with its parameters, the step schedule
    with its numbers, the measures. Two calls with equal summaries ran the same setting."""
    sched: dict[str, Any] = {"lr": _distinct(lr)}
    if config.lr_schedule == "exponential":
        sched["lr_decay"] = float(config.lr_decay)
    if config.lr_schedule == "inverse_step":
        sched.update(lr_offset=float(config.lr_offset), step_origin=int(config.step_origin))
    return {"problem": problem.name, "algorithm": algorithm.name, "runs": runs, "rounds": config.rounds,
            "local_steps": config.local_steps, "clients": problem.n_clients,
            "per_round": config.clients_per_round or problem.n_clients, "oracle": type(config.oracle).__name__,
            "oracle_params": {k: (float(v) if np.ndim(v) == 0 and isinstance(v, (int, float, np.number)) else str(v))
                              for k, v in config.oracle.params().items()},
            "plugins": [repr(p) for p in algorithm.plugins()],
            "lr_schedule": config.lr_schedule, "schedule": sched, "measures": list(measures)}


def report_simulation(problem: Problem, algorithm: Algorithm, config: RunConfig, runs: int, lr: np.ndarray,
                      measures: Sequence[str]) -> None:
    """What ``simulate`` does at the end of every call: its summary to the active recorders (only when there is one)
    and its objects as the last simulation of the innermost block (:func:`last_simulation`)."""
    if _RECORDERS:
        replay_simulations([simulation_summary(problem, algorithm, config, runs, lr, measures)])
    _LAST_SIMULATION[-1] = {"problem": problem, "oracle": config.oracle, "algorithm": algorithm,
                            "sampling": ClientSampling(problem.n_clients, config.clients_per_round)}
