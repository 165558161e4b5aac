"""Decentralized FL: gossip communication on a topology, and the DFL algorithms of seed 002.

Seed 002 (``002_750e045df608fece.txt``) Algorithm 1 (its formulas were stripped; the shared seeds
README and the prose give the steps): every client trains every round (Sec. V-A "all clients
perform the local iteration step") from its own model x_i^t, then sends the local result to its
neighbours and averages what it receives with the mixing matrix W:

    x_{i,0}^t = x_i^t + beta (x_i^t - x_i^{t-1,K})         (Ole, eq. (3); beta = 0: plain start)
    x_{i,k+1}^t = x_{i,k}^t - eta d_{i,k}^t,  k < K       (SGD, SAM or local momentum directions)
    x_i^{t+1} = sum_l w_il x_{l,K}^t                        (gossip; 'atc', adapt then combine)

Ole is the engine's ``RelaxedInit`` applied to the anchor the gossip hands
out (x_i^t, the mixed model), with the engine's ``last_local`` = x_i^{t-1,K} (x^0 before round 0).

D-PSGD (Lian et al. 2017 [13], Alg. 1) mixes the models *before* the gradient step,
x_i^{t+1} = sum_l w_il x_l^t - eta g_i(x_i^t): Gossip(order='cta') with K = 1 gives it exactly
(with K > 1 it is the same rule with K local steps between two gossips).

The engine's global model state.w is the average x_bar^t = (1/m) sum_i x_i^t, so its measures
(opt_error, grad_norm2, population, ...) are F(x_bar), ||grad F(x_bar)||^2, ...; the gossip adds the
consensus distance (1/m) sum_i ||x_i - x_bar||^2.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .._validation import ParameterError, check_choice, check_float, per_run
from .algorithms import Algorithm, register_algorithm
from .backend import ops
from .config import RunConfig
from .problems import Problem
from .reference import NaiveClients, naive_grad, naive_start
from .rng import RunStreams, state_key
from .rules import SAM, Communication, LocalTransform, MeanModels, RelaxedInit, RoundState, every_client
from .topology import Topology, canonical_edges, metropolis_matrix, topology_by_name

if TYPE_CHECKING:
    import scipy.sparse as sps

# ------------------------------------------------------------------------------------ gossip


class Gossip(Communication):
    """Decentralized communication with a mixing matrix W (seed 002 Alg. 1; DFedAvg [15]).

    topology: one :class:`Topology` for every run, or a sequence of R topologies (one per run), so a
    topology x beta grid runs as one batch. A time-varying topology draws each run's W every round
    from that run's 'topology' random stream.
    order: 'atc' (adapt then combine: x_i^{t+1} = sum_l w_il x_{l,K}^t; DFedAvg, DFedSAM, OledFL) or
    'cta' (combine then adapt: x_i^{t+1} = sum_l w_il x_{l,0}^t + (x_{i,K}^t - x_{i,0}^t); D-PSGD).
    Every client trains every round (clients_per_round must be None or the number of clients).
    The per-client models live in state.clients['gossip_x']; state.w is their average. The mixing is
    one sparse product with the block-diagonal (R m) x (R m) matrix of the runs' W (the Metropolis matrix
    of the disjoint union of their graphs).
    """

    name = "gossip"
    measures_on_request = ("consensus_max",)  # a norm per agent and round: recorded when named

    def __init__(self, topology: Topology | Sequence[Topology], order: str = "atc"):
        self.topology = topology
        self.order = check_choice("order", order, ("atc", "cta"))

    def params(self):
        tops = self.topology if isinstance(self.topology, (list, tuple)) else [self.topology]
        labels = list(dict.fromkeys(t.label() for t in tops))
        return {"topology": ", ".join(labels), "order": self.order}

    def measures(self):
        return {"consensus": "(1/m) sum_i ||x_i^{t+1} - x_bar^{t+1}||^2 (mixed models after round t)",
                "consensus_max": "max_i ||x_i^{t+1} - x_bar^{t+1}||: the largest deviation of an agent's mixed model "
                                 "from the average (not squared; recorded when named)",
                "consensus_init": "(1/m) sum_i ||x_{i,0}^t - x_bar^t||^2 (the round's starting points)"}

    def setup(self, state, runs, n_clients, dim):
        tops = list(self.topology) if isinstance(self.topology, (list, tuple)) else [self.topology] * runs
        if len(tops) != runs or not all(isinstance(t, Topology) for t in tops):
            raise ParameterError("topology", f"{len(tops)} item(s)",
                                 f"one Topology or a sequence of {runs} Topology objects (one per run)")
        bad = [t.n_clients for t in tops if t.n_clients != n_clients]
        if bad:
            raise ParameterError("topology.n_clients", bad[0], f"the problem's number of clients, {n_clients}")
        self._tops = tops
        self._m = n_clients
        self._varying = [r for r, t in enumerate(tops) if t.time_varying]
        static = [r for r, t in enumerate(tops) if not t.time_varying]
        # static runs: their part of the block-diagonal matrix, as global (row, col, value) triplets, once
        self._static_coo = self._union_coo(static, [tops[r].pairs() for r in static])
        self._block = None if self._varying else self._csr([self._static_coo])
        self._converted: dict[Any, Any] = {}
        w = state.w
        xp = ops(w)
        state.clients["gossip_x"] = xp.copy(xp.broadcast_to(w[:, None, :], (runs, n_clients, dim)))

    def participants(self, streams, runs, n_clients, per_round):
        if per_round != n_clients:
            raise ParameterError("clients_per_round", per_round,
                                 f"None or {n_clients} under Gossip (every "
                                 "client trains every round, seed 002 Sec. V-A)")
        return every_client(runs, n_clients)

    def anchor(self, state, sel):
        return state.clients["gossip_x"]

    def _union_coo(self, runs: list[int], pairs: list[tuple[np.ndarray, np.ndarray]]):
        """(rows, cols, values) of the given runs' W in the block-diagonal matrix: the Metropolis matrix of
        the disjoint union of their graphs, computed on compact node ids and moved to the runs' blocks."""
        m = self._m
        if not runs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        n = len(runs) * m
        a = np.concatenate([i + j * m for j, (i, _) in enumerate(pairs)])
        b = np.concatenate([k + j * m for j, (_, k) in enumerate(pairs)])
        lazy = np.repeat([self._tops[r].laziness for r in runs], m)
        W = metropolis_matrix(n, *canonical_edges(n, a, b), lazy).tocoo()
        shift = (np.asarray(runs) - np.arange(len(runs))) * m  # compact block j -> run runs[j]
        return W.row + shift[W.row // m], W.col + shift[W.col // m], W.data

    def _csr(self, parts) -> sps.csr_matrix:
        import scipy.sparse as sps  # here: importing scipy takes longer than `fedtheory list` may

        n = len(self._tops) * self._m
        rows, cols, vals = (np.concatenate(x) for x in zip(*parts))
        B = sps.csr_matrix((vals, (rows, cols)), shape=(n, n))
        B.sort_indices()
        return B

    def round_matrix(self, streams: RunStreams | None) -> sps.csr_matrix:
        """This round's block-diagonal mixing matrix (R m x R m); each time-varying run draws its graph from
        its own 'topology' stream."""
        if self._block is not None:
            return self._block
        if streams is None:
            raise ParameterError("streams", None, "the engine's RunStreams (a time-varying topology draws every round)")
        gens = streams.generators("topology")
        # runs of one topology whose generators are in the same state (a sweep's paired seeds) draw the same graph:
        # the first draws it, the others take its W block and its generator's state after the draw
        first: dict = {}
        lead = {r: first.setdefault((id(self._tops[r]), state_key(gens[r].bit_generator.state)), r)
                for r in self._varying}
        leaders = list(first.values())
        rows, cols, vals = self._union_coo(leaders, [self._tops[r].pairs(gens[r]) for r in leaders])
        followers = [r for r in self._varying if lead[r] != r]
        if followers:
            m = self._m
            ends = np.searchsorted(rows, np.array([[lead[r] * m, (lead[r] + 1) * m] for r in followers]))  # sorted
            take = np.concatenate([np.arange(a, b) for a, b in ends])
            shift = np.repeat([(r - lead[r]) * m for r in followers], ends[:, 1] - ends[:, 0])
            rows, cols, vals = (np.concatenate([rows, rows[take] + shift]), np.concatenate([cols, cols[take] + shift]),
                                np.concatenate([vals, vals[take]]))
            for r in followers:
                gens[r].bit_generator.state = gens[lead[r]].bit_generator.state
        return self._csr([self._static_coo, (rows, cols, vals)])

    def mix(self, B: sps.csr_matrix, X):
        """(R, m, d) -> (R, m, d): each run's models multiplied by its W (numpy, torch, or a backend's own
        ``mix_clients(B, X)``: the PEP's points)."""
        R, m, d = X.shape
        if isinstance(X, np.ndarray):
            return np.asarray(B @ np.ascontiguousarray(X).reshape(R * m, d)).reshape(R, m, d)
        xp = ops(X)
        if xp.name != "torch":
            return xp.mix_clients(B, X)
        import torch

        key = (id(B), str(X.device), str(X.dtype))
        Bt = self._converted.get(key)
        if Bt is None:
            C = B.tocoo()
            idx = torch.as_tensor(np.vstack([C.row, C.col]), dtype=torch.int64)
            Bt = torch.sparse_coo_tensor(idx, torch.as_tensor(C.data), size=B.shape, is_coalesced=True,
                                         check_invariants=False).to(device=X.device, dtype=X.dtype)
            if B is self._block:  # static: convert once
                self._converted = {key: Bt}
        return torch.sparse.mm(Bt, X.reshape(R * m, d)).reshape(R, m, d)

    def combine(self, rs: RoundState, aggregator):
        if aggregator is not None and not isinstance(aggregator, MeanModels):
            raise ParameterError("aggregate", repr(aggregator),
                                 "None (or MeanModels) under Gossip: the gossip average is the aggregation")
        B = self.round_matrix(rs.streams)
        src = rs.sent if self.order == "atc" else rs.w0
        x_new = self.mix(B, src)
        if self.order == "cta":
            x_new = x_new + (rs.sent - rs.w0)
        rs.extra["gossip_matrix"] = B
        rs.state.clients["gossip_x"] = x_new
        return ops(x_new).mean(x_new, axis=1)

    def measure(self, rs):
        xp = ops(rs.w0)
        x = rs.state.clients["gossip_x"]
        xbar = rs.w_next[:, None, :]
        x0bar = rs.state.w[:, None, :]
        return {"consensus": xp.mean(xp.sum((x - xbar) ** 2, axis=-1), axis=1),
                "consensus_max": xp.max(xp.norm(x - xbar, axis=-1), axis=1),
                "consensus_init": xp.mean(xp.sum((rs.w0 - x0bar) ** 2, axis=-1), axis=1)}


# ------------------------------------------------------------------------------------ local momentum


class LocalMomentum(LocalTransform):
    """DFedAvgM's local heavy ball (Sun, Li, Wang [15], Alg. 2, as we read it; seed 002 only names it):
    y^{k+1} = y^k - eta g^k + theta (y^k - y^{k-1}) with y^{-1} = y^0, i.e. the direction
    m^k = g^k + theta m^{k-1}, m^{-1} = 0, restarted every round (eta is constant within a round).

    Parameters
    ----------
    theta : float or array_like
        The momentum coefficient, in [0, 1) (one value per run allowed).
    """

    name = "local_momentum"

    def __init__(self, theta):
        self.theta = theta

    def params(self):
        return {"theta": self.theta}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("theta",
                       per_run(check_float("theta", self.theta, 0.0, 1.0, high_inclusive=False, size=runs), runs))

    def round_start(self, rs):
        rs.extra["local_momentum"] = None

    def direction(self, rs, g, w, grad_at):
        prev = rs.extra.get("local_momentum")
        m = g if prev is None else g + self.param("theta", g) * prev
        rs.extra["local_momentum"] = m
        return m


# ------------------------------------------------------------------------------------ algorithms


def d_psgd(topology) -> Algorithm:
    """D-PSGD (Lian et al. [13]): x_i^{t+1} = sum_l w_il x_l^t - eta g_i(x_i^t) when run with local_steps=1.

    Combine then adapt (``Gossip(topology, order="cta")``); with ``local_steps=1`` this is decentralized gradient
    descent.

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("D-PSGD", comm=Gossip(topology, order="cta"), aggregate=None)


def dfedavg(topology) -> Algorithm:
    """DFedAvg (Sun, Li, Wang [15]): K local SGD steps, then gossip of the local models.

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("DFedAvg", comm=Gossip(topology), aggregate=None)


def dfedavgm(topology, theta=0.9) -> Algorithm:
    """DFedAvgM [15]: DFedAvg with local heavy-ball momentum theta.

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).
    theta : float or array_like, default 0.9
        The momentum coefficient, in [0, 1) (``LocalMomentum``; one value per run allowed).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("DFedAvgM", local=(LocalMomentum(theta),), comm=Gossip(topology), aggregate=None)


def dfedsam(topology, rho=0.05) -> Algorithm:
    """DFedSAM (Shi et al. [16]) with one gossip step per round: local SAM steps, then gossip.

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).
    rho : float or array_like, default 0.05
        The SAM radius (>= 0; one value per run allowed).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("DFedSAM", local=(SAM(rho),), comm=Gossip(topology), aggregate=None)


