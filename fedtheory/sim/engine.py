"""The vectorized engine: every client of every run advances in one array operation.

State is shaped (runs, clients, dim). A seed sweep or a hyperparameter grid is one call to
:func:`simulate` (per-run hyperparameters are arrays of length R). The only Python loops on
the hot path are over rounds and local steps; per round, each run's generator is asked once
per concern (so a run's draws depend on its own seed alone; see ``rng.py``).

What a call is asked to run is ``config.py``'s, what it records ``measure_tables.py``'s and ``recorders.py``'s, what it
returns ``trace.py``'s; the problem's gradients come through ``problem_oracle.py``, and each call is reported to
``simulation_log.py``.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from .._validation import ParameterError, check_finite, check_int, per_run
from ..deprecation import moved_name
from . import (
    config as _config,
    measure_tables as _measure_tables,
    problem_oracle as _problem_oracle,
    recorders as _recorders,
    simulation_log as _simulation_log,
    trace as _trace,
)
from .algorithms import Algorithm, fedavg, fedcm, fedinit, fedprox, fedsam, scaffold  # noqa: F401 - re-exported

# what simulate uses of the modules split from this one, under private names: the public names resolve through
# __getattr__ below, with a warning naming the module that has them now
from .config import StepWeights as _StepWeights
from .measure_tables import (
    DEFAULT_MEASURES as _DEFAULT_MEASURES,
    ROUND_MEASURES as _ROUND_MEASURES,
    STATE_MEASURES as _STATE_MEASURES,
    STEP_MEASURES as _STEP_MEASURES,
    VISITED_MEASURES as _VISITED_MEASURES,
)
from .problem_oracle import ProblemOracle as _ProblemOracle
from .problems import Problem
from .recorders import (
    StepAverages as _StepAverages,
    StepMeasures as _StepMeasures,
    record_round_measures as _record_round,
    record_state_measures as _record_state,
    record_visited_measures as _record_visited,
)
from .rng import RunStreams
from .rounds import commit_round, divergence_flags, park_runs, run_round, versions  # noqa: F401 - versions re-exported
from .rules import RoundState, State, on_request
from .simulation_log import report_simulation as _report_simulation
from .trace import Trace as _Trace

if TYPE_CHECKING:
    from .config import RunConfig, StepWeights
    from .trace import Trace

__all__ = ["simulate"]

#: where the rest of this module went: a name imported from here resolves, with a warning naming its module
_MODULES = (_config, _measure_tables, _trace, _problem_oracle, _recorders, _simulation_log)


def __getattr__(name: str):
    return moved_name(__name__, name, _MODULES, sys.modules[__package__])


def simulate(
    problem: Problem,
    algorithm: Algorithm,
    config: RunConfig,
    seeds: Sequence[int],
    *,
    variants: Sequence[int] | None = None,
    w0: np.ndarray | None = None,
    measures: Iterable[str] = _DEFAULT_MEASURES,
    keep_iterates: bool = False,
    progress: bool = False,
    step_weights: StepWeights | None = None,
    keep_step_iterates: bool = False,
) -> Trace:
    """Run ``len(seeds)`` runs of ``algorithm`` on ``problem`` at once.

    variants: which data variant each run uses (0: the data; 1: the neighbour; see Problem.neighbour).
    w0: the common starting point (d,), or one per run (R, d); default: ``problem.initial_point(0)``.
    measures: names from ``fedtheory.sim.measure_catalogue()``. The measures the algorithm's plug-ins declare are
    recorded too, named or not (as the torch trainer logs them), except those of a plug-in that sets
    ``measures_on_request = True`` (costly ones), or names them in a tuple, which are recorded when named.
    keep_iterates: also return the global models w^0..w^T as ``trace.iterates`` (T+1, R, d).
    step_weights: the weights of the step measures wavg_* (:class:`StepWeights`; default uniform).
    keep_step_iterates: also return the averaged iterate at every local step as ``trace.step_iterates``
    (T K + 1, R, d). The step measures and these cost nothing unless asked for.

    Every run draws its randomness (client sampling, noise, minibatches) from its own seed's streams: the same seed
    gives the same bits, whatever else runs in the batch.

    Parameters
    ----------
    problem : Problem
        The problem, with its exact constants.
    algorithm : Algorithm
        The algorithm (a composition of rules).
    config : RunConfig
        Rounds, local steps, step size and schedule, client sampling, oracle.
    seeds : sequence of int
        One seed per run; R = ``len(seeds)`` runs are simulated at once.
    variants : sequence of int, optional
        Each run's data variant (default 0, the data).
    w0 : numpy.ndarray, optional
        The starting point, (d,) or (R, d).
    measures : iterable of str, optional
        The measures to record (default ``DEFAULT_MEASURES``: opt_error, grad_norm2, delta, delta_code, drift,
        unbiased_gap).
    keep_iterates : bool, default False
        Keep the global models.
    progress : bool, default False
        Show a progress bar over the rounds (tqdm).
    step_weights : StepWeights, optional
        The weights of the ``wavg_*`` step measures.
    keep_step_iterates : bool, default False
        Keep the averaged iterates at every local step.

    Returns
    -------
    Trace
        The measurements of the R runs.

    Raises
    ------
    ParameterError
        For an invalid configuration, an unknown measure, a bad ``w0`` or ``variants``.
    """
    streams = RunStreams(seeds, rounds_ahead=check_int("rounds", config.rounds, 1))  # each concern's draws of many
    R = streams.runs  # rounds in one call per run: the same bits as round by round (rng.py)
    config = config.validated(problem, R)
    if isinstance(measures, str):
        raise ParameterError("measures", measures, "a sequence of measure names, e.g. ('opt_error',)")
    measures = tuple(dict.fromkeys(measures))
    plugin_measures = {name: p for p in algorithm.plugins() for name in p.measures()}
    known = (set(_STATE_MEASURES) | set(_ROUND_MEASURES) | set(_VISITED_MEASURES) | set(_STEP_MEASURES)
             | set(plugin_measures))
    for m in measures:
        if m not in known:
            raise ParameterError("measures", m, "names from " + ", ".join(sorted(known)))
    # every plug-in's own measures are recorded, named or not (unless the plug-in records them on request only)
    measures += tuple(name for name, p in plugin_measures.items()
                      if name not in measures and not on_request(p, name))
    measuring = [p for p in algorithm.plugins() if any(name in measures for name in p.measures())]
    # the sum of the local directions: kept when a plug-in's rule reads it, or its measures do and are recorded
    direction_sum = any(p.needs_direction_sum and (not p.direction_sum_for_measures or p in measuring)
                        for p in algorithm.plugins())
    if step_weights is not None and not isinstance(step_weights, _StepWeights):
        raise ParameterError("step_weights", step_weights, "a StepWeights(power, offset, ratio)")
    weights = (step_weights or _StepWeights()).validated(streams.runs)
    variant = np.zeros(R, dtype=np.int64) if variants is None else np.asarray(variants, dtype=np.int64)
    if variant.shape != (R,) or variant.min() < 0 or variant.max() >= problem.n_variants:
        raise ParameterError("variants", variant.tolist(), f"{R} integers in [0, {problem.n_variants - 1}]")
    C, d, K, T = problem.n_clients, problem.dim, config.local_steps, config.rounds
    N = config.clients_per_round or C
    if w0 is None:
        w0 = problem.initial_point(0)
    w0 = check_finite("w0", w0)  # a non-finite start is bad input, not a divergence at round 0
    if w0.shape not in ((d,), (R, d)):
        raise ParameterError("w0", w0.shape, f"shape ({d},) or ({R}, {d})")
    w = np.broadcast_to(w0, (R, d)).copy()
    lr = per_run(config.lr, R)
    step_req = tuple(m for m in measures if m in _STEP_MEASURES)
    # every run against its own data variant's minimiser and minimum (a batch of a worst-case search's instances, a
    # neighbouring data set): (R, d) and (R,) where the runs' variants differ, else variant 0's, shared
    own = bool(np.any(variant != variant[0])) or int(variant[0]) != 0
    f_star = 0.0
    if "opt_error" in measures or any(m.endswith("opt_error") for m in step_req):
        f_star = problem.variant_optima()[1][variant] if own else problem.constants["f_star"].value
    rec_w_star = None
    if "dist2_opt" in measures or "visited_max_dist2" in measures or any(m.endswith("dist2") for m in step_req):
        rec_w_star = (problem.variant_optima()[0][variant] if own
                      else np.asarray(problem.constants["w_star"].value, dtype=np.float64))
    w_star_clients = rec_w_star[:, None, :] if rec_w_star is not None and rec_w_star.ndim == 2 else rec_w_star

    state = State(w=w)
    state.clients["last_local"] = np.broadcast_to(w[:, None, :], (R, C, d)).copy()
    plugins = algorithm.plugins()
    for p in plugins:
        p.setup(state, R, C, d)

    rec: dict[str, np.ndarray] = {}
    for m in measures:
        rows = T + 1 if m in _STATE_MEASURES else T if (m in _ROUND_MEASURES or m in plugin_measures) else \
            T * K + 1 if m in _STEP_MEASURES else 1
        rec[m] = np.full((rows, R), np.nan)
    averages = _StepAverages(problem, variant, step_req, weights, R, K, d, f_star,
                             rec_w_star if any(m.endswith("dist2") for m in step_req) else None,
                             np.full((T * K + 1, R, d), np.nan) if keep_step_iterates else None) \
        if step_req or keep_step_iterates else None
    diverged_at = np.full(R, -1, dtype=np.int64)
    diverged_q: list[str | None] = [None] * R
    alive = np.ones(R, dtype=bool)
    iterates = np.full((T + 1, R, d), np.nan) if keep_iterates else None
    # each run's own start sets its threshold (one number when the runs share their start)
    threshold = (config.divergence_threshold * max(1.0, float(np.abs(w0).max())) if w0.ndim == 1 or
                 np.all(w0 == w0[:1]) else config.divergence_threshold * np.maximum(1.0, np.abs(w0).max(axis=1)))

    state_measures = any(m in _STATE_MEASURES for m in measures) or iterates is not None

    def record_state(t: int) -> None:
        if not state_measures:
            return
        _record_state(problem, state, variant, measures, rec, t, f_star, alive)
        if "dist2_opt" in measures:
            rec["dist2_opt"][t] = np.where(alive, np.sum((state.w - rec_w_star) ** 2, axis=1), np.nan)
        if iterates is not None:
            iterates[t, alive] = state.w[alive]

    record_state(0)
    track_dist = "visited_max_dist2" in measures
    if track_dist:
        rec["visited_max_dist2"][0] = np.sum((w - rec_w_star) ** 2, axis=1)
    rounds = range(T)
    if progress:
        from tqdm.auto import tqdm

        rounds = tqdm(rounds, desc=f"{algorithm.name} on {problem.name}", unit="round", leave=False)
    schedule = config.schedule()
    terms = tuple(tr for tr in algorithm.local if tr.objective)  # extra terms of the local objective
    want_visited = any(m in measures for m in _VISITED_MEASURES if m != "visited_max_dist2")
    # one oracle per call; its view follows the participants. The exact-gradient sum of the step measures shares the
    # oracle's gradient at the local iterate (computed once per step)
    oracle = _ProblemOracle(config.oracle, None, None, None, terms, share_step_gradient="local_grad_sum2" in measures)
    # what is recorded, decided once per call: the per-step hooks, the round and state measures
    step_hooks = "V1" in measures or "local_grad_sum2" in measures or track_dist
    round_measures = any(m in _ROUND_MEASURES for m in measures)
    steps: _StepMeasures | None = None
    every = np.logical_and.reduce  # ndarray.all without its Python layers (7 us a call)

    def make_oracle(rs: RoundState) -> _ProblemOracle:
        rs.view = oracle.follow(problem, rs, variant)
        if steps is not None:
            steps.view = oracle.step_view
        oracle.draws = config.oracle.draws(streams, R, N, K, d, oracle.sizes)
        return oracle

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for t in rounds:
            steps = (_StepMeasures(measures, state, R, N, d, w_star_clients if track_dist else None)
                     if step_hooks else None)
            step_lr = (lambda k, t=t: schedule.at_step(t, k, lr)[:, None, None]) if schedule.per_step else None
            if averages is None:
                before = steps.before_step if steps is not None else None
            else:
                before = averages.before_step if steps is None else _chain([steps.before_step, averages.before_step])
                alive_in_round = alive.copy()
            rs = run_round(algorithm, state, streams, t, n_runs=R, n_clients=C, per_round=N, local_steps=K,
                           lr=schedule.at_round(t, lr)[:, None, None], make_oracle=make_oracle, step_lr=step_lr,
                           before_step=before, direction_sum=direction_sum)
            if averages is not None:  # the round's K averaged iterates xbar_{tK..tK+K-1}
                averages.flush(rec, alive_in_round)
            # round measures use w^t (state.w) and w^{t+1} (rs.w_next)
            if round_measures:
                _record_round(rs, measures, rec, t, steps.v1 if steps is not None else None,
                              steps.gsum if steps is not None else None, alive)
            for p in measuring:  # one measure() call per plug-in and round
                vals = p.measure(rs)
                for name in p.measures():
                    if name in measures:
                        rec[name][t] = np.where(alive, vals[name], np.nan)
            commit_round(state, rs)
            # divergence: the global model or any local end point non-finite or beyond the threshold
            w_ok, local_ok = divergence_flags(state.w, rs.wK, threshold)
            bad = None if every(w_ok) and every(local_ok) else alive & ~(w_ok & local_ok)  # (parked runs are finite)
            if bad is not None and np.logical_or.reduce(bad):
                for r in np.flatnonzero(bad):
                    diverged_at[r] = t
                    which = "w" if not w_ok[r] else "local models"
                    finite = np.all(np.isfinite(state.w[r])) and np.all(np.isfinite(rs.wK[r]))
                    diverged_q[r] = (f"{which} (non-finite)" if not finite else
                                     f"{which}: ||.||_inf > {float(np.broadcast_to(threshold, (R,))[r]):g}")
                alive &= ~bad
                park_runs(state, ~alive, w0)
            if want_visited:
                _record_visited(problem, state.w, rs.wK, variant, measures, rec, alive)
            if track_dist:  # this round's local iterates (steps.dmax), end points and new global model
                ends = np.maximum(np.sum((rs.wK - w_star_clients) ** 2, axis=2).max(axis=1),
                                  np.sum((state.w - rec_w_star) ** 2, axis=1))
                cur = rec["visited_max_dist2"][0]
                rec["visited_max_dist2"][0] = np.where(alive, np.fmax(cur, np.maximum(steps.dmax, ends)), cur)
            record_state(t + 1)
        if averages is not None:  # xbar_{TK}: the mean of the last round's local end points
            averages.buffer[0] = rs.wK.mean(axis=1)
            averages.flush(rec, alive, count=1)
    run_params = {f"{p.name}.{k}": per_run(v, R) for p in plugins for k, v in p.params().items()
                  if np.ndim(v) <= 1 and np.issubdtype(np.asarray(v).dtype, np.number)}
    run_params["lr"] = lr
    final = state.w.copy()
    final[~alive] = np.nan
    _report_simulation(problem, algorithm, config, R, lr, measures)
    return _Trace(rec, streams.seeds, variant, run_params, config, algorithm, problem.name, diverged_at, diverged_q,
                 final, iterates, averages.iterates if averages is not None else None)


def _chain(hooks):
    def before_step(k, wk):
        for h in hooks:
            h(k, wk)
    return before_step
