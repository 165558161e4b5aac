"""The naive references: the same algorithms written as plain per-run, per-client loops.

They consume the random streams in the same order as the engine (client sampling, then the
oracle's draws, once per round) and nothing else is shared with it: every update rule is written
again here, one client vector at a time, from the papers' pseudo-code. Tests hold the vectorized
engine to them; the benchmarks time the engine against them.

One reference per communication kind: ``reference_simulate`` (a server), ``reference_gossip``
(``sim.gossip``) and ``reference_mixed_precision`` (``sim.mixed_precision``). They share this module's
naive client: the initialisation (``naive_start``), the local transform chain (``NaiveClients``), and
the oracle (``naive_grad``), so each rule is written once here.
"""
from __future__ import annotations

import numpy as np

from .algorithms import Algorithm
from .config import RunConfig
from .hyperbolic import HyperbolicRegularizer, NormalizedAggregation, reference_regularizer_grad
from .problems import Problem
from .recorders import TrackGradients
from .rng import RunStreams
from .rules import (
    SAM,
    AdditiveNoise,
    ClientMomentum,
    ClientSteps,
    ControlVariates,
    Exact,
    MeanModels,
    MeanUpdates,
    Minibatch,
    NormalizedAveraging,
    PlainInit,
    Prox,
    ProximalSolve,
    RelaxedInit,
)


def _scalar(v, r):
    a = np.asarray(v, dtype=float)
    return float(a) if a.ndim == 0 else float(a[r])


def naive_grad(problem: Problem, oracle, draws, *, run: int, pos: int, client: int, variant: int):
    """One client's stochastic gradient in one run, as a function (x, k) -> g: the oracle's draws for this
    run and this position among the round's clients, at local step k. Shared by the naive references."""
    one = problem.view(np.array([[client]]), np.array([variant], dtype=np.int64))

    def grad_at(x, k):
        x = x[None, None]
        if isinstance(oracle, Exact):
            return one.grad(x)[0, 0]
        if isinstance(oracle, AdditiveNoise):
            return one.grad(x)[0, 0] + draws[run, k, pos]
        if isinstance(oracle, Minibatch):
            u, _ = draws
            idx = np.floor(u[run, k, pos] * problem.client_sizes[client]).astype(np.int64)
            return one.grad_batch(x, idx[None, None])[0, 0]
        raise NotImplementedError(type(oracle).__name__)

    return grad_at


def naive_start(init, anchor: np.ndarray, last: np.ndarray, run: int) -> np.ndarray:
    """A client's local start: the anchor (plain) or anchor + beta (anchor - its last local model) (relaxed)."""
    if isinstance(init, RelaxedInit):
        return anchor + _scalar(init.beta, run) * (anchor - last)
    if isinstance(init, PlainInit):
        return anchor.copy()
    raise NotImplementedError(type(init).__name__)


def naive_prox(grad_at, anchor: np.ndarray, mu: float, k: int) -> np.ndarray:
    """argmin_x f(x) + (mu/2)||x - anchor||^2 for a quadratic f, from its gradient alone: the Hessian column by column
    (grad f(e_j) - grad f(0)), then the stationarity condition (H + mu I) x = -grad f(0) + mu anchor."""
    d = anchor.shape[0]
    g0 = grad_at(np.zeros(d), k)
    H = np.column_stack([grad_at(np.eye(d)[j], k) - g0 for j in range(d)])
    return np.linalg.solve(H + mu * np.eye(d), -g0 + mu * anchor)


