"""A naive reference: the same algorithms written as plain per-run, per-client loops.

It consumes the random streams in the same order as the engine (client sampling, then the
oracle's draws, once per round) and nothing else is shared: every update rule is written
again here, one client vector at a time, from the papers' pseudo-code. Tests hold the
vectorized engine to it; the benchmarks time the engine against it.
"""
from __future__ import annotations

import numpy as np

from .engine import Algorithm, RunConfig
from .plugins import (AdditiveNoise, ClientMomentum, ControlVariates, Exact, MeanModels, MeanUpdates, Minibatch,
                      Prox, RelaxedInit, SAM)
from .problems import Problem
from .rng import RunStreams


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


def reference_simulate(problem: Problem, algorithm: Algorithm, config: RunConfig, seeds, *, variants=None, w0=None):
    """Every server algorithm of the engine (FedAvg, FedInit, SCAFFOLD, FedCM, FedProx, FedSAM, and seed 003's
    MoFedSAM / FedMRUR family: client momentum in both modes and units, the hyperbolic regulariser from eqs.
    (3)-(4) as printed, sample by sample, normalized aggregation). Returns (final models (R, d), per-round
    global models (T+1, R, d))."""
    from .fedmrur import HyperbolicRegularizer, NormalizedAggregation, reference_regularizer_grad  # (cycle)

    streams = RunStreams(seeds)
    R, C, d = streams.runs, problem.n_clients, problem.dim
    K, T = config.local_steps, config.rounds
    N = config.clients_per_round or C
    variants = np.zeros(R, dtype=np.int64) if variants is None else np.asarray(variants)
    w0 = problem.initial_point(0) if w0 is None else np.asarray(w0, float)
    w = [np.array(np.broadcast_to(w0, (R, d))[r]) for r in range(R)]
    last = [[w[r].copy() for _ in range(C)] for r in range(R)]
    scaf_ci = [[np.zeros(d) for _ in range(C)] for _ in range(R)]
    scaf_c = [np.zeros(d) for _ in range(R)]
    mom = [np.zeros(d) for _ in range(R)]
    history = [np.stack(w)]
    lr0 = np.broadcast_to(np.asarray(config.lr, float), (R,))
    for t in range(T):
        sel_all = streams.choose_clients(C, N) if N < C else np.broadcast_to(np.arange(C), (R, C))
        draws = config.oracle.draws(streams, R, N, K, d, problem.client_sizes[sel_all])
        new_w = []
        for r in range(R):
            lr = config.lr_at(t, lr0)[r]
            starts, ends = [], []
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

                if isinstance(algorithm.init, RelaxedInit):
                    beta = _scalar(algorithm.init.beta, r)
                    x = w[r] + beta * (w[r] - last[r][i])
                else:
                    x = w[r].copy()
                x0 = x.copy()
                for k in range(K):
                    lr = config.lr_at_step(t, k, lr0)[r]
                    g = grad_at(x, k)
                    for tr in algorithm.local:
                        if isinstance(tr, SAM):
                            nrm = np.linalg.norm(g)
                            g = grad_at(x + _scalar(tr.rho, r) * g / (nrm if nrm > 0 else 1.0), k)
                        elif isinstance(tr, ControlVariates):
                            g = g - scaf_ci[r][i] + scaf_c[r]
                        elif isinstance(tr, ClientMomentum):
                            a = _scalar(tr.alpha, r)
                            g = a * g + (1 - a) * mom[r]
                        elif isinstance(tr, Prox):
                            g = g + _scalar(tr.mu, r) * (x - w[r])
                        elif not isinstance(tr, HyperbolicRegularizer):
                            raise NotImplementedError(type(tr).__name__)
                    x = x - lr * g
                starts.append(x0)
                ends.append(x)
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
            elif isinstance(agg, (MeanUpdates, NormalizedAggregation)):
                delta = sum(U) / N
                nw = w[r] - _scalar(agg.server_lr, r) * delta
            else:
                raise NotImplementedError(type(agg).__name__)
            for tr in algorithm.local:
                if isinstance(tr, ControlVariates):
                    dc = np.zeros(d)
                    for n in range(N):
                        i = int(sel_all[r, n])
                        new = scaf_ci[r][i] - scaf_c[r] + (starts[n] - ends[n]) / (K * lr)
                        dc += new - scaf_ci[r][i]
                        scaf_ci[r][i] = new
                    scaf_c[r] = scaf_c[r] + dc / C
                elif isinstance(tr, ClientMomentum):
                    m = delta if tr.delta == "global_update" else sum(U) / N
                    mom[r] = m / (K * lr) if tr.units == "gradient" else m
            for n in range(N):
                last[r][int(sel_all[r, n])] = ends[n]
            new_w.append(nw)
        w = new_w
        history.append(np.stack(w))
    return np.stack(w), np.stack(history)
