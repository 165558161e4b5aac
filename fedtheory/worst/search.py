"""Adversarial instance search: the largest left side over a bound's assumption class at fixed constants.

Population method: scipy's ``differential_evolution(..., vectorized=True)``. Each generation hands the whole
population to one objective call, which decodes it into P instances (one LeastSquaresProblem with P data
variants) and runs ONE batched ``simulate`` over P x seeds runs. Why DE rather than CMA-ES: it ships with scipy
(already a dependency), is deterministic given a seed, handles box bounds natively, and its vectorized mode maps
one generation onto one engine call; CMA-ES would add a dependency for no measured gain here.

The objective is ratio = (mean over seeds of the left side) / bound(values of the instance): for a bound whose
constants the class pins (FedInit's), this is the left side up to a constant; for one whose constants are read
from the instance (Li et al.'s Gamma, G, ||w_1 - w*||^2), it is the tightness at the instance's own constants.
The best instance over every evaluation (the initial random population included) is kept, so the reported worst
case is never below the best random instance the search started from.
"""
from __future__ import annotations

import inspect
import json
import math
import os
import shlex
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .._jsonutil import jsonable
from .._validation import FedTheoryError, ParameterError
from ..files import FileRefused, read_json, write_atomic
from ..sim import Trace, simulate
from .quadratic import Instances
from .spec import WorstCaseSpec, entry, make_spec

FORMAT = "fedtheory.worst/1"
FINALISTS = 4  # stochastic specs: instances re-evaluated on the final seeds (the search's best by its own seeds)