class NaiveClients:
    """The local transforms' state as plain per-run, per-client vectors, and the rules written one client at a
    time: SAM, SCAFFOLD's control variates, client momentum (FedCM / MoFedSAM, both modes and units), FedProx,
    local heavy-ball momentum (DFedAvgM). Objective terms (the hyperbolic regulariser) belong to the oracle;
    measuring plug-ins (TrackGradients) change nothing."""

    _PASSIVE = ("HyperbolicRegularizer", "TrackGradients")

    def __init__(self, local, runs: int, n_clients: int, dim: int):
        self.local = tuple(local)
        for tr in self.local:
            if not isinstance(tr, (SAM, ControlVariates, ClientMomentum, Prox, ProximalSolve, ClientSteps,
                                   TrackGradients)) and \
                    type(tr).__name__ not in ("LocalMomentum",) + self._PASSIVE:
                raise NotImplementedError(type(tr).__name__)
        self.C = n_clients
        self.ci = [[np.zeros(dim) for _ in range(n_clients)] for _ in range(runs)]  # SCAFFOLD c_i
        self.c = [np.zeros(dim) for _ in range(runs)]  # SCAFFOLD c
        self.mom = [np.zeros(dim) for _ in range(runs)]  # client momentum's Delta

    def local_steps(self, x: np.ndarray, anchor: np.ndarray, grad_at, lr_at, K: int, run: int, client: int,
                    trail: list | None = None):
        """K local steps from x; grad_at(x, k) is the client's oracle, lr_at(k) the step size. Returns (x_K, last lr).
        trail: a list that receives the point before every step (x_0 .. x_{K-1})."""
        r, i = run, client
        heavy = None
        lr = None
        solved = None
        for k in range(K):
            if trail is not None:
                trail.append(x.copy())
            lr = lr_at(k)
            g = grad_at(x, k)
            for tr in self.local:
                if isinstance(tr, SAM):
                    nrm = np.linalg.norm(g)
                    g = grad_at(x + _scalar(tr.rho, r) * g / (nrm if nrm > 0 else 1.0), k)
                elif isinstance(tr, ControlVariates):
                    g = g - self.ci[r][i] + self.c[r]
                elif isinstance(tr, ClientMomentum):
                    a = _scalar(tr.alpha, r)
                    g = a * g + (1 - a) * self.mom[r]
                elif isinstance(tr, Prox):
                    g = g + _scalar(tr.mu, r) * (x - anchor)
                elif isinstance(tr, ProximalSolve):
                    if solved is None:
                        solved = naive_prox(grad_at, anchor, _scalar(tr.mu, r), k)
                    g = (x - solved) / lr
                elif isinstance(tr, ClientSteps):
                    g = g if k < int(np.asarray(tr.steps)[i]) else 0.0 * g
                elif type(tr).__name__ == "LocalMomentum":
                    g = g if heavy is None else g + _scalar(tr.theta, r) * heavy
                    heavy = g
            x = x - lr * g
        return x, lr

    def round_end(self, run: int, clients, starts, ends, global_update: np.ndarray, K: int, lr: float) -> None:
        """The transforms' state after the round: SCAFFOLD's c_i and c, the client momentum's Delta."""
        r, N = run, len(clients)
        for tr in self.local:
            if isinstance(tr, ControlVariates):
                dc = np.zeros_like(self.c[r])
                for n, i in enumerate(clients):
                    new = self.ci[r][i] - self.c[r] + (starts[n] - ends[n]) / (K * lr)
                    dc += new - self.ci[r][i]
                    self.ci[r][i] = new
                self.c[r] = self.c[r] + dc / self.C
            elif isinstance(tr, ClientMomentum):
                m = global_update if tr.delta == "global_update" else sum(s - e for s, e in zip(starts, ends)) / N
                self.mom[r] = m / (K * lr) if tr.units == "gradient" else m


