"""Communication topologies for decentralized FL: graphs, mixing matrices W and their spectra.

Topologies of seed 002 (``002_750e045df608fece.txt``, Sec. V-A "Communication Configurations" and
Sec. V-C, Table V): ring, 2-D grid, exponential, fully connected, and the time-varying random
topology of the main experiments ("each client randomly selects 10 neighbours during each
communication round", links bidirectional).

Weights: **Metropolis-Hastings** on the undirected graph (Xiao & Boyd 2004),
    w_ij = 1 / (1 + max(d_i, d_j)) on an edge,  w_ii = 1 - sum_{j != i} w_ij,  0 elsewhere.
W is then symmetric and doubly stochastic for every undirected graph, with w_ii >= 1/(1 + d_i) > 0.
On a d-regular graph (ring, torus grid, exponential, fully connected) this *is* the equal-weight
matrix 1/(d + 1) on the closed neighbourhood. ``laziness`` a mixes in the identity,
W <- (1 - a) W + a I, which shifts the spectrum to [2a - 1, 1] (a = 1/2 makes W positive
semi-definite). The seed does not say which weights its experiments used.

Spectral quantities follow seed 002 Definition 1 (taken from DFedAvg [15]):
    lambda = max{|lambda_2(W)|, |lambda_m(W)|},  spectral gap 1 - lambda.
W is stored as ``scipy.sparse`` CSR; the gossip step multiplies it with the (clients, dim) model
matrix (``sim/gossip.py``).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sps

from .._validation import ParameterError, check_float, check_int
from .certificates import Certificate, certified, refused, undeclared, unknown

__all__ = ["TOPOLOGIES", "WEIGHTS", "Exponential", "FullyConnected", "Grid2D", "PropertyResult", "RandomKNeighbour",
           "Ring", "Topology", "canonical_edges", "exponential", "fully_connected", "grid", "is_sparse",
           "metropolis_matrix", "mixing_lambda", "mixing_lambda_norm", "mixing_matrix_properties", "paper_topologies",
           "random_k_neighbour", "ring", "spectrum", "topology_by_name"]

WEIGHTS = "metropolis"


# ------------------------------------------------------------------------------------ weights & spectra


def canonical_edges(m: int, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Undirected, deduplicated, self-loop-free edge list (a < b), sorted."""
    i = np.asarray(i, dtype=np.int64).ravel()
    j = np.asarray(j, dtype=np.int64).ravel()
    if i.shape != j.shape:
        raise ParameterError("edges", (i.shape, j.shape), "two index arrays of the same length")
    if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= m):
        raise ParameterError("edges", (int(min(i.min(), j.min())), int(max(i.max(), j.max()))),
                             f"client ids in [0, {m - 1}]")
    a, b = np.minimum(i, j), np.maximum(i, j)
    keep = a != b
    key = np.unique(a[keep] * m + b[keep])
    return key // m, key % m


def metropolis_matrix(m: int, a: np.ndarray, b: np.ndarray, laziness: Any = 0.0) -> sps.csr_matrix:
    """Metropolis-Hastings mixing matrix of the undirected graph with edges (a, b) (canonical: a < b).

    laziness: a scalar, or one value per node (the disjoint union of several runs' graphs, each with its
    own laziness, gives their block-diagonal W in one call)."""
    deg = np.bincount(a, minlength=m) + np.bincount(b, minlength=m)
    w = 1.0 / (1.0 + np.maximum(deg[a], deg[b]))
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    vals = np.concatenate([w, w])
    diag = 1.0 - np.bincount(rows, weights=vals, minlength=m)
    lazy = np.broadcast_to(np.asarray(laziness, dtype=np.float64), (m,))
    if np.any(lazy):
        vals = vals * (1.0 - lazy[rows])
        diag = (1.0 - lazy) * diag + lazy
    idx = np.arange(m)
    import scipy.sparse as sps  # here: importing scipy takes longer than `fedtheory list` may

    W = sps.csr_matrix((np.concatenate([vals, diag]), (np.concatenate([rows, idx]), np.concatenate([cols, idx]))),
                       shape=(m, m))
    W.sum_duplicates()
    W.sort_indices()
    return W


