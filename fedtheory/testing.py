"""Property-based testing of your own theorems: hypothesis strategies that draw problems whose constants are
exact and lie in stated ranges, and :func:`assert_bound_holds` to check a :class:`fedtheory.theory.Bound`::

    from hypothesis import given
    from fedtheory.testing import least_squares_problems, assert_bound_holds

    @given(least_squares_problems(L=(1, 10), mu=(0.1, 1), n_clients=(2, 8)))
    def test_my_bound(problem):
        measured = ...  # simulate(problem, ...)
        assert_bound_holds(MY_BOUND, measured, {"L": problem.constants["L"].value, ...}, instance=problem)

Each range is a scalar (that value) or a pair (lo, hi). Constants are hit up to rounding (relative ~1e-12).
hypothesis is a test dependency: the strategies need ``pip install fedtheory[test]``; the assertion helper
does not.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ._validation import ParameterError, check_float, check_int
from .sim.problems import (
    GaussianClientModel,
    LeastSquaresProblem,
    LogisticProblem,
    PLNonconvexProblem,
    Problem,
    heterogeneous_least_squares,
    pl_nonconvex,
    synthetic_logistic,
)

__all__ = ["CONTRACT", "assert_bound_holds", "check_algorithm", "least_squares_problems", "logistic_problems",
           "pl_problems", "scaled_bound"]

def _hypothesis():
    """(hypothesis.strategies, hypothesis.assume); a clear ImportError where hypothesis is missing."""
    try:
        from hypothesis import assume, strategies as st
    except ImportError as err:  # a test dependency only
        raise ImportError("fedtheory.testing's strategies need hypothesis: pip install fedtheory[test]") from err
    return st, assume


def _range(name: str, value: Any, low: float, *, integer: bool = False, low_inclusive: bool = True):
    """A scalar or a pair (lo, hi), validated: (lo, hi) with lo <= hi."""
    pair = value if isinstance(value, (tuple, list)) else (value, value)
    if len(pair) != 2:
        raise ParameterError(name, value, "a number or a pair (lo, hi)")
    if integer:
        lo, hi = check_int(name, pair[0], int(low)), check_int(name, pair[1], int(low))
    else:
        lo = check_float(name, pair[0], low, low_inclusive=low_inclusive)
        hi = check_float(name, pair[1], low, low_inclusive=low_inclusive)
    if lo > hi:
        raise ParameterError(name, value, "a pair (lo, hi) with lo <= hi")
    return lo, hi


def _draw(st, lo, hi, integer: bool = False):
    if lo == hi:
        return st.just(lo)
    return st.integers(lo, hi) if integer else st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def least_squares_problems(*, L: Any = (0.5, 10.0), mu: Any = (0.01, 1.0), n_clients: Any = (2, 6),
                           dim: Any = (1, 6), samples_per_client: Any = (8, 20), heterogeneity: Any = (0.0, 2.0),
                           noise_std: Any = (0.0, 1.0)):
    """Strongly convex heterogeneous least squares (``heterogeneous_least_squares``) with the exact
    constants ``L`` (max_i lambda_max(H_i)) and ``mu`` (lambda_min of the mean Hessian) drawn in the ranges.

    The factory's draw (built ill-conditioned) is rescaled, X -> s X, y -> s y, and given a ridge r >= 0:
    L = s^2 L0 + r and mu = s^2 mu0 + r hit the drawn targets exactly. Draws whose base condition number
    L0/mu0 is below the target L/mu are rejected (rare: the base is built with condition 10 L_hi/mu_lo).

    Parameters
    ----------
    L, mu : float or (float, float), default (0.5, 10.0) and (0.01, 1.0)
        The smoothness and strong-convexity constants: a value, or a range (lo, hi) to draw from; mu < L.
    n_clients, dim, samples_per_client : int or (int, int), default (2, 6), (1, 6), (8, 20)
        The factory's sizes, drawn in their ranges.
    heterogeneity, noise_std : float or (float, float), default (0.0, 2.0) and (0.0, 1.0)
        The factory's spread of the clients' data and label noise, drawn in their ranges.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy drawing ``LeastSquaresProblem`` instances whose ``constants["L"]`` and ``constants["mu"]`` are
        the drawn values.
    """
    st, assume = _hypothesis()
    Lr, mur = _range("L", L, 0.0, low_inclusive=False), _range("mu", mu, 0.0, low_inclusive=False)
    if mur[0] > Lr[1]:
        raise ParameterError("mu", mu, f"a range that reaches below L's upper end {Lr[1]} (mu <= L)")
    Cr, dr = _range("n_clients", n_clients, 1, integer=True), _range("dim", dim, 1, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 2, integer=True)
    hr, nr = _range("heterogeneity", heterogeneity, 0.0), _range("noise_std", noise_std, 0.0)
    condition = 10.0 * Lr[1] / mur[0]

    @st.composite
    def draw(draw_):
        L_t = draw_(_draw(st, *Lr))
        mu_t = draw_(_draw(st, mur[0], min(mur[1], L_t)))
        C, d, S = draw_(_draw(st, *Cr, True)), draw_(_draw(st, *dr, True)), draw_(_draw(st, *Sr, True))
        S = max(S, d + 1)  # enough samples per client for a full-rank mean Hessian
        base = heterogeneous_least_squares(C, d, S, heterogeneity=draw_(_draw(st, *hr)), condition=condition,
                                           noise_std=draw_(_draw(st, *nr)),
                                           random_state=draw_(st.integers(0, 2**31 - 1)))
        L0, mu0 = base.constants["L"].value, base.constants["mu"].value
        if L_t == mu_t:
            s2, r = 0.0, L_t  # a pure ridge: every client's Hessian is L I
        else:
            s2 = (L_t - mu_t) / (L0 - mu0) if L0 > mu0 else np.inf
            r = mu_t - s2 * mu0
        assume(np.isfinite(s2) and r >= 0.0 and base.constants["strongly_convex"].value)
        s = np.sqrt(s2)
        m = base.model
        model = GaussianClientModel(s * m.mean, s * m.factor, m.w_true, s * m.noise_std)
        return LeastSquaresProblem(s * base.X, s * base.y, ridge=r, model=model, name=base.name)

    return draw()


def pl_problems(*, n_clients: Any = (2, 6), dim: Any = (1, 6), samples_per_client: Any = (4, 20),
                G2: Any = (0.0, 4.0), sample_variance: Any = (0.0, 2.0)):
    """The PL non-convex problem (``pl_nonconvex``; L = 8, mu and f* = 0 exact) with the heterogeneity
    G2 = (1/C) sum_i ||h_i||^2 (Assumption 3 with B = 1, exact) and the one-sample gradient variance
    ``minibatch_variance_1`` = max_i (1/S) sum_j ||z_ij - h_i||^2 drawn in the ranges (client means and
    sample noise are rescaled to hit them exactly).

    Parameters
    ----------
    n_clients, dim, samples_per_client : int or (int, int), default (2, 6), (1, 6), (4, 20)
        The sizes, drawn in their ranges.
    G2 : float or (float, float), default (0.0, 4.0)
        The heterogeneity (1/C) sum_i ||h_i||^2, exact.
    sample_variance : float or (float, float), default (0.0, 2.0)
        The one-sample gradient variance ``minibatch_variance_1``, exact.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy drawing ``PLNonconvexProblem`` instances.
    """
    st, assume = _hypothesis()
    Cr, dr = _range("n_clients", n_clients, 2, integer=True), _range("dim", dim, 1, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 2, integer=True)
    Gr, vr = _range("G2", G2, 0.0), _range("sample_variance", sample_variance, 0.0)

    @st.composite
    def draw(draw_):
        C, d, S = draw_(_draw(st, *Cr, True)), draw_(_draw(st, *dr, True)), draw_(_draw(st, *Sr, True))
        G2_t, v_t = draw_(_draw(st, *Gr)), draw_(_draw(st, *vr))
        base = pl_nonconvex(C, d, S, random_state=draw_(st.integers(0, 2**31 - 1)))
        h = base.h[0]
        noise = base.Z[0] - h[:, None, :]
        G0 = float(np.mean(np.sum(h**2, axis=1)))
        v0 = float(np.max(np.mean(np.sum(noise**2, axis=-1), axis=1)))
        assume(G0 > 0 and v0 > 0)
        return PLNonconvexProblem(np.sqrt(G2_t / G0) * h[:, None, :] + np.sqrt(v_t / v0) * noise)

    return draw()


def logistic_problems(*, L: Any = (0.1, 5.0), reg: Any = (1e-3, 0.1), n_clients: Any = (2, 5),
                      n_features: Any = (1, 4), n_classes: Any = (2, 3), samples_per_client: Any = (5, 20),
                      shift: Any = (0.0, 2.0), alpha: Any = (0.1, 10.0)):
    """Multinomial logistic regression (``synthetic_logistic``) with mu = reg (exact) and the smoothness
    bound L = max_i lambda_max(X_i'X_i/S_i)/2 + reg drawn in the ranges: features (train and held-out pool)
    are scaled by s so that s^2 L0 + reg = L. Draws with L <= reg are rejected.

    Parameters
    ----------
    L : float or (float, float), default (0.1, 5.0)
        The smoothness bound.
    reg : float or (float, float), default (1e-3, 0.1)
        The ridge, which is mu (exact).
    n_clients, n_features, n_classes, samples_per_client : int or (int, int)
        The factory's sizes, drawn in their ranges (defaults (2, 5), (1, 4), (2, 3), (5, 20)).
    shift, alpha : float or (float, float), default (0.0, 2.0) and (0.1, 10.0)
        The factory's per-client feature shift and Dirichlet concentration of the labels.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy drawing ``LogisticProblem`` instances.
    """
    st, assume = _hypothesis()
    Lr, rr = _range("L", L, 0.0, low_inclusive=False), _range("reg", reg, 0.0, low_inclusive=False)
    if Lr[1] <= rr[0]:
        raise ParameterError("L", L, f"a range that reaches above reg's lower end {rr[0]} (L > reg)")
    Cr, fr = _range("n_clients", n_clients, 1, integer=True), _range("n_features", n_features, 1, integer=True)
    kr = _range("n_classes", n_classes, 2, integer=True)
    Sr = _range("samples_per_client", samples_per_client, 1, integer=True)
    sr, ar = _range("shift", shift, 0.0), _range("alpha", alpha, 0.0, low_inclusive=False)

    @st.composite
    def draw(draw_):
        reg_t = draw_(_draw(st, *rr))
        L_t = draw_(_draw(st, *Lr))
        assume(L_t > reg_t)
        base = synthetic_logistic(draw_(_draw(st, *Cr, True)), draw_(_draw(st, *fr, True)), draw_(_draw(st, *kr, True)),
                                  draw_(_draw(st, *Sr, True)), alpha=draw_(_draw(st, *ar)), shift=draw_(_draw(st, *sr)),
                                  reg=reg_t, random_state=draw_(st.integers(0, 2**31 - 1)))
        lam0 = 2.0 * (base.constants["L"].value - reg_t)
        assume(lam0 > 0)
        s = np.sqrt(2.0 * (L_t - reg_t) / lam0)
        Xc, yc = base._clients_raw
        test = (s * base.test[0], base.test[1])
        return LogisticProblem([s * x for x in Xc], list(yc), base.n_classes, reg=reg_t, test=test, name=base.name)

    return draw()


# ------------------------------------------------------------------------------------ assertions


def _fmt(v: Any) -> str:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return repr(v)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    if a.size <= 6:
        return "[" + ", ".join(f"{x:.6g}" for x in a.ravel()) + "]"
    return f"array(shape={a.shape}, min={np.nanmin(a):.6g}, max={np.nanmax(a):.6g})"


def _describe(instance: Any) -> str:
    if instance is None:
        return "(instance not given)"
    if isinstance(instance, Problem):
        scal = {k: instance.constants[k].value for k in ("L", "mu") if k in instance.constants}
        extra = "".join(f", {k}={_fmt(v)}" for k, v in scal.items())
        return f"{instance.name}(n_clients={instance.n_clients}, dim={instance.dim}{extra})"
    return str(instance)


def assert_bound_holds(bound, measured: Any, values: Mapping[str, Any], *, instance: Any = None, rtol: float = 0.0,
                       atol: float = 0.0, require_conditions: bool = True, certification: Any = None) -> np.ndarray:
    """Assert ``measured <= bound(values) * (1 + rtol) + atol`` entrywise (arrays broadcast, e.g. one per run).

    ``bound`` is a :class:`fedtheory.theory.Bound`; ``values`` the numbers its parameters take. If any of its
    conditions fails at ``values``, the theorem does not apply: AssertionError when ``require_conditions``
    (default), else nothing is checked. ``certification`` (``fedtheory.checks.certify(bound, problem=..., ...)``):
    the instance's certificates of the bound's assumptions; an assumption not certified, or a value the certificates
    do not admit, is a premise that fails like a condition, and the certified constants fill the values not given.
    Non-finite measured values or bound values fail. The message names the bound, the instance, the values, the
    measured and bound numbers (worst entry) and failing conditions.

    Parameters
    ----------
    bound : fedtheory.theory.Bound
        The record.
    measured : array_like
        The measured left side (broadcast against the bound's values).
    values : mapping of str to float or array_like
        The numbers the bound's parameters take.
    instance : object, optional
        The problem (named in the message).
    rtol, atol : float, default 0.0
        The relative and absolute slack, both >= 0.
    require_conditions : bool, default True
        A failing condition (or an uncertified premise) is an AssertionError; False: nothing is checked then.
    certification : fedtheory.checks.Certification, optional
        The instance's certificates of the bound's assumptions.

    Returns
    -------
    numpy.ndarray
        The bound's values.

    Raises
    ------
    AssertionError
        Where the bound does not hold (or a premise fails and ``require_conditions``).
    """
    rtol = check_float("rtol", rtol, 0.0)
    atol = check_float("atol", atol, 0.0)
    where = f"{getattr(bound, 'id', 'bound')} on {_describe(instance)}"
    premises: list[str] = []
    if certification is not None:
        premises = list(certification.failures)
        if not premises:
            values = certification.fill(values)
            premises = certification.admits(values)
    shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
    failed = premises + (bound.conditions_failed(values) if not premises or certification.applicable else [])
    if failed:
        if not require_conditions:
            if certification is not None and not certification.applicable:
                return np.asarray(np.nan)  # an assumption not certified: no certified constants to evaluate at
            return np.asarray(bound.evaluate(values), dtype=float)
        raise AssertionError(f"{where}: conditions fail, so the bound does not apply:\n  "
                             + "\n  ".join(failed) + f"\nvalues: {shown}")
    b = np.asarray(bound.evaluate(values), dtype=float)
    m, bb = np.broadcast_arrays(np.asarray(measured, dtype=float), b)
    bad = ~(np.isfinite(m) & ~np.isnan(bb) & (m <= bb * (1 + rtol) + atol))
    if np.any(bad):
        excess = np.where(np.isfinite(m) & ~np.isnan(bb), m - bb, np.inf)
        i = np.unravel_index(np.argmax(np.where(bad, excess, -np.inf)), m.shape) if m.ndim else ()
        lhs = getattr(bound, "lhs", "") or "measured"
        entry = f" (worst entry {tuple(int(j) for j in i)}; {int(bad.sum())} of {bad.size} fail)" if m.ndim else ""
        raise AssertionError(f"{where} violated{entry}: {lhs} = {m[i]:.6g} > bound {bb[i]:.6g} "
                             f"(excess {m[i] - bb[i]:.3g}, rtol={rtol:g}, atol={atol:g})\nvalues: {shown}")
    return b


# ------------------------------------------------------------------------------------ the algorithm contract

#: The clauses of the contract every algorithm meets, in the order :func:`check_algorithm` runs them.
CONTRACT = ("determinism", "batch_independence", "reference", "measures", "torch_backend")


def _reference_models(problem, algorithm, config, seeds, w0) -> np.ndarray:
    """(T+1, R, d) global models of the naive reference for the algorithm's communication kind."""
    import dataclasses as _dc

    from .sim.gossip import Gossip, reference_gossip
    from .sim.mixed_precision import WeightShift, reference_mixed_precision
    from .sim.quantize import ErrorFeedback
    from .sim.reference import reference_simulate

    if isinstance(algorithm.comm, Gossip):
        return reference_gossip(problem, algorithm, config, seeds, w0=w0)[0]
    if isinstance(algorithm.aggregate, WeightShift):
        ws, comp = algorithm.aggregate, algorithm.compress
        ef = isinstance(comp, ErrorFeedback)
        q = comp.inner if ef else comp
        base = _dc.replace(algorithm, aggregate=ws.base, compress=None)
        return reference_mixed_precision(problem, base, config, seeds, ws.inferior, bits=q.bits if q else 8,
                                         quantizer=q.method if q else None, layers=ws.layers, shift=ws.shift,
                                         error_feedback=ef, target=q.target if q else "weights", w0=w0)
    if algorithm.compress is not None:
        raise NotImplementedError(f"no naive reference for the compressor {type(algorithm.compress).__name__}")
    return reference_simulate(problem, algorithm, config, seeds, w0=w0)[1]


def _torch_models(problem, algorithm, config, seeds, w0) -> np.ndarray:
    """(T+1, R, d) global models from the shared round protocol driven with torch float64 state and the problem's
    gradients: the plug-ins' torch path, without a network."""
    import torch

    from .sim.problem_oracle import ProblemOracle
    from .sim.rng import RunStreams
    from .sim.rounds import commit_round, run_round
    from .sim.rules import State

    streams = RunStreams(seeds)
    R, C, d, K = streams.runs, problem.n_clients, problem.dim, config.local_steps
    N = config.clients_per_round or C
    variant = np.zeros(R, dtype=np.int64)
    w = torch.as_tensor(np.broadcast_to(w0, (R, d)).copy(), dtype=torch.float64)
    state = State(w=w.clone())
    state.clients["last_local"] = w[:, None, :].expand(R, C, d).clone()
    for p in algorithm.plugins():
        p.setup(state, R, C, d)
    schedule = config.schedule()
    lr = np.broadcast_to(np.asarray(config.lr, dtype=float), (R,))
    hist = [state.w.numpy().copy()]

    class TorchProblemOracle:
        def __init__(self, rs):
            rs.view = problem.view(rs.sel, variant)
            draws = config.oracle.draws(streams, R, N, K, d, problem.client_sizes[rs.sel])
            self.inner = ProblemOracle(config.oracle, rs.view, draws, rs)

        def grad(self, k, x):
            return torch.as_tensor(self.inner.grad(k, x.numpy()), dtype=torch.float64)

        def grad_at(self, k):
            return lambda x: self.grad(k, x)

    as_t = lambda a: torch.as_tensor(np.array(a, dtype=float)[:, None, None], dtype=torch.float64)  # noqa: E731
    for t in range(config.rounds):
        step = (lambda k, t=t: as_t(schedule.at_step(t, k, lr))) if schedule.per_step else None
        rs = run_round(algorithm, state, streams, t, n_runs=R, n_clients=C, per_round=N, local_steps=K,
                       lr=as_t(schedule.at_round(t, lr)), make_oracle=TorchProblemOracle, step_lr=step,
                       writable_sel=True)
        commit_round(state, rs)
        hist.append(state.w.numpy().copy())
    return np.stack(hist)


def check_algorithm(algorithm, *, problem=None, rounds: int = 4, local_steps: int = 3, lr: float = 0.05,
                    clients_per_round: int | None = None, oracle=None, checks=CONTRACT, rtol: float = 1e-10) -> dict:
    """Run an algorithm through the contract every algorithm in fedtheory meets (as scikit-learn's
    ``check_estimator`` does for estimators). Raises AssertionError naming the first broken clause; returns
    {clause: 'ok' | 'not applicable: why'}.

    determinism: the same seeds give the same bits. batch_independence: each run of a batch equals the same
    seed run alone (up to BLAS summation order, ``rtol``). reference: the vectorized engine equals the naive
    per-client reference of its communication kind (server, gossip, mixed precision) to ``rtol``. measures:
    every measure a plug-in declares is recorded, (T, R), finite. torch_backend: the shared round protocol on
    torch float64 tensors gives the numpy engine's models (plug-ins written once for both backends); not
    applicable to local objective terms, whose network form lives in ``empirical.objectives``.

    Parameters
    ----------
    algorithm : fedtheory.sim.Algorithm
        The algorithm under test.
    problem : Problem, optional
        The problem (default: a small heterogeneous least-squares problem).
    rounds, local_steps : int, default 4 and 3
        The run's length.
    lr : float, default 0.05
        The local step size.
    clients_per_round : int, optional
        Partial participation (default: every client).
    oracle : optional
        The stochastic oracle (default: additive noise).
    checks : sequence of str, default CONTRACT
        The clauses to run.
    rtol : float, default 1e-10
        The relative tolerance of the comparisons.

    Returns
    -------
    dict
        {clause: 'ok' | 'not applicable: why'}.

    Raises
    ------
    AssertionError
        Naming the first broken clause.
    """
    from .sim.config import RunConfig
    from .sim.engine import simulate
    from .sim.problems import heterogeneous_least_squares
    from .sim.rules import AdditiveNoise

    unknown = [c for c in checks if c not in CONTRACT]
    if unknown:
        raise ParameterError("checks", unknown, "names from " + ", ".join(CONTRACT))
    p = problem if problem is not None else heterogeneous_least_squares(6, 5, 12, random_state=0)
    cfg = RunConfig(rounds=rounds, local_steps=local_steps, lr=lr, clients_per_round=clients_per_round,
                    oracle=oracle if oracle is not None else AdditiveNoise(0.05))
    seeds = [3, 4, 5]
    w0 = p.initial_point(1, scale=1.0)
    declared = sorted({m for pl in algorithm.plugins() for m in pl.measures()})
    measures = ("opt_error",) + tuple(declared)
    out: dict[str, str] = {}

    def models(tr):
        return tr.final_w

    def close(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol * (1 + np.abs(b).max()))

    name = algorithm.name
    batch = simulate(p, algorithm, cfg, seeds, w0=w0, measures=measures, keep_iterates=True)
    if batch.diverged.any():
        raise AssertionError(f"{name}: diverged on the contract problem ({batch.diverged_quantity}); pick a smaller lr")
    if "determinism" in checks:
        again = simulate(p, algorithm, cfg, seeds, w0=w0, measures=measures)
        for m in measures:
            if not np.array_equal(batch[m], again[m], equal_nan=True):
                raise AssertionError(f"{name}: determinism: measure {m} differs between two runs with the same seeds")
        if not np.array_equal(models(batch), models(again)):
            raise AssertionError(f"{name}: determinism: final models differ between two runs with the same seeds")
        out["determinism"] = "ok"
    if "batch_independence" in checks:
        for r, s in enumerate(seeds):
            alone = simulate(p, algorithm, cfg, [s], w0=w0, measures=("opt_error",))
            if not close(batch.final_w[r], alone.final_w[0]):
                raise AssertionError(f"{name}: batch_independence: run {r} (seed {s}) differs from the same seed alone "
                                     f"by {np.abs(batch.final_w[r] - alone.final_w[0]).max():.3g}")
        out["batch_independence"] = "ok"
    if "reference" in checks:
        try:
            ref = _reference_models(p, algorithm, cfg, seeds, w0)
        except NotImplementedError as exc:
            ref = None
            out["reference"] = (f"not applicable: the naive reference has no rule for {exc} (add it to "
                                "sim/reference.py's NaiveClients)")
    if "reference" in checks and ref is not None:
        if not close(batch.iterates, ref):
            raise AssertionError(f"{name}: reference: engine and naive reference differ by "
                                 f"{np.nanmax(np.abs(batch.iterates - ref)):.3g}")
        out["reference"] = "ok"
    if "measures" in checks:
        for m in declared:
            arr = batch[m]
            if arr.shape != (rounds, len(seeds)) or not np.all(np.isfinite(arr)):
                raise AssertionError(f"{name}: measures: {m} has shape {arr.shape} (want {(rounds, len(seeds))}) "
                                     f"or non-finite entries")
        out["measures"] = "ok" if declared else "not applicable: no plug-in measures"
    if "torch_backend" in checks:
        if any(getattr(tr, "objective", False) for tr in algorithm.local):
            out["torch_backend"] = "not applicable: a local objective term (its network form is empirical.objectives')"
        else:
            th = _torch_models(p, algorithm, cfg, seeds, w0)
            if not close(th, batch.iterates):
                raise AssertionError(f"{name}: torch_backend: the torch round differs from numpy by "
                                     f"{np.nanmax(np.abs(th - batch.iterates)):.3g}")
            out["torch_backend"] = "ok"
    return out


def scaled_bound(spec: Any, factor: float) -> Any:
    """The same worst-case spec (``fedtheory.worst.WorstCaseSpec`` or ``PEPSpec``) with its record's right side
    multiplied by ``factor``; the record's id gets ``.x<factor>``. Checks the checker: a search or a PEP must find a
    bound weakened below the worst case (factor < its slack) violated, and a loosened one holding.

    Parameters
    ----------
    spec : WorstCaseSpec or PEPSpec
        The declaration.
    factor : float
        The factor, > 0.

    Returns
    -------
    WorstCaseSpec or PEPSpec
        The spec with ``record_override`` the scaled record.
    """
    import dataclasses

    factor = check_float("factor", factor, 0.0, low_inclusive=False)
    rec = spec.record
    scaled = dataclasses.replace(rec, id=f"{rec.id}.x{factor:g}", expr=rec.expr * factor)
    return dataclasses.replace(spec, record_override=scaled)