@dataclass
class Evaluation:
    """The measured left side and the bound of P instances, each run on the same seeds (what :func:`evaluate`
    returns).

    m statements per instance (m = 1, or one per round for a bound stated at every T); an instance's value is its
    worst statement (the largest mean left side / bound). Where the bound is evaluated per run (a statement about
    each run's own measured constants, e.g. FedMRUR's sum_t d_t or the recursion of FedInit's Lemma 4),
    ``bound_seeds`` holds each run's bound and ``bound_all`` their mean over seeds. The properties ``ratio``,
    ``mean``, ``bound``, ``gap`` and ``se`` read each instance at its worst statement (``statement``).

    Parameters
    ----------
    lhs_all : ndarray
        (P, seeds, m): the left side per instance, seed and statement (a non-finite value, a divergence, is inf).
    bound_all : ndarray
        (P, m): the bound per instance and statement (the mean over seeds where it is per run).
    values : mapping of str to object
        The values the bound was evaluated at: scalars, or per instance (per-run values averaged over each
        instance's runs).
    diverged : ndarray
        (P,) bool: whether any run of the instance diverged.
    bound_seeds : ndarray, optional
        (P, seeds, m): each run's bound, where the spec's bound is per run (``bound_per_run``).
    raw_values : mapping of str to object, optional
        The values as the spec's ``constants_from_instance`` returned them (per run where the bound is per run).
    scale : ndarray, optional
        (P,): the magnitude of what each instance's runs compute (:func:`instance_scales`), set where a verdict is
        taken; a deterministic gap within the rounding tolerance of it is equality.
    """

    lhs_all: np.ndarray
    bound_all: np.ndarray
    values: Mapping[str, Any]
    diverged: np.ndarray  # (P,)
    bound_seeds: np.ndarray | None = None  # (P, seeds, m) when the bound is per run (spec.bound_per_run)
    # the values as the spec's constants_from_instance returned them (per run where the bound is per run): what
    # ``rebound`` evaluates another record at
    raw_values: Mapping[str, Any] | None = None
    # (P,) the magnitude of what each instance's runs compute (``instance_scales``; set where a verdict is taken,
    # the finalists and a replay): a deterministic gap within the rounding tolerance of it is equality
    scale: np.ndarray | None = None

    @property
    def _ratio_all(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = self.lhs_all.mean(axis=1) / self.bound_all
        return np.where(np.isnan(r), -np.inf, r)

    @property
    def statement(self) -> np.ndarray:
        return np.argmax(self._ratio_all, axis=1)

    def _pick(self, a: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a, self.statement[:, None], axis=1)[:, 0]

    @property
    def lhs(self) -> np.ndarray:  # (P, seeds) at each instance's worst statement
        j = self.statement
        return self.lhs_all[np.arange(len(j)), :, j]

    @property
    def mean(self) -> np.ndarray:
        return self.lhs.mean(axis=1)

    @property
    def se(self) -> np.ndarray:
        """Standard error over seeds of the left side (of left side - right side where the bound is per run)."""
        x = self.lhs if self.bound_seeds is None else self.gap
        n = x.shape[1]
        return x.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(len(x))

    @property
    def bound(self) -> np.ndarray:
        return self._pick(self.bound_all)

    @property
    def gap(self) -> np.ndarray:
        """(P, seeds): left side minus bound per run at each instance's worst statement (the bound of the run
        itself where it is evaluated per run)."""
        j = self.statement
        i = np.arange(len(j))
        b = self.bound_all[i, j][:, None] if self.bound_seeds is None else self.bound_seeds[i, :, j]
        with np.errstate(invalid="ignore"):
            return self.lhs - b

    @property
    def statements(self) -> int:
        return int(self.lhs_all.shape[2])

    @property
    def ratio(self) -> np.ndarray:
        return self._pick(self._ratio_all)


def evaluate(spec: WorstCaseSpec, inst: Instances, seeds: tuple[int, ...] | None = None) -> Evaluation:
    """Run every instance once per seed in ONE simulate call (or the spec's ``runner``); the left side and the bound
    per instance.

    ``spec.measure`` returns (R,) or (m, R) (m statements per run, e.g. one per round); ``constants_from_instance``
    returns scalars, arrays (P,), or arrays broadcasting to (P, m) (e.g. T per round as (1, m)).

    Parameters
    ----------
    spec : WorstCaseSpec
        What runs and what is measured.
    inst : Instances
        P instances of ``spec.space``'s class (what its ``decode`` returns).
    seeds : tuple of int, optional
        The seeds every instance runs on; None: ``spec.seeds``.

    Returns
    -------
    Evaluation
        The left side (P, seeds, m) and the bound of every instance, evaluated by ``spec.record``.

    Raises
    ------
    ParameterError
        The spec's ``runner`` returns something other than a ``fedtheory.sim.Trace`` of P x seeds runs (or a
        multiple).
    """
    seeds = tuple(spec.seeds if seeds is None else seeds)
    P, S = len(inst), len(seeds)
    R = P * S
    which = np.repeat(np.arange(P), S)
    if spec.runner is not None:
        tr = spec.runner(spec, inst, seeds)
        if not isinstance(tr, Trace) or tr.runs % R:
            got = f"a Trace of {tr.runs} runs" if isinstance(tr, Trace) else f"a {type(tr).__name__}"
            raise ParameterError("runner", got, f"a function (spec, instances, seeds) -> fedtheory.sim.Trace, what "
                                 f"simulate returns, of {R} runs ({P} instances x {S} seeds, instance-major: run r is "
                                 f"instance r // {S}) or a multiple of it (a coupled pair: 2 runs each)")
    else:
        tr = simulate(inst.problem(), spec.algorithm, spec.config, np.tile(np.asarray(seeds), P), variants=which,
                      w0=inst.w0[which], measures=spec.measures)
    lhs = np.asarray(spec.measure(tr, inst, which), float)
    lhs = (lhs[:, None] if lhs.ndim == 1 else lhs.T).reshape(P, S, -1)
    diverged = tr.diverged.reshape(P, -1).any(axis=1)  # instance-major: every run of instance p
    lhs = np.where(np.isfinite(lhs), lhs, np.inf)  # a divergence is the largest possible left side
    vals = dict(spec.constants_from_instance(inst, tr, which))
    return _bounded(spec, spec.record, lhs, vals, diverged)


def instance_scales(record: Any, inst: Any) -> np.ndarray | None:
    """Per instance, the magnitude of what its runs compute: ``fedtheory.checks.rounding_scale_of`` by the record's
    ``lhs_kind``, from the instance's exact L, f*, ||w*|| and start distance ||w^0 - w*||^2.

    Parameters
    ----------
    record : Bound
        The bound record (its ``lhs_kind`` picks the scale).
    inst : Instances
        P instances; their ``constants()`` give L, f* and the start distance, their ``w_star`` (where they have one)
        ||w*||.

    Returns
    -------
    ndarray or None
        (P,) scales; None where the instances state no constants (their ``constants()`` fails).
    """
    from ..checks.rounding import rounding_scale_of

    try:
        k = inst.constants()
        w_star = np.asarray(inst.w_star, float) if hasattr(inst, "w_star") else None
    except Exception:  # noqa: BLE001 - an instance family without these constants: the old rule (bound and measure)
        return None
    out = np.zeros(len(inst))
    for p in range(len(inst)):
        q = {name: float(np.asarray(k[key], float)[p]) for name, key in (("L", "L"), ("f_star", "f_star"),
                                                                         ("visited_max_dist2", "dist2")) if key in k}
        if w_star is not None:
            q["w_star_norm2"] = float(np.sum(w_star[p] ** 2))
        out[p] = rounding_scale_of(record, q)[0]
    return out


def rebound(spec: WorstCaseSpec, ev: Evaluation, record: Any) -> Evaluation:
    """``ev`` (an evaluation of ``spec``) with the bound of ``record`` in place of the spec's record, evaluated at the
    same values: the same runs, the same measured left side, another right side (e.g. a mutant of the statement,
    ``fedtheory.worst.mutants``)."""
    vals = dict(ev.raw_values if ev.raw_values is not None else ev.values)
    return _bounded(spec, record, ev.lhs_all, vals, ev.diverged, ev.scale)


def _bounded(spec: WorstCaseSpec, record: Any, lhs: np.ndarray, vals: dict[str, Any], diverged: np.ndarray,
             scale: np.ndarray | None = None) -> Evaluation:
    """The Evaluation of measured ``lhs`` (P, seeds, m) against ``record``'s bound at ``vals``."""
    P, S, m = lhs.shape
    R = P * S
    raw = dict(vals)
    b = np.asarray(record.evaluate(vals), float)
    if spec.bound_per_run:  # values with a leading axis of R = P x seeds runs: one bound per run
        if b.ndim == 1 and b.shape[0] == R and m != R:
            b = b[:, None]
        b_seeds = np.broadcast_to(b, (R, m)).reshape(P, S, m).copy()
        # reported per instance: the mean over its runs (a NaN bound of a run stays NaN: never 'holds')
        vals = {k: _instance_mean(v, P, S) for k, v in vals.items()}
        return Evaluation(lhs, b_seeds.mean(axis=1), vals, diverged, b_seeds, raw_values=raw, scale=scale)
    if b.ndim == 1 and b.shape[0] == P and m != P:
        b = b[:, None]
    return Evaluation(lhs, np.broadcast_to(b, (P, m)).copy(), vals, diverged, raw_values=raw, scale=scale)


def _instance_mean(v: Any, P: int, S: int) -> Any:
    """A per-run array (R = P x S leading) -> its mean over each instance's S runs; anything else unchanged."""
    if isinstance(v, str):
        return v
    a = np.asarray(v, float)
    if a.ndim >= 1 and a.shape[0] == P * S and S > 1:
        return a.reshape(P, S, *a.shape[1:]).mean(axis=1)
    return v


def z_threshold(statements: int, runs: int | None = None, z: float = 3.0) -> float:
    """The one-sided threshold, in standard errors of the mean gap over ``runs`` seeds, for the worst of
    ``statements`` statements: the level of z standard errors of a normal mean for one statement (Phi(-z) =
    1.35e-3 at z = 3), divided by the number of statements (Bonferroni: the instance's value is its worst statement,
    chosen after the fact), as a quantile of Student's t with runs - 1 degrees of freedom (normal when runs is
    None).

    Parameters
    ----------
    statements : int
        The statements the worst is taken over (at least 1 is used).
    runs : int, optional
        The seeds the mean gap is over (runs - 1 degrees of freedom, at least 1); None: the normal quantile.
    z : float, default 3.0
        The level for one statement, in standard errors of a normal mean.

    Returns
    -------
    float
        A stochastic instance is ``violated`` where its mean gap exceeds this many standard errors.
    """
    from scipy.stats import norm, t

    level = norm.sf(z) / max(int(statements), 1)
    return float(norm.isf(level) if runs is None else t.isf(level, df=max(int(runs) - 1, 1)))


def _per(vals: Mapping[str, Any], i: int, j: int = 0) -> dict[str, Any]:
    """Instance i's (and statement j's) values: scalars stay, (P,) arrays give entry i, (P|1, m) entry [i, j]."""
    out = {}
    for k, v in vals.items():
        a = np.asarray(v, float) if not isinstance(v, str) else None
        if a is None:
            out[k] = v
        elif a.ndim == 0:
            out[k] = float(a)
        elif a.ndim == 1:
            out[k] = float(a[i if a.size > 1 else 0])
        else:
            out[k] = float(a[i if a.shape[0] > 1 else 0, j if a.shape[1] > 1 else 0])
    return out


def instance_verdict(spec: WorstCaseSpec, ev: Evaluation, i: int) -> tuple[str, list[str]]:
    """The verdict of instance ``i`` of ``ev`` (holds | violated | inconclusive | not_applicable) and the conditions
    that failed: the decision rule of the search (deterministic runs: a gap beyond the rounding tolerance,
    ``fedtheory.checks.rounding_tolerance`` of the bound, the measurement and the instance's scale ``ev.scale``;
    stochastic: the paired gap against ``z_threshold`` standard errors)."""
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged instance: inf - inf in its spread
        return _verdict_of(spec, ev, i)


_verdict = instance_verdict  # the name the tests use


def _verdict_of(spec: WorstCaseSpec, ev: Evaluation, i: int) -> tuple[str, list[str]]:
    rec = spec.record
    vals = _per(ev.values, i, int(ev.statement[i]))
    failed = [f"requires {k}={v} (run has {spec.settings.get(k)!r})" for k, v in rec.requires.items()
              if spec.settings.get(k) != v] + rec.conditions_failed(vals) + spec.extra_conditions_failed(vals)
    if failed:
        return "not_applicable", failed
    m, b = float(ev.mean[i]), float(ev.bound[i])
    if not math.isfinite(m):
        return "violated", []
    gap = ev.gap[i]
    if spec.stochastic:  # the paired gap per run; the worst of m statements at the 3-SE family level
        se = float(gap.std(ddof=1) / np.sqrt(gap.size)) if gap.size > 1 else 0.0
        mean = float(gap.mean())
        if mean <= 0:
            return "holds", []
        # a positive mean gap within the threshold: as the checks' compare_mean, neither holds nor violated
        return ("violated" if mean - z_threshold(ev.statements, gap.size) * se > 0 else "inconclusive"), []
    from ..checks.rounding import rounding_tolerance

    scale = 0.0 if ev.scale is None else float(ev.scale[i])
    return ("violated" if float(gap.mean()) > float(rounding_tolerance(m, b, scale)) else "holds"), []


def evaluate_chunk(spec: WorstCaseSpec, theta: np.ndarray,
                   plugins: tuple[str, ...] = ()) -> tuple[Evaluation, Instances]:
    """A unit of work of a search on an executor: decode ``theta`` (k, n) into k instances and evaluate them (one
    ``simulate``). The serial path with the same chunks calls this too, so both compute the same bits."""
    if plugins:
        from ..plugins import load_plugins

        load_plugins(plugins)
    inst = spec.space.decode(theta)
    return evaluate(spec, inst), inst


DEFAULT_CHUNK = 16  # instances per unit of work when a search runs on an executor (fixed: not the worker count)

# Stated limits on one batch of runs (a generation of the search, the final re-evaluation, a replay), checked
# before anything is allocated: the trace holds one float64 array of runs x (T + 1) per measure; the state and the
# data hold runs x clients x dim and instances x clients x samples x dim floats; the local steps cost about runs x T
# x K x clients x samples x dim multiply-adds. Far above every built-in check's settings (T <= 300, 32 x 32 runs).
MAX_TRACE_ENTRIES = 50_000_000
MAX_STATE_ENTRIES = 50_000_000
MAX_STEP_WORK = 2e11
MAX_INSTANCE_BYTES = 256 << 20  # an instance file (`worst --replay FILE`)


def _param_for(spec: WorstCaseSpec, value: Any, field_name: str) -> str:
    """The spec parameter that set a run setting (``value``; the same type first), for errors in the user's words."""
    same = [k for k, v in spec.params.items() if k != "record_id" and not isinstance(v, (bool, str))
            and isinstance(v, (int, float, np.integer, np.floating)) and v == value]
    typed = [k for k in same if isinstance(spec.params[k], (int, np.integer)) == isinstance(value, (int, np.integer))]
    return (typed or same or [field_name])[0]


def check_size(spec: WorstCaseSpec, instances: int, seeds: int, what: str = "a generation", inst: Any = None) -> None:
    """A ParameterError naming the parameter when ``instances`` x ``seeds`` runs of ``spec`` would exceed a stated
    limit (MAX_TRACE_ENTRIES, MAX_STATE_ENTRIES, MAX_STEP_WORK); checked before any run is allocated. The clients,
    samples and dimension are the class's (``spec.space``), or those of ``inst`` where given (a replayed file's)."""
    problem = size_problem(spec, instances, seeds, what, inst)
    if problem is not None:
        name, text = problem
        raise ParameterError(name, spec.params.get(name, "?"), f"small enough that {text}; lower it, the seeds (runs, "
                             f"--final-seeds) or --popsize")


def size_problem(spec: WorstCaseSpec, instances: int, seeds: int, what: str = "a generation",
                 inst: Any = None) -> tuple[str, str] | None:
    """(the parameter to blame, which limit and by how much) when ``check_size`` refuses, else None."""
    cfg, space = spec.config, spec.space
    T, K = int(getattr(cfg, "rounds", 1)), int(getattr(cfg, "local_steps", 1))
    R = int(instances) * int(seeds)
    src = inst if inst is not None else space
    C = int(getattr(src, "n_clients", 1) or 1)
    d = int(getattr(src, "dim", 1) or 1)
    X = getattr(inst, "X", None)
    S = int(X.shape[2]) if X is not None and getattr(X, "ndim", 0) == 4 else int(getattr(space, "samples", d) or d)
    data = max(C * S * d, int(getattr(space, "n_params", 0) or 0))
    measures = max(len(spec.measures), 1) + 2
    checks = (
        (R * (T + 1) * measures, MAX_TRACE_ENTRIES, _param_for(spec, T, "rounds"),
         f"runs x (T + 1) x measures <= {MAX_TRACE_ENTRIES:.3g} (here {R} runs of {what} x {T + 1} x {measures}: the "
         f"trace, one float64 array per measure)"),
        (max(R * C * d * 4, int(instances) * data), MAX_STATE_ENTRIES,
         _param_for(spec, C, "clients") if C > d else _param_for(spec, d, "dim"),  # the larger of the two
         f"runs x clients x dim and instances x data <= {MAX_STATE_ENTRIES:.3g} (here {R} runs x {C} x {d}, "
         f"{instances} instances x {data})"),
        (float(R) * T * K * C * S * d, MAX_STEP_WORK, _param_for(spec, K, "local_steps") if K > T else
         _param_for(spec, T, "rounds"), f"runs x T x K x clients x samples x dim <= {MAX_STEP_WORK:.3g} multiply-adds "
                                        f"(here {R} x {T} x {K} x {C} x {S} x {d})"),
    )
    for size, limit, name, text in checks:
        if size > limit:
            return name, text
    return None


def preflight(spec: WorstCaseSpec, inst: Instances | None = None) -> None:
    """The run settings of ``spec`` validated on one instance (a random one of its class unless given) before a
    search or a replay starts, so that a bad T, K or eta is a ParameterError naming the spec parameter (not an error
    inside the search's objective)."""
    if inst is None:
        inst = spec.space.decode(spec.space.random(1, np.random.default_rng(0)))
    try:
        spec.config.validated(inst.problem(), 1)
    except ParameterError as exc:
        name = _param_for(spec, exc.value, exc.name)
        if name == exc.name:
            raise
        raise ParameterError(name, spec.params[name], f"{exc.allowed} (it is the runs' {exc.name})") from None


class _Abort(Exception):
    """Carries a FedTheoryError out of the search's objective: scipy re-raises a ValueError (a ParameterError is
    one) raised there as a RuntimeError of its own."""


def worst_case(spec: WorstCaseSpec, *, budget: int = 2000, seconds: float | None = None, popsize: int = 32,
               seed: int = 0, final_seeds: int | None = None, progress: bool = False,
               instance_path: str | None = None, random_ratio: float | None = None,
               reference: str | None = None, executor: Any = None, chunk: int | None = None,
               finalists: int | None = None, keep: list | None = None) -> dict[str, Any]:
    """Search ``spec``'s class for the instance that maximises left side / bound; return the JSON record.

    Differential evolution (scipy, vectorized: one generation is one batch of runs) from a random population (the
    spec's ``starts`` among it); the best instances are re-evaluated at the end and the worst of them is reported
    (deterministic runs: never below any instance evaluated). The verdict: deterministic runs, a gap beyond the
    rounding tolerance is ``violated``; stochastic runs, the paired gap against :func:`z_threshold` standard errors.
    See docs/worst-case.md.

    Parameters
    ----------
    spec : WorstCaseSpec
        The class, the runs and the bound.
    budget : int, default 2000
        Instance evaluations (population x generations, the initial population included); at least ``popsize``.
    seconds : float, optional
        Also stop after this long (checked once per generation).
    popsize : int, default 32
        The population size (>= 5).
    seed : int, default 0
        Seeds the random population and the search.
    final_seeds : int, optional
        Stochastic specs: re-evaluate the finalists on this many seeds (the spec's seeds first) for the verdict's
        mean and standard error.
    progress : bool, default False
        Show a progress bar.
    instance_path : str, optional
        Write the worst instance there (a JSON file :func:`replay` re-runs; its path is the record's ``instance``).
    random_ratio : float, optional
        The ratio of today's check (``fedtheory check``), copied into the record.
    reference : str, optional
        The label of that check, copied into the record.
    executor : object, optional
        A ``fedtheory.parallel`` executor: each generation runs as units of ``chunk`` instances on it. The same
        chunk gives the same bits serially and on any number of workers; a chunk that fails every attempt leaves
        its instances unevaluated (``failed_tasks`` in the record).
    chunk : int, optional
        Instances per unit of work (>= 1; default ``DEFAULT_CHUNK`` = 16 with an executor). Without both, a
        generation is one batch.
    finalists : int, optional
        How many of the search's best instances are re-evaluated at the end (default ``FINALISTS`` = 4 for a
        stochastic spec, 1 for a deterministic one).
    keep : list, optional
        A list to which (instance, its Evaluation on the final seeds) of every finalist is appended, best first by
        the search's ratio (the best random start last where it is added): e.g. for deciding mutants of the
        statement at the same runs (``fedtheory.worst.mutants``).

    Returns
    -------
    dict
        The JSON record: ``id``, ``method`` ("search"), ``worst_measured`` (the worst instance's mean left side) and
        its ``worst_measured_se``, ``bound``, ``slack`` (bound / measured), ``verdict`` (holds, violated,
        inconclusive or not_applicable) and ``conditions_failed``, the ``gap`` and ``gap_se``, ``values`` and
        ``instance_constants``, ``params``, ``instance`` (the file written, or None), and the search's account
        (``random_start``, ``declared_starts``, ``finalists``, ``budget``, ``evaluations``, ``generations``,
        ``per_instance``, ``elapsed_s``, ...).

    Raises
    ------
    ParameterError
        A bad ``budget``, ``popsize``, ``seconds``, ``chunk``, ``finalists`` or ``starts``, runs beyond the stated
        size limits, or run settings the spec's instances refuse (each named by its spec parameter).
    WorstCaseError
        No instance could be evaluated, or the search's invariants fail (the best instance gives another ratio
        alone than in its batch; the reported worst is below an instance evaluated).
    """
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1):
        raise ParameterError("chunk", chunk, "an integer >= 1 (instances per unit of work)")
    if executor is not None and chunk is None:
        chunk = DEFAULT_CHUNK
    if chunk is not None and executor is None:
        from ..parallel import SerialExecutor

        executor = SerialExecutor()
    budget = int(budget)
    if budget < popsize:
        raise ParameterError("budget", budget, f"at least the population size ({popsize}) instance evaluations")
    if finalists is not None and (isinstance(finalists, bool) or not isinstance(finalists, (int, np.integer))
                                  or finalists < 1):
        raise ParameterError("finalists", finalists, "an integer >= 1 (instances re-evaluated at the end)")
    if popsize < 5:
        raise ParameterError("popsize", popsize, "an integer >= 5")
    if seconds is not None and not seconds > 0:
        raise ParameterError("seconds", seconds, "a positive number of seconds")
    space = spec.space
    check_size(spec, chunk or popsize, len(spec.seeds), f"a generation of {popsize}")
    if spec.stochastic and final_seeds:
        check_size(spec, 1, max(final_seeds, len(spec.seeds)), "a finalist on --final-seeds")
    preflight(spec)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    init = space.random(popsize, rng)
    starts = np.atleast_2d(np.asarray(spec.starts, float)) if spec.starts is not None and len(spec.starts) else None
    n_start = 0 if starts is None else min(len(starts), popsize - 1)
    if n_start:  # the declared starting instances replace the last rows of the random population
        lo, hi = np.array(space.bounds).T
        tol = 1e-12 * np.maximum(np.abs(lo), np.abs(hi))
        if starts.shape[1] != len(lo) or np.any(starts[:n_start] < lo - tol) or np.any(starts[:n_start] > hi + tol):
            raise ParameterError("starts", starts.shape, f"parameter vectors inside the class's box ({len(lo)} bounds)")
        init[popsize - n_start:] = np.clip(starts[:n_start], lo, hi)
    state = {"evals": 0, "seen": 0, "best": None, "random": None, "gens": 0, "top": [], "failed": []}
    # stochastic specs: the search's few seeds flatter some instances; the FINALISTS best (by the search's estimate)
    # are re-evaluated on the final seeds and the worst of them on those seeds is reported
    n_top = int(finalists) if finalists is not None else FINALISTS if spec.stochastic else 1
    gens = max(budget // popsize - 1, 0)
    bar = tasks_bar = None
    if executor is not None:
        from ..parallel import Progress, Task
        from ..plugins import worker_targets

        shared, plugins = executor.share(spec), tuple(worker_targets())
        tasks_bar = Progress((gens + 1) * -(-popsize // chunk), f"worst {spec.record_id}", executor.workers, progress)

    def evaluate_population(theta: np.ndarray) -> list[tuple[Evaluation | None, Instances | None, int]]:
        """(evaluation, instances, size) per chunk; one batch without an executor."""
        if executor is None:
            inst = space.decode(theta)
            return [(evaluate(spec, inst), inst, len(theta))]
        g = state["gens"]
        tasks = [Task(f"{spec.record_id}/gen{g}/chunk{j // chunk}", evaluate_chunk,
                      (shared, theta[j:j + chunk], plugins)) for j in range(0, len(theta), chunk)]
        out = executor.run(tasks, progress=tasks_bar)
        state["failed"].extend(f.to_json() for f in out.failures)
        return [(r[0], r[1], len(t.args[1])) if r is not None else (None, None, len(t.args[1]))
                for r, t in zip(out.results, tasks)]

    def objective(x: np.ndarray) -> np.ndarray:
        try:
            return _objective(x)
        except FedTheoryError as exc:
            raise _Abort(exc) from None

    def _objective(x: np.ndarray) -> np.ndarray:  # x (n, S): the population's columns
        theta = np.atleast_2d(x.T)
        parts = evaluate_population(theta)
        r = np.concatenate([ev.ratio if ev is not None else np.full(k, np.nan) for ev, _, k in parts])  # NaN: failed
        mean = np.concatenate([ev.mean if ev is not None else np.full(k, np.nan) for ev, _, k in parts])
        offsets = np.cumsum([0] + [k for _, _, k in parts])

        def take(i: int) -> Instances:
            j = int(np.searchsorted(offsets, i, side="right") - 1)
            return parts[j][1].take(i - int(offsets[j]))

        state["evals"] += sum(k for ev, _, k in parts if ev is not None)
        first = state["seen"]
        state["seen"] += len(theta)
        ranked = np.where(np.isnan(r), -np.inf, r)  # a failed chunk's instances rank last
        if state["random"] is None:
            n_rand = len(theta) - n_start
            rr = ranked[:n_rand]
            best_random = take(int(np.argmax(rr))) if np.isfinite(rr).any() or np.any(rr > 0) else None
            state["random"] = (ranked, mean, n_rand, best_random)
        if np.all(np.isnan(r)):
            return np.full(len(theta), 1e300)
        i = int(np.argmax(ranked))
        if state["best"] is None or r[i] > state["best"][0]:
            state["best"] = (float(r[i]), take(i), float(mean[i]))
        for j in np.argsort(-ranked, kind="stable")[:n_top]:
            if not np.isnan(r[j]):
                state["top"].append((float(r[j]), first + int(j), take(int(j))))
        state["top"] = sorted(state["top"], key=lambda c: (-c[0], c[1]))[:n_top]
        return -np.where(np.isfinite(r) | (r > 0), r, -1e300)

    if progress and executor is None:
        from tqdm.auto import tqdm

        bar = tqdm(total=gens, desc=f"worst {spec.record_id}", unit="gen", leave=False)

    def callback(*_a, **_k):
        state["gens"] += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(ratio=f"{state['best'][0]:.4g}")
        return seconds is not None and time.perf_counter() - t0 > seconds

    try:
        if gens == 0:
            objective(init.T)
        else:
            import scipy.optimize  # here: importing scipy costs more than `fedtheory list` may take

            scipy.optimize.differential_evolution(objective, space.bounds, vectorized=True, updating="deferred",
                                                  init=init, maxiter=gens, polish=False, tol=0.0, atol=0.0,
                                                  seed=np.random.default_rng(seed + 1), callback=callback)
    except _Abort as stop:
        raise stop.args[0] from None
    if bar is not None:
        bar.close()
    if tasks_bar is not None:
        tasks_bar.close()
    search_s = time.perf_counter() - t0
    if state["best"] is None:
        from .spec import WorstCaseError

        raise WorstCaseError(f"worst-case search of {spec.record_id}: no instance could be evaluated (every unit of "
                             f"work failed: {state['failed'][:1]})")

    # the worst instance, re-evaluated (more seeds where the runs are stochastic)
    seeds = tuple(spec.seeds)
    if spec.stochastic and final_seeds and final_seeds > len(seeds):
        seeds = seeds + tuple(range(max(seeds) + 1, max(seeds) + 1 + final_seeds - len(seeds)))
    r_ratio, r_mean, n_rand, best_random = state["random"]
    rr = r_ratio[:n_rand]
    rfin = np.isfinite(rr) & (rr > 0)
    finalists = [c[2] for c in state["top"]]
    search_ratios = [c[0] for c in state["top"]]
    with_random = spec.stochastic and len(seeds) > len(spec.seeds) and best_random is not None
    if with_random:
        finalists.append(best_random)  # the best random start, on the same seeds
        search_ratios.append(float(np.max(rr)))
    evs, insts = [], []
    for cand in finalists:
        # the data exactly as the instance file stores it: replay is bit-exact
        inst = _load_instance(space, cand.to_json())
        inst.theta = cand.theta
        insts.append(inst)
        evs.append(evaluate(spec, inst, seeds))
        evs[-1].scale = instance_scales(spec.record, inst)
    if keep is not None:
        keep.extend(zip(insts, evs))
    final_ratios = [float(e.ratio[0]) for e in evs]
    invariant = _per_instance_invariant(spec, insts, evs, search_ratios, final_ratios, state["best"][0])
    k = int(np.argmax(final_ratios))  # the random start is part of the search: never reported above it
    worst, ev = insts[k], evs[k]
    verdict, failed = _verdict(spec, ev, 0)
    record = _record(spec, ev, worst, verdict, failed, seeds)
    random_start = {"instances": n_rand,
                    "best_slack": float(1 / rr[rfin].max()) if rfin.any() else None,
                    "median_slack": float(np.median(1 / rr[rfin])) if rfin.any() else None,
                    "best_measured": float(r_mean[:n_rand][int(np.argmax(rr))])}
    if with_random:
        # the search's seeds favour whichever instance their noise flattered: on the final seeds only, the best
        # random start compares like with like with the worst found
        random_start["best_slack_final_seeds"] = float(1 / final_ratios[-1]) if final_ratios[-1] > 0 else None
    record.update({
        "random_ratio": random_ratio, "reference": reference, "random_start": random_start,
        "declared_starts": [{"slack": float(1 / r) if np.isfinite(r) and r > 0 else None, "measured": float(mm)}
                            for r, mm in zip(r_ratio[n_rand:], r_mean[n_rand:])],
        "finalists": [{"search_slack": (1 / a if a > 0 else None), "final_slack": (1 / b if b > 0 else None)}
                      for a, b in zip(search_ratios, final_ratios)],
        "budget": {"evaluations": budget, "seconds": seconds, "popsize": popsize, "search_seed": seed,
                   "chunk": chunk},
        "evaluations": state["evals"], "generations": state["gens"], "per_instance": invariant,
        "elapsed_s": round(time.perf_counter() - t0, 3),
        "evals_per_s": round(state["evals"] / search_s, 1) if search_s > 0 else None,
    })
    if state["failed"]:
        record["failed_tasks"] = state["failed"]
    if instance_path is not None:
        record["instance"] = write_instance(instance_path, spec, worst, seeds, record)
    return record


INVARIANT_RTOL = 1e-6  # an instance measured in a batch and alone: the same runs, summed in another order


def _same_ratio(a: float, b: float) -> bool:
    if not (np.isfinite(a) and np.isfinite(b)):
        return a == b or (np.isnan(a) and np.isnan(b))
    return abs(a - b) <= INVARIANT_RTOL * max(abs(a), abs(b), 1e-300)


def _per_instance_invariant(spec: WorstCaseSpec, insts: list, evs: list, search_ratios: list, final_ratios: list,
                            best: float) -> dict[str, Any]:
    """What docs/worst-case.md states, asserted: every instance is measured against its own constants, so the search's
    best instance, run alone on the search's seeds, gives the ratio the batch gave it, and (deterministic runs) the
    reported worst is at least the ratio of every instance evaluated (within INVARIANT_RTOL: the batch sums in
    another order). A WorstCaseError (exit 3: the tool failed) otherwise, naming both numbers."""
    from .spec import WorstCaseError

    alone = evs[0] if not spec.stochastic else evaluate(spec, insts[0], tuple(spec.seeds))
    a = float(alone.ratio[0])
    if not _same_ratio(a, search_ratios[0]):
        raise WorstCaseError(f"worst-case search of {spec.record_id}: the search's best instance has ratio "
                             f"{search_ratios[0]:.10g} in its batch but {a:.10g} alone on the same seeds: some measure "
                             f"or constant of the batch is not the instance's own (docs/worst-case.md)")
    reported = max(final_ratios)
    if not spec.stochastic and np.isfinite(best) and reported < best - INVARIANT_RTOL * abs(best):
        raise WorstCaseError(f"worst-case search of {spec.record_id}: the reported worst ratio {reported:.10g} is "
                             f"below the ratio {best:.10g} of an instance the search evaluated (docs/worst-case.md)")
    rel = (abs(a - search_ratios[0]) / max(abs(a), abs(search_ratios[0]), 1e-300)
           if np.isfinite(a) and np.isfinite(search_ratios[0]) else 0.0)
    return {"best_in_batch": search_ratios[0], "best_alone": a, "relative_difference": rel,
            "best_evaluated": best, "reported": reported}


def _record(spec, ev, inst, verdict, failed, seeds) -> dict[str, Any]:
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged instance: inf - inf in its spread
        return _record_of(spec, ev, inst, verdict, failed, seeds)


def _record_of(spec, ev, inst, verdict, failed, seeds) -> dict[str, Any]:
    m, b = float(ev.mean[0]), float(ev.bound[0])
    B = spec.space.B if getattr(spec.space, "B", None) is not None else None
    k = {n: float(v[0]) for n, v in inst.constants(B).items()}
    gap = ev.gap[0]
    return {"id": spec.record_id, "method": "search", "worst_measured": m, "worst_measured_se": float(ev.se[0]),
            "bound": b, "slack": (b / m if m > 0 else math.inf), "verdict": verdict, "conditions_failed": failed,
            "gap": float(gap.mean()), "gap_se": float(gap.std(ddof=1) / np.sqrt(gap.size)) if gap.size > 1 else 0.0,
            "z_threshold": z_threshold(ev.statements, gap.size) if spec.stochastic else None,
            "seeds": list(seeds), "diverged": bool(ev.diverged[0]),
            "statement": int(ev.statement[0]), "statements": int(ev.lhs_all.shape[2]),
            "values": {kk: vv for kk, vv in _per(ev.values, 0, int(ev.statement[0])).items()
                       if isinstance(vv, (int, float))},
            "instance_constants": k, "params": dict(spec.params), "instance": None, "note": spec.note}


def _load_instance(space, data: Mapping[str, Any]) -> Instances:
    """An instance from its JSON form, read by the class's ``instance_type`` (what its ``decode`` returns)."""
    return getattr(space, "instance_type", Instances).from_json(data)


def write_instance(path: str, spec: WorstCaseSpec, inst: Instances, seeds, record) -> str:
    payload = {"format": FORMAT, "id": spec.record_id, "params": dict(spec.params), "seeds": list(seeds),
               "theta": inst.theta[0].tolist(), "instance": inst.to_json(),
               "worst_measured": record["worst_measured"], "bound": record["bound"], "verdict": record["verdict"],
               "replay": shlex.join(["fedtheory", "worst", "--replay", str(path)])}
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    write_atomic(path, json.dumps(jsonable(payload), allow_nan=False))  # strict JSON: inf/nan as strings
    return path


def load_worst(path: str) -> tuple[WorstCaseSpec, Instances, tuple[int, ...], dict[str, Any]]:
    """A stored worst instance as objects. ``simulate(inst.problem(), spec.algorithm, spec.config, seeds,
    w0=inst.w0[0])`` re-runs it (a coupled pair: ``spec.runner(spec, inst, seeds)``).

    Parameters
    ----------
    path : str
        An instance file written by ``fedtheory worst`` (:func:`worst_case`'s ``instance_path``).

    Returns
    -------
    spec : WorstCaseSpec
        The spec rebuilt from the file's record id and params (:func:`make_spec`).
    inst : Instances
        The instance, its data exactly as stored (read by the class's ``instance_type``).
    seeds : tuple of int
        The seeds it ran on.
    payload : dict
        The file's content.

    Raises
    ------
    ParameterError
        The file is unreadable, too large, of another format or malformed, or its runs exceed the stated size
        limits.
    """
    try:
        payload = read_json(path, MAX_INSTANCE_BYTES, "instance file")
    except FileRefused as exc:
        raise ParameterError("--replay", path, f"an instance file written by `fedtheory worst` ({exc.why})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ParameterError("--replay", path, f"an instance file of format {FORMAT}")
    for key, kind in (("id", str), ("params", dict), ("instance", dict), ("seeds", list)):
        if not isinstance(payload.get(key), kind):
            raise ParameterError("--replay", path, f"an instance file whose {key!r} is a JSON "
                                 f"{ {str: 'string', dict: 'object', list: 'list'}[kind]} "
                                 f"(it is {type(payload.get(key)).__name__})")
    seeds = payload["seeds"]
    if not seeds or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in seeds):
        raise ParameterError("--replay", path, "an instance file whose 'seeds' are non-negative integers (one run "
                             "each)")
    try:
        float(payload.get("worst_measured"))
    except (TypeError, ValueError):
        raise ParameterError("--replay", path, "an instance file with the number it reproduces (worst_measured)") \
            from None
    spec = make_spec(payload["id"], payload["params"])
    check_size(spec, 1, 1, "the replay")  # the settings alone: named by their parameter
    problem = size_problem(spec, 1, len(seeds), "the replay")
    if problem is not None:
        raise ParameterError("--replay", path, f"an instance file with fewer seeds than its {len(seeds)} (the limit: "
                             f"{problem[1]})")
    try:
        inst = _load_instance(spec.space, payload["instance"])
    except ParameterError as exc:
        raise ParameterError("--replay", path, f"an instance file whose instance is {exc.allowed} ({exc.name}: "
                             f"{exc.value})") from None
    check_size(spec, 1, len(seeds), "the replay (its seeds)", inst)
    preflight(spec, inst)
    return spec, inst, tuple(int(s) for s in seeds), payload


def replay(path: str) -> dict[str, Any]:
    """Re-run a stored worst instance (its data as stored; the spec rebuilt from its params): ``fedtheory worst
    --replay FILE``.

    Parameters
    ----------
    path : str
        An instance file written by ``fedtheory worst`` (read by :func:`load_worst`).

    Returns
    -------
    dict
        The record :func:`worst_case` writes for the instance on its stored seeds, with ``replay``:
        ``stored_measured``, ``relative_difference`` to today's measure, ``reproduced`` (within 1e-9 relative; a
        divergence reproduces as a divergence) and ``constraints_broken`` (the class's ``violations``, empty inside
        the class).

    Raises
    ------
    ParameterError
        As :func:`load_worst`.
    """
    spec, inst, seeds, payload = load_worst(path)
    t0 = time.perf_counter()
    ev = evaluate(spec, inst, seeds)
    ev.scale = instance_scales(spec.record, inst)
    verdict, failed = _verdict(spec, ev, 0)
    rec = _record(spec, ev, inst, verdict, failed, seeds)
    stored = float(payload["worst_measured"])
    now = float(rec["worst_measured"])
    if np.isfinite(stored) and np.isfinite(now):
        rel = abs(now - stored) / max(abs(stored), 1e-300)
    else:  # a diverged instance reproduces its divergence: inf is inf (and nan nan), never a nan difference
        rel = 0.0 if now == stored or (np.isnan(now) and np.isnan(stored)) else float("inf")
    inside = spec.space.violations(inst)[0] if hasattr(spec.space, "violations") else []
    rec.update({"instance": path, "elapsed_s": round(time.perf_counter() - t0, 3),
                "replay": {"stored_measured": stored, "relative_difference": rel, "reproduced": rel <= 1e-9,
                           "constraints_broken": inside}})
    return rec


def run_worst(record_id: str, *, sets: Mapping[str, Any] | None = None, seed: int = 0, use_reference: bool = True,
              reference_kw: Mapping[str, Any] | None = None, **kw) -> dict[str, Any]:
    """Build the spec of ``record_id`` (constants from today's check where declared, overridden by ``sets``) and
    search it: ``fedtheory worst ID``.

    Parameters
    ----------
    record_id : str
        A record with a worst-case declaration (:func:`register_worst_case`).
    sets : mapping of str to object, optional
        Factory parameters set here (``--set NAME=VALUE``); they override the reference's.
    seed : int, default 0
        The seed of the reference's check and of the search.
    use_reference : bool, default True
        Take the constants from the declaration's ``reference`` (today's check), where it has one.
    reference_kw : mapping of str to object, optional
        The selection passed to the reference (e.g. problem, setting); a name it does not take is refused.
    **kw
        Passed to :func:`worst_case` (``budget``, ``seconds``, ``popsize``, ``instance_path``, ...).

    Returns
    -------
    dict
        :func:`worst_case`'s record, with the check's ``random_ratio`` and the reference's label.

    Raises
    ------
    ParameterError
        An unknown ``record_id``, a selection the reference does not take, or a parameter the factory refuses.
    """
    spec, random_ratio, ref_label = worst_spec(record_id, sets=sets, seed=seed, use_reference=use_reference,
                                               reference_kw=reference_kw)
    return worst_case(spec, seed=seed, random_ratio=random_ratio, reference=ref_label, **kw)


def worst_spec(record_id: str, *, sets: Mapping[str, Any] | None = None, seed: int = 0, use_reference: bool = True,
               reference_kw: Mapping[str, Any] | None = None) -> tuple[WorstCaseSpec, float | None, str | None]:
    """The spec ``run_worst`` searches: (spec, the check's random_ratio, the reference's label) - the constants of
    today's check where the declaration has a reference, overridden by ``sets``."""
    e = entry(record_id)
    params: dict[str, Any] = {}
    random_ratio = ref_label = None
    if use_reference and e.reference is not None:
        sel = dict(reference_kw or {})
        sig = inspect.signature(e.reference).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in sig.values()):
            for k in sel:
                if k not in sig:  # a selection (problem, setting, beta) this reference does not take
                    raise ParameterError(f"--{k}", sel[k], f"absent: {record_id}'s reference takes "
                                         + (", ".join(f"--{n}" for n in list(sig)[1:]) or "no selection"))
        # a reference that takes a setting (e.g. a reading) picks its check row by the --set value
        sel.update({k: v for k, v in (sets or {}).items() if k in sig and k not in ("seed", "problem")})
        ref = e.reference(seed, **sel)
        params.update(ref["params"])
        random_ratio, ref_label = ref.get("random_ratio"), ref.get("label")
    if sets:
        changed = [k for k in sets if params.get(k) != sets[k]]
        params.update(sets)
        if changed and random_ratio is not None:
            ref_label = (f"{ref_label}; constants changed here ({', '.join(changed)}): "
                         "random_ratio is the check's, at its own")
    return make_spec(record_id, params), random_ratio, ref_label