def is_sparse(W) -> bool:
    """Whether W is a scipy.sparse matrix (without importing scipy: unless scipy.sparse is loaded, it is not)."""
    sps = sys.modules.get("scipy.sparse")
    return sps is not None and bool(sps.issparse(W))


def spectrum(W) -> np.ndarray:
    """Eigenvalues of a symmetric W, largest first (dense eigvalsh)."""
    A = W.toarray() if is_sparse(W) else np.asarray(W, dtype=np.float64)
    return np.linalg.eigvalsh(A)[::-1]


def mixing_lambda(W) -> float:
    """lambda = max{|lambda_2(W)|, |lambda_m(W)|} (seed 002 Definition 1); 0 for a single client."""
    eig = spectrum(W)
    if eig.size < 2:
        return 0.0
    return float(max(abs(eig[1]), abs(eig[-1])))


# ------------------------------------------------------------------------------------ Definition 1 (seed 002)


@dataclass
class PropertyResult:
    """One property of a mixing matrix (seed 002 Definition 1) measured on a given W."""

    ok: bool
    value: float  # size of the worst violation (0 when the property holds exactly)
    detail: str


def _dense(W) -> np.ndarray:
    """W (dense or scipy sparse) as a finite square float64 array."""
    A = W.toarray() if is_sparse(W) else np.asarray(W, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ParameterError("W", getattr(A, "shape", None), "a square matrix (m x m), m >= 1")
    if not np.all(np.isfinite(A)):
        raise ParameterError("W", "non-finite entries", "a finite matrix")
    return A


def mixing_matrix_properties(W, adjacency=None, tol: float = 1e-10) -> dict[str, PropertyResult]:
    """Each property of seed 002 Definition 1 (record ``oledfl.def1`` of the OledFL plug-in: graph, symmetry,
    null_space, spectral) on a given W (dense or scipy sparse), with the size of its worst violation.

    adjacency: optional boolean (m, m) graph; without it the graph is the support of W and property (i)
    reduces to non-negative entries with a positive diagonal.
    """
    A = _dense(W)
    M = A.shape[0]
    out: dict[str, PropertyResult] = {}
    if adjacency is not None:
        E = np.asarray(adjacency, dtype=bool)
        if E.shape != (M, M):
            raise ParameterError("adjacency", E.shape, f"a boolean ({M}, {M}) matrix")
        E = E | E.T | np.eye(M, dtype=bool)
        off = float(np.max(np.abs(A[~E]), initial=0.0))
        low = float(np.min(A[E]))
        ok = off <= tol and low > tol
        out["graph"] = PropertyResult(ok, max(off, 0.0 if low > tol else tol - low),
                                      f"max |w_ij| off the graph {off:.3g}; min "
                                      f"w_ij on the graph (and diagonal) {low:.3g}")
    else:
        neg = float(max(0.0, -A.min()))
        dmin = float(np.diag(A).min())
        ok = neg <= tol and dmin > tol
        out["graph"] = PropertyResult(ok, max(neg, 0.0 if dmin > tol else tol - dmin),
                                      f"graph = support of W; most negative entry {-neg:.3g}, min diagonal {dmin:.3g}")
    asym = float(np.max(np.abs(A - A.T)))
    out["symmetry"] = PropertyResult(asym <= tol, asym, f"max |W - W^T| = {asym:.3g}")
    sym = (A + A.T) / 2
    eig = np.linalg.eigvalsh(sym)[::-1]
    row = float(np.max(np.abs(A @ np.ones(M) - 1.0)))
    second = float(eig[1]) if M > 1 else -np.inf
    ok_null = row <= tol and second < 1 - tol
    out["null_space"] = PropertyResult(ok_null, max(row, max(0.0, second - (1 - tol))),
                                       f"max |W 1 - 1| = {row:.3g}; lambda_2 = {second:.6g} "
                                       "(must be < 1: a connected graph)")
    top, bottom = float(eig[0]), float(eig[-1])
    ok_spec = top <= 1 + tol and bottom > -1 + tol
    out["spectral"] = PropertyResult(ok_spec, max(0.0, top - 1 - tol, -1 + tol - bottom),
                                     f"eigenvalues in [{bottom:.6g}, {top:.6g}] (must lie in (-1, 1])")
    return out


def mixing_lambda_norm(W) -> float:
    """lambda computed as ||W - 11^T/m||_2 (equal to max{|lambda_2|, |lambda_m|} for a W of Definition 1);
    an independent route to the same number as ``mixing_lambda`` (eigenvalues)."""
    A = _dense(W)
    M = A.shape[0]
    return float(np.linalg.norm(A - np.full((M, M), 1.0 / M), 2))


# ------------------------------------------------------------------------------------ topologies


class Topology:
    """A communication graph on ``n_clients`` clients and its Metropolis-Hastings mixing matrix.

    Static topologies return the same W every round; time-varying ones (``time_varying = True``)
    draw a new graph from a ``numpy.random.Generator`` each round.

    A subclass gives the graph's links (``pairs``); the weights are Metropolis-Hastings, w_ij = 1 / (1 + max(d_i,
    d_j)) on an edge. ``certify`` answers the assumptions on the mixing matrix (``mixing_matrix`` with the exact
    lambda, ``consensus_rate``).

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].
    """

    name = "topology"
    time_varying = False

    def __init__(self, n_clients: int, laziness: float = 0.0):
        self.n_clients = check_int("n_clients", n_clients, 2)
        self.laziness = check_float("laziness", laziness, 0.0, 1.0, high_inclusive=False)
        self._W: sps.csr_matrix | None = None

    # -- graph
    def pairs(self, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Links (i, j) of the graph, possibly repeated or in both directions (of this round's draw, for a
        time-varying topology: the only call that consumes ``rng``)."""
        raise NotImplementedError

    def edges(self, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Undirected edges (a < b) of the graph (of this round's draw, for a time-varying topology)."""
        return canonical_edges(self.n_clients, *self.pairs(rng))

    def matrix(self, rng: np.random.Generator | None = None) -> sps.csr_matrix:
        """W as CSR. Static: computed once; time-varying: a fresh draw from ``rng``."""
        if self.time_varying:
            return metropolis_matrix(self.n_clients, *self.edges(self._need_rng(rng)), self.laziness)
        if self._W is None:
            self._W = metropolis_matrix(self.n_clients, *self.edges(), self.laziness)
        return self._W

    def dense(self, rng: np.random.Generator | None = None) -> np.ndarray:
        return self.matrix(rng).toarray()

    def adjacency(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """Boolean (m, m) adjacency of the graph (no self loops)."""
        return self.draw(rng)[1]

    def draw(self, rng: np.random.Generator | None = None) -> tuple[sps.csr_matrix, np.ndarray]:
        """W and the boolean adjacency of the same graph (one draw, for a time-varying topology)."""
        a, b = self.edges(self._need_rng(rng) if self.time_varying else None)
        A = np.zeros((self.n_clients, self.n_clients), dtype=bool)
        A[a, b] = A[b, a] = True
        W = metropolis_matrix(self.n_clients, a, b, self.laziness) if self.time_varying else self.matrix()
        return W, A

    # -- spectrum
    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of the (static) W, largest first."""
        self._static_only("eigenvalues")
        return spectrum(self.matrix())

    @property
    def lam(self) -> float:
        """lambda = ``max{|lambda_2|, |lambda_m|}`` of the static W (Definition 1)."""
        self._static_only("lam")
        return mixing_lambda(self.matrix())

    def lambda_stats(self, draws: int = 64, random_state: Any = 0) -> dict[str, float]:
        """lambda of the round matrices: for a static topology every round has the same value; for a
        time-varying one, the mean / min / max over ``draws`` draws and lambda of E[W^T W]^(1/2)
        (the per-round contraction in mean square of Koloskova et al. 2020, Assumption 4)."""
        if not self.time_varying:
            lam = self.lam
            return {"mean": lam, "min": lam, "max": lam, "rms": lam}
        draws = check_int("draws", draws, 1)
        rng = np.random.default_rng(random_state)
        lams, M = [], np.zeros((self.n_clients, self.n_clients))
        P = np.full((self.n_clients, self.n_clients), 1.0 / self.n_clients)
        for _ in range(draws):
            W = self.dense(rng)
            lams.append(mixing_lambda(W))
            M += (W - P).T @ (W - P) / draws
        lams = np.asarray(lams)
        rms = float(np.sqrt(max(np.linalg.eigvalsh(M).max(), 0.0)))
        return {"mean": float(lams.mean()), "min": float(lams.min()), "max": float(lams.max()), "rms": rms}

    # -- what the mixing satisfies (fedtheory.sim.certificates)
    def certify(self, name: str, visited: Any = None) -> Certificate:
        """The topology's answer to the catalogue assumption ``name`` (subject 'topology'): its Metropolis W checked
        against Definition 1's properties, with lambda = ``max(|lambda_2|, |lambda_m|)`` or p = 1 - lambda^2 exact; a
        time-varying topology certifies the contraction in mean square (Koloskova et al.) from its draws."""
        if name == "mixing_matrix":
            if self.time_varying:
                cert = refused(name, f"{self.label()} draws a new graph and W every round: no fixed W (its contraction "
                                     "in mean square is certified as consensus_rate)")
            else:
                W, A = self.draw()
                bad = [f"{k}: {v.detail}" for k, v in mixing_matrix_properties(W, A).items() if not v.ok]
                cert = (refused(name, "; ".join(bad)) if bad else
                        certified(name, "Metropolis W: symmetric, doubly stochastic, on the graph (checked to 1e-10); "
                                        "lambda from its eigenvalues", **{"lambda": mixing_lambda(W)}))
        elif name == "consensus_rate":
            if self.time_varying:
                st = self.lambda_stats()
                cert = unknown(name, f"{self.label()} draws W every round: p = 1 - lambda_max(E[(W - 11'/m)'(W - "
                                     f"11'/m)]) is only estimated ({1.0 - st['rms'] ** 2:.4g} over 64 draws, a Monte "
                                     "Carlo estimate, not a certificate)")
            else:
                lam = self.lam
                cert = certified(name, "||(X - Xbar)(W - 11'/m)||_F <= lambda ||X - Xbar||_F for a fixed symmetric W: "
                                       "p = 1 - lambda^2", p=1.0 - lam ** 2)
        else:
            cert = undeclared(name, self)
        return cert.with_by(type(self).__name__)

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "n_clients": self.n_clients, "weights": WEIGHTS, "laziness": self.laziness,
               "time_varying": self.time_varying}
        if not self.time_varying:
            eig = self.eigenvalues()
            out.update(lam=float(max(abs(eig[1]), abs(eig[-1]))), lambda_2=float(eig[1]), lambda_min=float(eig[-1]))
        return out

    def label(self) -> str:
        return self.name + (f"(lazy {self.laziness:g})" if self.laziness else "")

    def __repr__(self):
        extra = f", laziness={self.laziness:g}" if self.laziness else ""
        return f"{type(self).__name__}(n_clients={self.n_clients}{self._repr_extra()}{extra})"

    def _repr_extra(self) -> str:
        return ""

    def _static_only(self, what: str) -> None:
        if self.time_varying:
            raise ParameterError("topology", self.name, f"a static topology for {what} (a time-varying one draws a new "
                                                        "W every round: use lambda_stats)")

    def _need_rng(self, rng):
        if rng is None:
            raise ParameterError("rng", None, f"a numpy Generator ({self.name} draws a new graph every round)")
        return rng


class Ring(Topology):
    """Cycle 0-1-...-(m-1)-0; Metropolis = equal weights 1/3 (m >= 3; m = 2 is a single edge)."""

    name = "ring"

    def pairs(self, rng=None):
        i = np.arange(self.n_clients)
        return i, (i + 1) % self.n_clients


class Grid2D(Topology):
    """2-D grid of ``rows`` x ``cols`` = m clients. ``periodic=True`` (default) wraps both axes (a torus:
    4-regular when rows, cols >= 3, Metropolis = equal weights 1/5); ``periodic=False`` is the open grid
    (degrees 2-4, Metropolis weights differ at the border). rows defaults to the largest divisor of m
    that is <= sqrt(m)."""

    name = "grid"

    def __init__(self, n_clients: int, rows: int | None = None, periodic: bool = True, laziness: float = 0.0):
        super().__init__(n_clients, laziness)
        if rows is None:
            rows = max(r for r in range(1, int(np.sqrt(self.n_clients)) + 1) if self.n_clients % r == 0)
        self.rows = check_int("rows", rows, 1, self.n_clients)
        if self.n_clients % self.rows:
            raise ParameterError("rows", rows, f"a divisor of n_clients={self.n_clients}")
        self.cols = self.n_clients // self.rows
        self.periodic = bool(periodic)

    def pairs(self, rng=None):
        r, c = np.divmod(np.arange(self.n_clients), self.cols)
        idx = lambda rr, cc: rr * self.cols + cc
        if self.periodic:
            right = idx(r, (c + 1) % self.cols)
            down = idx((r + 1) % self.rows, c)
            return np.concatenate([idx(r, c)] * 2), np.concatenate([right, down])
        h = c + 1 < self.cols
        v = r + 1 < self.rows
        return (np.concatenate([idx(r, c)[h], idx(r, c)[v]]),
                np.concatenate([idx(r[h], c[h] + 1), idx(r[v] + 1, c[v])]))

    def label(self) -> str:
        return f"grid{self.rows}x{self.cols}" + ("" if self.periodic else "(open)") + (
            f"(lazy {self.laziness:g})" if self.laziness else "")

    def _repr_extra(self):
        return f", rows={self.rows}, periodic={self.periodic}"


class Exponential(Topology):
    """Undirected exponential graph: i ~ i +- 2^j (mod m) for 2^j < m (Ying et al. 2021 [55] use the directed
    version, i -> i + 2^j, which is not symmetric; Definition 1 asks for symmetry). A circulant graph, so
    Metropolis = equal weights."""

    name = "exponential"

    def pairs(self, rng=None):
        m = self.n_clients
        i = np.arange(m)
        hops = [2**j for j in range(int(np.floor(np.log2(m - 1))) + 1)] if m > 2 else [1]
        return np.concatenate([i] * len(hops)), np.concatenate([(i + h) % m for h in hops])


class FullyConnected(Topology):
    """Complete graph; Metropolis gives W = 11^T/m (lambda = 0)."""

    name = "full"

    def pairs(self, rng=None):
        a, b = np.triu_indices(self.n_clients, 1)
        return a.astype(np.int64), b.astype(np.int64)


class RandomKNeighbour(Topology):
    """Time-varying random topology of seed 002 Sec. V-A: every round each client picks ``k`` distinct other
    clients uniformly at random ("each client randomly selects 10 neighbours"); links are bidirectional
    ("random bidirectional topology"), so degrees are >= k. A round's graph may be disconnected (then that
    round's W violates Definition 1's null-space property; see ``lambda_stats``)."""

    name = "random"
    time_varying = True

    def __init__(self, n_clients: int, k: int = 10, laziness: float = 0.0):
        super().__init__(n_clients, laziness)
        self.k = check_int("k", k, 1, self.n_clients - 1)

    def picks(self, rng: np.random.Generator) -> np.ndarray:
        """(m, k) chosen neighbours: a uniformly random k-subset of the other m - 1 clients per client, by Floyd's
        algorithm vectorized over clients (k integer draws of m values per round)."""
        m, k = self.n_clients, self.k
        n = m - 1
        sel = np.empty((m, k), dtype=np.int64)
        for c, j in enumerate(range(n - k, n)):
            t = rng.integers(0, j + 1, size=m)
            taken = (sel[:, :c] == t[:, None]).any(axis=1)
            sel[:, c] = np.where(taken, j, t)
        return sel + (sel >= np.arange(m)[:, None])  # skip self

    def pairs(self, rng=None):
        p = self.picks(self._need_rng(rng))
        return np.repeat(np.arange(self.n_clients), self.k), p.ravel()

    def label(self) -> str:
        return f"random(k={self.k})" + (f"(lazy {self.laziness:g})" if self.laziness else "")

    def _repr_extra(self):
        return f", k={self.k}"


def ring(n_clients: int, laziness: float = 0.0) -> Ring:
    """The cycle 0-1-...-(m-1)-0 (Metropolis weights 1/3 each for m >= 3).

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].

    Returns
    -------
    Topology
        The ring.
    """
    return Ring(n_clients, laziness)


def grid(n_clients: int, rows: int | None = None, periodic: bool = True, laziness: float = 0.0) -> Grid2D:
    """A 2-D grid of rows x cols = m clients: a torus (``periodic``) or the open grid.

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    rows : int, optional
        The number of rows, a divisor of m (default: the largest divisor <= sqrt(m)).
    periodic : bool, default True
        Wrap both axes (a torus: 4-regular when rows, cols >= 3, weights 1/5); False: the open grid.
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].

    Returns
    -------
    Topology
        The grid.
    """
    return Grid2D(n_clients, rows, periodic, laziness)


def exponential(n_clients: int, laziness: float = 0.0) -> Exponential:
    """The undirected exponential graph: i ~ i +- 2^j (mod m) for every 2^j < m (equal Metropolis weights).

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].

    Returns
    -------
    Topology
        The exponential graph.
    """
    return Exponential(n_clients, laziness)


def fully_connected(n_clients: int, laziness: float = 0.0) -> FullyConnected:
    """The complete graph: W = 11^T/m (lambda = 0) without laziness.

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].

    Returns
    -------
    Topology
        The complete graph.
    """
    return FullyConnected(n_clients, laziness)


def random_k_neighbour(n_clients: int, k: int = 10, laziness: float = 0.0) -> RandomKNeighbour:
    """The time-varying random topology of seed 002 Sec. V-A: every round each client links to k others drawn
    uniformly (links bidirectional, so degrees are >= k; a round's graph may be disconnected).

    Parameters
    ----------
    n_clients : int
        m, the number of clients (>= 2).
    k : int, default 10
        The neighbours each client picks per round (1..m-1).
    laziness : float, default 0.0
        a in [0, 1): W <- (1 - a) W + a I, which moves the spectrum to [2a - 1, 1].

    Returns
    -------
    Topology
        The time-varying topology (its W drawn from the run's stream every round).
    """
    return RandomKNeighbour(n_clients, k, laziness)


def paper_topologies(n_clients: int, k: int | None = None, laziness: float = 0.0) -> list[Topology]:
    """The five topologies of seed 002 (Table V's four plus the random one of Sec. V-A), sparsest first.
    k defaults to the paper's ratio, 10 neighbours of 100 clients (at least 1)."""
    k = max(1, round(n_clients / 10)) if k is None else k
    return [Ring(n_clients, laziness), Grid2D(n_clients, laziness=laziness), Exponential(n_clients, laziness),
            FullyConnected(n_clients, laziness), RandomKNeighbour(n_clients, k, laziness)]


TOPOLOGIES = ("ring", "grid", "exponential", "fully_connected", "random_k[:K]")


def topology_by_name(name: str, n_clients: int) -> Topology:
    """A seed-002 topology over ``n_clients`` from its name: ring | grid | exponential | fully_connected |
    random_k (K = max(1, round(n/10)) neighbours, the paper's ratio) | random_k:K (time-varying)."""
    text = str(name).strip().lower()
    base, _, arg = text.partition(":")
    makers = {"ring": ring, "grid": grid, "exponential": exponential, "fully_connected": fully_connected}
    if base in makers and not arg:
        return makers[base](n_clients)
    if base == "random_k":
        if arg:
            try:
                k = int(arg)
            except ValueError:
                raise ParameterError("topology", name, "random_k:K with an integer K") from None
        else:
            k = max(1, round(n_clients / 10))
        return random_k_neighbour(n_clients, k)
    raise ParameterError("topology", name, "one of " + ", ".join(TOPOLOGIES))