def oledfl_sgd(topology, beta) -> Algorithm:
    """OledFL-SGD (seed 002): DFedAvg with the opposite-lookahead initialisation (eq. (3)).

    Each client starts its local run from x_i^t + beta (x_i^t - x_i^{t-1,K}) (``RelaxedInit`` on the mixed model).

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).
    beta : float or array_like
        The opposite-lookahead coefficient (one value per run allowed).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("OledFL-SGD", init=RelaxedInit(beta), comm=Gossip(topology), aggregate=None)


def oledfl_sam(topology, beta, rho=0.05) -> Algorithm:
    """OledFL-SAM (seed 002 Alg. 1, default form): DFedSAM with the opposite-lookahead initialisation.

    Parameters
    ----------
    topology : Topology or sequence of Topology
        The communication graph (its Metropolis mixing matrix W), or one topology per run (a topology grid runs as
        one batch). Every client trains every round (``clients_per_round`` None).
    beta : float or array_like
        The opposite-lookahead coefficient (one value per run allowed).
    rho : float or array_like, default 0.05
        The SAM radius (>= 0; one value per run allowed).

    Returns
    -------
    Algorithm
        The composition of rules (``Gossip`` communication, no server aggregator).
    """
    return Algorithm("OledFL-SAM", init=RelaxedInit(beta), local=(SAM(rho),), comm=Gossip(topology), aggregate=None)


def with_ole(algorithm: Algorithm, beta) -> Algorithm:
    """Any gossip algorithm with Ole added (the plug-in of seed 002: 'OledFL can seamlessly integrate existing DFL
    optimizers')."""
    if not isinstance(algorithm.comm, Gossip):
        raise ParameterError("algorithm.comm", repr(algorithm.comm),
                             "a Gossip communication (Ole is OledFL's DFL plug-in)")
    return dataclasses.replace(algorithm, name=algorithm.name + "+Ole", init=RelaxedInit(beta))


def by_topology_name(factory: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """``factory(topology, ...)`` as the registry takes it: the topology by name (``topology_by_name``, default
    'ring') over the trainer's ``n_clients``, after the factory's required parameters and before its others."""
    P = inspect.Parameter
    rest = list(inspect.signature(factory).parameters.values())[1:]
    signature = inspect.Signature([*[p for p in rest if p.default is P.empty],
                                   P("topology", P.POSITIONAL_OR_KEYWORD, default="ring", annotation=str),
                                   *[p for p in rest if p.default is not P.empty],
                                   P("n_clients", P.KEYWORD_ONLY, annotation=int)])

    def make(*args, **kwargs) -> Algorithm:
        values = signature.bind(*args, **kwargs)
        values.apply_defaults()
        kw = dict(values.arguments)
        return factory(topology_by_name(kw.pop("topology"), kw.pop("n_clients")), **kw)

    make.__signature__ = signature
    make.__name__ = make.__qualname__ = factory.__name__
    make.__doc__ = factory.__doc__
    return make


register_algorithm("DFedAvg", by_topology_name(dfedavg), source="Sun, Li, Wang 2022; seed 002 baseline (gossip)")
register_algorithm("DFedAvgM", by_topology_name(dfedavgm), source="Sun, Li, Wang 2022; seed 002 baseline (gossip)")
register_algorithm("DFedSAM", by_topology_name(dfedsam), source="Shi et al. 2023; seed 002 baseline (gossip)")
register_algorithm("D-PSGD", by_topology_name(d_psgd),
                   source="Lian et al. 2017; seed 002 baseline (gossip, combine then adapt)")
register_algorithm("OledFL-SGD", by_topology_name(oledfl_sgd), source="seed 002 eq. (3) (Ole on DFedAvg)")
register_algorithm("OledFL-SAM", by_topology_name(oledfl_sam), source="seed 002 Alg. 1 (Ole on DFedSAM)")


# ------------------------------------------------------------------------------------ naive reference


def _naive_metropolis(m: int, a: np.ndarray, b: np.ndarray, laziness: float) -> np.ndarray:
    """W written out entry by entry (independent of topology.metropolis_matrix)."""
    nbrs = [set() for _ in range(m)]
    for i, j in zip(a.tolist(), b.tolist()):
        nbrs[i].add(j)
        nbrs[j].add(i)
    W = np.zeros((m, m))
    for i in range(m):
        for j in nbrs[i]:
            W[i, j] = 1.0 / (1.0 + max(len(nbrs[i]), len(nbrs[j])))
        W[i, i] = 1.0 - sum(W[i, j] for j in nbrs[i])
    return (1.0 - laziness) * W + laziness * np.eye(m)


def reference_gossip(problem: Problem, algorithm: Algorithm, config: RunConfig, seeds, *, variants=None, w0=None):
    """Naive per-run, per-client loops of a gossip algorithm, consuming the same random draws as the engine
    (oracle draws, then each time-varying run's graph from its 'topology' stream, once per round).

    The clients are ``sim.reference``'s naive clients (initialisation, local transforms, oracle).
    Returns (x_bar history (T+1, R, d), final client models (R, m, d)).
    """
    comm = algorithm.comm
    if not isinstance(comm, Gossip):
        raise ParameterError("algorithm.comm", repr(comm), "a Gossip communication")
    streams = RunStreams(seeds)
    R, m, d = streams.runs, problem.n_clients, problem.dim
    K, T = config.local_steps, config.rounds
    tops = list(comm.topology) if isinstance(comm.topology, (list, tuple)) else [comm.topology] * R
    variants = np.zeros(R, dtype=np.int64) if variants is None else np.asarray(variants)
    w0 = problem.initial_point(0) if w0 is None else np.asarray(w0, float)
    start = np.broadcast_to(w0, (R, d))
    x = [[start[r].copy() for _ in range(m)] for r in range(R)]
    last = [[start[r].copy() for _ in range(m)] for r in range(R)]
    static = {r: _naive_metropolis(m, *t.edges(), t.laziness) for r, t in enumerate(tops) if not t.time_varying}
    lr0 = np.broadcast_to(np.asarray(config.lr, float), (R,))
    clients = NaiveClients(algorithm.local, R, m, d)
    hist = [np.stack([np.mean(x[r], axis=0) for r in range(R)])]
    gens = streams.generators("topology")
    for t in range(T):
        sel = np.broadcast_to(np.arange(m), (R, m))
        draws = config.oracle.draws(streams, R, m, K, d, problem.client_sizes[sel])
        for r in range(R):
            starts, ends = [], []
            for i in range(m):
                grad_at = naive_grad(problem, config.oracle, draws, run=r, pos=i, client=i, variant=int(variants[r]))
                z0 = naive_start(algorithm.init, x[r][i], last[r][i], r)
                z, _ = clients.local_steps(z0, x[r][i], grad_at, lambda k, r=r: config.lr_at_step(t, k, lr0)[r], K,
                                           r, i)
                starts.append(z0)
                ends.append(z)
            W = static[r] if r in static else _naive_metropolis(m, *tops[r].edges(gens[r]), tops[r].laziness)
            src = ends if comm.order == "atc" else starts
            new = []
            for i in range(m):
                acc = np.zeros(d)
                for j in range(m):
                    if W[i, j] != 0.0:
                        acc = acc + W[i, j] * src[j]
                if comm.order == "cta":
                    acc = acc + (ends[i] - starts[i])
                new.append(acc)
            x[r] = new
            last[r] = ends
        hist.append(np.stack([np.mean(x[r], axis=0) for r in range(R)]))
    return np.stack(hist), np.stack([np.stack(x[r]) for r in range(R)])