def reference_simulate(problem: Problem, algorithm: Algorithm, config: RunConfig, seeds, *, variants=None, w0=None,
                       step_means: list | None = None):
    """Every server algorithm of the engine (FedAvg, FedInit, SCAFFOLD, FedCM, FedProx, FedSAM, and seed 003's
    MoFedSAM / FedMRUR family: client momentum in both modes and units, the hyperbolic regulariser from eqs.
    (3)-(4) as printed, sample by sample, normalized aggregation). Returns (final models (R, d), per-round
    global models (T+1, R, d)). step_means: a list that receives, per run, the T K + 1 averaged iterates
    xbar_s (the participants' mean before each local step, then the mean of the last local end points),
    summed client by client (the reference of the engine's step measures)."""
    streams = RunStreams(seeds)
    R, C, d = streams.runs, problem.n_clients, problem.dim
    K, T = config.local_steps, config.rounds
    N = config.clients_per_round or C
    variants = np.zeros(R, dtype=np.int64) if variants is None else np.asarray(variants)
    w0 = problem.initial_point(0) if w0 is None else np.asarray(w0, float)
    w = [np.array(np.broadcast_to(w0, (R, d))[r]) for r in range(R)]
    last = [[w[r].copy() for _ in range(C)] for r in range(R)]
    clients = NaiveClients(algorithm.local, R, C, d)
    history = [np.stack(w)]
    lr0 = np.broadcast_to(np.asarray(config.lr, float), (R,))
    steps = [[] for _ in range(R)]
    for t in range(T):
        sel_all = streams.choose_clients(C, N) if N < C else np.broadcast_to(np.arange(C), (R, C))
        draws = config.oracle.draws(streams, R, N, K, d, problem.client_sizes[sel_all])
        new_w = []
        for r in range(R):
            starts, ends = [], []
            trails = []
            lr = None
            for n in range(N):
                i = int(sel_all[r, n])
                f_grad = naive_grad(problem, config.oracle, draws, run=r, pos=n, client=i, variant=int(variants[r]))

                def grad_at(x, k, r=r, i=i, f_grad=f_grad):  # the local objective: f_i plus the regulariser
                    g = f_grad(x, k)
                    for tr in algorithm.local:
                        if isinstance(tr, HyperbolicRegularizer):
                            g = g + reference_regularizer_grad(problem, int(variants[r]), i, x, w[r],
                                                               _scalar(tr.gamma, r), _scalar(tr.sigma, r),
                                                               _scalar(tr.beta, r))
                    return g

                x0 = naive_start(algorithm.init, w[r], last[r][i], r)
                trails.append([])
                x, lr = clients.local_steps(x0, w[r], grad_at, lambda k, r=r: config.lr_at_step(t, k, lr0)[r], K, r, i,
                                            trail=trails[-1])
                starts.append(x0)
                ends.append(x)
            for k in range(K):
                total = np.zeros(d)
                for trail in trails:
                    total = total + trail[k]
                steps[r].append(total / N)
            if t == T - 1:
                steps[r].append(sum(ends) / N)
            agg = algorithm.aggregate
            U = [s - e for s, e in zip(starts, ends)]  # client updates, descent sign
            if isinstance(agg, MeanModels):
                nw = sum(ends) / N
                delta = w[r] - nw
            elif isinstance(agg, NormalizedAggregation) and agg.normalize:
                tot = sum(U)
                tn = np.linalg.norm(tot)
                delta = sum(np.linalg.norm(u) for u in U) / (N * tn) * tot if tn > 0 else np.zeros(d)
                nw = w[r] - _scalar(agg.server_lr, r) * delta
            elif isinstance(agg, NormalizedAveraging):
                ids = [int(i) for i in sel_all[r]]
                tau = [float(np.asarray(agg.steps)[i]) for i in ids]
                p = [1.0 / C if agg.weights is None else float(np.asarray(agg.weights)[i]) for i in ids]
                p = [q / sum(p) for q in p]
                tau_eff = sum(q * s for q, s in zip(p, tau))
                delta = np.zeros(d)
                for q, s, u in zip(p, tau, U):
                    delta = delta + tau_eff * q * u / s
                nw = w[r] - _scalar(agg.server_lr, r) * delta
            elif isinstance(agg, (MeanUpdates, NormalizedAggregation)):
                delta = sum(U) / N
                nw = w[r] - _scalar(agg.server_lr, r) * delta
            else:
                raise NotImplementedError(type(agg).__name__)
            clients.round_end(r, [int(i) for i in sel_all[r]], starts, ends, delta, K, lr)
            for n in range(N):
                last[r][int(sel_all[r, n])] = ends[n]
            new_w.append(nw)
        w = new_w
        history.append(np.stack(w))
    if step_means is not None:
        step_means.extend(np.stack(steps[r]) for r in range(R))
    return np.stack(w), np.stack(history)
