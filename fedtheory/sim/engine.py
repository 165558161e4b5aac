"""The vectorized engine: every client of every run advances in one array operation.

State is shaped (runs, clients, dim). A seed sweep or a hyperparameter grid is one call to
:func:`simulate` (per-run hyperparameters are arrays of length R). The only Python loops on
the hot path are over rounds and local steps; per round, each run's generator is asked once
per concern (so a run's draws depend on its own seed alone; see ``rng.py``).
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .._validation import ParameterError, check_finite, check_float, check_int, per_run
from .algorithms import Algorithm, fedavg, fedcm, fedinit, fedprox, fedsam, scaffold  # noqa: F401 - re-exported
from .rules import Exact, LocalTransform, Oracle, RoundState, State, on_request
from .problems import Problem
from .certificates import ClientSampling
from .rng import RunStreams
from .rounds import StepSchedule, commit_round, divergence_flags, park_runs, run_round, versions  # noqa: F401 - versions re-exported


@dataclass(frozen=True)
class RunConfig:
    """Run-level settings shared by every run of a batch (shapes must agree), except ``lr``.

    lr_schedule: 'constant' (eta), 'inverse' (eta_t = lr / ((t+1) K): the c/tau schedule of
    seed 000 Thm 3 with c = lr, constant within a round and <= c/tau at every iteration tau),
    'exponential' (eta_t = lr * lr_decay**t), 'inverse_step' (a new step size at every local step:
    eta_tau = lr / (tau + lr_offset) with tau = t K + k + 1 the global step counter; Li et al.'s
    eta_tau = beta/(tau + gamma), which seed 004's Theorem 1 uses with lr = beta, lr_offset = gamma).

    step_origin: the index 'inverse_step' gives the first local step of round 0. 1 (the default): tau = t K + k + 1,
    for papers that count iterations t = 1, 2, ... (Li et al. 2020); 0: tau = t K + k, for papers that count
    t = 0, 1, ... (Stich 2019's eta_t = 4/(mu (a + t)) is lr = 4/mu, lr_offset = a, step_origin = 0; with the
    default origin the same schedule needs lr_offset = a - 1). With step_origin = 0, lr_offset must be > 0.

    Parameters
    ----------
    rounds : int
        T, the communication rounds (>= 1).
    local_steps : int
        K, the local steps per round (>= 1).
    lr : float or array_like
        The step size, or the schedule's numerator (> 0; one value per run allowed: a step-size grid runs as one
        batch).
    clients_per_round : int, optional
        N, the clients drawn uniformly without replacement each round (1..C); None: every client.
    oracle : Oracle, default Exact()
        How stochastic gradients are drawn (``Exact``, ``AdditiveNoise``, ``Minibatch``).
    lr_schedule : {"constant", "inverse", "exponential", "inverse_step"}, default "constant"
        The step-size schedule (above).
    lr_decay : float, default 1.0
        The factor per round of ``"exponential"``.
    lr_offset : float, default 0.0
        The offset of ``"inverse_step"`` (gamma).
    step_origin : {1, 0}, default 1
        The index ``"inverse_step"`` gives the first local step.
    divergence_threshold : float, default 1e6
        A run whose ||w||_inf exceeds this times max(1, ||w0||_inf), or turns non-finite, has diverged: its later
        entries are NaN.
    """

    rounds: int
    local_steps: int
    lr: Any  # scalar or (R,)
    clients_per_round: int | None = None  # None: every client
    oracle: Oracle = field(default_factory=Exact)
    lr_schedule: str = "constant"
    lr_decay: float = 1.0
    lr_offset: float = 0.0  # gamma of the 'inverse_step' schedule
    step_origin: int = 1  # 'inverse_step': the first local step's index tau (1: tau = tK + k + 1; 0: tau = tK + k)
    divergence_threshold: float = 1e6  # ||w||_inf beyond this times max(1, ||w0||_inf), or non-finite: diverged

    def validated(self, problem: Problem, runs: int) -> "RunConfig":
        check_int("rounds", self.rounds, 1)
        check_int("local_steps", self.local_steps, 1)
        check_float("lr", self.lr, 0.0, low_inclusive=False, size=runs)
        if self.clients_per_round is not None:
            check_int("clients_per_round", self.clients_per_round, 1, problem.n_clients)
        self.schedule()  # validates lr_schedule, lr_decay, lr_offset
        check_float("divergence_threshold", self.divergence_threshold, 0.0, low_inclusive=False)
        if not isinstance(self.oracle, Oracle):
            raise ParameterError("oracle", self.oracle, "an Oracle (Exact(), AdditiveNoise(sigma2), Minibatch(b))")
        return self

    def schedule(self) -> StepSchedule:
        """The step-size schedule (shared with the torch trainer)."""
        return StepSchedule(self.lr_schedule, self.local_steps, self.lr_decay, self.lr_offset, self.step_origin)

    def lr_at(self, t: int, lr: np.ndarray) -> np.ndarray:
        return self.schedule().at_round(t, lr)

    def lr_at_step(self, t: int, k: int, lr: np.ndarray) -> np.ndarray:
        """The step size of local step k of round t (differs from lr_at only for 'inverse_step')."""
        return self.schedule().at_step(t, k, lr)


# ------------------------------------------------------------------------------------ measures

STATE_MEASURES = {  # indexed by t = 0..T (the global model w^t)
    "loss": "f(w^t)",
    "opt_error": "f(w^t) - f* (f* of the run's own data variant: problem.variant_optima())",
    "grad_norm2": "||grad f(w^t)||^2",
    "delta": "Delta^t = (1/C) sum_{i in C} ||w_i^last - w^t||^2 (seed 000 Table 4 / Thm 3; w_i^last = client i's latest local model)",
    "population": "F(w^t), population risk (known distribution)",
    "gen_gap": "F(w^t) - f(w^t): population minus empirical risk (known distribution)",
    "test_loss": "held-out loss at w^t",
    "client_grad_norm2": "(1/C) sum_i ||grad f_i(w^t)||^2 (for measured heterogeneity)",
    "dist2_opt": "||w^t - w*||^2, w* = problem.constants['w_star'] (the minimizer; for a rank-deficient least "
                 "squares the min-norm one; each run's own data variant's, problem.variant_optima())",
}
ROUND_MEASURES = {  # indexed by round t = 0..T-1 (the round that maps w^t to w^{t+1})
    "delta_code": "(1/N) sum_{i in N_t} ||w_{i,K}^t - w^{t+1}||^2 (the FedInit authors' simulator)",
    "drift": "(1/N) sum_{i in N_t} ||w_{i,K}^t - w^t||^2 (seed 001 consistency row; client drift)",
    "unbiased_gap": "||(1/N) sum_{i in N_t} w_{i,0}^t - w^t||",
    "init_offset": "max_{i in N_t} ||w_{i,0}^t - w^t|| (size of the initialisation offsets)",
    "client_deviation_max": "max_{i in N_t} ||w_{i,K}^t - w^{t+1}||: the largest deviation of a participant's local end "
                            "point from the new global model (the largest of delta_code's terms, not squared)",
    "V1": "(1/N) sum_{i in N_t} sum_{k<K} ||w_{i,k}^t - w^t||^2 (seed 000 Table 4, V_1)",
    "V2": "||w^{t+1} - w^t||^2 (seed 000 Table 4, V_2)",
    "local_grad_sum2": "||sum_{i in N_t} sum_{k<K} grad f_i(w_{i,k}^t)||^2 (exact gradients)",
}
VISITED_MEASURES = {  # one row: running maxima over the visited points (the global models and the local end points)
    "visited_max_loss": "max over the visited points w of max_ij f(w; z_ij) (per-sample loss)",
    "visited_max_grad": "max over the visited points w of max_ij ||grad f(w; z_ij)|| (per-sample gradient norm, not squared)",
    "visited_max_dist2": "max over every point the run visited (w^0, the global models, every local iterate "
                         "w_{i,k}, the local end points) of ||w - w*||^2, w* = problem.constants['w_star'] (each "
                         "run's own data variant's)",
    "visited_max_grad_var": "max over the visited points w of max_i (1/S_i) sum_j ||grad f(w; z_ij) - grad f_i(w)||^2 "
                            "(one-sample gradient variance; a minibatch of b divides it by b)",
}
STEP_MEASURES = {  # indexed by the local step s = t K + k = 0..T K (xbar_s: the averaged iterate at every local step)
    "step_opt_error": "f(xbar_s) - f*, xbar_s = (1/N) sum_{i in N_t} w_{i,k}^t: the mean of the round's participants' "
                      "local iterates before local step k of round t, s = t K + k (s = T K: the mean of the last "
                      "round's local end points); with full participation and FedAvg's averaging xbar_{tK} = w^t",
    "step_dist2": "||xbar_s - w*||^2 (xbar_s as in step_opt_error)",
    "step_grad_norm2": "||grad f(xbar_s)||^2 (xbar_s as in step_opt_error)",
    "step_grad_norm2_mean": "(1/(s+1)) sum_{j=0}^{s} ||grad f(xbar_j)||^2: the running mean of step_grad_norm2 "
                            "(non-convex theorems' average over iterations; (1/T) sum_{t=0}^{T-1} is row T-1)",
    "avg_opt_error": "f(xhat_s) - f*, xhat_s = (1/(s+1)) sum_{j=0}^{s} xbar_j: the uniform running average of "
                     "xbar_0..xbar_s (inclusive; a paper's average of the first T iterates xbar_0..xbar_{T-1} is row T-1)",
    "avg_dist2": "||xhat_s - w*||^2 (xhat_s as in avg_opt_error)",
    "wavg_opt_error": "f(xtilde_s) - f*, xtilde_s = sum_{j<=s} w_j xbar_j / sum_{j<=s} w_j: the weighted running "
                      "average of xbar_0..xbar_s (inclusive), weights w_j = ratio^j (offset + j)^power from "
                      "simulate(..., step_weights=StepWeights(power, offset, ratio)) (default: uniform)",
    "wavg_dist2": "||xtilde_s - w*||^2 (xtilde_s as in wavg_opt_error)",
}
DEFAULT_MEASURES = ("opt_error", "grad_norm2", "delta", "delta_code", "drift", "unbiased_gap")


@dataclass(frozen=True)
class StepWeights:
    """The weights of the weighted running average of the averaged iterates (the measures wavg_*):
    w_s = ratio**s * (offset + s)**power at local step s = 0, 1, ... (s = t K + k).

    power=0, ratio=1 (the default): uniform; power=1: linear, power=2: quadratic (Stich 2019's w_t = (a + t)^2 is
    StepWeights(power=2, offset=a)); ratio > 1: geometric (e.g. (1 - mu eta)^{-s} is ratio = 1/(1 - mu eta)).
    offset: a scalar or one value per run (> 0 when power > 0, so that w_0 > 0). The average is updated in
    normalized form (no sum of weights is formed), so geometric weights do not overflow.

    Parameters
    ----------
    power : float, default 0.0
        The polynomial power p of w_s (>= 0).
    offset : float or array_like, default 1.0
        a in (a + s)^p (one value per run allowed).
    ratio : float, default 1.0
        The geometric ratio r of w_s (> 0).
    """

    power: float = 0.0
    offset: Any = 1.0
    ratio: float = 1.0

    def validated(self, runs: int) -> "StepWeights":
        check_float("step_weights.power", self.power, 0.0)
        check_float("step_weights.ratio", self.ratio, 0.0, low_inclusive=False)
        low_ok = self.power == 0
        check_float("step_weights.offset", self.offset, 0.0, low_inclusive=low_ok, size=runs)
        return self

    def decay(self, s: int, runs: int) -> np.ndarray:
        """w_{s-1} / w_s for s >= 1, per run (R,)."""
        a = per_run(self.offset, runs)
        out = np.full(runs, 1.0 / self.ratio)
        if self.power:
            out = out * ((a + s - 1) / (a + s)) ** self.power
        return out

    def describe(self) -> dict[str, Any]:
        off = np.asarray(self.offset, dtype=float)
        return {"power": float(self.power), "offset": off.tolist() if off.ndim else float(off), "ratio": float(self.ratio)}


class TrackGradients(LocalTransform):
    """Leaves the direction unchanged; records two round measures (T, R) of ||grad f_k(w)||^2 (exact local
    gradients) over the points w the selected clients visit (every local iterate, the round's start and end points):

    * ``visited_client_grad2``: the per-round maximum, row t = round t alone;
    * ``visited_client_grad2_running``: the running maximum, row t = the maximum over rounds 0..t, i.e. over the
      whole trajectory up to the end of round t (what a statement "for t = 0..T-1, E||g_t||^2 <= G^2" needs at
      horizon T; its last row is the maximum over the whole run).

    It is the visited-region part of a bounded-gradient assumption such as Li et al.'s Assumption 4
    (E||g||^2 <= G^2 = this + sigma^2 for additive noise of variance sigma^2).

    Add it to any algorithm: ``dataclasses.replace(alg, local=(*alg.local, TrackGradients()))``.
    """

    name = "track_gradients"

    def setup(self, state: State, runs: int, n_clients: int, dim: int) -> None:
        state.server["track_gradients_running"] = np.zeros(runs)

    def round_start(self, rs: RoundState) -> None:
        rs.extra["visited_client_grad2"] = np.zeros(rs.sel.shape[0])

    def direction(self, rs: RoundState, g, w, grad_at):
        gn = np.sum(rs.view.grad(w) ** 2, axis=-1).max(axis=1)
        rs.extra["visited_client_grad2"] = np.maximum(rs.extra["visited_client_grad2"], gn)
        return g

    def measures(self) -> dict[str, str]:
        return {"visited_client_grad2": "per round: max over round t's local iterates (and its start and end "
                                        "points) and clients of ||grad f_k(w)||^2",
                "visited_client_grad2_running": "running maximum: max of visited_client_grad2 over rounds 0..t "
                                                "(the whole trajectory up to the end of round t)"}

    def measure(self, rs: RoundState) -> dict[str, Any]:
        g0 = np.sum(rs.view.grad(rs.w0) ** 2, axis=-1).max(axis=1)
        gK = np.sum(rs.view.grad(rs.wK) ** 2, axis=-1).max(axis=1)
        per_round = np.maximum(rs.extra["visited_client_grad2"], np.maximum(g0, gK))
        running = np.fmax(rs.state.server["track_gradients_running"], per_round)
        rs.state.server["track_gradients_running"] = running
        return {"visited_client_grad2": per_round, "visited_client_grad2_running": running}


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


# ------------------------------------------------------------------------------------ engine


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


def simulate(
    problem: Problem,
    algorithm: Algorithm,
    config: RunConfig,
    seeds: Sequence[int],
    *,
    variants: Sequence[int] | None = None,
    w0: np.ndarray | None = None,
    measures: Iterable[str] = DEFAULT_MEASURES,
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
    known = (set(STATE_MEASURES) | set(ROUND_MEASURES) | set(VISITED_MEASURES) | set(STEP_MEASURES)
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
    if step_weights is not None and not isinstance(step_weights, StepWeights):
        raise ParameterError("step_weights", step_weights, "a StepWeights(power, offset, ratio)")
    weights = (step_weights or StepWeights()).validated(streams.runs)
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
    step_req = tuple(m for m in measures if m in STEP_MEASURES)
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
        rows = T + 1 if m in STATE_MEASURES else T if (m in ROUND_MEASURES or m in plugin_measures) else \
            T * K + 1 if m in STEP_MEASURES else 1
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

    state_measures = any(m in STATE_MEASURES for m in measures) or iterates is not None

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
    want_visited = any(m in measures for m in VISITED_MEASURES if m != "visited_max_dist2")
    # one oracle per call; its view follows the participants. The exact-gradient sum of the step measures shares the
    # oracle's gradient at the local iterate (computed once per step)
    oracle = ProblemOracle(config.oracle, None, None, None, terms, share_step_gradient="local_grad_sum2" in measures)
    # what is recorded, decided once per call: the per-step hooks, the round and state measures
    step_hooks = "V1" in measures or "local_grad_sum2" in measures or track_dist
    round_measures = any(m in ROUND_MEASURES for m in measures)
    steps: _StepMeasures | None = None
    every = np.logical_and.reduce  # ndarray.all without its Python layers (7 us a call)

    def make_oracle(rs: RoundState) -> ProblemOracle:
        rs.view = oracle.follow(problem, rs, variant)
        if steps is not None:
            steps.view = oracle.step_view
        oracle.draws = config.oracle.draws(streams, R, N, K, d, oracle.sizes)
        return oracle

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for t in rounds:
            steps = _StepMeasures(measures, state, R, N, d, w_star_clients if track_dist else None) if step_hooks else None
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
    if _RECORDERS:
        replay_simulations([simulation_summary(problem, algorithm, config, R, lr, measures)])
    _LAST_SIMULATION[-1] = {"problem": problem, "oracle": config.oracle, "algorithm": algorithm,
                            "sampling": ClientSampling(problem.n_clients, config.clients_per_round)}
    return Trace(rec, streams.seeds, variant, run_params, config, algorithm, problem.name, diverged_at, diverged_q,
                 final, iterates, averages.iterates if averages is not None else None)


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


def _chain(hooks):
    def before_step(k, wk):
        for h in hooks:
            h(k, wk)
    return before_step


class _StepAverages:
    """The step measures: at every local step s = t K + k the averaged iterate xbar_s = mean over the round's
    participants of w_{i,k}^t, its uniform and weighted running averages (normalized updates, no weight sums), and
    f - f*, ||. - w*||^2, ||grad f||^2 at them. A round's K points are buffered and evaluated in one batched call
    per quantity (no loop over clients or runs)."""

    def __init__(self, problem, variant, measures, weights: StepWeights, R: int, K: int, d: int, f_star, w_star,
                 iterates):
        self.problem, self.variant, self.measures, self.weights = problem, variant, measures, weights
        self.R, self.f_star, self.w_star, self.iterates = R, f_star, w_star, iterates
        self.buffer = np.empty((K, R, d))
        self.s = 0  # the next step index
        self.xu = self.xw = None
        self.z = np.ones(R)  # S_s / w_s of the weighted average
        self.g_sum = np.zeros(R)  # sum of ||grad f(xbar_j)||^2 so far (step_grad_norm2_mean)
        self.kinds = {prefix for prefix in ("step", "avg", "wavg") if any(m.startswith(prefix + "_") for m in measures)}

    def before_step(self, k: int, wk: np.ndarray) -> None:
        self.buffer[k] = wk.mean(axis=1)

    def flush(self, rec, alive: np.ndarray, count: int | None = None) -> None:
        n = self.buffer.shape[0] if count is None else count
        xs = self.buffer[:n]
        s0 = self.s
        pts = {kind: np.empty_like(xs) for kind in self.kinds}
        for j in range(n):  # the running averages: a recursion over the steps, vectorized over runs
            x, s = xs[j], s0 + j
            if s == 0:
                self.xu, self.xw = x.copy(), x.copy()
            else:
                self.xu = self.xu + (x - self.xu) / (s + 1)
                self.z = 1.0 + self.z * self.weights.decay(s, self.R)
                self.xw = self.xw + (x - self.xw) / self.z[:, None]
            for kind, val in (("step", x), ("avg", self.xu), ("wavg", self.xw)):
                if kind in pts:
                    pts[kind][j] = val
        self.s = s0 + n
        if self.iterates is not None:
            self.iterates[s0:s0 + n] = np.where(alive[None, :, None], xs, np.nan)
        R, d = self.R, xs.shape[-1]
        var = np.tile(self.variant, n)
        # per-run minima and minimisers (R,) and (R, d) repeat with the n steps of the flat rows
        f_star = np.tile(self.f_star, n) if np.ndim(self.f_star) else self.f_star
        w_star = np.tile(self.w_star, (n, 1)) if np.ndim(self.w_star) == 2 else self.w_star
        for kind, P in pts.items():
            flat = P.reshape(n * R, d)
            vals = {}
            if f"{kind}_opt_error" in self.measures:
                vals["opt_error"] = self.problem.global_loss(flat, var) - f_star
            if f"{kind}_dist2" in self.measures:
                vals["dist2"] = np.sum((flat - w_star) ** 2, axis=1)
            if f"{kind}_grad_norm2" in self.measures or (kind == "step" and "step_grad_norm2_mean" in self.measures):
                vals["grad_norm2"] = np.sum(self.problem.global_grad(flat, var) ** 2, axis=1)
            if kind == "step" and "step_grad_norm2_mean" in self.measures:
                g = vals["grad_norm2"].reshape(n, R)
                total = self.g_sum + np.cumsum(g, axis=0)
                self.g_sum = total[-1]
                rec["step_grad_norm2_mean"][s0:s0 + n] = np.where(alive[None, :], total / (s0 + 1 + np.arange(n))[:, None],
                                                                  np.nan)
            for q, v in vals.items():
                if f"{kind}_{q}" in self.measures:
                    rec[f"{kind}_{q}"][s0:s0 + n] = np.where(alive[None, :], v.reshape(n, R), np.nan)


class ProblemOracle:
    """The sim backend's LocalOracle: a problem's (noisy) client gradients for one round, plus the local
    objective's extra terms (plug-ins with ``objective = True``). ``simulate`` builds one per call and points it at
    each round (``follow``, then the round's draws)."""

    def __init__(self, oracle: Oracle, view, draws, rs: RoundState, terms=(), share_step_gradient: bool = False):
        self.oracle, self.view, self.draws, self.rs, self.terms = oracle, view, draws, rs, terms
        self._sel: np.ndarray | None = None  # the participants self.view holds
        self._held: np.ndarray | None = None  # the selection object last followed
        self.sizes: np.ndarray | None = None  # their sample counts (R, N)
        self._share = share_step_gradient
        self.step_view = view if view is None or not share_step_gradient else _StepGradient(view)

    def follow(self, problem: Problem, rs: RoundState, variant: np.ndarray):
        """Point the oracle at round ``rs``: the participants' view, gathered anew only when they change (a view
        is the selected clients' data, the same for the same clients). Returns the view; ``step_view`` is the same
        data for the per-step measures (with ``share_step_gradient``: the exact gradient at the local iterate they
        ask for is kept for the oracle's step, computed once)."""
        sel = rs.sel
        if sel is self._held and not sel.flags.writeable:  # the same read-only selection (every client)
            pass
        elif self._sel is None or sel.shape != self._sel.shape or not np.array_equal(sel, self._sel):
            self.view, self._sel = problem.view(sel, variant), np.array(sel)
            self.step_view = _StepGradient(self.view) if self._share else self.view
            self.sizes = problem.client_sizes[sel]
        self._held = sel
        self.rs = rs
        return self.view

    def grad(self, k: int, w: np.ndarray) -> np.ndarray:
        if self._share:  # the gradient the step measures took at w (if any), then forgotten: one step's lifetime
            g = self.oracle.grad(self.step_view, w, k, self.draws)
            self.step_view.forget()
        else:
            g = self.oracle.grad(self.view, w, k, self.draws)
        for tr in self.terms:
            g = g + tr.objective_grad(self.rs, w)
        return g

    def grad_at(self, k: int):
        return lambda x: self.grad(k, x)

    def prox(self, anchor: np.ndarray, mu) -> np.ndarray:
        """Each participant's exact proximal point argmin_x f_i(x) + (mu/2) ||x - anchor_i||^2 (R, N, d), through the
        view's ``prox``; exact gradients only, and no extra objective terms."""
        if not isinstance(self.oracle, Exact):
            raise ParameterError("oracle", type(self.oracle).__name__, "Exact() for an exact proximal solve")
        if self.terms:
            raise ParameterError("algorithm.local", [type(t).__name__ for t in self.terms],
                                 "no objective terms beside an exact proximal solve")
        return self.view.prox(anchor, np.asarray(mu, dtype=np.float64))

    def descend(self, w0: np.ndarray, lr, steps: int, direction_sum: bool = False):
        """The round's K plain local steps at once (the round protocol's ``LocalOracle.descend``), through the
        oracle's and the view's ``descend``; None where the local objective has extra terms, the step measures share
        the gradient, or the view has no such route."""
        if self.terms or self._share:
            return None
        return self.oracle.descend(self.view, w0, lr, steps, self.draws, direction_sum)


class _StepGradient:
    """A round's view whose exact gradient at the current local iterate is computed once per local step: the step
    measures take it before the step and the oracle finds it (the same array: the same bits as computing it twice).
    ``forget`` ends the step; every other attribute is the view's."""

    def __init__(self, view):
        self.view, self._w, self._g = view, None, None

    def __getattr__(self, name):
        return getattr(self.view, name)

    def grad(self, w):
        if w is not self._w:
            self._g, self._w = self.view.grad(w), w
        return self._g

    def forget(self) -> None:
        self._w = self._g = None


class _StepMeasures:
    """Measures taken before every local step (V1, the exact-gradient sum, the largest ||w_{i,k} - w*||^2)."""

    def __init__(self, measures, state: State, R: int, N: int, d: int, w_star: np.ndarray | None = None):
        self.state, self.N = state, N
        self.v1 = np.zeros(R) if "V1" in measures else None
        self.gsum = np.zeros((R, d)) if "local_grad_sum2" in measures else None
        self.w_star = w_star
        self.dmax = np.zeros(R) if w_star is not None else None
        self.active = self.v1 is not None or self.gsum is not None or self.dmax is not None
        self.view = None

    def before_step(self, k: int, wk: np.ndarray) -> None:
        if self.dmax is not None:
            self.dmax = np.fmax(self.dmax, np.sum((wk - self.w_star) ** 2, axis=2).max(axis=1))
        if self.v1 is not None:
            self.v1 += np.sum((wk - self.state.w[:, None, :]) ** 2, axis=(1, 2)) / self.N
        if self.gsum is not None:
            self.gsum += self.view.grad(wk).sum(axis=1)


def _sum_last(x: np.ndarray) -> np.ndarray:
    """np.sum(x, axis=-1): the same reduction, without np.sum's Python layers (the engine calls it every round)."""
    return np.add.reduce(x, axis=-1)


def _mean_clients(x: np.ndarray) -> np.ndarray:
    """np.mean(x, axis=1): the same reduction and division."""
    return np.add.reduce(x, axis=1) / x.shape[1]


def _record_state(problem, state, variant, measures, rec, t, f_star, alive) -> None:
    w = state.w
    if "loss" in measures or "opt_error" in measures:
        f = problem.loss(w, variant)
        if "loss" in measures:
            rec["loss"][t] = np.where(alive, f, np.nan)
        if "opt_error" in measures:
            rec["opt_error"][t] = np.where(alive, f - f_star, np.nan)
    if "grad_norm2" in measures or "client_grad_norm2" in measures:
        G = problem.client_grads(w, variant)
        if "grad_norm2" in measures:
            rec["grad_norm2"][t] = np.where(alive, _sum_last(_mean_clients(G) ** 2), np.nan)
        if "client_grad_norm2" in measures:
            rec["client_grad_norm2"][t] = np.where(alive, _mean_clients(_sum_last(G**2)), np.nan)
    if "delta" in measures:
        diff = state.clients["last_local"] - w[:, None, :]
        rec["delta"][t] = np.where(alive, _mean_clients(_sum_last(diff**2)), np.nan)
    if "population" in measures or "gen_gap" in measures:
        F = problem.population_loss(w)
        if "population" in measures:
            rec["population"][t] = np.where(alive, F, np.nan)
        if "gen_gap" in measures:
            rec["gen_gap"][t] = np.where(alive, F - problem.loss(w, variant), np.nan)
    if "test_loss" in measures:
        rec["test_loss"][t] = np.where(alive, problem.test_loss(w), np.nan)


def _record_round(rs: RoundState, measures, rec, t, v1, gsum, alive) -> None:
    w, w1 = rs.state.w, rs.w_next
    put = lambda name, val: rec[name].__setitem__(t, np.where(alive, val, np.nan))
    if "delta_code" in measures:
        put("delta_code", _mean_clients(_sum_last((rs.wK - w1[:, None, :]) ** 2)))
    if "drift" in measures:
        put("drift", _mean_clients(_sum_last((rs.wK - w[:, None, :]) ** 2)))
    if "unbiased_gap" in measures:
        put("unbiased_gap", np.linalg.norm(rs.w0.mean(axis=1) - w, axis=1))
    if "init_offset" in measures:
        put("init_offset", np.linalg.norm(rs.w0 - w[:, None, :], axis=2).max(axis=1))
    if "client_deviation_max" in measures:
        put("client_deviation_max", np.linalg.norm(rs.wK - w1[:, None, :], axis=2).max(axis=1))
    if "V1" in measures:
        put("V1", v1)
    if "V2" in measures:
        put("V2", np.sum((w1 - w) ** 2, axis=1))
    if "local_grad_sum2" in measures:
        put("local_grad_sum2", np.sum(gsum**2, axis=1))


def _record_visited(problem, w, wK, variant, measures, rec, alive) -> None:
    """Running maxima over the visited points (global models and local end points) of per-sample
    loss, per-sample gradient norm and per-client gradient variance."""
    R, N, d = wK.shape
    pts = np.concatenate([w, wK.reshape(R * N, d)])
    var = np.concatenate([variant, np.repeat(variant, N)])
    gmax, gvar = problem.sample_grad_stats(pts, var)
    owner = np.concatenate([np.arange(R), np.repeat(np.arange(R), N)])
    stats = {"visited_max_grad": gmax, "visited_max_grad_var": gvar}
    if "visited_max_loss" in measures:
        stats["visited_max_loss"] = np.nanmax(problem.sample_losses(pts, var).reshape(len(pts), -1), axis=1)
    for name, vals in stats.items():
        if name in measures:
            per_run_max = np.full(R, -np.inf)
            np.maximum.at(per_run_max, owner, vals)
            cur = rec[name][0]
            rec[name][0] = np.where(alive, np.fmax(cur, per_run_max), cur)
